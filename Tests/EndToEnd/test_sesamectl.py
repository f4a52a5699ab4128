"""sesamectl as a person or a script uses it."""

import json
import os
import subprocess
import time

from harness import SESAMECTL


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
    missing = tmp_path / "nothing-here"
    for command in ("status", "watch"):
        result = sesamectl(command, "--socket", str(missing))
        assert result.returncode == 3
        assert result.stdout == ""
        assert result.stderr == f"sesamed is not running (nothing answers at {missing}).\n"


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
