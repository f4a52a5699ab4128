"""What the owner sees while test_hostile_user.py's attacks run: root's GetToken latency, the
watchdog's pings and the daemon's memory, measured from outside, and the bounds they must keep."""

import math
import os
import threading
import time
from pathlib import Path

from harness import RawConnection, daemon_reachable_by_other_users, wait_until

OWNER_ACCESS = "AT-hostile-owner-4a1f"  # the owner's token, which each GetToken must return
P99_LIMIT = 0.050  # seconds: the owner's GetToken at p99 while an attack runs
WATCHDOG_USEC = 2_000_000  # WatchdogSec=2 s: sesamed pings every 1 s; no gap may reach 2 s
# The daemon's resident memory while it is attacked. It idles at ~45 MB; what an attacker may
# make it hold is bounded by the limits (1 MiB per message and connection, 32 accounts of at
# most ~170 kB per uid), so 256 MiB leaves room for the allocator and nothing for a leak that
# grows with the attack (the issue saw 600 MB).
RSS_LIMIT = 256 << 20

BASELINE_CALLS = 200  # the owner's calls before each attack, for the figures beside it
MIN_CALLS = 20  # the owner's calls a window must hold for its figures to mean anything


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


def latency_figures(latencies: list[float]) -> str:
    if not latencies:
        return "no call answered"
    return (f"p50 {percentile(latencies, 0.5) * 1000:.1f} ms, p99 {percentile(latencies, 0.99) * 1000:.1f} ms"
            f" of {len(latencies)}")


class Vitals:
    """What the owner sees while an attack runs, measured from outside: root's GetToken on one
    persistent connection, call after call (paced at one per 5 ms), the WATCHDOG=1 pings on the
    daemon's NOTIFY_SOCKET, and its resident memory and CPU time from /proc. Use as a context
    around the attack; afterwards `assert_owner_unharmed` checks the issue's bounds."""

    def __init__(self, daemon, account: str, phase: str):
        self.daemon, self.account, self.phase = daemon, account, phase
        self.pid = daemon.process.pid
        self.latencies: list[float] = []
        self.failures: list[dict] = []
        self.pings: list[float] = []
        self.rss: list[int] = []
        self.stopping = threading.Event()
        self.owner = RawConnection(daemon.socket_path, timeout=60)

    def __enter__(self):
        self.baseline = self._owner_calls_without_attack()
        self.started = time.monotonic()
        self.cpu_started = self.cpu_seconds()
        self.threads = [threading.Thread(target=self._ask_for_tokens, daemon=True),
                        threading.Thread(target=self._watch_daemon, daemon=True)]
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc):
        # An attack that ends within a few paced calls (a fast machine) would leave too few for a
        # percentile: the window stays open until the owner has been answered MIN_CALLS times, so
        # its last calls fall just after the attack, on the daemon it left.
        deadline = time.monotonic() + 60
        while (len(self.latencies) < MIN_CALLS and self.threads[0].is_alive()
               and time.monotonic() < deadline):
            time.sleep(0.01)
        self.stopping.set()
        for thread in self.threads:
            thread.join(60)
        self.ended = time.monotonic()
        self.cpu = self.cpu_seconds() - self.cpu_started
        self.owner.close()
        print(f"\n{self.phase}: {self.summary()}")

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def _owner_calls_without_attack(self) -> list[float]:
        """The owner's GetToken latencies on the same daemon before the attack starts, paced as
        under it: the baseline each attack's figures are read beside."""
        latencies: list[float] = []
        for _ in range(BASELINE_CALLS):
            if not self._ask_once(latencies):
                break
            time.sleep(0.005)
        return latencies

    def _ask_for_tokens(self):
        while not self.stopping.is_set() and self._ask_once(self.latencies):
            self.stopping.wait(0.005)  # pacing: the owner is a program, not a flood of its own

    def _ask_once(self, latencies: list[float]) -> bool:
        """One GetToken of the owner's, its latency added to `latencies`; False when the
        connection failed."""
        started = time.perf_counter()
        try:
            reply = self.owner.call("io.sesame.Accounts.GetToken", {"account": self.account})
        except (OSError, EOFError) as error:
            self.failures.append({"error": type(error).__name__})
            return False
        latencies.append(time.perf_counter() - started)
        if reply.get("parameters", {}).get("accessToken") != OWNER_ACCESS:
            self.failures.append({"error": reply.get("error"), "parameters": reply.get("error") and
                                  reply.get("parameters")})  # never a token
        return True

    def _watch_daemon(self):
        notify = self.daemon.notify.sock  # read here alone while the window lasts
        notify.settimeout(0.1)
        while not self.stopping.is_set():
            try:
                if b"WATCHDOG=1" in notify.recv(4096).split(b"\n"):
                    self.pings.append(time.monotonic())
            except TimeoutError:
                pass
            status = Path(f"/proc/{self.pid}/status").read_text()
            self.rss.append(int(status.split("VmRSS:")[1].split()[0]) * 1024)

    def wait_for_pings(self, count: int) -> float:
        """Waits until `count` more watchdog pings have come (the window then spans that many
        periods) and returns the daemon's CPU time meanwhile as a share of the time it took."""
        target, started, cpu = len(self.pings) + count, time.monotonic(), self.cpu_seconds()
        wait_until(lambda: len(self.pings) >= target, what=lambda: f"{count} watchdog pings: {self.pings}")
        return (self.cpu_seconds() - cpu) / (time.monotonic() - started)

    @property
    def p99(self) -> float:
        return percentile(self.latencies, 0.99)

    @property
    def longest_silence(self) -> float:
        """The longest time without a watchdog ping, the window's start and end included."""
        moments = [self.started, *self.pings, self.ended]
        return max(later - earlier for earlier, later in zip(moments, moments[1:]))

    def summary(self) -> str:
        if not self.latencies or not self.rss:
            return f"no owner call answered, {len(self.pings)} watchdog pings"
        return (f"{self.ended - self.started:.1f} s, owner GetToken x{len(self.latencies)}: "
                f"p50 {percentile(self.latencies, 0.5) * 1000:.1f} ms, p99 {self.p99 * 1000:.1f} ms, "
                f"max {max(self.latencies) * 1000:.1f} ms (no attack, same daemon: "
                f"{latency_figures(self.baseline)}); watchdog pings {len(self.pings)}, longest gap "
                f"{self.longest_silence:.2f} s; peak RSS {max(self.rss) >> 20} MiB; daemon CPU {self.cpu:.1f} s")

    def assert_owner_unharmed(self):
        """The issue's bounds, all checked, every one broken named at once."""
        broken = [what for what, holds in (
            (f"the owner's GetToken failed: {self.failures[:3]}", not self.failures),
            (f"fewer than {MIN_CALLS} calls of the owner's were answered", len(self.latencies) >= MIN_CALLS),
            (f"the owner's GetToken p99 reached {P99_LIMIT * 1000:.0f} ms", self.p99 < P99_LIMIT),
            (f"the watchdog went silent for WatchdogSec ({WATCHDOG_USEC / 1e6:.0f} s)",
             self.longest_silence < WATCHDOG_USEC / 1e6),
            (f"resident memory reached {RSS_LIMIT >> 20} MiB", max(self.rss) < RSS_LIMIT),
        ) if not holds]
        assert not broken, f"{self.phase}: {'; '.join(broken)} ({self.summary()})"


def watched_daemon(config: str = "", **daemon_args):
    """A daemon other uids reach, with a watchdog of WatchdogSec=2 s."""
    return daemon_reachable_by_other_users(config, env={"WATCHDOG_USEC": str(WATCHDOG_USEC)}, **daemon_args)
