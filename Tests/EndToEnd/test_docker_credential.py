"""docker uses a Sesame account through docker-credential-sesame, driven here as docker drives
it (docker-credential-helpers' protocol over pipes): `get` answers the mapped account's current
token, `list` the mapped registries, and `erase` (what `docker logout` calls) does nothing, so
sesamed refreshes nothing; a registry that is not mapped is "not found", as docker expects.
`store` (what `docker login` calls) keeps nothing: the mapped account's current token is taken
as it is, any other secret is refused with what to run instead, and for a registry that is not
mapped the refusal names the line that maps it, with the account the token is of."""

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


def mapped_account(tmp_path, daemon, idp) -> tuple[dict, dict]:
    """An account, and the map giving it REGISTRY."""
    account, tokens = import_from_idp(daemon, idp)
    (tmp_path / ".config" / "sesame").mkdir(parents=True)
    (tmp_path / ".config" / "sesame" / "credentials.toml").write_text(
        f'[hosts]\n"https://{REGISTRY}" = "{account["id"]}"\n')
    return account, tokens


def refreshes(idp) -> int:
    return idp.counters()["token_requests"].get("refresh_token", 0)


def test_docker_gets_and_lists_through_the_url_map_and_erase_refreshes_nothing(tmp_path, daemon, idp):
    account, tokens = mapped_account(tmp_path, daemon, idp)
    got = helper(tmp_path, daemon, "get", REGISTRY + "\n")
    assert got.returncode == 0, got.stdout
    answer = json.loads(got.stdout)
    secret_is_the_token = answer.pop("Secret") == tokens["access_token"]  # compared, never printed
    assert secret_is_the_token and answer == {"ServerURL": REGISTRY, "Username": "oauth2"}
    assert json.loads(helper(tmp_path, daemon, "list").stdout) == {f"https://{REGISTRY}": "oauth2"}

    # docker logout erases: sesamed keeps the tokens for every program, so nothing happens.
    before = refreshes(idp)
    erased = helper(tmp_path, daemon, "erase", REGISTRY)
    assert (erased.returncode, erased.stdout, erased.stderr) == (0, "", ""), erased
    assert refreshes(idp) == before, "erase made sesamed refresh"
    again = json.loads(helper(tmp_path, daemon, "get", REGISTRY).stdout)["Secret"]
    unchanged = again == tokens["access_token"] == get_token(daemon, account["id"])
    assert unchanged, "get after erase did not hand out the same token"

    missing = helper(tmp_path, daemon, "get", "other.example.com")
    assert (missing.returncode, missing.stdout) == (1, "credentials not found in native keychain\n")


def test_store_takes_the_current_token_refuses_other_secrets_and_names_the_line_to_map(tmp_path, daemon, idp):
    account, tokens = mapped_account(tmp_path, daemon, idp)

    def store(server: str, secret: str, username: str = "oauth2"):
        return helper(tmp_path, daemon, "store",
                      json.dumps({"ServerURL": server, "Username": username, "Secret": secret}))

    # What `docker login REGISTRY` hands back after `get`, or `sesamectl token` piped in.
    token = get_token(daemon, account["id"])
    same = store(REGISTRY, token)
    no_op = (same.returncode, same.stdout, same.stderr) == (0, "", "")  # compared: stdout might hold it
    assert no_op, "store of the current token was not a no-op"

    password = store(REGISTRY, "hunter2", username="someone")
    assert password.returncode == 1, password.stdout
    assert password.stdout.startswith(f"docker-credential-sesame stores no passwords: {REGISTRY} gets the token "
                                      f"of {account['id']} "), password.stdout
    assert f"run `docker login {REGISTRY}` without a password" in password.stdout, password.stdout
    stale = store(REGISTRY, tokens["refresh_token"])  # a secret of the account's, but not its token
    assert stale.returncode == 1 and "stores no passwords" in stale.stdout
    shown = token in stale.stdout or tokens["refresh_token"] in stale.stdout  # compared, never printed
    assert not shown, "a token was shown"

    # Not mapped: the line to add, with the account whose token it is (or a placeholder).
    unmapped = store("other.example.com:5000", token)
    shown = token in unmapped.stdout
    assert unmapped.returncode == 1 and not shown, "store for an unmapped registry took the token, or showed it"
    line = (f'add this line under [hosts] in {tmp_path / ".config" / "sesame" / "credentials.toml"}: '
            f'"https://other.example.com:5000" = "{account.get("name") or account["id"]}"\n')
    assert unmapped.stdout.endswith(line), unmapped.stdout
    assert "other.example.com:5000 is not mapped to an account" in unmapped.stdout, unmapped.stdout
    unknown = store("other.example.com:5000", "hunter2")
    assert unknown.returncode == 1
    assert unknown.stdout.endswith('"https://other.example.com:5000" = "ACCOUNT"\n'), unknown.stdout

    malformed = helper(tmp_path, daemon, "store", "not json")
    assert (malformed.returncode, malformed.stdout) == (
        1, "docker's credentials are not a JSON object with ServerURL and Secret\n")


def test_a_plain_http_registry_gets_no_token_whatever_the_map_says(tmp_path, daemon, idp):
    """A registry reached over plain http, other than on this machine, gets nothing even when
    the map names it; a path that hides `/` or `..` in escapes gets nothing either."""
    account, tokens = import_from_idp(daemon, idp)
    (tmp_path / ".config" / "sesame").mkdir(parents=True)
    (tmp_path / ".config" / "sesame" / "credentials.toml").write_text(
        f'[hosts]\n"http://{REGISTRY}" = "{account["id"]}"\n"http://127.evil.example" = "{account["id"]}"\n'
        f'"http://localhost:5000" = "{account["id"]}"\n"https://{REGISTRY}/team" = "{account["id"]}"\n')
    for server in (f"http://{REGISTRY}", "http://127.evil.example", f"https://{REGISTRY}/team%2F..%2Fother"):
        refused = helper(tmp_path, daemon, "get", server)
        assert refused.returncode == 1 and refused.stdout.startswith("no token is sent to "), (server, refused)
        assert tokens["access_token"] not in refused.stdout
    assert json.loads(helper(tmp_path, daemon, "get", "http://localhost:5000").stdout)["Username"] == "oauth2"
