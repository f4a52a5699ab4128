"""The empty start as a new user meets it: with no provider configured, `sesamectl providers` and
`sesamectl login` name the directory sesamed reads (from sesamed's own answer), who may write
there, and how to make sesamed read it, so that each step leads to the next."""

import signal
import subprocess
from pathlib import Path

from harness import SESAMECTL, Daemon, running

SAMPLE_NOTE = " (example.toml.sample there shows every key)"


def sesamectl(daemon: Daemon, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(SESAMECTL), *args[:1], "--socket", str(daemon.socket_path), *args[1:]],
                          capture_output=True, text=True, timeout=30)


def empty_daemon(tmp_path: Path, providers: Path) -> Daemon:
    config = f'[daemon]\nproviders_directory = "{providers}"\n[store]\nallow_generated_key = true\n'
    return Daemon(tmp_path, config=config)


def steps(providers: Path, writer: str = "", sample: str = SAMPLE_NOTE) -> str:
    # The tests' socket is neither the system's nor a user daemon's: sesamectl cannot name a unit.
    return (f"sesamed reads providers from {providers}: add a file NAME.toml there{sample}{writer}, then send "
            "that sesamed SIGHUP, and `sesamectl providers --check NAME` tries it.")


def test_no_providers_names_the_directory_and_the_next_steps(tmp_path):
    providers = tmp_path / "providers.d"
    providers.mkdir()
    (providers / "example.toml.sample").write_text("# every key, explained\n")
    with running(empty_daemon(tmp_path, providers)) as daemon:
        listed = sesamectl(daemon, "providers")
        assert (listed.returncode, listed.stdout) == (0, ""), listed.stderr
        assert listed.stderr == f"no providers yet; {steps(providers)}\n"
        login = sesamectl(daemon, "login", "work")
        assert login.returncode == 1
        assert login.stderr == f"no provider named work is configured; none are: {steps(providers)}\n"
        # The steps, followed: the file is read on SIGHUP and listed.
        (providers / "work.toml").write_text('issuer = "https://id.example"\nclient_id = "c"\n')
        daemon.process.send_signal(signal.SIGHUP)
        daemon.wait_for_log("providers reloaded")
        assert sesamectl(daemon, "providers", "--names").stdout == "work\n"


def test_a_directory_that_does_not_exist_is_to_be_made_first(tmp_path):
    providers = tmp_path / "absent" / "providers.d"
    with running(empty_daemon(tmp_path, providers)) as daemon:
        listed = sesamectl(daemon, "providers")
        writer = ", making the directory first (no such file or directory)"
        assert listed.stderr == f"no providers yet; {steps(providers, writer, sample='')}\n", listed.stderr


def test_another_user_is_told_the_directory_is_roots_to_write(daemon_reachable_by_other_users):
    """A user who is not root meets the empty start of the system's kind of sesamed: the
    directory is root's, so the step says to write it as root."""
    daemon = daemon_reachable_by_other_users
    providers = daemon.tmp / "providers.d"  # the harness's, 0755 and root's, holding no .toml files
    for name in providers.glob("*.toml"):
        name.unlink()
    daemon.process.send_signal(signal.SIGHUP)
    daemon.wait_for_log("providers reloaded")
    listed = subprocess.run(["setpriv", "--reuid=61234", "--regid=61234", "--clear-groups", str(SESAMECTL),
                             "providers", "--socket", str(daemon.socket_path)],
                            capture_output=True, text=True, timeout=30)
    assert (listed.returncode, listed.stdout) == (0, ""), listed.stderr
    assert listed.stderr == f"no providers yet; {steps(providers, ' as root (sudo)', sample='')}\n", listed.stderr
