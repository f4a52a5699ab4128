"""Half-sent messages cost sesamed only for a while and only so much: a connection that holds
part of a message without completing one is closed after `unfinished_message_timeout`, and one
uid's connections together hold at most eight of the largest messages' worth of them."""

import subprocess

import pytest

from harness import wait_until
from test_hostile_user import NOBODY, owner_account
from vitals import Vitals, watched_daemon

# Alone, after the parallel part of the suite (scripts/test): it bounds what the owner sees
# while an attack runs, which a test on the other worker would skew.
pytestmark = pytest.mark.serial

MAX = 1 << 20  # max_message_size, the daemon's default
CONNECTIONS = 32
# Run as another uid: opens `count` connections, sends each all but the last byte of a message
# of `size` bytes, and keeps them open until stdin closes, then prints how many sesamed closed.
HOLDER = r"""
import socket, sys, select
path, count, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
held = []
for _ in range(count):
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.connect(path)
    try:
        connection.sendall(b'{"method":"io.sesame.Accounts.List","parameters":{"x":"' + b"x" * (size - 60))
    except OSError:
        pass
    held.append(connection)
print("sent", flush=True)
sys.stdin.read()
def closed_by_peer(connection):
    # sesamed closing with part of a message unread makes the kernel reset the connection.
    if not select.select([connection], [], [], 0)[0]:
        return False
    try:
        return not connection.recv(65536)
    except ConnectionResetError:
        return True
print(sum(1 for c in held if closed_by_peer(c)), flush=True)
"""


def holder(daemon, count: int, size: int) -> subprocess.Popen:
    process = subprocess.Popen(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
                                "/usr/bin/python3", "-c", HOLDER, str(daemon.socket_path), str(count), str(size)],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert process.stdout.readline().strip() == "sent"
    return process


def closed_by_sesamed(process: subprocess.Popen) -> int:
    out, _ = process.communicate("", timeout=60)
    return int(out.strip())


def test_a_users_unfinished_messages_are_held_to_eight_of_the_largest():
    with watched_daemon() as daemon:
        account = owner_account(daemon)
        with Vitals(daemon, account, "unfinished messages") as vitals:
            process = holder(daemon, CONNECTIONS, MAX)
            wait_until(lambda: "unfinished messages would hold too many bytes" in daemon.log(),
                       what="sesamed to close a connection over the user's allowance")
            # The owner is asked while the stranger still holds what it was let keep.
            wait_until(lambda: len(vitals.latencies) >= 40, what="the owner's calls")
            closed = closed_by_sesamed(process)
        # Eight (less a little: a buffer's capacity counts, not only what it holds) may stay.
        assert CONNECTIONS - 8 <= closed < CONNECTIONS, closed
        vitals.assert_owner_unharmed()


def test_a_connection_that_never_finishes_its_message_is_closed():
    with watched_daemon("[limits]\nunfinished_message_timeout = 1\n") as daemon:
        process = holder(daemon, 1, 4096)
        wait_until(lambda: "a message stayed unfinished for too long" in daemon.log(),
                   what="sesamed to close the connection")
        assert closed_by_sesamed(process) == 1
