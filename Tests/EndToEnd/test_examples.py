"""The example programs, built with the package and run against the real sesamed: the
Swift one (Sources/sesame-example: SesameClient's `authorized` and `followEvents`) and the Python
one (docs/examples/watch_events.py: the PyPI varlink client alone)."""

import os
import subprocess
import sys
from pathlib import Path

from harness import SESAMED, call, import_tokens, running, subject_of, wait_until
from test_oauth import get_token, oauth_daemon

EXAMPLE = SESAMED.parent / "sesame-example"
WATCH_EVENTS = Path(__file__).resolve().parents[2] / "docs" / "examples" / "watch_events.py"


def environment(daemon) -> dict:
    return {**os.environ, "SESAME_SOCKET": str(daemon.socket_path)}


def test_the_swift_example_calls_an_api_and_recovers_from_a_rejected_token(tmp_path, idp):
    """sesamed is told the token lasts an hour, but the IdP lets it expire after 2 s: the API (the
    IdP's userinfo) answers 401, `authorized` reports it, sesamed refreshes, and the call succeeds."""
    idp.clear_faults()
    with running(oauth_daemon(tmp_path, idp)) as daemon:
        tokens = idp.device_login()
        account = import_tokens(
            daemon, provider="local", subject=subject_of(tokens["id_token"]), access_token=tokens["access_token"],
            refresh_token=tokens["refresh_token"], id_token=tokens["id_token"], expires_in=3600)
        wait_until(lambda: idp.userinfo(tokens["access_token"]).status_code == 401,
                   what="the IdP to let the access token expire")
        result = subprocess.run([str(EXAMPLE), "get", account["id"], idp.endpoint("userinfo")],
                                capture_output=True, text=True, timeout=60, env=environment(daemon))
        assert result.returncode == 0, result.stderr
        assert '"sub"' in result.stdout
        assert get_token(daemon, account["id"]) != tokens["access_token"], "sesamed refreshed once"


def run_watcher(command: list[str], daemon) -> subprocess.Popen:
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=environment(daemon))


def test_both_examples_print_the_events_as_they_happen(daemon):
    watchers = [run_watcher([str(EXAMPLE), "events", "2"], daemon),
                run_watcher([sys.executable, str(WATCH_EVENTS), "2"], daemon)]
    try:
        for watcher in watchers:
            assert watcher.stdout.readline() == "ready after sequence 0\n", watcher.stderr.read()
        alice = import_tokens(daemon, access_token="AT-example-1", expires_in=3600)["id"]
        assert "error" not in call(daemon, "io.sesame.Accounts.Logout", {"account": alice})
        for watcher in watchers:
            assert watcher.wait(30) == 0, watcher.stderr.read()
            assert watcher.stdout.read() == f"1 loggedIn {alice} active\n2 loggedOut {alice} loggedOut\n"
    finally:
        for watcher in watchers:
            watcher.kill()
            watcher.wait()
