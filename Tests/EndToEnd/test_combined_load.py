"""Another user's worst at once: wide messages just under the size parsed off the event loop,
connection churn that keeps the listen queue full, and pipelined calls whose replies are never
read. The owner's GetToken on an open connection stays within the bounds of vitals.py, and the
owner's sesamectl, which must connect anew each time, is answered every time."""

import json
import subprocess
import time

import pytest

from harness import SESAMECTL, wait_until
from test_connection_churn import CHURNER, DESCRIPTOR_RESERVE, open_descriptors, resident_kib
from test_event_loop_share import CLIFF_CONNECTIONS, UNREAD_CONNECTIONS
from test_hostile_user import NOBODY, UIDS_WITHOUT_ENTRIES, as_user, hostile, owner_account
from vitals import Vitals, watched_daemon

# Alone, after the parallel part of the suite (scripts/test): it bounds what the owner sees
# while an attack runs, which a test on the other worker would skew.
pytestmark = pytest.mark.serial

SECONDS = 8
# Two processes churning in a tight loop keep the listen queue full (see test_connection_churn.py);
# more would measure how the machine shares its cores among the attackers more than sesamed.
CHURNERS = 2


def test_wide_messages_churn_and_unread_replies_at_once_leave_the_owner_served():
    with watched_daemon() as daemon:
        account = owner_account(daemon)
        socket_path = str(daemon.socket_path)
        with Vitals(daemon, account, "wide messages, churn and unread replies at once") as vitals:
            attackers = [hostile(NOBODY, "cliff", socket_path, CLIFF_CONNECTIONS, SECONDS, 16383),
                         hostile(NOBODY, "unread", socket_path, UNREAD_CONNECTIONS, SECONDS)]
            churners = [subprocess.Popen(as_user(NOBODY, "/usr/bin/python3", "-c", CHURNER, socket_path, str(SECONDS)),
                                         stdout=subprocess.PIPE, text=True) for _ in range(CHURNERS)]
            answers = []
            while any(process.poll() is None for process in attackers + churners):
                status = subprocess.run([str(SESAMECTL), "status", "--socket", socket_path],
                                        capture_output=True, text=True, timeout=60)
                answers.append((status.returncode, status.stderr.strip()))
                time.sleep(0.1)  # the owner is a person at a prompt, not a flood of its own
            outputs = [process.communicate(timeout=600)[0] for process in attackers + churners]
        assert all(process.returncode == 0 for process in attackers + churners), outputs
        print(f"stranger's calls: {json.loads(outputs[0])}, {json.loads(outputs[1])}; "
              f"churn (connected, refused): {[output.strip() for output in outputs[2:]]}")
        assert answers, "sesamectl status was never asked while the attack ran"
        assert all(code == 0 for code, _ in answers), answers
        vitals.assert_owner_unharmed()


# Who runs what in the memory test: wide messages of 200 kB pipelined and replies never read
# from one user, 1 MB messages with a deep one after from another (alone, as one user's
# half-read messages together are bounded and would close some), each from many connections.
MEMORY_FLOOD = ((NOBODY, "cliff", 16, 200_000), (NOBODY, "unread", 64), (UIDS_WITHOUT_ENTRIES[0], "nest", 4))
PER_USER_CONNECTIONS = 128  # [limits] connections_per_user, default: each attacker's at most


def test_memory_a_flood_left_is_given_back_within_a_minute():
    """glibc keeps what its arenas free, and after such a flood sesamed stayed at three times its
    idle size for good; MemoryReturnService gives it back. The descriptors in use stay within
    the connection limits and a fixed reserve throughout."""
    with watched_daemon() as daemon:
        owner_account(daemon)
        pid, socket_path = daemon.process.pid, str(daemon.socket_path)
        idle = resident_kib(pid)
        attackers = [hostile(uid, kind, socket_path, connections, SECONDS, *size)
                     for uid, kind, connections, *size in MEMORY_FLOOD]
        peak, descriptors = idle, 0
        while any(process.poll() is None for process in attackers):
            peak, descriptors = max(peak, resident_kib(pid)), max(descriptors, open_descriptors(pid))
            time.sleep(0.1)
        outputs = [process.communicate(timeout=600)[0] for process in attackers]
        assert all(process.returncode == 0 for process in attackers), outputs
        # The minute is what the person waits, not a timing: memory goes back every 20 s.
        wait_until(lambda: resident_kib(pid) <= 2 * idle, timeout=60,
                   what=lambda: f"resident memory back within twice its idle {idle} KiB "
                                f"(peak {peak} KiB, now {resident_kib(pid)} KiB)")
        print(f"\nRSS idle {idle} KiB, peak {peak} KiB under the flood, {resident_kib(pid)} KiB after; "
              f"peak descriptors {descriptors}")
        assert descriptors <= 2 * PER_USER_CONNECTIONS + DESCRIPTOR_RESERVE, descriptors
