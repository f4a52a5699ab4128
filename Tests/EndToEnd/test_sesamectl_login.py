"""`sesamectl login` as a person runs it, against the test identity provider: the flow the
provider's file names unless a flag overrides it, and the browser shown the login's real outcome."""

import json
import re
import socket
import subprocess
import threading
from urllib.parse import parse_qs, urlparse

import pytest
import requests

from harness import SESAMECTL, Daemon, Subscription, call, running
from idp_harness import IdentityProvider
from test_oauth import SCOPES, get_token, oauth_daemon


@pytest.fixture
def daemon(tmp_path, idp):
    """Providers `local` (device flow) and `web` (authorization code) of test_oauth.py, and `desk`:
    the device client under a file that says `flow = "authorizationCode"` (and `olddesk`, the
    same in the older spelling, `authorization_code`)."""
    idp.clear_faults()
    idp.reset_counters()
    providers = tmp_path / "providers.d"
    providers.mkdir()
    (providers / "desk.toml").write_text(
        f'issuer = "{idp.issuer}"\nclient_id = "{idp.clients["device"]["client_id"]}"\n'
        f'scopes = {json.dumps(SCOPES)}\nflow = "authorizationCode"\n'
    )
    (providers / "olddesk.toml").write_text(
        f'issuer = "{idp.issuer}"\nclient_id = "{idp.clients["device"]["client_id"]}"\n'
        f'scopes = {json.dumps(SCOPES)}\nflow = "authorization_code"\n'
    )
    with running(oauth_daemon(tmp_path, idp)) as instance:
        yield instance


def login(daemon: Daemon, *args) -> subprocess.Popen:
    return subprocess.Popen([str(SESAMECTL), "login", *args, "--socket", str(daemon.socket_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def browser_url(process: subprocess.Popen) -> str:
    """The URL sesamectl asks the person to open, after checking it is one."""
    first = process.stdout.readline()
    assert first.startswith("Open this URL in your browser"), first
    url = process.stdout.readline().strip()
    assert parse_qs(urlparse(url).query)["response_type"] == ["code"], url
    return url


def as_browser(idp: IdentityProvider, url: str, username: str = "bob", **kwargs) -> requests.Response:
    """Opens `url` as a browser logged in at the provider, following redirects (to sesamectl)."""
    browser = requests.Session()
    browser.cookies.update(idp.login_cookie(username))
    return browser.get(url, timeout=30, **kwargs)


def browser_login(daemon: Daemon, idp: IdentityProvider) -> tuple[requests.Response, subprocess.Popen, str, str]:
    """`sesamectl login web --browser` finished in Bob's browser: the page sesamectl answered, the
    ended process, and its stdout and stderr."""
    process = login(daemon, "web", "--browser")
    try:
        page = as_browser(idp, browser_url(process))
        out, err = process.communicate(timeout=60)
    finally:
        process.kill()
    return page, process, out, err


def test_plain_login_follows_the_providers_browser_flow(daemon, idp):
    """web.toml says flow = "authorizationCode": with no flag, sesamectl prints the browser URL
    (not a device code) and finishes the login the browser comes back with."""
    events = Subscription(daemon, kinds=["loggedIn"])
    process = login(daemon, "web")
    try:
        page = as_browser(idp, browser_url(process))
        assert page.status_code == 200 and "logged in as Bob" in page.text, page.text
        out, err = process.communicate(timeout=60)
        assert process.returncode == 0, err
        assert out.startswith("logged in: web-"), out
    finally:
        process.kill()
    assert events.next()["provider"] == "web"
    assert idp.counters()["device_authorizations"] == 0


def test_device_overrides_the_providers_flow(daemon, idp):
    """desk.toml says flow = "authorizationCode"; --device logs in with a code instead."""
    process = login(daemon, "desk", "--device")
    try:
        line = process.stdout.readline()
        shown = re.fullmatch(r"Open (\S+) and enter the code (\S+)\n", line)
        assert shown and shown[1].startswith(idp.base), line
        idp.approve(shown[2])
        out, err = process.communicate(timeout=60)
        assert process.returncode == 0, err
        assert "logged in: desk-" in out, out
    finally:
        process.kill()


def test_the_old_spelling_of_the_browser_flow_still_reads_and_says_what_to_write(daemon):
    """The file and the API spell the flow alike (`authorizationCode`); a file in the older
    spelling keeps working, and both the log and `sesamectl providers` name the file to mend."""
    listed = subprocess.run([str(SESAMECTL), "providers", "--json", "--socket", str(daemon.socket_path)],
                            capture_output=True, text=True, timeout=30, check=True)
    olddesk = next(p for p in json.loads(listed.stdout) if p["name"] == "olddesk")
    assert olddesk["defaultFlow"] == "authorizationCode", olddesk
    notice = 'olddesk.toml: flow = "authorization_code" is the old spelling; write "authorizationCode"'
    assert len(olddesk["notices"]) == 1 and olddesk["notices"][0].endswith(notice), olddesk
    assert "notices" not in next(p for p in json.loads(listed.stdout) if p["name"] == "desk")
    table = subprocess.run([str(SESAMECTL), "providers", "--socket", str(daemon.socket_path)],
                           capture_output=True, text=True, timeout=30, check=True)
    assert re.search(r"^olddesk +oidc +browser \(or --device\)$", table.stdout, re.M), table.stdout
    assert notice in table.stderr and table.stderr.startswith("note: "), table.stderr
    assert notice in daemon.log()


def test_an_issuer_nothing_answers_at_is_named_with_the_systems_reason(tmp_path, idp):
    """A wrong port in the issuer: the login says which address refused the connection, in the
    system's words, not the name of an error type."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    providers = tmp_path / "providers.d"
    providers.mkdir()
    (providers / "typo.toml").write_text(f'issuer = "http://127.0.0.1:{port}"\nclient_id = "c"\ntimeout = 1\n')
    with running(oauth_daemon(tmp_path, idp)) as daemon:
        process = login(daemon, "typo", "--device")
        out, err = process.communicate(timeout=60)
    assert process.returncode != 0, out
    assert f"cannot be reached now (connection refused by 127.0.0.1:{port})" in err, err
    assert "IOError" not in err, err


def test_device_and_browser_exclude_each_other(daemon):
    both = subprocess.run([str(SESAMECTL), "login", "web", "--device", "--browser", "--socket",
                           str(daemon.socket_path)], capture_output=True, text=True, timeout=30)
    error = both.stderr.splitlines()[0]  # the usage line after it names every flag anyway
    assert both.returncode == 64 and "--device" in error and "--browser" in error, both.stderr


def test_the_browser_hears_of_a_failed_code_exchange(daemon, idp):
    """The page answers the redirect only after sesamed exchanged the code, so a refused
    exchange is a failure page, not "You are logged in"."""
    idp.fault(status=400, body={"error": "invalid_grant"}, grant_type="authorization_code")
    page, process, out, err = browser_login(daemon, idp)
    assert "<h1>Login failed</h1>" in page.text and "logged in" not in page.text.lower(), page.text
    assert "<dd>the provider refused: invalid_grant</dd>" in page.text, page.text
    assert process.returncode != 0 and out == "", (out, err)  # nothing after the URL's two lines
    assert err == "sesamed: the provider refused: invalid_grant.\n", err
    assert idp.counters()["token_requests"] == {"authorization_code": 1}


def test_a_provider_error_is_shown_escaped_and_cut_short(daemon, idp):
    """The provider's error parameters reach the page as text, never as markup, and not
    without end; the terminal gets no control characters from them."""
    process = login(daemon, "web", "--browser")
    try:
        first = process.stdout.readline()
        query = parse_qs(urlparse(process.stdout.readline()).query)
        page = requests.get(query["redirect_uri"][0], timeout=30, params={
            "state": query["state"][0], "error": "<script>alert(1)</script>",
            "error_description": "\x1b[2J<b>denied</b> " + "x" * 20000,
        })
        out, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text, page.text[:2000]
    assert "<script>" not in page.text and "<b>" not in page.text and len(page.text) < 4000
    assert process.returncode == 1 and "<script>alert(1)</script>" in err and "\x1b" not in err, err
    assert "waiting up to 5:00 for the browser" in first, first


def refused_login(daemon: Daemon, description: str) -> tuple[requests.Response, int, str]:
    """A browser login the provider refuses: the redirect brings `access_denied` and `description`
    as it stands in the query, form-encoded. Returns the page sesamectl answered, its exit status
    and its stderr."""
    process = login(daemon, "web", "--browser")
    try:
        process.stdout.readline()
        query = parse_qs(urlparse(process.stdout.readline()).query)
        target = (f'{query["redirect_uri"][0]}?state={query["state"][0]}&error=access_denied'
                  f"&error_description={description}")
        page = requests.get(target, timeout=30)
        _, err = process.communicate(timeout=60)
    finally:
        process.kill()
    return page, process.returncode, err


def test_a_form_encoded_refusal_is_shown_decoded(daemon, idp):
    """RFC 6749 Appendix B: the redirect's parameters are form-encoded, so `+` is a space; a
    provider's "The+user+denied+access" is shown as words, and %2B as the plus it is."""
    page, status, err = refused_login(daemon, "The+user+denied+access+%2B+left")
    assert "The user denied access + left" in page.text, page.text
    assert status == 1 and "(The user denied access + left)" in err, err


def line_within(stream, seconds: float = 30) -> str:
    """The next line of `stream`, or a failure (not a hang) when none comes."""
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.append(stream.readline()), daemon=True)
    reader.start()
    reader.join(seconds)
    assert lines, f"no line within {seconds} s"
    return lines[0]


def test_exec_login_logs_the_account_in_first_then_runs_the_command(daemon, idp, tmp_path):
    """`exec --login` on an account that needs a login: the login runs first, its screen on
    stderr so the command's output stays its own, then the command runs with the new token."""
    first = login(daemon, "local", "--device")
    try:
        idp.approve(re.fullmatch(r"Open (\S+) and enter the code (\S+)\n", first.stdout.readline())[2])
        out, err = first.communicate(timeout=60)
        assert first.returncode == 0, err
    finally:
        first.kill()
    account = re.search(r"logged in: (\S+)", out)[1]
    assert "error" not in call(daemon, "io.sesame.Accounts.Logout", {"account": account})

    script = 'printf %s "$SESAME_ACCESS_TOKEN" > "$0/env"; echo ran'
    process = subprocess.Popen(
        [str(SESAMECTL), "exec", "--socket", str(daemon.socket_path), "--account", account, "--login",
         "--", "sh", "-c", script, str(tmp_path)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert line_within(process.stderr) == f"{account} needs a new login; logging in with local.\n"
        shown = re.fullmatch(r"Open (\S+) and enter the code (\S+)\n", line_within(process.stderr))
        assert shown, "the device code is shown on stderr"
        idp.approve(shown[2])
        out, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 0, err
    assert out == "ran\n", "only the command's output is on stdout"
    token = (tmp_path / "env").read_text()
    assert token and token not in out + err
    assert call(daemon, "io.sesame.Accounts.GetToken", {"account": account})["parameters"]["accessToken"] == token


def test_login_name_gives_the_account_a_name_every_verb_takes(daemon, idp):
    process = login(daemon, "local", "--device", "--name", "desk")
    try:
        idp.approve(re.fullmatch(r"Open (\S+) and enter the code (\S+)\n", process.stdout.readline())[2])
        out, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 0, err
    account = re.search(r"logged in: (\S+)", out)[1]
    token = subprocess.run([str(SESAMECTL), "token", "desk", "--socket", str(daemon.socket_path)],
                           capture_output=True, text=True, timeout=30)
    same = token.stdout.strip() == get_token(daemon, account)
    assert token.returncode == 0 and same, token.stderr
    # A second login that may not take the name still logs in, and says how to name it.
    again = login(daemon, "local", "--device", "--name", "Desk!")
    try:
        idp.approve(re.fullmatch(r"Open (\S+) and enter the code (\S+)\n", again.stdout.readline())[2], "bob")
        out, err = again.communicate(timeout=60)
    finally:
        again.kill()
    assert again.returncode == 1 and "is logged in, but cannot be named 'Desk!'" in err, (out, err)
