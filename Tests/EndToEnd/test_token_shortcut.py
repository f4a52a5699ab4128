"""`sesamectl token ACCOUNT` (and `--version`), answered by sesamectl itself (a small static
program that makes one blocking GetToken), and every other command line handed to
sesamectl-commands in its place."""

import os
import shutil
import subprocess
import time

import pytest

from harness import SESAMECTL, Daemon, Subscription, import_tokens, running, wait_until

COMMANDS = SESAMECTL.parent / "sesamectl-commands"


def run(program, *args, env=None):
    return subprocess.run([str(program), *args], capture_output=True, text=True, timeout=60,
                          env={**os.environ, **(env or {})})


def outcome(result):
    return result.returncode, result.stdout, result.stderr


@pytest.fixture
def alone(tmp_path):
    """sesamectl copied into a directory of its own, without sesamectl-commands beside it."""
    directory = tmp_path / "alone"
    directory.mkdir()
    return shutil.copy2(SESAMECTL, directory / "sesamectl")


def test_the_token_comes_from_sesamectl_alone_in_every_spelling_of_the_socket(daemon, alone):
    account = import_tokens(daemon, subject="alice", access_token="AT-shortcut-alice", expires_in=3600)["id"]
    socket = str(daemon.socket_path)
    for args, env in ((["token", account, "--socket", socket], None),
                      (["token", "--socket", socket, account], None),
                      (["token", f"--socket={socket}", account], None),
                      (["token", account], {"SESAME_SOCKET": socket})):
        result = run(alone, *args, env=env)
        assert outcome(result) == (0, "AT-shortcut-alice\n", ""), args


def test_a_token_the_shortcut_does_not_read_exactly_is_left_to_sesamectl_commands(daemon, alone):
    """sesamectl reads replies without a JSON decoder: a token with an escape in its JSON text
    (a quote, a backslash) is read by sesamectl-commands, which sesamectl alone cannot run. An
    account with a quote is written escaped, and the daemon's answer (no such account) is worded
    by sesamectl-commands as every failure is."""
    token = 'AT-"quoted"\\back/slash'
    account = import_tokens(daemon, subject="quoter", access_token=token, expires_in=3600)["id"]
    socket = str(daemon.socket_path)
    assert outcome(run(SESAMECTL, "token", account, "--socket", socket)) == (0, token + "\n", "")
    assert run(alone, "token", account, "--socket", socket).returncode == 127
    plain = import_tokens(daemon, subject="plain", access_token="AT-plain/slash+=", expires_in=3600)["id"]
    assert outcome(run(alone, "token", plain, "--socket", socket)) == (0, "AT-plain/slash+=\n", "")
    quoted = outcome(run(SESAMECTL, "token", 'no"body', "--socket", socket))
    assert quoted == outcome(run(COMMANDS, "token", 'no"body', "--socket", socket)) and quoted[0] == 4, quoted
    assert run(alone, "token", 'no"body', "--socket", socket).returncode == 127


def test_the_version_comes_from_sesamectl_alone_and_is_the_commands_version(alone):
    version = outcome(run(alone, "--version"))
    assert version == outcome(run(COMMANDS, "--version")) and version[0] == 0 and version[1].strip(), version


def test_sesamectl_needs_no_shared_library(alone):
    dynamic = subprocess.run(["readelf", "--dynamic", str(alone)], capture_output=True, text=True, check=True).stdout
    assert "NEEDED" not in dynamic, dynamic


def test_every_other_command_line_is_sesamectl_commands_and_says_so_when_it_is_missing(daemon, alone):
    account = import_tokens(daemon, subject="alice", access_token="AT-shortcut-other", expires_in=3600)["id"]
    socket = str(daemon.socket_path)
    for args in (["status", "--socket", socket], ["token", account, "--json", "--socket", socket],
                 ["token", "--", account, "--socket", socket], ["token", account, account, "--socket", socket],
                 ["token", account, "--socket", socket, "--socket", socket], ["token", account, "--socket"],
                 ["token", account, "--socket="], ["token", "--help"], ["--version", "--help"]):
        assert outcome(run(SESAMECTL, *args)) == outcome(run(COMMANDS, *args)), args
        result = run(alone, *args)
        assert result.returncode == 127 and result.stdout == "", args
        assert result.stderr == (
            f"sesamectl: cannot run sesamectl-commands ({alone.parent}/../libexec/sesame/sesamectl-commands: No "
            "such file or directory), which has every command but `token ACCOUNT`; reinstall Sesame, or build "
            "both programs (swift build --product sesamectl-commands).\n"), args


def test_a_failed_token_is_worded_by_sesamectl_commands(daemon, tmp_path):
    """The shortcut says nothing of its own: the hand-over asks again and words the failure."""
    socket = str(daemon.socket_path)
    for args in (["token", "nobody", "--socket", socket], ["token", "nobody", "--socket", str(tmp_path / "none")]):
        through = outcome(run(SESAMECTL, *args))
        assert through == outcome(run(COMMANDS, *args)), args
        assert through[0] in (3, 4) and through[1] == "" and through[2], args


def test_a_refresh_that_fails_asks_the_provider_once_and_says_what_to_do(tmp_path):
    """The shortcut's GetToken fails (the fixture's google cannot be reached) and
    sesamectl-commands asks again and words the failure; the provider is still asked once, as
    sesamed backs off after a failed refresh. sesamed refreshes only on demand here, so the token
    expires unrefreshed and the shortcut's GetToken makes the one attempt."""
    config = "[sessions]\nrefresh_margin = 0\nrefresh_ahead = false\n"
    with running(Daemon(tmp_path, config=config)) as daemon:
        events = Subscription(daemon, kinds=["refreshFailed"])
        account = import_tokens(daemon, access_token="AT-shortcut-expired", refresh_token="RT-shortcut",
                                expires_in=1)["id"]
        expired = time.time() + 1.5
        wait_until(lambda: time.time() > expired, what="the access token to expire")
        result = run(SESAMECTL, "token", account, "--socket", str(daemon.socket_path))
        assert (result.returncode, result.stdout) == (6, ""), result.stderr
        assert len(result.stderr.splitlines()) == 1 and f"`sesamectl refresh {account}`" in result.stderr
        assert events.next()["account"] == account
        # A second attempt would have published a second refreshFailed before the process ended.
        assert events.nothing_within(1.0)


PLANTED = "#!/bin/sh\necho PLANTED \"$@\" >> \"$(dirname \"$0\")/ran\"\n"


@pytest.fixture
def shared(tmp_path):
    """A directory like /tmp (mode 1777) holding a copy of sesamectl."""
    directory = tmp_path / "shared"
    directory.mkdir()
    directory.chmod(0o1777)
    shutil.copy2(SESAMECTL, directory / "sesamectl")
    return directory


def plant(directory, owner, mode=0o755, target=None, group=None):
    """Puts a sesamectl-commands beside the copy: a script, or a symlink to `target`."""
    planted = directory / "sesamectl-commands"
    if target:
        planted.symlink_to(target)
    else:
        planted.write_text(PLANTED)
        planted.chmod(mode)
    os.chown(planted, owner, owner if group is None else group, follow_symlinks=False)


def test_a_copy_in_a_shared_directory_runs_nothing_another_user_put_beside_it(shared):
    """sesamectl copied into a directory anyone may write runs no sesamectl-commands another user
    placed or could have changed there (owned by them, writable by others, or a link of theirs to
    a program of root's), and says which file and why; the caller's own copy there runs."""
    nobody = 65534
    for owner, mode, target, group, why in (
            (nobody, 0o755, None, None, "belongs to uid 65534, neither root nor you"),
            (0, 0o775, None, nobody, "may be written by others than its owner"),
            (0, 0o757, None, None, "may be written by others than its owner"),
            (nobody, 0o755, "/bin/echo", None, "belongs to uid 65534, neither root nor you")):
        plant(shared, owner, mode, target, group)
        for args in (["status"], ["token", "no-such-account"]):
            result = run(shared / "sesamectl", *args)
            assert (result.returncode, result.stdout) == (126, ""), (why, args, result)
            assert result.stderr.startswith(
                f"sesamectl: will not run sesamectl-commands: {shared}/sesamectl-commands {why}, so another "
                "user may have put it there."), (why, args, result.stderr)
        assert not (shared / "ran").exists(), why
        (shared / "sesamectl-commands").unlink()
    shutil.copy2(COMMANDS, shared / "sesamectl-commands")
    assert outcome(run(shared / "sesamectl", "--version", "--help")) == outcome(run(COMMANDS, "--version", "--help"))


def test_a_directory_others_may_write_is_no_place_to_run_from(tmp_path):
    """Without the sticky bit, another user could swap even the caller's own file: refused."""
    directory = tmp_path / "open"
    directory.mkdir()
    shutil.copy2(SESAMECTL, directory / "sesamectl")
    shutil.copy2(COMMANDS, directory / "sesamectl-commands")
    directory.chmod(0o777)
    result = run(directory / "sesamectl", "status")
    assert result.returncode == 126 and result.stderr.startswith(
        f"sesamectl: will not run sesamectl-commands: {directory} may be written by others than its owner"), result
