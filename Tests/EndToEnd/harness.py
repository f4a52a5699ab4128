"""Starts the real sesamed and talks to it the way outside programs do: over its Unix socket,
with systemd's notify protocol on a datagram socket the test owns.

Which daemon to use (the one place that says so):

- the `daemon` fixture (conftest.py): a sesamed on a *private* socket under pytest's tmp_path.
  pytest's temporary directories are 0700, so only the user running the tests can connect.
  Some modules (test_oauth.py, test_any_provider.py, test_provider_*.py, ...) override it with
  a daemon configured for their providers; it is still private.
- `daemon_reachable_by_other_users(config)` (below), and the fixture of the same name in
  conftest.py (empty config): a sesamed whose socket lies in a 0755 directory of its own, for
  tests that connect as other uids (setpriv).
- `Daemon(tmp, config)` with `running(...)`, or by hand, for tests that start, restart or kill
  daemons themselves.

Helpers every test module shares: `call` (one Varlink call on a connection of its own),
`import_tokens` / `import_from_idp` (accounts from tokens, as an app that logged in by itself
hands them over), `Subscription` (a raw io.sesame.Events subscription, read in order), and
`wait_until` (the one way to wait for something to happen: a condition polled against a
generous deadline, never a fixed sleep, so that the suite passes on a busy machine). A short
fixed sleep is left only where a test gives the daemon a chance to do something wrong and no
condition can show that it did not; each one says so, and none can fail a test by itself.
"""

import atexit
import base64
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
    """Where the binaries under test are: SESAME_BIN_DIR, or else the release build as shipped
    (scripts/lib/release-build; scripts/test builds it), never the debug build by default: the
    optimizer and the statically linked runtime are part of what users run."""
    explicit = os.environ.get("SESAME_BIN_DIR")
    if explicit:
        return Path(explicit)
    out = subprocess.run(["bash", "-c", 'source scripts/lib/release-build && swift build "${release_build[@]}" '
                          "--show-bin-path"], cwd=REPO, check=True, capture_output=True, text=True)
    return Path(out.stdout.strip())


SESAMED = bin_dir() / "sesamed"
SESAMECTL = bin_dir() / "sesamectl"


def credential_helpers() -> Path:
    """A directory with the credential helpers and sesame-notify as they are installed: links,
    under git's and docker's names for them and sesame-notify's, to sesamectl-commands, which
    is the program its name says (a build makes no links). Readable by every uid, as /usr/bin
    is; removed when the tests end."""
    directory = Path(tempfile.mkdtemp(prefix="sesame-helpers-"))
    directory.chmod(0o755)
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    for name in ("git-credential-sesame", "docker-credential-sesame", "sesame-notify"):
        (directory / name).symlink_to(bin_dir().resolve() / "sesamectl-commands")
    return directory


GIT_CREDENTIAL_SESAME = credential_helpers() / "git-credential-sesame"
DOCKER_CREDENTIAL_SESAME = GIT_CREDENTIAL_SESAME.with_name("docker-credential-sesame")
SESAME_NOTIFY = GIT_CREDENTIAL_SESAME.with_name("sesame-notify")


def wait_until(condition, timeout: float = 30.0, what="the condition", interval: float = 0.05):
    """Polls condition() every `interval` seconds until it returns something true, and returns
    that. Fails the test if that has not happened within `timeout` seconds, saying `what` it
    waited for (a string, or a function returning one, called only then).

    The one way these tests wait for something to happen. The deadline is generous on purpose:
    the suite must pass on a busy machine, so the time a thing takes is never what is tested
    here; a test that means to bound it asserts that separately."""
    deadline = time.monotonic() + timeout
    while not (result := condition()):
        if time.monotonic() >= deadline:
            raise AssertionError(f"waited {timeout}s for {what() if callable(what) else what}")
        time.sleep(interval)
    return result


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
    config names a providers directory, it gets one with the offline providers. `preexec_fn`
    runs in the child before sesamed starts (e.g. to lower its open-file limit)."""

    def __init__(self, tmp: Path, config: str = "", extra_args=(), env=None, notify=True, preexec_fn=None):
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
            preexec_fn=preexec_fn,
        )

    def wait_ready(self) -> dict[str, str]:
        return self.notify.wait_for("READY")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_for_log(self, text: str, count: int = 1, timeout: float = 30.0):
        """Waits until `text` appears `count` times in the log (a reload, say, is done)."""
        wait_until(lambda: self.log().count(text) >= count, timeout,
                   what=lambda: f"{count} x {text!r} in the log:\n{self.log()}")

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
def daemon_reachable_by_other_users(config: str = "", **daemon_args):
    """A running daemon (as `running` hands it out) whose socket other users can reach: it lives
    in a 0755 directory of its own, since pytest's temporary directories are 0700. The `daemon`
    fixture's socket is private to the user running the tests. `daemon_args` go to Daemon."""
    directory = Path(tempfile.mkdtemp(prefix="sesame-shared-"))
    directory.chmod(0o755)
    try:
        with running(Daemon(directory, config=config, **daemon_args)) as instance:
            yield instance
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def verify_units(*unit_files, user: bool, env: dict | None = None) -> subprocess.CompletedProcess:
    """`systemd-analyze [--user] verify` of unit files given by path. The user manager's verify
    loads every installed user unit too, under a runtime directory of its own: a short one, since
    a socket path under it (gpg-agent's, say) must fit sun_path's 108 bytes and pytest's
    directories need not."""
    with tempfile.TemporaryDirectory(prefix="xdg-") as runtime:
        return subprocess.run(["systemd-analyze"] + (["--user"] if user else []) + ["verify"]
                              + [str(path) for path in unit_files], capture_output=True, text=True,
                              timeout=60, env={**(env or os.environ), "XDG_RUNTIME_DIR": runtime})


def call(daemon: Daemon, method: str, parameters: dict) -> dict:
    """One Varlink call on a connection of its own, closed afterwards; the reply as it came."""
    conn = RawConnection(daemon.socket_path, timeout=30)
    try:
        return conn.call(method, parameters)
    finally:
        conn.close()


def import_tokens(via, *, access_token: str, provider: str = "google", subject: str = "alice",
                  refresh_token: str | None = None, id_token: str | None = None, expires_in: int | None = None,
                  scopes: list[str] | None = None, display_name: str | None = None,
                  refresh_expires_in: int | None = None) -> dict:
    """Hands tokens to sesamed with io.sesame.Accounts.ImportTokens, as an app that logged in by
    itself does, and returns the account from the reply; an error reply fails the test. Arguments
    left at None are not sent at all (sesamed then uses what it knows, e.g. no expiry).

    `via` is who makes the call: a Daemon (a connection of its own, as `call`), an open
    RawConnection (the call goes over it, in order with what else it carries), or a function
    (method, parameters) -> reply for calls made another way, e.g. by peer.py as another uid.

    The tests that check ImportTokens' refusals call it directly; `sesamectl import` (the CLI's
    own path to the same method) is tested with sesamectl itself."""
    tokens = {"accessToken": access_token}
    for key, value in (("refreshToken", refresh_token), ("idToken", id_token), ("expiresIn", expires_in),
                       ("scopes", scopes), ("refreshExpiresIn", refresh_expires_in)):
        if value is not None:
            tokens[key] = value
    parameters = {"provider": provider, "subject": subject}
    if display_name is not None:
        parameters["displayName"] = display_name
    parameters["tokens"] = tokens
    method = "io.sesame.Accounts.ImportTokens"
    if isinstance(via, Daemon):
        reply = call(via, method, parameters)
    elif isinstance(via, RawConnection):
        reply = via.call(method, parameters)
    else:
        reply = via(method, parameters)
    assert "error" not in reply, reply
    return reply["parameters"]["account"]


def subject_of(id_token: str) -> str:
    """The `sub` claim of an ID token (read, not verified)."""
    payload = id_token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))["sub"]


def import_from_idp(daemon: Daemon, idp) -> tuple[dict, dict]:
    """Logs in at the test identity provider (idp_harness.IdentityProvider) by itself, with DOT's
    device flow rather than through sesamed, and imports the tokens as provider `local` (the
    device client, as test_oauth.py's and test_any_provider.py's daemons name it). Returns the
    account and DOT's token response."""
    tokens = idp.device_login()
    account = import_tokens(
        daemon, provider="local", subject=subject_of(tokens["id_token"]), access_token=tokens["access_token"],
        refresh_token=tokens["refresh_token"], id_token=tokens["id_token"], expires_in=tokens["expires_in"],
        scopes=tokens["scope"].split())
    return account, tokens


class Subscription:
    """A raw io.sesame.Events subscription, read in order. `parameters` are Subscribe's (kinds,
    accounts, since); `ready` is what the first reply said ({"ready": {"sequence": n}}) and
    `sequence` that number. Reads wait up to `timeout` seconds (a reply's socket timeout)."""

    def __init__(self, daemon: Daemon, timeout: float = 30.0, **parameters):
        self.timeout = timeout
        self.conn = RawConnection(daemon.socket_path, timeout=timeout)
        first = self.conn.call("io.sesame.Events.Subscribe", parameters, more=True)
        assert "error" not in first, first
        self.ready = first["parameters"]
        self.sequence = self.ready["ready"]["sequence"]

    def reply(self) -> dict:
        """The next reply as it came: {"continues": true, "parameters": {...}} or an error."""
        return self.conn.reply()

    def next(self, timeout: float | None = None) -> dict:
        """The next event; an error reply (Lagged, say) fails the test."""
        if timeout is not None:
            self.conn.sock.settimeout(timeout)
        try:
            reply = self.conn.reply()
        finally:
            self.conn.sock.settimeout(self.timeout)
        assert "error" not in reply, reply
        return reply["parameters"]["event"]

    def kinds(self, count: int) -> list[str]:
        """The kinds of the next `count` events."""
        return [self.next()["kind"] for _ in range(count)]

    def replies(self):
        """Every further reply's parameters, an error reply whole: the shape the varlink
        package's client yields, so both can be read the same way."""
        while True:
            reply = self.conn.reply()
            yield reply.get("parameters", reply)

    def nothing_within(self, seconds: float) -> bool:
        """True if no reply comes within `seconds`; fails the test with the reply if one does.
        A check that something does not happen: on a slow machine it may miss a late reply, but
        the slowness alone never fails it."""
        self.conn.sock.settimeout(seconds)
        try:
            reply = self.conn.reply()
        except TimeoutError:
            return True
        finally:
            self.conn.sock.settimeout(self.timeout)
        raise AssertionError(f"unexpected event: {reply}")

    def close(self):
        self.conn.close()
