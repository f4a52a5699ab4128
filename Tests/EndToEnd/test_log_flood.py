"""Another user sending malformed messages in a loop cannot flood sesamed's log: each gets its
connection closed with InvalidMessage, but only a few lines a minute per uid are written, and
the next line written says how many were held back."""

import subprocess

import pytest

from harness import wait_until

# Alone, after the parallel part of the suite (scripts/test): it bounds what the owner sees
# while an attack runs, which a test on the other worker would skew.
pytestmark = pytest.mark.serial

NOBODY = 65534
# Run as another uid: sends one malformed message on each of `count` connections, reading the
# answer before the next, and prints how many InvalidMessage answers came back.
SENDER = r"""
import socket, sys
path, count = sys.argv[1], int(sys.argv[2])
answered = 0
for _ in range(count):
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.settimeout(30)
    connection.connect(path)
    connection.sendall(b"this is not json\0")
    reply = b""
    while not reply.endswith(b"\0"):
        chunk = connection.recv(4096)
        if not chunk:
            break
        reply += chunk
    answered += b"InvalidMessage" in reply
    connection.close()
print(answered)
"""
INVALID = "closing connection after an invalid message"


def test_malformed_messages_in_a_loop_write_a_bounded_number_of_log_lines(daemon_reachable_by_other_users):
    daemon = daemon_reachable_by_other_users
    sent = subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
                           "/usr/bin/python3", "-c", SENDER, str(daemon.socket_path), "200"],
                          capture_output=True, text=True, timeout=120)
    assert sent.returncode == 0 and sent.stdout.strip() == "200", sent.stderr
    lines = wait_until(lambda: [line for line in daemon.log().splitlines() if INVALID in line],
                       what="the first notice about an invalid message")
    assert 1 <= len(lines) <= 10, f"{len(lines)} lines for 200 invalid messages"
    assert all(f"{NOBODY}" in line for line in lines), lines
