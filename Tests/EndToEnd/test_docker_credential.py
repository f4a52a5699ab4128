"""docker uses a Sesame account through docker-credential-sesame, driven here as docker drives
it (docker-credential-helpers' protocol over pipes): `get` answers the mapped account's current
token, `list` the mapped registries, `erase` makes sesamed refresh once, `store` is refused; a
registry that is not mapped is "not found", as docker expects."""

import json
import subprocess

import pytest

from harness import DOCKER_CREDENTIAL_SESAME, import_from_idp, running
# Access tokens that live a minute.
from test_any_provider import idp  # noqa: F401 (a fixture)
from test_oauth import get_token, oauth_daemon

REGISTRY = "registry.example.com"


@pytest.fixture
def daemon(tmp_path, idp):
    idp.reset_settings()
    with running(oauth_daemon(tmp_path, idp)) as instance:
        yield instance


def helper(tmp_path, daemon, action: str, stdin: str = ""):
    env = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / ".config"),
           "SESAME_SOCKET": str(daemon.socket_path)}
    return subprocess.run([str(DOCKER_CREDENTIAL_SESAME), action], input=stdin, env=env, capture_output=True,
                          text=True, timeout=30)


def test_docker_gets_lists_and_erases_through_the_url_map(tmp_path, daemon, idp):
    account, tokens = import_from_idp(daemon, idp)
    (tmp_path / ".config" / "sesame").mkdir(parents=True)
    (tmp_path / ".config" / "sesame" / "credentials.toml").write_text(
        f'[hosts]\n"https://{REGISTRY}" = "{account["id"]}"\n')
    got = helper(tmp_path, daemon, "get", REGISTRY + "\n")
    assert got.returncode == 0, got.stdout
    answer = json.loads(got.stdout)
    secret_is_the_token = answer.pop("Secret") == tokens["access_token"]  # compared, never printed
    assert secret_is_the_token and answer == {"ServerURL": REGISTRY, "Username": "oauth2"}
    assert json.loads(helper(tmp_path, daemon, "list").stdout) == {f"https://{REGISTRY}": "oauth2"}

    refreshes = idp.counters()["token_requests"].get("refresh_token", 0)
    assert helper(tmp_path, daemon, "erase", REGISTRY).returncode == 0
    assert idp.counters()["token_requests"].get("refresh_token", 0) == refreshes + 1
    again = json.loads(helper(tmp_path, daemon, "get", REGISTRY).stdout)["Secret"]
    renewed = again != tokens["access_token"] and again == get_token(daemon, account["id"])
    assert renewed, "get after erase did not hand out the refreshed token"

    missing = helper(tmp_path, daemon, "get", "other.example.com")
    assert (missing.returncode, missing.stdout) == (1, "credentials not found in native keychain\n")
    stored = helper(tmp_path, daemon, "store", json.dumps({"ServerURL": REGISTRY, "Username": "u", "Secret": "s"}))
    assert stored.returncode == 1 and "sesamectl login" in stored.stdout, stored.stdout
