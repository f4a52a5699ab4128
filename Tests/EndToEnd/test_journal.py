"""sesamed logging to a real systemd-journald: structured fields (SESAME_ACCOUNT=,
SESAME_PROVIDER=, SESAME_EVENT=, PEER_UID=), priorities that match the severity, and no token
anywhere in the journal, read back with `journalctl --directory … -o json`.

The journald is the machine's own binary, run in a mount namespace of its own (`unshare -m`)
with temporary directories bind-mounted over /run/systemd (its sockets, and a journald.conf.d
drop-in: volatile storage, no kernel log, nothing forwarded) and /run/log (where it writes the
journal). Nothing outside the namespace sees it. sesamed starts inside that namespace (setns in
the child before exec), its stdout and stderr connected to journald's stream socket and
JOURNAL_STREAM naming that socket, as systemd does for a service with StandardError=journal;
it then writes its entries to /run/systemd/journal/socket with sd_journal_sendv (the native
protocol), which in the namespace is this journald."""

import ctypes
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest

from harness import Daemon, RawConnection, import_tokens, running, wait_until

# Where Debian's systemd package puts it (the same file where /lib is /usr/lib).
JOURNALD = next((path for path in map(Path, ("/usr/lib/systemd/systemd-journald", "/lib/systemd/systemd-journald"))
                 if path.exists()), Path("/usr/lib/systemd/systemd-journald"))
CLONE_NEWNS = 0x00020000

# Only the test's own entries: nothing read from the kernel, nothing passed on, no rate limit.
JOURNALD_CONF = """[Journal]
Storage=volatile
ReadKMsg=no
ForwardToSyslog=no
ForwardToKMsg=no
ForwardToConsole=no
ForwardToWall=no
RateLimitIntervalSec=0
"""

# Inside the namespace: the temporary directories over /run/systemd and /run/log, then journald.
NAMESPACE_SCRIPT = ('mkdir -p /run/systemd /run/log && mount --bind "$1" /run/systemd && mount --bind "$2" /run/log'
                    ' && exec "$3"')


def unshare_unavailable() -> str | None:
    """Why this test cannot make a mount namespace here, or None when it can."""
    if shutil.which("unshare") is None:
        return "unshare (util-linux) is not installed"
    probe = subprocess.run(["unshare", "--mount", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        return f"unshare --mount is not permitted here: {probe.stderr.strip()}"
    return None


class Journald:
    """A systemd-journald in a mount namespace of its own, writing under `tmp`."""

    def __init__(self, tmp: Path):
        self.run_systemd = tmp / "run-systemd"
        self.run_log = tmp / "run-log"
        (self.run_systemd / "journal").mkdir(parents=True)
        (self.run_systemd / "journald.conf.d").mkdir()
        (self.run_systemd / "journald.conf.d" / "zz-sesame-test.conf").write_text(JOURNALD_CONF)
        self.run_log.mkdir()
        self.output_path = tmp / "journald.out"
        self.output = open(self.output_path, "wb")
        self.process = subprocess.Popen(
            ["unshare", "--mount", "--propagation", "private", "sh", "-c", NAMESPACE_SCRIPT, "sh",
             str(self.run_systemd), str(self.run_log), str(JOURNALD)],
            stdin=subprocess.DEVNULL, stdout=self.output, stderr=subprocess.STDOUT)
        try:
            wait_until(self.accepts_streams, what=self.why_not_ready)
            # unshare and sh exec into journald: its pid is this process's, its namespace the test's.
            self.namespace = os.open(f"/proc/{self.process.pid}/ns/mnt", os.O_RDONLY)
        except BaseException:
            self.process.kill()
            self.process.wait()
            self.output.close()
            raise

    @property
    def directory(self) -> Path:
        """The journal directory as seen from outside the namespace (/run/log/journal inside)."""
        return self.run_log / "journal"

    def accepts_streams(self) -> bool:
        if self.process.poll() is not None:
            raise AssertionError(f"journald exited with {self.process.returncode}: {self.why_not_ready()}")
        try:
            self.stream("probe").close()
        except OSError:
            return False
        return self.directory.is_dir()

    def why_not_ready(self) -> str:
        return f"journald to accept streams; it said: {self.output_path.read_text(errors='replace')!r}"

    def stream(self, identifier: str) -> socket.socket:
        """A connection to journald's stdout stream, its header sent: what systemd gives a
        service as stdout and stderr (priority info, no level prefixes, nothing forwarded)."""
        stream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            stream.connect(str(self.run_systemd / "journal" / "stdout"))
            stream.sendall(f"{identifier}\n\n6\n0\n0\n0\n0\n".encode())
        except OSError:
            stream.close()
            raise
        return stream

    def settle(self):
        """Returns once journald has stored every entry sent before this call: it reads its
        native socket in order, so a marker sent now is stored after them."""
        marker = secrets.token_hex(8)
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sender:
            sender.sendto(f"MESSAGE={marker}\nSYSLOG_IDENTIFIER=sesame-test\n".encode(),
                          str(self.run_systemd / "journal" / "socket"))
        wait_until(lambda: any(entry.get("MESSAGE") == marker for entry in self.entries()),
                   what="journald to store the marker")

    def entries(self) -> list[dict]:
        """Every entry of the journal, as `journalctl -o json` prints them."""
        out = subprocess.run(
            ["journalctl", "--directory", str(self.directory), "-o", "json", "--no-pager", "--all"],
            check=True, capture_output=True, text=True).stdout
        return [json.loads(line) for line in out.splitlines() if line.strip()]

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        os.close(self.namespace)
        self.output.close()


def in_namespace_with_output_to(journald: Journald, stream: socket.socket):
    """A preexec_fn for sesamed: enter journald's mount namespace and make the stream its
    stdout and stderr (after subprocess set them, before exec)."""
    libc = ctypes.CDLL(None, use_errno=True)
    namespace, descriptor = journald.namespace, stream.fileno()

    def enter():
        if libc.setns(namespace, CLONE_NEWNS) != 0:
            raise OSError(ctypes.get_errno(), "setns into journald's mount namespace")
        os.dup2(descriptor, 1)
        os.dup2(descriptor, 2)

    return enter


@pytest.fixture
def journald(tmp_path):
    reason = unshare_unavailable()
    if reason:
        pytest.skip(reason)
    assert JOURNALD.exists(), f"{JOURNALD} is missing: systemd is part of what this project builds on"
    # Not under tmp_path: socket paths must stay short (108 bytes) whatever pytest's basetemp is.
    directory = Path(tempfile.mkdtemp(prefix="sesame-journald-"))
    try:
        instance = Journald(directory)
        try:
            yield instance
        finally:
            instance.stop()
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def sesamed_entries(journald: Journald, pid: int) -> list[dict]:
    return [entry for entry in journald.entries() if entry.get("_PID") == str(pid)]


def only(entries: list[dict], **fields) -> dict:
    """The one entry with all of `fields`; fails listing what there was."""
    found = [entry for entry in entries if all(entry.get(key) == value for key, value in fields.items())]
    assert len(found) == 1, (fields, [{k: v for k, v in e.items() if not k.startswith("_")} for e in entries])
    return found[0]


def test_entries_carry_account_provider_event_and_peer_at_their_severity(journald, tmp_path):
    stream = journald.stream("sesamed")
    status = os.fstat(stream.fileno())
    (tmp_path / "daemon").mkdir()
    daemon = Daemon(tmp_path / "daemon", env={"JOURNAL_STREAM": f"{status.st_dev}:{status.st_ino}"},
                    preexec_fn=in_namespace_with_output_to(journald, stream))
    stream.close()  # sesamed holds its own copies
    access, refresh = "AT-" + secrets.token_hex(16), "RT-" + secrets.token_hex(16)
    with running(daemon):
        conn = RawConnection(daemon.socket_path)
        account = import_tokens(conn, provider="google", subject="alice", access_token=access,
                                refresh_token=refresh, expires_in=3600)["id"]
        # The offline provider is unreachable: the refresh fails (a warning) and so does the
        # revocation at logout, which still logs the account out (another warning).
        assert "error" in conn.call("io.sesame.Accounts.Refresh", {"account": account})
        assert "error" not in conn.call("io.sesame.Accounts.Logout", {"account": account})
        # A config that does not parse: the reload fails and says so as an error.
        daemon.config_path.write_text("[daemon\n")
        daemon.process.send_signal(signal.SIGHUP)
        wait_until(lambda: any(e.get("PRIORITY") == "3" for e in sesamed_entries(journald, daemon.process.pid)),
                   what="the failed reload in the journal")
        conn.close()
    journald.settle()
    # No token in any field of any entry, nor in the journal files themselves (checked first:
    # the failures below list the entries).
    everything = json.dumps(journald.entries())
    raw = b"".join(path.read_bytes() for path in journald.directory.rglob("*.journal"))
    assert account in everything and account.encode() in raw  # the search itself finds what is there
    for token in (access, refresh):
        assert token not in everything and token.encode() not in raw, "a token reached the journal"

    entries = sesamed_entries(journald, daemon.process.pid)
    caller = {"PEER_UID": str(os.getuid()), "PEER_PID": str(os.getpid())}
    ours = {"SESAME_ACCOUNT": account, "SESAME_PROVIDER": "google", **caller}

    # Every entry came over the native protocol, never as a line on the stream.
    assert entries and all(e["_TRANSPORT"] == "journal" and e["SYSLOG_IDENTIFIER"] == "sesamed" for e in entries)
    only(entries, MESSAGE="tokens imported", PRIORITY="6", **ours)
    only(entries, SESAME_EVENT="loggedIn", MESSAGE="loggedIn", PRIORITY="6", **ours)
    only(entries, SESAME_EVENT="refreshFailed", PRIORITY="4", **ours)
    only(entries, SESAME_EVENT="loggedOut", SESAME_REASON="user", PRIORITY="6", **ours)
    only(entries, MESSAGE="logged out", PRIORITY="6", **ours)
    only(entries, MESSAGE="could not revoke at the provider; wiping the tokens here anyway", PRIORITY="4", **ours)
    only(entries, MESSAGE="reload failed; keeping the running configuration", PRIORITY="3")
    # What the daemon does by itself names no peer.
    assert "PEER_UID" not in only(entries, MESSAGE="providers configured", PRIORITY="6")
    # The peer's fields are its own, not SESAME_PEER_*.
    assert not any(key.startswith("SESAME_PEER") for entry in entries for key in entry)
