"""A share used where the person's sesamed is not: across a real `ssh -R` to a real sshd on
127.0.0.1 (its own host key, a key made for the test), and bind-mounted into a user namespace
whose uid maps to nothing on the host. On the far side only the share's socket exists, and
`sesamectl token` and `git-credential-sesame` work through it until the share ends."""

import os
import shlex
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

from harness import GIT_CREDENTIAL_SESAME, SESAMECTL, Daemon, import_tokens, running, wait_until
from test_share import ACCESS, Share

SSHD = Path("/usr/sbin/sshd")


@pytest.fixture
def daemon(tmp_path):
    with running(Daemon(tmp_path)) as instance:
        yield instance


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def sshd(tmp_path):
    """A real sshd on 127.0.0.1 that lets the test's key in as root and allows forwarding Unix
    sockets; yields (port, client key)."""
    if not SSHD.exists() or not shutil.which("ssh"):
        pytest.skip("openssh-server and openssh-client are not installed (scripts/bootstrap installs them)")
    if os.geteuid() != 0:
        pytest.skip("sshd logs a user in only when it runs as root")
    directory = tmp_path / "sshd"
    directory.mkdir()
    for key in ("host_key", "client_key"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(directory / key)], check=True)
    (directory / "authorized_keys").write_text((directory / "client_key.pub").read_text())
    port = free_port()
    config = directory / "sshd_config"
    config.write_text(f"""Port {port}
ListenAddress 127.0.0.1
HostKey {directory / "host_key"}
PidFile {directory / "sshd.pid"}
AuthorizedKeysFile {directory / "authorized_keys"}
StrictModes no
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
AllowStreamLocalForwarding yes
StreamLocalBindUnlink yes
StreamLocalBindMask 0177
""")
    os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # its privilege separation directory
    log = open(directory / "sshd.log", "wb")
    process = subprocess.Popen([str(SSHD), "-D", "-e", "-f", str(config)], stdout=log, stderr=subprocess.STDOUT)

    def listening() -> bool:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            return process.poll() is not None

    wait_until(listening, what="sshd listening")
    assert process.poll() is None, (directory / "sshd.log").read_text()
    try:
        yield port, directory / "client_key"
    finally:
        process.terminate()
        process.wait()
        log.close()


def ssh(port: int, key: Path, forward: str, command: str) -> subprocess.CompletedProcess:
    """`command` run on the far side, with `forward` (REMOTE:LOCAL) as -R."""
    return subprocess.run(
        ["ssh", "-p", str(port), "-i", str(key), "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no",
         "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR", "-o", "ExitOnForwardFailure=yes",
         "-R", forward, "root@127.0.0.1", command],
        capture_output=True, text=True, timeout=120)


def far_side(socket_path: Path, account: str) -> str:
    """What a person runs on the far side: the token, and git's helper, through the forwarded
    socket; nothing else of Sesame is there."""
    env = f"SESAME_SOCKET={shlex.quote(str(socket_path))}"
    helper = f"printf 'protocol=https\\nhost=git.example\\n\\n' | {env} {GIT_CREDENTIAL_SESAME} --account {account} get"
    return (f"for i in $(seq 600); do [ -S {socket_path} ] && break; sleep 0.1; done; "
            f"{env} {SESAMECTL} token {account} && {helper}")


def test_a_share_forwarded_over_ssh_serves_the_far_side_until_it_ends(daemon, sshd, tmp_path):
    port, key = sshd
    account = import_tokens(daemon, access_token=ACCESS, refresh_token="RT-remote-9", expires_in=3600)["id"]
    share = Share(daemon, tmp_path / "share.sock", account)
    remote = tmp_path / "far" / "sesame.sock"
    remote.parent.mkdir()
    try:
        result = ssh(port, key, f"{remote}:{share.path}", far_side(remote, account))
        assert result.returncode == 0, result.stderr
        lines = result.stdout.splitlines()
        assert lines[0] == ACCESS and f"password={ACCESS}" in lines, result.stderr
        assert "share handed out an access token" in daemon.log()
        # Once the share has ended, the far side is refused.
        share.process.send_signal(2)
        share.ended()
        result = ssh(port, key, f"{remote}:{share.path}", f"SESAME_SOCKET={remote} {SESAMECTL} token {account}")
        assert result.returncode != 0 and ACCESS not in result.stdout
        assert "the share has ended" in result.stderr, result.stderr
    finally:
        share.stop()


def test_a_share_bind_mounted_into_a_user_namespace_serves_a_uid_that_maps_to_nothing(daemon, tmp_path):
    if not shutil.which("unshare"):
        pytest.skip("unshare (util-linux) is not installed")
    account = import_tokens(daemon, access_token=ACCESS, expires_in=3600)["id"]
    share = Share(daemon, tmp_path / "share.sock", account)
    target = tmp_path / "container" / "run" / "sesame.sock"
    target.parent.mkdir(parents=True)
    target.touch()
    # Root in a first namespace to bind-mount the socket, then a second namespace with no uid
    # mapped at all, where the program runs as the overflow uid, as a container's user may.
    inner = f"id -u; SESAME_SOCKET={target} {SESAMECTL} token {account}"
    outer = f"mount --bind {share.path} {target} && exec unshare --user sh -c {shlex.quote(inner)}"
    try:
        result = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", outer],
                                capture_output=True, text=True, timeout=60)
        if result.returncode != 0 and "Operation not permitted" in result.stderr and "unshare" in result.stderr:
            pytest.skip(f"user namespaces are not available here: {result.stderr.strip()}")
        assert result.returncode == 0, result.stderr
        uid, token = result.stdout.split()
        assert uid == Path("/proc/sys/kernel/overflowuid").read_text().strip()
        assert token == ACCESS
    finally:
        share.stop()
