"""`sesamectl share`: some accounts' access tokens on a socket of the user's, for a container or a
remote host, and nothing else: no other account, no logout, login, refresh or removal, no refresh
or ID token; the socket gone however the share ends; every start, end and token handed out in
sesamed's log, by account, never the token. The ssh and container cases are in
test_share_remote.py."""

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from harness import SESAMECTL, Daemon, RawConnection, call, daemon_reachable_by_other_users, import_tokens, \
    running, wait_until
from test_hostile_user import owner_account
from vitals import Vitals, watched_daemon

ACCESS = "AT-share-5eca1e77"
REFRESH = "RT-share-0b5cured"
OTHER_ACCESS = "AT-share-other-42"
ID_TOKEN_SECRET = "never-shared"
STRANGER = 61031


@pytest.fixture
def daemon(tmp_path):
    with running(Daemon(tmp_path)) as instance:
        yield instance


@pytest.fixture
def accounts(daemon):
    """The owner's two accounts: the one shared and one that is not."""
    shared = import_tokens(daemon, access_token=ACCESS, refresh_token=REFRESH, subject="alice", expires_in=3600)
    other = import_tokens(daemon, access_token=OTHER_ACCESS, subject="bob", expires_in=3600)
    return shared["id"], other["id"]


class Share:
    """A running `sesamectl share`, its stderr kept."""

    def __init__(self, daemon: Daemon, path: Path, *args: str):
        self.path = path
        self.process = subprocess.Popen(
            [str(SESAMECTL), "share", *args, "--socket", str(path), "--daemon-socket", str(daemon.socket_path)],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # Its first line says it serves (or why not): a socket file alone may be one left behind.
        self.started = self.process.stderr.readline()
        assert self.started.startswith("sharing ") and path.exists(), self.started + self.process.stderr.read()

    def ended(self, timeout: float = 30) -> tuple[int, str]:
        _, stderr = self.process.communicate(timeout=timeout)
        return self.process.returncode, self.started + stderr

    def stop(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def through(share: Share, *args: str) -> subprocess.CompletedProcess:
    """sesamectl run against the share, as on the far side of ssh or in a container."""
    return subprocess.run([str(SESAMECTL), *args], env={**os.environ, "SESAME_SOCKET": str(share.path)},
                          capture_output=True, text=True, timeout=60)


def test_a_share_hands_out_its_accounts_tokens_and_nothing_else(daemon, accounts, tmp_path):
    shared, other = accounts
    share = Share(daemon, tmp_path / "share.sock", shared)
    try:
        result = through(share, "token", shared)
        assert result.returncode == 0 and result.stdout.strip() == ACCESS, result.stderr
        result = through(share, "token", other)
        assert result.returncode == 4 and "no account" in result.stderr, result.stderr
        result = through(share, "logout", shared)
        assert result.returncode == 1 and "serves a share" in result.stderr, result.stderr
        assert "does not allow io.sesame.Accounts.Logout" in result.stderr
        result = through(share, "accounts")
        assert result.returncode == 0 and shared in result.stdout and other not in result.stdout, result.stderr

        conn = RawConnection(share.path)
        replies = []
        refused = {
            "io.sesame.Accounts.Logout": {"account": shared},
            "io.sesame.Accounts.Refresh": {"account": shared},
            "io.sesame.Accounts.Remove": {"account": shared},
            "io.sesame.Accounts.Rename": {"account": shared, "name": "mine"},
            "io.sesame.Accounts.Check": {"account": shared},
            "io.sesame.Accounts.GetIDToken": {"account": shared},
            "io.sesame.Accounts.Login": {"provider": "google", "flow": "device"},
            "io.sesame.Accounts.ImportTokens": {"provider": "google", "subject": "eve",
                                                "tokens": {"accessToken": "x"}},
            "io.sesame.Accounts.ListProviders": {},
            "io.sesame.Admin.Stats": {},
            "io.sesame.Shares.Open": {"accounts": [other]},
            "io.sesame.Shares.Join": {"share": "x"},
        }
        for method, parameters in refused.items():
            reply = conn.call(method, parameters)
            replies.append(reply)
            assert reply.get("error") == "io.sesame.Shares.NotShared", (method, reply.get("error"))
        for method in ("io.sesame.Accounts.Get", "io.sesame.Accounts.GetToken"):
            reply = conn.call(method, {"account": other})
            replies.append(reply)
            assert reply.get("error") == "io.sesame.Accounts.NoSuchAccount", (method, reply.get("error"))
        # A name of an unshared account is as unknown as any other, and the refusal says only
        # what was asked; a provider's name picks among the shared accounts alone.
        assert call(daemon, "io.sesame.Accounts.Rename", {"account": other, "name": "secret"}).get("error") is None
        for name in ("secret", "nosuch"):
            reply = conn.call("io.sesame.Accounts.Get", {"account": name})
            replies.append(reply)
            assert reply.get("error") == "io.sesame.Accounts.NoSuchAccount"
            assert reply["parameters"] == {"account": name}
        reply = conn.call("io.sesame.Accounts.Get", {"account": "google"})
        replies.append(reply)
        assert reply["parameters"]["account"]["id"] == shared, reply.get("error")
        # A token for another audience or resource would be a grant the owner never gave.
        for narrowing in ({"audience": "api"}, {"resource": "https://api.example/"}):
            reply = conn.call("io.sesame.Accounts.GetToken", {"account": shared, **narrowing})
            assert reply.get("error") == "io.sesame.Shares.NotShared", reply.get("error")
        listed = conn.call("io.sesame.Accounts.List")
        replies.append(listed)
        assert [a["id"] for a in listed["parameters"]["accounts"]] == [shared]
        token = conn.call("io.sesame.Accounts.GetToken", {"account": shared})
        replies.append(token)
        assert set(token["parameters"]) <= {"accessToken", "tokenType", "expiresAt"}
        # A consumer in a loop cannot flood the journal: the owner's lines are bounded (60 a
        # minute, shared with everything else the owner causes).
        for _ in range(100):
            assert "error" not in conn.call("io.sesame.Accounts.GetToken", {"account": shared})
        lines = [line for line in daemon.log().splitlines() if "share handed out" in line or "share joined" in line]
        assert 0 < len(lines) <= 60, len(lines)
        conn.close()
        # Nothing the share answered carries the refresh token, and the log names no token.
        assert REFRESH not in json.dumps(replies)
        log = daemon.log()
        assert ACCESS not in log and REFRESH not in log
        assert "share started" in log and "share joined" in log
        assert f"share handed out an access token" in log and f"account={shared}" in log
        # The refusals changed nothing.
        assert through(share, "token", shared).stdout.strip() == ACCESS
    finally:
        share.stop()


def test_a_shares_subscriber_sees_only_the_shared_accounts_events(daemon, accounts, tmp_path):
    shared, other = accounts
    share = Share(daemon, tmp_path / "share.sock", shared)
    try:
        conn = RawConnection(share.path)
        ready = conn.call("io.sesame.Events.Subscribe", {}, more=True)
        assert "ready" in ready["parameters"], ready.get("error")
        # The owner renews both accounts, the unshared one first: only the shared one's event arrives.
        import_tokens(daemon, access_token=OTHER_ACCESS + "-2", subject="bob", expires_in=3600)
        import_tokens(daemon, access_token=ACCESS + "-2", refresh_token=REFRESH, subject="alice", expires_in=3600)
        event = conn.reply()["parameters"]["event"]
        assert event["account"] == shared, event
        conn.close()
    finally:
        share.stop()


@pytest.mark.parametrize("ending", ["SIGINT", "SIGTERM", "SIGHUP", "for", "logout", "remove", "sesamed stops"])
def test_the_share_socket_is_gone_after_each_way_it_ends(daemon, accounts, tmp_path, ending):
    shared, _ = accounts
    path = tmp_path / "share.sock"
    share = Share(daemon, path, shared, *(["--for", "1s"] if ending == "for" else []))
    try:
        assert through(share, "token", shared).returncode == 0 or ending == "for"
        if ending.startswith("SIG"):
            share.process.send_signal(getattr(signal, ending))
        elif ending == "sesamed stops":
            assert daemon.stop() == 0, daemon.log()
        elif ending in ("logout", "remove"):
            force = ["--force"] if ending == "remove" else []
            result = subprocess.run([str(SESAMECTL), ending, shared, *force, "--socket", str(daemon.socket_path)],
                                    capture_output=True, text=True, timeout=60)
            assert result.returncode == 0, result.stderr
        status, stderr = share.ended()
        assert not path.exists(), stderr
        assert "share ended" in stderr and f"{path} is removed" in stderr, stderr
        expected = {"SIGINT": 130, "SIGTERM": 143, "SIGHUP": 129}.get(ending, 0)
        assert status == expected, stderr
        # remove --force logs the account out first.
        reason = {"for": "its time ran out", "logout": "was logged out", "remove": "was logged out"}.get(ending)
        if reason:
            assert reason in stderr, stderr
        if ending != "sesamed stops":
            daemon.wait_for_log("share ended")
        # A consumer after the end is told there is nothing there, and that a share may have ended.
        result = through(share, "token", shared)
        assert result.returncode == 3 and "share" in result.stderr, result.stderr
    finally:
        share.stop()


def test_the_share_socket_has_the_mode_and_group_asked_for(daemon, accounts, tmp_path):
    shared, _ = accounts
    for args, mode, gid in (((), 0o600, os.getgid()), (("--mode", "0660", "--group", "61032"), 0o660, 61032)):
        path = tmp_path / f"share-{mode:o}.sock"
        share = Share(daemon, path, shared, *args)
        try:
            status = path.stat()
            assert (status.st_mode & 0o777, status.st_gid) == (mode, gid)
        finally:
            share.stop()
    for mode in ("0777", "0666", "0606", "0400"):
        result = subprocess.run([str(SESAMECTL), "share", shared, "--socket", str(tmp_path / "x"), "--mode", mode],
                                capture_output=True, text=True, timeout=60)
        assert result.returncode == 64, (mode, result.stderr)


def test_a_path_in_use_is_refused_and_a_dead_share_socket_is_replaced(daemon, accounts, tmp_path):
    shared, _ = accounts
    taken = tmp_path / "file"
    taken.write_text("mine")
    result = subprocess.run([str(SESAMECTL), "share", shared, "--socket", str(taken),
                             "--daemon-socket", str(daemon.socket_path)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 1 and "not a socket" in result.stderr and taken.read_text() == "mine"
    path = tmp_path / "share.sock"
    killed = Share(daemon, path, shared)
    killed.process.kill()
    killed.process.wait()
    assert path.exists()  # SIGKILL left it behind
    share = Share(daemon, path, shared)
    try:
        result = through(share, "token", shared)
        assert result.stdout.strip() == ACCESS, result.stderr
        result = subprocess.run([str(SESAMECTL), "share", shared, "--socket", str(path),
                                 "--daemon-socket", str(daemon.socket_path)], capture_output=True, text=True,
                                timeout=60)
        assert result.returncode == 1 and "listens at" in result.stderr, result.stderr
    finally:
        share.stop()


def test_another_user_cannot_join_a_share_or_share_what_it_may_not_use(tmp_path):
    with daemon_reachable_by_other_users() as daemon:
        shared = import_tokens(daemon, access_token=ACCESS, subject="alice", expires_in=3600)["id"]
        share = Share(daemon, tmp_path / "share.sock", shared)
        try:
            share_id = next(line.split("share=")[1].split()[0] for line in daemon.log().splitlines()
                            if "share started" in line)
            peer = Path(__file__).resolve().parent / "peer.py"
            as_stranger = ["setpriv", f"--reuid={STRANGER}", f"--regid={STRANGER}", "--clear-groups",
                           "/usr/bin/python3", str(peer), "call", str(daemon.socket_path)]
            joined = subprocess.run([*as_stranger, "io.sesame.Shares.Join", json.dumps({"share": share_id})],
                                    capture_output=True, text=True, timeout=60)
            reply = json.loads(joined.stdout)
            assert reply.get("error") == "io.sesame.Shares.ShareEnded", reply.get("error")
            opened = subprocess.run([*as_stranger, "io.sesame.Shares.Open", json.dumps({"accounts": [shared]})],
                                    capture_output=True, text=True, timeout=60)
            # peer.py's call sends no `more`: sesamed asks for it before it looks at the account.
            assert json.loads(opened.stdout).get("error") == "org.varlink.service.ExpectedMore"
        finally:
            share.stop()


def test_shares_opened_and_hung_up_in_a_loop_write_a_bounded_log():
    """Each share opened and hung up at once would start a log budget of its own: the budget is
    the owner's, across all their shares, and the requested path reaches the log escaped (no
    bidirectional override) and cut short, whatever its length. Another account's GetToken is
    served meanwhile."""
    requested = "/tmp/\u202e" + "x" * 4000
    opens = 200
    with watched_daemon() as daemon:
        shared = import_tokens(daemon, access_token=ACCESS, subject="alice", expires_in=3600)["id"]
        with Vitals(daemon, owner_account(daemon), "shares opened and hung up in a loop") as vitals:
            for _ in range(opens):
                # A share's slot (four at once per user) comes free once sesamed has seen the last
                # one's hang-up, which on a busy machine may be after the next open: that open is
                # refused with TooManyShares, and tried again.
                def opened():
                    connection = RawConnection(daemon.socket_path)
                    reply = connection.call("io.sesame.Shares.Open", {"accounts": [shared], "socket": requested},
                                            more=True)
                    if reply.get("error") == "io.sesame.Shares.TooManyShares":
                        connection.sock.close()
                        return None
                    assert "error" not in reply and reply["parameters"]["share"]["accounts"] == [shared], reply
                    return connection
                wait_until(opened, what="a share slot to come free").sock.close()
        ended = wait_until(lambda: [line for line in daemon.log().splitlines() if "share ended" in line],
                           what="a share's end in the log")
        lines = [line for line in daemon.log().splitlines() if "share " in line]
    vitals.assert_owner_unharmed()
    assert len(ended) >= 1 and len(lines) <= 60, f"{len(lines)} lines for {opens} shares opened and hung up"
    started = [line for line in lines if "share started" in line]
    assert started and all("\u202e" not in line and "\\u{202e}" in line for line in started), started[:1]
    assert all(len(line) < 1024 for line in lines), max(lines, key=len)
