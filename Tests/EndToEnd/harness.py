"""Starts the real sesamed and talks to it the way outside programs do: over its Unix socket,
with systemd's notify protocol on a datagram socket the test owns."""

import contextlib
import json
import os
import signal
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def bin_dir() -> Path:
    explicit = os.environ.get("SESAME_BIN_DIR")
    if explicit:
        return Path(explicit)
    out = subprocess.run(["swift", "build", "--show-bin-path"], cwd=REPO, check=True, capture_output=True, text=True)
    return Path(out.stdout.strip())


SESAMED = bin_dir() / "sesamed"
SESAMECTL = bin_dir() / "sesamectl"


class NotifyListener:
    """A datagram socket in place of systemd's NOTIFY_SOCKET; collects what the daemon reports."""

    def __init__(self, path: Path):
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        path.unlink(missing_ok=True)  # left by an earlier daemon in the same directory
        self.sock.bind(str(path))
        self.messages: list[dict[str, str]] = []

    def wait_for(self, key: str, value: str = "1", timeout: float = 20.0) -> dict[str, str]:
        """Returns the first message (old or new) that sets key=value, waiting up to timeout seconds."""
        for message in self.messages:
            if message.get(key) == value:
                return message
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.sock.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                data = self.sock.recv(4096)
            except socket.timeout:
                break
            message = dict(line.split("=", 1) for line in data.decode().splitlines() if "=" in line)
            self.messages.append(message)
            if message.get(key) == value:
                return message
        raise AssertionError(f"no {key}={value} within {timeout}s; got {self.messages}")

    def collect(self, seconds: float) -> list[dict[str, str]]:
        """Every message that arrives within the next `seconds`."""
        collected = []
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            self.sock.settimeout(left)
            try:
                data = self.sock.recv(4096)
            except socket.timeout:
                break
            collected.append(dict(line.split("=", 1) for line in data.decode().splitlines() if "=" in line))
        self.messages.extend(collected)
        return collected

    def close(self):
        self.sock.close()


# The providers the tests that import tokens by hand name: configured (ImportTokens refuses an
# unconfigured one) but unreachable, so a refresh they are asked for fails as an outage would.
OFFLINE_PROVIDERS = ("google", "kakao", "p")
OFFLINE_PROVIDER = (
    'issuer = "https://accounts.example"\ndiscovery = false\nclient_id = "sesame-tests"\n'
    'timeout = 2\n[endpoints]\ntoken = "http://127.0.0.1:9/token"\nrevocation = "http://127.0.0.1:9/revoke"\n'
)


class Daemon:
    """One sesamed process with its own socket, state directory and config file. Unless the
    config names a providers directory, it gets one with the offline providers."""

    def __init__(self, tmp: Path, config: str = "", extra_args=(), env=None, notify=True):
        self.tmp = tmp
        self.socket_path = tmp / "run" / "io.sesame"
        self.state_dir = tmp / "state"
        self.config_path = tmp / "sesamed.toml"
        self.config_path.write_text(config)
        if "providers_directory" not in config and "--providers-dir" not in extra_args:
            providers = tmp / "providers.d"
            providers.mkdir(exist_ok=True)
            for name in OFFLINE_PROVIDERS:
                (providers / f"{name}.toml").write_text(OFFLINE_PROVIDER)
            extra_args = ("--providers-dir", str(providers), *extra_args)
        self.log_path = tmp / "sesamed.log"
        self.notify = NotifyListener(tmp / "notify.sock") if notify else None
        environment = {k: v for k, v in os.environ.items() if k not in ("NOTIFY_SOCKET", "LISTEN_FDS", "LISTEN_PID")}
        if self.notify:
            environment["NOTIFY_SOCKET"] = str(self.notify.path)
        environment.update(env or {})
        self.log_file = open(self.log_path, "wb")
        self.process = subprocess.Popen(
            [
                str(SESAMED),
                "--config", str(self.config_path),
                "--socket", str(self.socket_path),
                "--state-dir", str(self.state_dir),
                *extra_args,
            ],
            stdin=subprocess.DEVNULL,
            stdout=self.log_file,
            stderr=subprocess.STDOUT,
            env=environment,
        )

    def wait_ready(self) -> dict[str, str]:
        return self.notify.wait_for("READY")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self, timeout: float = 15.0) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        finally:
            self.log_file.close()

    def kill(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.log_file.close()
        if self.notify:
            self.notify.close()


class RawConnection:
    """A Varlink connection with nothing in between: bytes out, NUL-terminated JSON replies in."""

    def __init__(self, path: Path, timeout: float = 10.0):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(str(path))
        self.buffer = b""

    def send_raw(self, data: bytes):
        self.sock.sendall(data)

    def send(self, method: str, parameters=None, **flags):
        message = {"method": method, **flags}
        if parameters is not None:
            message["parameters"] = parameters
        self.send_raw(json.dumps(message).encode() + b"\0")

    def reply(self) -> dict:
        """The next reply; raises EOFError when the server closed the connection instead."""
        while b"\0" not in self.buffer:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError("connection closed by sesamed")
            self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def call(self, method: str, parameters=None, **flags) -> dict:
        self.send(method, parameters, **flags)
        return self.reply()

    def is_closed_by_peer(self) -> bool:
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True

    def close(self):
        self.sock.close()


@contextlib.contextmanager
def running(instance: Daemon):
    """Waits until `instance` is ready, hands it out, and afterwards requires a clean stop
    (status 0, no crash in its log)."""
    try:
        instance.wait_ready()
        yield instance
        assert instance.stop() == 0, instance.log()
        assert "Fatal error" not in instance.log()
    finally:
        instance.kill()


@contextlib.contextmanager
def shared_daemon(config: str = ""):
    """A daemon whose socket other users can reach (pytest's own temporary directories are 0700)."""
    directory = Path(tempfile.mkdtemp(prefix="sesame-shared-"))
    directory.chmod(0o755)
    try:
        with running(Daemon(directory, config=config)) as instance:
            yield instance
    finally:
        shutil.rmtree(directory, ignore_errors=True)
