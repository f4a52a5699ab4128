"""sesamectl as a person or a script uses it."""

import json
import os
import signal
import subprocess
import time

import pytest

from harness import SESAMECTL, Daemon, RawConnection, call, import_tokens, running


def sesamectl(*args, env=None, timeout=30):
    return subprocess.run([str(SESAMECTL), *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def test_status_reports_the_daemon_and_its_accounts(daemon):
    result = sesamectl("status", "--socket", str(daemon.socket_path))
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"sesamed 0.1.0 on {daemon.socket_path}\naccounts: 0\n"


def test_the_socket_can_come_from_the_environment(daemon):
    result = sesamectl("status", env={"SESAME_SOCKET": str(daemon.socket_path)})
    assert result.returncode == 0, result.stderr


def test_a_daemon_that_is_not_running_is_one_sentence_and_status_3(tmp_path):
    missing = tmp_path / "sesame" / "io.sesame"
    for command in ("status", "watch"):
        result = sesamectl(command, "--socket", str(missing))
        assert result.returncode == 3
        assert result.stdout == ""
        assert result.stderr == (f"sesamed is not running (nothing answers at {missing}); "
                                 "start it with `systemctl --user start sesamed.socket`.\n")
    # Any other path may be a share's socket: starting sesamed would not help there.
    elsewhere = tmp_path / "nothing-here"
    result = sesamectl("status", "--socket", str(elsewhere))
    assert result.returncode == 3
    assert result.stderr == (f"nothing answers at {elsewhere}: no sesamed runs there, or the share served there "
                             "(`sesamectl share`) has ended.\n")


def watch(daemon, *args):
    return subprocess.Popen([str(SESAMECTL), "watch", "--socket", str(daemon.socket_path), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_watch_prints_one_line_per_reply_and_ends_with_the_daemon(daemon):
    plain = watch(daemon)
    as_json = watch(daemon, "--json")
    assert plain.stdout.readline() == "ready sequence=0\n"
    assert json.loads(as_json.stdout.readline()) == {"ready": {"sequence": 0}}
    assert daemon.stop() == 0
    for process in (plain, as_json):
        assert process.wait(15) == 1
        assert process.stderr.read() == "sesamed closed the connection.\n"


def test_watch_follow_resumes_after_a_restart_and_shows_the_resync(tmp_path):
    """`watch --follow` (SesameClient.followEvents) outlives a daemon restart. The
    watcher is stopped (SIGSTOP) while sesamed restarts, without event history, and an event
    happens, so that what it missed can only come back as a resync, which it must show."""
    config = "[events]\nhistory_limit = 0\n"
    with running(Daemon(tmp_path, config=config)) as first:
        watcher = subprocess.Popen([str(SESAMECTL), "watch", "--follow", "--json", "--socket", str(first.socket_path)],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert json.loads(watcher.stdout.readline()) == {"ready": {"sequence": 0}}
        alice = import_tokens(first, access_token="AT-follow-1", expires_in=3600)["id"]
        assert json.loads(watcher.stdout.readline())["event"]["sequence"] == 1
        watcher.send_signal(signal.SIGSTOP)
    try:
        with running(Daemon(tmp_path, config=config)) as second:
            bob = import_tokens(second, access_token="AT-follow-2", subject="bob", expires_in=3600)["id"]
            watcher.send_signal(signal.SIGCONT)
            assert json.loads(watcher.stdout.readline()) == {"reconnecting": {"after": 1}}
            assert json.loads(watcher.stdout.readline()) == {"ready": {"sequence": 2}}
            resync = json.loads(watcher.stdout.readline())["resync"]
            assert resync["sequence"] == 2 and sorted(a["id"] for a in resync["accounts"]) == sorted([alice, bob])
            assert "error" not in call(second, "io.sesame.Accounts.Logout", {"account": alice})
            event = json.loads(watcher.stdout.readline())["event"]
            assert (event["sequence"], event["kind"], event["account"]) == (3, "loggedOut", alice)
    finally:
        watcher.kill()
        watcher.wait()


# A closed pipe. Bash runs each pipeline with sesamectl's stderr in a file and prints every part's
# exit status last; 141 is 128 + SIGPIPE, what the shell shows for `yes | head -n 1`.
CLOSED_READER = '{ exec <&-; : > "$DIR/closed"; }'  # closes its end of the pipe, then says so


def pipeline(daemon, tmp_path, script: str) -> subprocess.Popen:
    env = {**os.environ, "SESAMECTL": str(SESAMECTL), "SOCK": str(daemon.socket_path), "DIR": str(tmp_path)}
    return subprocess.Popen(["bash", "-c", script + '; echo "${PIPESTATUS[@]}"'], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)


def after_the_reader_closed(command: str) -> str:
    """`command` (sesamectl's arguments) started only once the reader has closed the pipe, so its
    first write finds no reader whatever the machine's load."""
    return (f'{{ until [ -e "$DIR/closed" ]; do sleep 0.05; done; exec "$SESAMECTL" {command} 2>"$DIR/err"; }}'
            f" | {CLOSED_READER}")


def statuses_and_stderr(process: subprocess.Popen, tmp_path) -> tuple[list[str], str]:
    out, err = process.communicate(timeout=60)
    assert err == "", err
    return out.splitlines()[-1].split(), (tmp_path / "err").read_text()


def test_status_and_token_end_quietly_on_a_closed_pipe(daemon, tmp_path):
    account = import_tokens(daemon, subject="alice", access_token="AT-pipe-alice", expires_in=3600)["id"]
    for command in ('status --socket "$SOCK"', f'token {account} --socket "$SOCK"'):
        (tmp_path / "closed").unlink(missing_ok=True)
        statuses, err = statuses_and_stderr(pipeline(daemon, tmp_path, after_the_reader_closed(command)), tmp_path)
        assert (statuses, err) == (["141", "0"], ""), command


def test_watch_ends_quietly_when_its_reader_goes_away(daemon, tmp_path):
    import_tokens(daemon, subject="before", access_token="AT-pipe-before", expires_in=3600)
    process = pipeline(daemon, tmp_path, '"$SESAMECTL" watch --since 0 --socket "$SOCK" 2>"$DIR/err" | head -n 1')
    assert process.stdout.readline() == "ready sequence=1\n"
    # head has its line and exits; the stream never ends, so the next event sesamectl writes
    # after that finds the pipe closed. Events keep coming until it does.
    deadline = time.monotonic() + 60
    for number in range(1000):
        import_tokens(daemon, subject=f"after-{number}", access_token=f"AT-pipe-after-{number}", expires_in=3600)
        try:
            process.wait(2)
            break
        except subprocess.TimeoutExpired:
            assert time.monotonic() < deadline, "sesamectl watch kept running after head exited"
    statuses, err = statuses_and_stderr(process, tmp_path)
    assert (statuses, err) == (["141", "0"], "")


@pytest.mark.parametrize("field", ["refresh_token_expires_in", "refresh_expires_in"])
def test_import_reads_the_refresh_token_lifetime_by_either_name(daemon, field):
    """The OAuth client and Kakao say refresh_token_expires_in, Keycloak refresh_expires_in."""
    response = {"access_token": "AT-lifetime", "refresh_token": "RT-lifetime", "expires_in": 3600, field: 86400}
    result = subprocess.run([str(SESAMECTL), "import", "google", "--socket", str(daemon.socket_path), "--subject",
                             f"lifetime-{field}"], input=json.dumps(response), capture_output=True, text=True,
                            timeout=30)
    assert result.returncode == 0, result.stderr
    conn = RawConnection(daemon.socket_path)
    try:
        account = conn.call("io.sesame.Accounts.Get", {"account": result.stdout.strip()})["parameters"]["account"]
    finally:
        conn.close()
    assert account.get("refreshTokenExpiresAt"), "the refresh token's lifetime was dropped"


def test_names_are_shown_with_formatting_characters_escaped(daemon):
    """A right-to-left override (U+202E) in a subject would make the rest of its table line read
    backwards, and a name pass for another; every line that shows a name shows it escaped."""
    import_tokens(daemon, access_token="bidi-token-1", subject="\u202emoc.elgoog")
    for args in (["accounts"], ["accounts", "--no-legend"]):
        shown = subprocess.run([str(SESAMECTL), *args, "--socket", str(daemon.socket_path)],
                               capture_output=True, text=True, check=True).stdout
        assert "\u202e" not in shown and "\\u{202e}moc.elgoog" in shown, shown


def test_an_event_of_a_kind_a_later_sesamed_added_is_skipped_not_fatal(tmp_path):
    """A subscriber without a kinds filter is sent every kind the daemon knows: an older
    SesameClient (here sesamectl) skips a kind it does not know and goes on with the rest."""
    import socket
    import threading
    path = tmp_path / "fake.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(1)
    event = {"sequence": 2, "time": "2026-11-26T00:00:00Z", "account": "google-1", "provider": "google",
             "owner": 0, "state": "active"}
    replies = [{"parameters": {"ready": {"sequence": 1}}, "continues": True},
               {"parameters": {"event": {**event, "kind": "somethingNew"}}, "continues": True},
               {"parameters": {"event": {**event, "sequence": 3, "kind": "tokenRefreshed"}}, "continues": True}]

    def serve():
        connection, _ = server.accept()
        with connection:
            connection.recv(65536)  # the Subscribe call
            for reply in replies:
                connection.sendall(json.dumps(reply).encode() + b"\0")

    threading.Thread(target=serve, daemon=True).start()
    result = subprocess.run([str(SESAMECTL), "watch", "--no-follow", "--json", "--socket", str(path)],
                            capture_output=True, text=True, timeout=30)
    server.close()
    kinds = [json.loads(line).get("event", {}).get("kind") for line in result.stdout.splitlines()]
    assert kinds == [None, "tokenRefreshed"], result.stdout + result.stderr
    assert result.stderr == "sesamed closed the connection.\n", result.stderr
