"""sesamectl's loopback redirect listener (RFC 8252 §7.3) against other local users and busy
browsers: another uid can neither read the login's URL off a command line nor hand the listener
a code of its own account (§8.3 leaves the listener to defend itself), idle connections cannot
keep the browser out, and a provider's one registered port can be listened on again at once."""

import os
import socket
import subprocess
from urllib.parse import parse_qs, urlparse

import pytest
import requests

from harness import SESAMECTL, running, wait_until
from test_oauth import oauth_daemon
from test_sesamectl_login import as_browser

NOBODY = 65534
# Run as another uid: lists the login states on any process's command line, or delivers a
# redirect to the listener and prints the HTTP status it answered.
STRANGER = r"""
import os, re, sys, urllib.error, urllib.request
if sys.argv[1] == "scan":
    found = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            found.update(re.findall(r"state=([\w-]+)", open(f"/proc/{pid}/cmdline", "rb").read().decode("latin-1")))
        except OSError:
            pass
    print(" ".join(sorted(found)))
else:
    try:
        print(urllib.request.urlopen(sys.argv[2], timeout=30).status)
    except urllib.error.HTTPError as error:
        print(error.code)
"""


def as_stranger(*args) -> str:
    result = subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
                             "/usr/bin/python3", "-c", STRANGER, *args], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


@pytest.fixture
def browser_env(tmp_path):
    """A display and an xdg-open that notes what it was given and then stays running for a
    while, as a browser launcher does (its command line readable in /proc meanwhile)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    opener = bin_dir / "xdg-open"
    opener.write_text(f'#!/bin/sh\necho $$ > {tmp_path}/opener.pid\nprintf "%s\\n" "$1" > {tmp_path}/opened\n'
                      "sleep 30\n")
    opener.chmod(0o755)
    tmp_path.chmod(0o755)  # the stranger's scan is what is tested, not pytest's directory modes
    yield {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "DISPLAY": ":0"}
    if (tmp_path / "opener.pid").exists():
        subprocess.run(["pkill", "-P", (tmp_path / "opener.pid").read_text().strip()])


def start_login(daemon, env=None) -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen([str(SESAMECTL), "login", "web", "--socket", str(daemon.socket_path)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    first = process.stdout.readline()
    assert "for the browser" in first, first + process.stderr.read()
    return process, process.stdout.readline().strip()


def code_redirect(idp, url: str, username: str) -> str:
    """The redirect the provider sends `username`'s browser back with: the listener's URL with
    the login's state and a code of that user's account."""
    browser = requests.Session()
    browser.cookies.update(idp.login_cookie(username))
    answer = browser.get(url, allow_redirects=False, timeout=30)
    assert answer.status_code == 302, answer.text
    return answer.headers["Location"]


def test_another_user_cannot_read_the_login_url_off_a_command_line(tmp_path, idp, browser_env):
    with running(oauth_daemon(tmp_path, idp)) as daemon:
        process, url = start_login(daemon, env=browser_env)
        try:
            wait_until(lambda: (tmp_path / "opened").exists(), what="xdg-open to be started")
            state = parse_qs(urlparse(url).query)["state"][0]
            assert state not in as_stranger("scan").split(), "another user read the login's state in /proc"
            # What xdg-open was given leads another user nowhere.
            start = (tmp_path / "opened").read_text().strip()
            assert as_stranger("deliver", start) == "403"
        finally:
            process.kill()


def test_another_users_code_is_turned_away_and_the_login_goes_on(tmp_path, idp):
    """Had the state leaked anyway (a shoulder, a screen share), the stranger's redirect with it
    and a code of the stranger's own account gets an error page; the real browser still
    finishes the login as its own user."""
    with running(oauth_daemon(tmp_path, idp)) as daemon:
        process, url = start_login(daemon)
        try:
            assert as_stranger("deliver", code_redirect(idp, url, "alice")) == "403"
            page = as_browser(idp, url, username="bob")
            assert page.status_code == 200 and "logged in as Bob" in page.text, page.text
            out, err = process.communicate(timeout=60)
        finally:
            process.kill()
        assert process.returncode == 0 and "(Bob)" in out, (out, err)


def test_idle_connections_do_not_keep_the_browser_out(tmp_path, idp):
    with running(oauth_daemon(tmp_path, idp)) as daemon:
        process, url = start_login(daemon)
        listener = parse_qs(urlparse(url).query)["redirect_uri"][0]
        port = urlparse(listener).port
        idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(8)]
        try:
            page = as_browser(idp, url, username="bob")
            assert "logged in as Bob" in page.text, page.text
            out, err = process.communicate(timeout=60)
        finally:
            process.kill()
            for connection in idle:
                connection.close()
        assert process.returncode == 0, err


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_registered_redirect_port_serves_one_login_after_another(tmp_path, idp):
    """A provider that accepts only its registered redirect (Kakao, Naver) gets the same port
    each time; the last login's connections in TIME-WAIT do not keep the next one from it."""
    redirect = f"http://127.0.0.1:{free_port()}/callback"
    configured = oauth_daemon(tmp_path, idp)
    web = tmp_path / "providers.d" / "web.toml"
    web.write_text(web.read_text() + f'redirect_uri = "{redirect}"\n')
    with running(configured) as daemon:
        for user in ("alice", "bob"):
            process, url = start_login(daemon)
            try:
                assert parse_qs(urlparse(url).query)["redirect_uri"] == [redirect]
                as_browser(idp, url, username=user)
                out, err = process.communicate(timeout=60)
            finally:
                process.kill()
            assert process.returncode == 0 and out.startswith("logged in: web-"), err
