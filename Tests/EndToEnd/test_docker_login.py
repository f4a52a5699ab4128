"""A person uses a Sesame account with the real docker (Debian's docker.io: the CLI and a dockerd
of the test's own, on loopback only) and a real registry (docker-registry) whose htpasswd takes
only the token sesamed hands out now, kept in step with the identity provider. With
docker-credential-sesame as the registry's credHelper, `docker login REGISTRY` logs in without a
password, on a terminal or not; `sesamectl token | docker login --password-stdin` is taken too;
a password docker would have the helper keep is refused with what to run instead, and a registry
that is not mapped is answered with the exact line that maps it. `docker pull` gets its token
from sesamed, and `docker logout` makes sesamed refresh nothing: the account stays logged in and
the next pull works. No token reaches docker's output or its config.json."""

import contextlib
import fcntl
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import termios
import threading
import warnings
from pathlib import Path

import pytest
import requests

from harness import DOCKER_CREDENTIAL_SESAME, SESAMECTL, import_from_idp, running, wait_until
# Access tokens that live a minute; the htpasswd follows them (Registry.keep_up).
from test_any_provider import idp  # noqa: F401 (a fixture)
from test_oauth import get_token, oauth_daemon, state_of

with warnings.catch_warnings():  # deprecated (gone in Python 3.13, where bcrypt takes its place)
    warnings.simplefilter("ignore", DeprecationWarning)
    try:
        import crypt
    except ImportError:
        crypt = None

# The CLI docker.io installs: /usr/local/bin may hold another, found first on PATH.
DOCKER = "/usr/bin/docker" if Path("/usr/bin/docker").exists() else shutil.which("docker")
DOCKERD = "/usr/sbin/dockerd" if Path("/usr/sbin/dockerd").exists() else shutil.which("dockerd")
REGISTRY = shutil.which("docker-registry")
if not (DOCKER and DOCKERD and REGISTRY):
    pytest.skip("docker.io and docker-registry are not installed (scripts/bootstrap installs them)",
                allow_module_level=True)

IMAGE = "sesame/test:latest"


def bcrypt_hash(password: str) -> str:
    """What htpasswd keeps (distribution takes bcrypt alone); the cheapest cost, since the
    registry checks it on every request."""
    if crypt is not None:
        return crypt.crypt(password, crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=16))
    import bcrypt
    return bcrypt.hashpw(password.encode(), bcrypt.gensalt(4)).decode()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def alive(pid: int, name: str) -> bool:
    """Whether process `pid` still runs `name` (not a later process given the same id)."""
    try:
        return name.encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


@pytest.fixture(scope="module")
def dockerd():
    """A dockerd of the module's own (with the containerd it starts), on a socket under a short
    directory in /tmp (sun_path's 108 bytes), touching no network but loopback; yields its
    DOCKER_HOST. Stopped, containerd too, whatever the tests did."""
    directory = Path(tempfile.mkdtemp(prefix="dk", dir="/tmp"))
    # Not the machine's /etc/docker/daemon.json; and the key dockerd before 23 makes on its first
    # start goes here, not to /etc/docker/key.json (a later one knows no such setting).
    version = subprocess.run([DOCKERD, "--version"], capture_output=True, text=True, timeout=60).stdout
    major = int(match[1]) if (match := re.search(r"version (\d+)\.", version)) else 0
    settings = {"deprecated-key-path": str(directory / "key.json")} if major and major < 23 else {}
    (directory / "daemon.json").write_text(json.dumps(settings))
    host = f"unix://{directory / 'docker.sock'}"
    log = open(directory / "dockerd.log", "wb")
    process = subprocess.Popen(
        [DOCKERD, "--config-file", str(directory / "daemon.json"), "--data-root", str(directory / "data"),
         "--exec-root", str(directory / "exec"), "--pidfile", str(directory / "pid"), "-H", host,
         "--iptables=false", "--ip6tables=false", "--ip-forward=false", "--ip-masq=false", "--bridge=none",
         "--storage-driver=vfs"],
        stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    containerd = None
    try:
        def answering() -> bool:
            if process.poll() is not None:
                return True
            return subprocess.run([DOCKER, "version"], env={"DOCKER_HOST": host, "PATH": "/usr/bin:/bin"},
                                  capture_output=True, timeout=30).returncode == 0
        wait_until(answering, 60, what=lambda: f"dockerd answering:\n{(directory / 'dockerd.log').read_text()}",
                   interval=0.5)
        if process.poll() is not None:
            tail = (directory / "dockerd.log").read_text(errors="replace").strip().splitlines()[-3:]
            pytest.skip(f"dockerd cannot start here (status {process.returncode}): {' / '.join(tail) or 'no output'}")
        with contextlib.suppress(OSError, ValueError):
            containerd = int((directory / "exec" / "containerd" / "containerd.pid").read_text())
        yield host
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()
        # dockerd stops the containerd it started; one left behind is stopped by its id.
        if containerd is not None:
            with contextlib.suppress(AssertionError):
                wait_until(lambda: not alive(containerd, "containerd"), 15, what="containerd to stop")
            if alive(containerd, "containerd"):
                os.kill(containerd, signal.SIGKILL)
        shutil.rmtree(directory, ignore_errors=True)  # vfs may leave directories it made read-only


class Registry:
    """docker-registry on 127.0.0.1:`port` over http (docker trusts 127.0.0.0/8 without TLS),
    with basic auth from an htpasswd the test writes: `accept` replaces it whole."""

    def __init__(self, directory: Path):
        directory.mkdir()
        self.directory = directory
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.htpasswd = directory / "htpasswd"
        self.accept()
        config = directory / "config.yml"
        config.write_text(
            "version: 0.1\nlog: {level: info}\n"
            f"storage: {{filesystem: {{rootdirectory: {directory / 'data'}}}, delete: {{enabled: true}}}}\n"
            f"http: {{addr: {self.address}, secret: test-secret}}\n"
            f"auth: {{htpasswd: {{realm: basic-realm, path: {self.htpasswd}}}}}\n")
        self.log_path = directory / "registry.log"
        self.log = open(self.log_path, "wb")
        self.process = subprocess.Popen([REGISTRY, "serve", str(config)], stdin=subprocess.DEVNULL,
                                        stdout=self.log, stderr=subprocess.STDOUT)

    def accept(self, *users: tuple[str, str]):
        """Takes these (user, password) pairs and no other; the registry reads the file again
        when it changes, so it is replaced whole (a new file renamed over the old)."""
        staged = self.htpasswd.with_suffix(".new")
        staged.write_text("".join(f"{user}:{bcrypt_hash(password)}\n" for user, password in users))
        staged.replace(self.htpasswd)

    def keep_up(self, daemon, idp, account_id: str, *others: tuple[str, str]) -> str:
        """Takes the token sesamed hands out for the account now (and `others`), once the identity
        provider's userinfo has taken it too: a registry in step with the provider. The token is
        one valid for 45 s more (sesamectl token --min-valid), so a docker command that follows
        gets the same one from the helper. Returns it, to compare (never to show)."""
        printed = subprocess.run([str(SESAMECTL), "token", "--socket", str(daemon.socket_path), account_id,
                                  "--min-valid", "45"], capture_output=True, text=True, timeout=60)
        assert printed.returncode == 0, printed.stderr
        token = printed.stdout.strip()
        assert idp.userinfo(token).status_code == 200, "the identity provider refused the token sesamed handed out"
        self.accept(("oauth2", token), *others)
        return token

    def wait_ready(self):
        def answering() -> bool:
            if self.process.poll() is not None:
                return True
            with contextlib.suppress(requests.RequestException):
                return requests.get(f"http://{self.address}/v2/", timeout=5).status_code == 401
            return False
        wait_until(answering, 60, what=lambda: f"the registry answering:\n{self.log_path.read_text()}")
        assert self.process.poll() is None, self.log_path.read_text()

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()


@pytest.fixture
def registry(tmp_path):
    instance = Registry(tmp_path / "registry")
    try:
        instance.wait_ready()
        yield instance
    finally:
        instance.stop()


@pytest.fixture
def daemon(tmp_path, idp):
    idp.reset_settings()
    with running(oauth_daemon(tmp_path, idp)) as instance:
        yield instance


class Person:
    """The person at the machine: docker (with docker-credential-sesame on PATH and as the
    credHelper of the registry, under `127.0.0.1:PORT` and `localhost:PORT`), the map that
    gives `https://127.0.0.1:PORT` (only) the account, and what docker said so far."""

    def __init__(self, home: Path, daemon, idp, dockerd: str, registry: Registry):
        self.home, self.daemon, self.idp, self.registry = home, daemon, idp, registry
        self.account, self.tokens = import_from_idp(daemon, idp)
        self.id = self.account["id"]
        self.localhost = f"localhost:{registry.port}"
        config = home / ".config" / "sesame"
        config.mkdir(parents=True)
        (config / "credentials.toml").write_text(f'[hosts]\n"https://{registry.address}" = "{self.id}"\n')
        self.docker_config = home / "docker"
        self.docker_config.mkdir()
        (self.docker_config / "config.json").write_text(json.dumps(
            {"credHelpers": {registry.address: "sesame", self.localhost: "sesame"}}))
        bin_dir = home / "bin"
        bin_dir.mkdir()
        (bin_dir / "docker-credential-sesame").symlink_to(DOCKER_CREDENTIAL_SESAME)
        self.env = {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
                    "DOCKER_CONFIG": str(self.docker_config), "DOCKER_HOST": dockerd,
                    "SESAME_SOCKET": str(daemon.socket_path), "TERM": "xterm",
                    "PATH": f"{bin_dir}:/usr/bin:/bin:/usr/sbin:/sbin"}
        self.said = ""
        self.secrets = {self.tokens["access_token"], self.tokens["refresh_token"], "hunter2"}

    def keep_up(self, *others: tuple[str, str]) -> str:
        token = self.registry.keep_up(self.daemon, self.idp, self.id, *others)
        self.secrets.add(token)
        return token

    def heard(self, text: str) -> str:
        """What docker said, kept whole for nothing_leaked; returned with every secret the test
        knows blotted out, for assertions' messages."""
        self.said += text
        for secret in self.secrets:
            text = text.replace(secret, "<secret>")
        return text

    def docker(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
        """docker without a terminal (stdin a pipe, or /dev/null); `output` is what it said
        (stdout and stderr, secrets blotted out)."""
        ran = subprocess.run([DOCKER, *args], input=stdin, stdin=None if stdin is not None else subprocess.DEVNULL,
                             env=self.env, capture_output=True, text=True, timeout=300)
        ran.output = self.heard(ran.stdout + ran.stderr)
        return ran

    def shell(self, command: str) -> subprocess.CompletedProcess:
        """A bash command line as the person types it, with SESAMECTL, DOCKER and SOCKET set."""
        env = {**self.env, "SESAMECTL": str(SESAMECTL), "DOCKER": DOCKER, "SOCKET": str(self.daemon.socket_path)}
        ran = subprocess.run(["bash", "-c", "set -o pipefail; " + command], stdin=subprocess.DEVNULL, env=env,
                             capture_output=True, text=True, timeout=300)
        ran.output = self.heard(ran.stdout + ran.stderr)
        return ran

    def docker_on_a_terminal(self, *args: str) -> tuple[int | None, str]:
        """docker on a pseudo-terminal that is its controlling terminal, as typed at a shell:
        its status and what it showed (secrets blotted out); ended, with status None, if it asks
        the person anything rather than finishing."""
        master, follower = os.openpty()

        def controlling_terminal():  # after the new session start_new_session made
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)

        process = subprocess.Popen([DOCKER, *args], stdin=follower, stdout=follower, stderr=follower, env=self.env,
                                   start_new_session=True, preexec_fn=controlling_terminal)
        os.close(follower)
        screen = bytearray()

        def read():
            with contextlib.suppress(OSError):  # EIO once every writer has gone
                while chunk := os.read(master, 65536):
                    screen.extend(chunk)

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        try:
            asked = lambda: any(prompt in screen for prompt in (b"Username:", b"Password:"))  # noqa: E731
            wait_until(lambda: process.poll() is not None or asked(), 300, what="docker to finish")
            if process.poll() is None:
                process.kill()
            status = process.wait(60)
            wait_until(lambda: not reader.is_alive(), 30, what="the terminal's last output")
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
            os.close(master)
        return (None if asked() else status), self.heard(screen.decode(errors="replace"))

    def push_image(self):
        """An image of one file, imported into dockerd and pushed to the registry, then removed
        from dockerd (so that a pull has to fetch it)."""
        rootfs = self.home / "rootfs"
        rootfs.mkdir(exist_ok=True)
        (rootfs / "hello").write_text("hello from the registry\n")
        tarball = self.home / "image.tar"
        subprocess.run(["tar", "-C", str(rootfs), "-cf", str(tarball), "."], check=True)
        name = f"{self.registry.address}/{IMAGE}"
        imported = self.docker("import", str(tarball), name)
        assert imported.returncode == 0, imported.output
        self.keep_up()
        pushed = self.docker("push", name)
        assert pushed.returncode == 0, pushed.output
        removed = self.docker("rmi", name)
        assert removed.returncode == 0, removed.output

    def has_image(self) -> bool:
        return self.docker("image", "inspect", f"{self.registry.address}/{IMAGE}").returncode == 0

    def nothing_leaked(self) -> bool:
        """No secret in what docker said or keeps in its config.json (compared, never shown)."""
        kept = (self.docker_config / "config.json").read_text()
        secrets = self.secrets | {get_token(self.daemon, self.id)}
        return not any(secret in self.said or secret in kept for secret in secrets)


@pytest.fixture
def person(tmp_path, daemon, idp, dockerd, registry):
    return Person(tmp_path, daemon, idp, dockerd, registry)


def refreshes(idp) -> int:
    return idp.counters()["token_requests"].get("refresh_token", 0)


def test_docker_login_without_a_password_takes_the_token_from_sesamed(person):
    person.keep_up()
    status, screen = person.docker_on_a_terminal("login", person.registry.address)
    assert status == 0 and "Login Succeeded" in screen, screen
    piped = person.docker("login", person.registry.address)
    assert piped.returncode == 0 and "Login Succeeded" in piped.output, piped.output
    # The registry checks what it gets: once it takes the token no more, the login fails, and
    # without a terminal docker cannot ask for a password instead.
    person.registry.accept(("someone", "hunter2"))
    refused = person.docker("login", person.registry.address)
    assert refused.returncode != 0 and "Login Succeeded" not in refused.output, refused.output
    assert person.nothing_leaked(), "a secret reached docker's output or config.json"


def test_sesamectl_token_piped_into_docker_login_is_taken(person):
    person.keep_up()
    logged_in = person.shell(f'"$SESAMECTL" token --socket "$SOCKET" {person.id} '
                             f'| "$DOCKER" login -u oauth2 --password-stdin {person.registry.address}')
    assert logged_in.returncode == 0 and "Login Succeeded" in logged_in.output, logged_in.output
    assert person.nothing_leaked(), "a secret reached docker's output or config.json"


def test_a_password_is_refused_and_an_unmapped_registry_is_told_the_line_that_maps_it(person):
    # The registry takes the password; the helper will not keep it, and says what to run.
    person.keep_up(("someone", "hunter2"))
    password = person.docker("login", "-u", "someone", "--password-stdin", person.registry.address,
                             stdin="hunter2\n")
    assert password.returncode != 0 and "Login Succeeded" not in password.output, password.output
    assert "docker-credential-sesame stores no passwords" in password.output, password.output
    assert f"run `docker login {person.registry.address}` without a password" in password.output, password.output

    # The same registry as localhost:PORT is not in the map: the account's token is taken by
    # the registry, and the helper names the line to add, with the account the token is of.
    token = person.keep_up()
    unmapped = person.docker("login", "-u", "oauth2", "--password-stdin", person.localhost, stdin=token + "\n")
    assert unmapped.returncode != 0 and "Login Succeeded" not in unmapped.output, unmapped.output
    line = f'"https://{person.localhost}" = "{person.account.get("name") or person.id}"'
    assert line in unmapped.output, unmapped.output
    assert "is not mapped to an account" in unmapped.output, unmapped.output
    assert person.nothing_leaked(), "a secret reached docker's output or config.json"


def test_docker_pull_gets_the_token_from_sesamed(person):
    person.push_image()
    assert not person.has_image()
    person.keep_up()
    pulled = person.docker("pull", f"{person.registry.address}/{IMAGE}")
    assert pulled.returncode == 0, pulled.output
    assert person.has_image()
    # Only because the registry took the token: once it takes it no more, the pull is refused.
    assert person.docker("rmi", f"{person.registry.address}/{IMAGE}").returncode == 0
    person.registry.accept(("someone", "hunter2"))
    refused = person.docker("pull", f"{person.registry.address}/{IMAGE}")
    assert refused.returncode != 0 and not person.has_image(), refused.output
    assert person.nothing_leaked(), "a secret reached docker's output or config.json"


def test_docker_logout_refreshes_nothing_and_the_next_pull_works(person, daemon, idp):
    person.push_image()
    person.keep_up()
    assert person.docker("login", person.registry.address).returncode == 0
    before = refreshes(idp)
    token = get_token(daemon, person.id)
    logged_out = person.docker("logout", person.registry.address)
    assert logged_out.returncode == 0, logged_out.output
    assert f"Removing login credentials for {person.registry.address}" in logged_out.output, logged_out.output
    assert refreshes(idp) == before, "docker logout made sesamed refresh"
    unchanged = get_token(daemon, person.id) == token  # compared, never shown
    assert unchanged and state_of(daemon, person.id) == "active"
    person.keep_up()
    pulled = person.docker("pull", f"{person.registry.address}/{IMAGE}")
    assert pulled.returncode == 0 and person.has_image(), pulled.output
    assert person.nothing_leaked(), "a secret reached docker's output or config.json"
