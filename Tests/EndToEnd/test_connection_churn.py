"""Connection churn from another user looks like a busy daemon, never like a dead one: a process
that connects and closes as fast as it can must not fill sesamed's queue of connections not
yet accepted (the listen backlog) so that the owner's sesamectl says "not running"."""

import json
import os
import socket
import subprocess
import time
from pathlib import Path

import pytest
import varlink

from harness import SESAMECTL, daemon_reachable_by_other_users, import_tokens, wait_until
from vitals import percentile

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


# Run as another uid: blocking connects (as C clients and the PyPI client make them), each closed
# at once, a fixed number of them or until a deadline; prints how many it made.
SPINNER = r"""
import socket, sys, time
path, count, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
deadline, done = time.monotonic() + seconds, 0
while done < count and time.monotonic() < deadline:
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.connect(path)
        done += 1
    except OSError:
        pass
    connection.close()
print(done)
"""
SPINNERS = 16
SPINS_EACH = 20_000
# Descriptors sesamed may hold beyond its connections: the store, the journal, the accept loop's
# pipe, NIO's selectors and wake-ups, and refused connections reading their answer (64).
DESCRIPTOR_RESERVE = 128


def resident_kib(pid: int) -> int:
    return int(Path(f"/proc/{pid}/status").read_text().split("VmRSS:")[1].split()[0])


def open_descriptors(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


def owner_round_trip(path, account: str) -> float:
    """connect + GetToken + close on a blocking socket, as a script would; the seconds it took."""
    started = time.perf_counter()
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.connect(str(path))
        connection.settimeout(60)  # after the connect, which stays blocking as a script's does
        connection.sendall(json.dumps({"method": "io.sesame.Accounts.GetToken",
                                       "parameters": {"account": account}}).encode() + b"\0")
        reply = b""
        while not reply.endswith(b"\0"):
            chunk = connection.recv(65536)
            assert chunk, "sesamed closed the owner's connection"
            reply += chunk
    finally:
        connection.close()
    assert json.loads(reply[:-1])["parameters"]["accessToken"] == "AT-spin-owner"
    return time.perf_counter() - started


def test_connect_spinning_from_another_user_leaves_the_owner_served_and_nothing_held():
    limits = "[limits]\nconnections_per_user = 16\nconnections_total = 64\n"
    with daemon_reachable_by_other_users(config=limits) as daemon:
        account = import_tokens(daemon, subject="owner", access_token="AT-spin-owner", expires_in=3600)["id"]
        pid = daemon.process.pid
        baseline = [owner_round_trip(daemon.socket_path, account) for _ in range(100)]
        idle = resident_kib(pid)
        spinners = [subprocess.Popen(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
                                      "/usr/bin/python3", "-c", SPINNER, str(daemon.socket_path),
                                      str(SPINS_EACH), "120"],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                     for _ in range(SPINNERS)]
        spun, peak, pypi_failures = [], 0, []
        try:
            while any(spinner.poll() is None for spinner in spinners):
                spun.append(owner_round_trip(daemon.socket_path, account))
                peak = max(peak, open_descriptors(pid))
                try:  # the PyPI client, as a third-party program calls sesamed
                    with varlink.Client(address=f"unix:{daemon.socket_path}") as client, \
                            client.open("org.varlink.service") as service:
                        service.GetInfo()
                except Exception as error:  # noqa: BLE001 -- any failure is the finding
                    pypi_failures.append(repr(error))
        finally:
            made = sum(int(spinner.communicate(timeout=120)[0] or 0) for spinner in spinners)
        print(f"\nowner connect+GetToken: baseline p50 {percentile(baseline, .5) * 1e3:.1f} ms "
              f"p99 {percentile(baseline, .99) * 1e3:.1f} ms; under {SPINNERS} spinners ({made} connects) "
              f"p50 {percentile(spun, .5) * 1e3:.1f} ms p99 {percentile(spun, .99) * 1e3:.1f} ms "
              f"({len(spun)} calls); peak descriptors {peak}; RSS idle {idle} KiB")
        assert spun, "the owner made no call while the spinners ran"
        assert not pypi_failures, pypi_failures
        assert peak <= 64 + 32 + DESCRIPTOR_RESERVE, peak  # connections_total + root's reserve
        wait_until(lambda: resident_kib(pid) <= 2 * idle, timeout=60,
                   what=f"resident memory back within twice its idle {idle} KiB")
