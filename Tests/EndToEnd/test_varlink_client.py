"""sesamed as the third-party `varlink` PyPI client sees it: no code of ours on the client side."""

import subprocess
import sys

import pytest
import varlink

from harness import REPO


def client_for(daemon):
    return varlink.Client(address=f"unix:{daemon.socket_path}")


def test_cli_info_lists_every_interface(daemon):
    out = subprocess.run(
        [sys.executable, "-m", "varlink.cli", "info", f"unix:{daemon.socket_path}"],
        check=True, capture_output=True, text=True, timeout=30,
    ).stdout
    assert "Product: sesamed" in out
    for interface in ("io.sesame.Accounts", "io.sesame.Events", "io.sesame.Varlink", "org.varlink.service"):
        assert f"   {interface}\n" in out, out


@pytest.mark.parametrize("path", sorted((REPO / "interfaces").glob("*.varlink")), ids=lambda p: p.stem)
def test_serves_the_published_interface_text_exactly(daemon, path):
    interface = path.stem
    with client_for(daemon).open("org.varlink.service") as service:
        reply = service.GetInterfaceDescription(interface)
    assert reply["description"] == path.read_text()


def test_every_interface_parses_with_the_reference_parser(daemon):
    client = client_for(daemon)
    for interface in ("io.sesame.Accounts", "io.sesame.Events", "io.sesame.Varlink"):
        assert client.get_interface(interface).name == interface


def test_accounts_list_is_answered(daemon):
    with client_for(daemon).open("io.sesame.Accounts") as accounts:
        assert accounts.List() == {"accounts": []}


def test_subscribe_streams_a_ready_marker_first(daemon):
    with client_for(daemon).open("io.sesame.Events") as events:
        replies = events.Subscribe(_more=True)
        assert next(replies) == {"ready": {"sequence": 0}}


def test_subscribe_without_more_is_expected_more(daemon):
    with client_for(daemon).open("io.sesame.Events") as events:
        with pytest.raises(varlink.VarlinkError) as raised:
            events.Subscribe()
    assert raised.value.error() == "org.varlink.service.ExpectedMore"


def test_unknown_interface_is_interface_not_found(daemon):
    with client_for(daemon).open("org.varlink.service") as service:
        with pytest.raises(varlink.VarlinkError) as raised:
            service.GetInterfaceDescription("io.sesame.Nope")
    assert raised.value.error() == "org.varlink.service.InterfaceNotFound"
    assert raised.value.parameters() == {"interface": "io.sesame.Nope"}
