"""Messages just under the size that is parsed off the event loop cost the most where the loop
is shared: another user pipelining them must not hold up the owner's calls. sesamed bounds the
bytes it parses on the loop per turn, not only the calls."""

import json

import pytest

from test_hostile_user import NOBODY, hostile, owner_account
from vitals import Vitals, watched_daemon

# Alone, after the parallel part of the suite (scripts/test): it bounds what the owner sees
# while an attack runs, which a test on the other worker would skew.
pytestmark = pytest.mark.serial

CLIFF_CONNECTIONS = 4
CLIFF_SECONDS = 5


# Just under 64 KiB (the off-loop size before, where 32 in a row held the loop for 0.7 s in a
# debug build) and just under 16 KiB (the off-loop size now).
@pytest.mark.parametrize("size", [65535, 16383])
def test_wide_messages_just_under_the_off_loop_size_leave_the_owner_served(size):
    """`nobody` keeps four connections busy for a few seconds, each pipelining 64 calls of
    `size` bytes whose parameter is `[[],[],...]` (each answered InvalidParameter); meanwhile
    the owner is served within the bounds of vitals.py, and the watchdog pings."""
    with watched_daemon() as daemon:
        account = owner_account(daemon)
        with Vitals(daemon, account, f"wide calls of {size} bytes") as vitals:
            attacker = hostile(NOBODY, "cliff", daemon.socket_path, CLIFF_CONNECTIONS, CLIFF_SECONDS, size)
            out, _ = attacker.communicate(timeout=600)
        assert attacker.returncode == 0
        answered = json.loads(out)["answered"]
        print(f"stranger's calls answered: {answered}")
        assert answered >= CLIFF_CONNECTIONS * 64, answered
        vitals.assert_owner_unharmed()


UNREAD_CONNECTIONS = 16
UNREAD_SECONDS = 5


def test_pipelined_calls_whose_replies_are_never_read_leave_the_owner_served():
    """`nobody` keeps 16 connections pipelining calls with large replies and never reads one;
    sesamed stops reading a connection whose replies do not leave, so the owner is served within
    the bounds of vitals.py meanwhile."""
    with watched_daemon() as daemon:
        account = owner_account(daemon)
        with Vitals(daemon, account, "pipelined calls, replies never read") as vitals:
            attacker = hostile(NOBODY, "unread", daemon.socket_path, UNREAD_CONNECTIONS, UNREAD_SECONDS)
            out, _ = attacker.communicate(timeout=600)
        assert attacker.returncode == 0
        print(f"stranger's calls sent: {json.loads(out)['sent']}")
        vitals.assert_owner_unharmed()
