"""Another user cannot flood sesamed's log, whatever it sends: malformed messages each get their
connection closed with InvalidMessage, calls each get their answer, but across all its
connections a uid's messages and connections make at most 30 lines a minute, and its calls at
most 60 more (the next line written after some were held back says how many: unit-tested, as it
takes a minute)."""

import json
import subprocess

import pytest

from harness import daemon_reachable_by_other_users, wait_until

# Alone, after the parallel part of the suite (scripts/test): it bounds what the owner sees
# while an attack runs, which a test on the other worker would skew.
pytestmark = pytest.mark.serial

NOBODY = 65534
# Run as another uid: sends `message` (and a NUL) on each of `count` connections, reading the
# answer before the next, and prints how many answers named the error `expected`.
SENDER = r"""
import socket, sys
path, count, message, expected = sys.argv[1], int(sys.argv[2]), sys.argv[3].encode(), sys.argv[4].encode()
answered = 0
for _ in range(count):
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.settimeout(30)
    connection.connect(path)
    connection.sendall(message + b"\0")
    reply = b""
    while not reply.endswith(b"\0"):
        chunk = connection.recv(4096)
        if not chunk:
            break
        reply += chunk
    answered += expected in reply
    connection.close()
print(answered)
"""
INVALID = "closing connection after an invalid message"
MISSING_ACCOUNT = json.dumps({"method": "io.sesame.Accounts.GetToken", "parameters": {"account": "no-such"}})
CONNECTION_LINES, CALL_LINES = 30, 60  # a minute, per uid


def as_nobody(script: str, *arguments: str) -> str:
    """What `script` printed, run by python as uid nobody."""
    ran = subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
                          "/usr/bin/python3", "-c", script, *arguments], capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    return ran.stdout.strip()


def test_malformed_messages_in_a_loop_write_a_bounded_number_of_log_lines(daemon_reachable_by_other_users):
    daemon = daemon_reachable_by_other_users
    assert as_nobody(SENDER, str(daemon.socket_path), "200", "this is not json", "InvalidMessage") == "200"
    lines = wait_until(lambda: [line for line in daemon.log().splitlines() if INVALID in line],
                       what="the first notice about an invalid message")
    assert 1 <= len(lines) <= CONNECTION_LINES, f"{len(lines)} lines for 200 invalid messages"
    assert all(f"{NOBODY}" in line for line in lines), lines


def test_calls_in_a_loop_write_a_bounded_number_of_log_lines_even_at_debug():
    """At debug every connection opened and closed and every failed call is a line: a user's
    lines are still spent from its budgets, whichever connection or call caused them."""
    with daemon_reachable_by_other_users('[daemon]\nlog_level = "debug"\n') as daemon:
        assert as_nobody(SENDER, str(daemon.socket_path), "300", MISSING_ACCOUNT, "NoSuchAccount") == "300"
        daemon.wait_for_log("connection closed")
        lines = [line for line in daemon.log().splitlines() if f"peer_uid={NOBODY}" in line]
        calls = [line for line in lines if "call failed" in line]
        assert 1 <= len(calls) <= CALL_LINES, f"{len(calls)} lines of failed calls for 300 calls"
        assert len(lines) <= CONNECTION_LINES + CALL_LINES, f"{len(lines)} lines for 300 calls"
