"""git uses a Sesame account through git-credential-sesame: the real git clones and pushes over
HTTP to a server that takes only a token the identity provider still accepts. When the server
refuses the token, git erases it, sesamed refreshes once, and the next push gets the new one; a
session that needs a login says so and git stops without prompting. No token reaches git's
output or the helper's command line."""

import subprocess
from pathlib import Path

import pytest

from git_server import GitServer
from harness import GIT_CREDENTIAL_SESAME, call, import_from_idp, running
# Access tokens that live a minute: every token the server sees is time-valid.
from test_any_provider import idp  # noqa: F401 (a fixture)
from test_oauth import get_token, oauth_daemon


@pytest.fixture
def forge(tmp_path, idp):
    """A bare repository `repo.git` behind a server that takes a token only while the identity
    provider's userinfo does and the test has not refused it."""
    root = tmp_path / "forge"
    root.mkdir()
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(root / "repo.git")], check=True)
    refused: set[str] = set()
    server = GitServer(root, lambda token: token not in refused and idp.userinfo(token).status_code == 200)
    server.refused = refused
    yield server
    server.stop()


@pytest.fixture
def daemon(tmp_path, idp):
    idp.reset_settings()
    with running(oauth_daemon(tmp_path, idp)) as instance:
        yield instance


def git(home: Path, daemon, *args, helper: str | None = None, cwd: Path | None = None):
    """The real git, with only our helper (`helper` its arguments) and no prompt."""
    configured = f"{GIT_CREDENTIAL_SESAME}{' ' + helper if helper else ''}"
    env = {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "", "SSH_ASKPASS": "", "PATH": "/usr/bin:/bin",
           "SESAME_SOCKET": str(daemon.socket_path), "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    return subprocess.run(["git", "-c", "credential.helper=", "-c", f"credential.helper={configured}", *args],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def commit(home, daemon, work: Path, name: str):
    (work / name).write_text(name)
    assert git(home, daemon, "add", name, cwd=work).returncode == 0
    assert git(home, daemon, "commit", "-q", "-m", name, cwd=work).returncode == 0


def test_git_clones_and_pushes_and_a_refused_token_is_refreshed_once(tmp_path, daemon, idp, forge):
    account, tokens = import_from_idp(daemon, idp)
    helper = f"--account {account['id']}"
    work, said = tmp_path / "work", ""
    cloned = git(tmp_path, daemon, "clone", "-q", f"{forge.base}/repo.git", str(work), helper=helper)
    assert cloned.returncode == 0, cloned.stderr
    commit(tmp_path, daemon, work, "one")
    pushed = git(tmp_path, daemon, "push", "-q", "origin", "HEAD:main", helper=helper, cwd=work)
    assert pushed.returncode == 0, pushed.stderr
    # (Compared, never shown: an assertion's message would print the tokens.)
    only_the_accounts = set(forge.shown) == {tokens["access_token"]}
    assert only_the_accounts, "the server saw another token than the account's"

    # The forge stops taking the token: git erases it, and sesamed refreshes once.
    forge.refused.add(tokens["access_token"])
    refreshes = idp.counters()["token_requests"].get("refresh_token", 0)
    commit(tmp_path, daemon, work, "two")
    refused = git(tmp_path, daemon, "push", "-q", "origin", "HEAD:main", helper=helper, cwd=work)
    assert refused.returncode != 0
    assert idp.counters()["token_requests"].get("refresh_token", 0) == refreshes + 1, "not one refresh"
    retried = git(tmp_path, daemon, "push", "-q", "origin", "HEAD:main", helper=helper, cwd=work)
    assert retried.returncode == 0, retried.stderr
    fresh = get_token(daemon, account["id"])
    renewed = fresh != tokens["access_token"] and forge.shown[-1] == fresh
    assert renewed, "the retry did not send the refreshed token"
    said += cloned.stdout + cloned.stderr + pushed.stdout + pushed.stderr + refused.stdout + refused.stderr
    said += retried.stdout + retried.stderr
    leaked = any(token in said for token in (tokens["access_token"], tokens["refresh_token"], fresh))
    assert not leaked, "a token reached git's output"


def test_a_session_that_needs_a_login_stops_git_with_the_command_to_run(tmp_path, daemon, idp, forge):
    account, tokens = import_from_idp(daemon, idp)
    for token in (tokens["refresh_token"], tokens["access_token"]):
        assert idp.revoke(token).status_code == 200
    still_handed_out = get_token(daemon, account["id"]) == tokens["access_token"]  # time-valid
    assert still_handed_out
    # Named as the person named it, not by sesamed's id for it.
    assert "error" not in call(daemon, "io.sesame.Accounts.Rename", {"account": account["id"], "name": "work"})
    failed = git(tmp_path, daemon, "clone", "-q", f"{forge.base}/repo.git", str(tmp_path / "w"),
                 helper="--account work")
    assert failed.returncode != 0  # the server refused the token; git erased it; the refresh was refused
    again = git(tmp_path, daemon, "clone", "-q", f"{forge.base}/repo.git", str(tmp_path / "w"),
                helper="--account work")
    assert again.returncode != 0
    assert "work needs a new login: run `sesamectl login local`." in again.stderr, again.stderr
    assert account["id"] not in again.stderr, again.stderr
    leaked = tokens["access_token"] in again.stderr
    assert "Username for" not in again.stderr and not leaked


def test_the_url_map_names_the_account_and_a_lookalike_host_gets_none(tmp_path, daemon, idp, forge):
    account, tokens = import_from_idp(daemon, idp)
    config = tmp_path / ".config" / "sesame"
    config.mkdir(parents=True)
    (config / "credentials.toml").write_text(f'[hosts]\n"{forge.base}" = "{account["id"]}"\n')
    cloned = git(tmp_path, daemon, "clone", "-q", f"{forge.base}/repo.git", str(tmp_path / "w"))
    assert cloned.returncode == 0, cloned.stderr
    only_the_accounts = set(forge.shown) == {tokens["access_token"]}
    assert only_the_accounts, "the server saw another token than the mapped account's"
    # The same prefix, followed by more host name, is another server: it gets nothing, and git
    # may still ask another helper or the person.
    lookalike = subprocess.run([str(GIT_CREDENTIAL_SESAME), "get"], capture_output=True, text=True, timeout=30,
                               input=f"protocol=http\nhost={forge.base.removeprefix('http://')}0\n\n",
                               env={"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / ".config"),
                                    "SESAME_SOCKET": str(daemon.socket_path)})
    assert (lookalike.returncode, lookalike.stdout, lookalike.stderr) == (0, "", ""), lookalike


def test_a_git_that_takes_bearer_credentials_gets_one_and_store_keeps_nothing(tmp_path, daemon, idp):
    """git 2.46 announces `capability[]=authtype`; the helper answers with a Bearer credential
    that no other helper may keep (`ephemeral`). Driven through the protocol on a pipe, since
    the git here may be older."""
    account, tokens = import_from_idp(daemon, idp)
    env = {"HOME": str(tmp_path), "SESAME_SOCKET": str(daemon.socket_path)}
    answer = subprocess.run([str(GIT_CREDENTIAL_SESAME), "--account", account["id"], "get"], env=env,
                            input="capability[]=authtype\nprotocol=https\nhost=example.com\n\n",
                            capture_output=True, text=True, timeout=30)
    lines = dict(line.split("=", 1) for line in answer.stdout.splitlines())
    bearer = lines.get("authtype") == "Bearer" and lines.get("credential") == tokens["access_token"]
    assert bearer, answer.stderr
    marked = lines.get("capability[]") == "authtype" and lines.get("ephemeral") == "true" and "password" not in lines
    assert marked, sorted(lines)  # the keys only: the values hold the token
    cleartext = subprocess.run([str(GIT_CREDENTIAL_SESAME), "--account", account["id"], "get"], env=env,
                               input="protocol=http\nhost=git.example.com\n\n", capture_output=True, text=True,
                               timeout=30)
    assert cleartext.stdout == "" and "over plain http" in cleartext.stderr, cleartext
    stored = subprocess.run([str(GIT_CREDENTIAL_SESAME), "--account", account["id"], "store"], env=env,
                            input=f"protocol=https\nhost=example.com\npassword={tokens['access_token']}\n\n",
                            capture_output=True, text=True, timeout=30)
    assert (stored.returncode, stored.stdout, stored.stderr) == (0, "", "")


def test_only_https_or_this_machines_http_gets_a_token_and_paths_are_compared_as_the_server_reads_them(
        tmp_path, daemon, idp):
    """Whatever --account or the map say, the helper sends a token over https, or over plain
    http to a literal loopback address or localhost only (never `127.evil.example`, another
    scheme or `HTTP://`); and a path-scoped entry covers a path only after decoding and dot
    segment removal (RFC 3986 §5.2.4), a path that hides `/` or `..` in escapes getting nothing."""
    account, tokens = import_from_idp(daemon, idp)
    config = tmp_path / ".config" / "sesame"
    config.mkdir(parents=True)
    (config / "credentials.toml").write_text(f'[hosts]\n"https://forge.example/team" = "{account["id"]}"\n')
    env = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / ".config"),
           "SESAME_SOCKET": str(daemon.socket_path)}

    def get(request: str, *options: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(GIT_CREDENTIAL_SESAME), *options, "get"], env=env, input=request + "\n",
                              capture_output=True, text=True, timeout=30)

    for request, said in (("protocol=http\nhost=127.evil.example\n", "over plain http"),
                          ("protocol=HTTP\nhost=git.example.com\n", "over plain http"),
                          ("protocol=ftp\nhost=git.example.com\n", "only https, or http to this machine")):
        refused = get(request, "--account", account["id"])
        assert refused.stdout == "" and said in refused.stderr, (request, refused)
    for request in ("protocol=http\nhost=127.0.0.1:9\n", "protocol=http\nhost=localhost\n"):
        assert "password=" in get(request, "--account", account["id"]).stdout, request
    assert "password=" in get("protocol=https\nhost=forge.example\npath=team/repo.git\n").stdout
    # git decodes the URL before it asks: `team%3F/../other` arrives as `team?/../other`.
    for path in ("team/../other/repo.git", "team?/../other/repo.git", "team#/../x", "te%61m/repo.git",
                 "teammate/repo.git"):
        answer = get(f"protocol=https\nhost=forge.example\npath={path}\n")
        assert answer.stdout == "", path
    assert tokens["access_token"] not in "".join(
        get(f"protocol=https\nhost=forge.example\npath={path}\n").stderr for path in ("team/../x", "team?/../x"))
