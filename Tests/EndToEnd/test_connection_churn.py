"""Connection churn from another user looks like a busy daemon, never like a dead one: a process
that connects and closes as fast as it can must not fill sesamed's queue of connections not
yet accepted (the listen backlog) so that the owner's sesamectl says "not running"."""

import subprocess
import time

import pytest

from harness import SESAMECTL

# Alone, after the parallel part of the suite (scripts/test): it bounds what the owner sees
# while an attack runs, which a test on the other worker would skew.
pytestmark = pytest.mark.serial

NOBODY = 65534
# Several churning processes, so that they refill the queue faster than sesamed empties it on a
# small machine: a client that only polls for room then goes seconds without finding any.
CHURNERS = 6
# Run as another uid: connects and closes in a loop for the given seconds, then prints how many
# connects succeeded and how many the kernel turned away (EAGAIN: the queue was full).
CHURNER = r"""
import socket, sys, time
path, seconds = sys.argv[1], float(sys.argv[2])
done = refused = 0
deadline = time.monotonic() + seconds
while time.monotonic() < deadline:
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.setblocking(False)
    try:
        connection.connect(path)
        done += 1
    except BlockingIOError:
        refused += 1
    except OSError:
        pass
    connection.close()
print(done, refused)
"""


def test_churn_from_another_user_never_makes_sesamectl_say_not_running(daemon_reachable_by_other_users):
    daemon = daemon_reachable_by_other_users
    churners = [subprocess.Popen(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
                                  "/usr/bin/python3", "-c", CHURNER, str(daemon.socket_path), "8"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(CHURNERS)]
    answers = []
    try:
        time.sleep(1)  # the churn is under way (nothing is asserted about how long anything takes)
        while any(churner.poll() is None for churner in churners) and len(answers) < 20:
            status = subprocess.run([str(SESAMECTL), "status", "--socket", str(daemon.socket_path)],
                                    capture_output=True, text=True, timeout=60)
            answers.append((status.returncode, status.stderr.strip()))
    finally:
        counts = [churner.communicate(timeout=60)[0].strip() for churner in churners]
    assert answers, "no status was asked while the churn went on"
    assert all(code == 0 for code, _ in answers), (answers, counts)
