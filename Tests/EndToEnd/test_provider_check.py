"""`sesamectl providers --check` against the test identity provider: a good file passes, and a
wrong port, a wrong issuer and a wrong client id each fail with the file, the key to mend and the
reason, before anyone logs in."""

import json
import signal
import socket
import subprocess

import pytest

from harness import SESAMECTL, daemon_reachable_by_other_users, running
from test_oauth import oauth_daemon


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def daemon(tmp_path, idp):
    """The IdP's `local` and `web` providers, and one file per mistake."""
    providers = tmp_path / "providers.d"
    providers.mkdir()
    client = idp.clients["device"]["client_id"]
    port = closed_port()
    files = {
        "port": f'issuer = "http://127.0.0.1:{port}/o"\nclient_id = "{client}"\ntimeout = 1\n',
        # The issuer with a slash the provider does not write: discovery names the issuer without it.
        "slash": f'issuer = "{idp.issuer}/"\nclient_id = "{client}"\n',
        "client": f'issuer = "{idp.issuer}"\nclient_id = "sesame-typo"\n',
        "broken": f'issuer = "{idp.issuer}"\nclient_idd = "{client}"\n',
    }
    for name, text in files.items():
        (providers / f"{name}.toml").write_text(text)
    with running(oauth_daemon(tmp_path, idp)) as instance:
        instance.closed_port = port
        yield instance


def check(daemon, *args) -> subprocess.CompletedProcess:
    return subprocess.run([str(SESAMECTL), "providers", "--check", *args, "--socket", str(daemon.socket_path)],
                          capture_output=True, text=True, timeout=60)


def test_a_good_file_passes_every_check(daemon, idp):
    result = check(daemon, "local")
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f"local ({daemon.tmp / 'providers.d' / 'local.toml'})", lines
    assert f"  ok   discovery document {idp.issuer}/.well-known/openid-configuration: names this issuer" in lines
    assert "  ok   client_id: the provider knows the client" in lines, lines
    assert any(line.startswith("  ok   signing keys ") and line.endswith(": 1 key") for line in lines), lines
    assert any(line.startswith("  ok   device authorization endpoint ") for line in lines), lines
    assert not any("FAIL" in line for line in lines), lines


def test_a_wrong_port_names_the_address_that_refused(daemon):
    result = check(daemon, "port")
    assert result.returncode == 1, result.stdout
    port = daemon.closed_port
    assert (f"  FAIL discovery document http://127.0.0.1:{port}/o/.well-known/openid-configuration: "
            f"connection refused by 127.0.0.1:{port} [issuer]") in result.stdout, result.stdout
    assert f"  mend issuer in {daemon.tmp / 'providers.d' / 'port.toml'}, then send that sesamed SIGHUP." in result.stdout


def test_a_wrong_issuer_is_told_from_the_discovery_document(daemon, idp):
    result = check(daemon, "slash")
    assert result.returncode == 1, result.stdout
    assert (f"discovery names issuer {idp.issuer}, not {idp.issuer}/ [issuer]") in result.stdout, result.stdout


def test_a_client_id_the_provider_does_not_know_is_named(daemon):
    result = check(daemon, "client")
    assert result.returncode == 1, result.stdout
    assert ('  FAIL client_id: the provider does not know client "sesame-typo" or refuses its secret '
            "(invalid_client) [client_id]") in result.stdout, result.stdout
    assert f"  mend client_id in {daemon.tmp / 'providers.d' / 'client.toml'}" in result.stdout


def test_a_file_that_does_not_read_is_one_failed_check_naming_its_key(daemon):
    result = check(daemon, "broken")
    assert result.returncode == 1, result.stdout
    path = daemon.tmp / "providers.d" / "broken.toml"
    assert f"  FAIL provider file: {path}: unknown setting 'client_idd' [client_idd]" in result.stdout, result.stdout


def test_every_provider_is_checked_and_json_keeps_each_check(daemon):
    result = check(daemon, "--json")
    assert result.returncode == 1, result.stdout
    reports = {report["provider"]: report for report in json.loads(result.stdout)}
    assert set(reports) == {"local", "web", "port", "slash", "client", "broken"}, reports.keys()
    assert not any(c.get("problem") for c in reports["web"]["checks"]), reports["web"]
    [failed] = [c for c in reports["client"]["checks"] if c.get("problem")]
    assert failed["key"] == "client_id" and failed["subject"] == "client_id", failed


def test_a_name_goes_with_check_only(daemon):
    result = subprocess.run([str(SESAMECTL), "providers", "local", "--socket", str(daemon.socket_path)],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 64 and "a provider name goes with --check" in result.stderr, result.stderr


def test_a_file_that_broke_while_its_provider_runs_is_reported_broken(daemon):
    """A reload keeps a provider whose file turned bad on the settings it read before; the check
    says the file does not read, not that the old settings pass."""
    path = daemon.tmp / "providers.d" / "local.toml"
    path.write_text(path.read_text() + "ca_file = 3\n")
    daemon.process.send_signal(signal.SIGHUP)
    daemon.wait_for_log("provider file not used")
    result = check(daemon, "local")
    assert result.returncode == 1, result.stdout
    assert f"  FAIL provider file: {path}: 'ca_file' must be a string; sesamed runs the provider with the " \
           "settings it read before [ca_file]" in result.stdout, result.stdout


def test_only_who_may_mend_the_files_may_check_them():
    """The checks send the client's credentials to the provider: another user of the system
    sesamed is refused, and told who may check."""
    with daemon_reachable_by_other_users() as daemon:
        refused = subprocess.run(["setpriv", "--reuid=61234", "--regid=61234", "--clear-groups", str(SESAMECTL),
                                  "providers", "--check", "--socket", str(daemon.socket_path)],
                                 capture_output=True, text=True, timeout=30)
        assert refused.returncode == 1, refused.stdout
        assert refused.stderr.startswith("only who may mend this sesamed's provider files may check them"), refused
        assert "provider checked" not in daemon.log()
