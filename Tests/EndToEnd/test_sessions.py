"""Sessions end to end: tokens imported into the real sesamed, their lifetime events reaching
three different kinds of subscriber in the same order, resuming with `since`, and tokens never
showing up anywhere they should not."""

import http.server
import json
import os
import signal
import socket
import subprocess
import threading
import time

import pytest
import varlink

from harness import SESAMECTL, Daemon, RawConnection, Subscription, import_tokens, running, wait_until

ACCESS = "AT-e2e-4f1c2d9a"
REFRESH = "RT-e2e-77b0e3c1"
ID_TOKEN = "ID-e2e-a5d6f7e8"
# What the accounts of this module are imported with; each test adds subject and expires_in.
TOKENS = {"access_token": ACCESS, "refresh_token": REFRESH, "scopes": ["openid", "email"], "display_name": "Alice"}


@pytest.fixture
def fast_daemon(tmp_path):
    """A daemon that announces `expiring` one second before expiry."""
    with running(Daemon(tmp_path, config="[sessions]\nexpiring_margin = 1\n")) as instance:
        yield instance


class Collector(threading.Thread):
    """Reads a subscription in the background until `count` events arrived. `replies` yields
    each reply's parameters, as the varlink package's client and Subscription.replies() do."""

    def __init__(self, replies, count):
        super().__init__(daemon=True)
        self.replies, self.count, self.events, self.error = replies, count, [], None

    def run(self):
        try:
            for reply in self.replies:
                if "event" in reply:
                    self.events.append(reply["event"])
                if len(self.events) == self.count:
                    return
        except Exception as error:  # reported by the test, which must not hang on it
            self.error = error


def test_three_subscribers_see_the_same_lifetime_in_the_same_order(fast_daemon):
    expected = ["loggedIn", "expiring", "expired", "loggedOut"]

    watch = subprocess.Popen([str(SESAMECTL), "watch", "--json", "--socket", str(fast_daemon.socket_path)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert json.loads(watch.stdout.readline()) == {"ready": {"sequence": 0}}

    raw = Subscription(fast_daemon)
    assert raw.ready == {"ready": {"sequence": 0}}

    client = varlink.Client(address=f"unix:{fast_daemon.socket_path}")
    events = client.open("io.sesame.Events")
    pypi_replies = events.Subscribe(_more=True)
    assert next(pypi_replies) == {"ready": {"sequence": 0}}

    collectors = [Collector(raw.replies(), 4), Collector(pypi_replies, 4)]
    for collector in collectors:
        collector.start()

    control = RawConnection(fast_daemon.socket_path)
    account = import_tokens(control, subject="alice", expires_in=2, **TOKENS)
    assert account["state"] == "active"
    wait_until(lambda: control.call("io.sesame.Accounts.Get", {"account": account["id"]})
               ["parameters"]["account"]["state"] == "expired", what="the 2-s token to expire")
    assert control.call("io.sesame.Accounts.Logout", {"account": account["id"]})["parameters"]["account"]["state"] \
        == "loggedOut"

    watched = [json.loads(watch.stdout.readline())["event"] for _ in range(4)]
    watch.terminate()
    for collector in collectors:
        collector.join(10)
        assert collector.error is None and not collector.is_alive()
    streams = [watched, collectors[0].events, collectors[1].events]
    for stream in streams:
        assert [e["kind"] for e in stream] == expected
        assert [e["sequence"] for e in stream] == [1, 2, 3, 4]
        assert all(e["account"] == account["id"] for e in stream)
        assert stream == watched, "every subscriber receives the same event, byte for byte"
    assert watched[2]["state"] == "expired" and watched[3]["reason"] == "user"
    # expired fires at expiry (2 s), expiring one second before it, both on time within a second.
    imported = time.mktime(time.strptime(watched[0]["time"], "%Y-%m-%dT%H:%M:%SZ"))
    expired = time.mktime(time.strptime(watched[2]["time"], "%Y-%m-%dT%H:%M:%SZ"))
    assert 1 <= expired - imported <= 3


def test_a_subscriber_that_reconnects_with_since_gets_exactly_what_it_missed(fast_daemon):
    control = RawConnection(fast_daemon.socket_path)
    first = import_tokens(control, subject="bob", expires_in=3600, **TOKENS)
    watcher = Subscription(fast_daemon)
    assert watcher.ready == {"ready": {"sequence": 1}}
    watcher.close()

    second = import_tokens(control, subject="carol", expires_in=3600, **TOKENS)
    control.call("io.sesame.Accounts.Logout", {"account": first["id"]})

    again = Subscription(fast_daemon, since=1)
    assert again.ready == {"ready": {"sequence": 3}}
    missed = [again.next() for _ in range(2)]
    assert [(e["sequence"], e["kind"], e["account"]) for e in missed] == [
        (2, "loggedIn", second["id"]), (3, "loggedOut", first["id"])]
    # And then it is live.
    control.call("io.sesame.Accounts.Remove", {"account": first["id"]})
    live = again.next()
    assert (live["sequence"], live["kind"]) == (4, "accountRemoved")


def test_a_since_the_daemon_cannot_replay_gets_a_resync(fast_daemon):
    control = RawConnection(fast_daemon.socket_path)
    account = import_tokens(control, subject="alice", expires_in=3600, **TOKENS)
    # Sequence numbers from another history (here: ahead of this daemon's) cannot be replayed.
    conn = Subscription(fast_daemon, since=99)
    assert conn.ready == {"ready": {"sequence": 1}}
    resync = conn.reply()["parameters"]["resync"]
    assert resync["sequence"] == 1
    assert [a["id"] for a in resync["accounts"]] == [account["id"]]
    assert ACCESS not in json.dumps(resync) and REFRESH not in json.dumps(resync)


def test_filters_by_account_and_kind(fast_daemon):
    control = RawConnection(fast_daemon.socket_path)
    one = import_tokens(control, subject="one", expires_in=3600, **TOKENS)
    two = import_tokens(control, subject="two", expires_in=3600, **TOKENS)
    conn = Subscription(fast_daemon, accounts=[two["id"]], kinds=["loggedOut"])
    control.call("io.sesame.Accounts.Logout", {"account": one["id"]})
    control.call("io.sesame.Accounts.Logout", {"account": two["id"]})
    event = conn.next()
    assert (event["account"], event["kind"]) == (two["id"], "loggedOut")
    bad = RawConnection(fast_daemon.socket_path).call("io.sesame.Events.Subscribe", {"kinds": ["nope"]}, more=True)
    assert bad == {"error": "org.varlink.service.InvalidParameter", "parameters": {"parameter": "kinds"}}


def test_get_token_and_named_errors(fast_daemon):
    control = RawConnection(fast_daemon.socket_path)
    account = import_tokens(control, subject="alice", expires_in=3600, **TOKENS)
    token = control.call("io.sesame.Accounts.GetToken", {"account": account["id"]})["parameters"]
    assert token["accessToken"] == ACCESS and token["tokenType"] == "Bearer" and token["expiresAt"].endswith("Z")
    assert control.call("io.sesame.Accounts.GetToken", {"account": "nope"}) == {
        "error": "io.sesame.Accounts.NoSuchAccount", "parameters": {"account": "nope"}}
    control.call("io.sesame.Accounts.Logout", {"account": account["id"]})
    assert control.call("io.sesame.Accounts.GetToken", {"account": account["id"]})["error"] == \
        "io.sesame.Accounts.NeedsLogin"
    assert control.call("io.sesame.Accounts.Logout", {"account": account["id"]}) == {
        "error": "io.sesame.Accounts.InvalidTransition",
        "parameters": {"account": account["id"], "from": "loggedOut", "to": "loggedOut"}}
    for provider in ("Not A Provider", "unconfigured"):
        bad = control.call("io.sesame.Accounts.ImportTokens", {
            "provider": provider, "subject": "x", "tokens": {"accessToken": "t"}})
        assert bad == {"error": "io.sesame.Accounts.NoSuchProvider", "parameters": {"provider": provider}}
    bad = control.call("io.sesame.Accounts.ImportTokens", {
        "provider": "google", "subject": "", "tokens": {"accessToken": "t"}})
    assert bad["error"] == "io.sesame.Accounts.InvalidTokens"


def test_sesamectl_drives_a_session(fast_daemon):
    env = {**os.environ, "SESAME_SOCKET": str(fast_daemon.socket_path)}

    def ctl(*args, stdin=None):
        return subprocess.run([str(SESAMECTL), *args], input=stdin, capture_output=True, text=True, env=env,
                              timeout=30)

    response = json.dumps({"access_token": ACCESS, "refresh_token": REFRESH, "expires_in": 3600,
                           "token_type": "Bearer", "scope": "openid email"})
    imported = ctl("import", "google", "--subject", "dave", stdin=response)
    assert imported.returncode == 0, imported.stderr
    account = imported.stdout.strip()
    assert ctl("token", account).stdout == ACCESS + "\n"
    listed = json.loads(ctl("accounts", "--json").stdout)
    assert [(a["id"], a["state"], a["scopes"]) for a in listed] == [(account, "active", ["openid", "email"])]
    # The test's google is offline: the tokens are wiped here, and sesamectl says the provider
    # was not reached.
    assert ctl("logout", account).stdout.startswith(
        f"{account} logged out here; not revoked at the provider: ")
    needs_login = ctl("token", account)
    assert needs_login.returncode == 5 and needs_login.stderr == (
        f"{account} needs a new login: run `sesamectl login google`.\n")
    missing = ctl("token", "nope")
    assert missing.returncode == 4 and missing.stdout == ""
    assert ctl("import", "google", "--subject", "x", stdin="not json").returncode == 1


def test_other_users_cannot_see_or_use_an_account(daemon_reachable_by_other_users):
    daemon = daemon_reachable_by_other_users
    control = RawConnection(daemon.socket_path)
    account = import_tokens(control, subject="alice", expires_in=3600, **TOKENS)

    def as_nobody(*args):
        return subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", str(SESAMECTL), *args,
                               "--socket", str(daemon.socket_path)], capture_output=True, text=True, timeout=30)

    listed = as_nobody("accounts", "--json")
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout) == []
    token = as_nobody("token", account["id"])
    assert token.returncode == 4 and ACCESS not in token.stdout + token.stderr
    assert as_nobody("logout", account["id"]).returncode == 4
    watch = subprocess.Popen(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", str(SESAMECTL), "watch",
                              "--socket", str(daemon.socket_path)], stdout=subprocess.PIPE, text=True)
    assert watch.stdout.readline() == "ready sequence=1\n"
    control.call("io.sesame.Accounts.Logout", {"account": account["id"]})
    owner_sees = Subscription(daemon, since=0)
    assert owner_sees.kinds(2) == ["loggedIn", "loggedOut"]
    watch.terminate()
    assert watch.stdout.read() == "", "a stranger's subscription receives none of the owner's events"


def test_a_subscriber_that_stops_reading_is_cut_off_with_lagged(tmp_path):
    # 3,000 accounts of one uid: far beyond the default accounts_per_user.
    daemon = Daemon(tmp_path, config="[events]\nqueue_limit = 64\n[limits]\naccounts_per_user = 65536\n")
    try:
        daemon.wait_ready()
        stalled = RawConnection(daemon.socket_path)
        stalled.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        stalled.send("io.sesame.Events.Subscribe", {}, more=True)
        assert stalled.reply()["parameters"] == {"ready": {"sequence": 0}}
        reader = Subscription(daemon)
        total = 3000
        keeping_up = Collector(reader.replies(), total)
        keeping_up.start()
        # Enough events to fill the stalled subscriber's socket buffers and then its queue of 64:
        # an account imported per call, each import announcing loggedIn.
        control = RawConnection(daemon.socket_path)
        # In bursts of 20, well under the queue limit, so the subscriber that reads keeps up.
        for start in range(0, total, 20):
            control.send_raw(b"".join(json.dumps({"method": "io.sesame.Accounts.ImportTokens", "parameters": {
                "provider": "p", "subject": f"s{i}", "tokens": {"accessToken": f"t{i}"}}}).encode() + b"\0"
                for i in range(start, start + 20)))
            for _ in range(20):
                assert "error" not in control.reply()
        # The subscriber that keeps up receives every event, undelayed by the stalled one.
        keeping_up.join(30)
        assert keeping_up.error is None
        assert [e["sequence"] for e in keeping_up.events] == list(range(1, total + 1))
        # The stalled one finds its queued events, then the Lagged error, then the end.
        kinds = []
        while True:
            reply = stalled.reply()
            if "error" in reply:
                assert reply == {"error": "io.sesame.Events.Lagged", "parameters": {"queueLimit": 64}}
                break
            kinds.append(reply["parameters"]["event"]["sequence"])
        assert 0 < len(kinds) < total
        assert "peer fell behind and was cut off" in daemon.log()
        assert daemon.stop() == 0
    finally:
        daemon.kill()


def test_tokens_appear_in_no_event_log_line_or_listing(fast_daemon):
    control = RawConnection(fast_daemon.socket_path)
    watcher = Subscription(fast_daemon)
    account = import_tokens(control, subject="alice", expires_in=2, **TOKENS)
    captured = [json.dumps(control.call("io.sesame.Accounts.List")),
                json.dumps(control.call("io.sesame.Accounts.Get", {"account": account["id"]})),
                json.dumps(account)]
    # Expiring and expired happen for real: the 2-s token runs out while the watcher waits for them.
    before_logout = [watcher.reply() for _ in range(3)]
    assert [r["parameters"]["event"]["kind"] for r in before_logout] == ["loggedIn", "expiring", "expired"]
    captured.append(json.dumps(control.call("io.sesame.Accounts.Logout", {"account": account["id"]})))
    captured += [json.dumps(reply) for reply in before_logout + [watcher.reply()]]
    status = subprocess.run([str(SESAMECTL), "status", "--socket", str(fast_daemon.socket_path)],
                            capture_output=True, text=True)
    captured += [status.stdout, status.stderr]
    fast_daemon.stop()
    captured.append(fast_daemon.log())
    captured += [json.dumps(m) for m in fast_daemon.notify.messages]
    everything = "\n".join(captured)
    assert "loggedOut" in everything and "expired" in everything
    for secret in (ACCESS, REFRESH, ID_TOKEN):
        assert secret not in everything


class HeldProvider:
    """A provider on 127.0.0.1 whose token and device endpoints take every request and answer
    only when the test says so: a refresh or login that stays in flight as long as needed."""

    def __init__(self, directory, name="p"):
        self.requested = threading.Event()
        self.answer = threading.Event()
        held = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                held.requested.set()
                held.answer.wait()  # close() sets it: no wall-time limit, whatever the machine's load
                body = json.dumps({"access_token": "AT-after-refresh", "token_type": "Bearer",
                                   "expires_in": 3600, "refresh_token": "RT-after-refresh"}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        base = f"http://127.0.0.1:{self.server.server_address[1]}"
        directory.mkdir(exist_ok=True)
        # The longest request timeouts there are: only sesamed's own shutdown may end these
        # requests, however long a loaded machine takes to set the test up.
        (directory / f"{name}.toml").write_text(
            f'client_id = "sesame"\ntimeout = 300\ntoken_timeout = 600\n'
            f'[endpoints]\ntoken = "{base}/token"\ndevice_authorization = "{base}/device"\n')

    def close(self):
        self.answer.set()
        self.server.shutdown()
        self.server.server_close()


def account_due_for_refresh(conn):
    """An account of the held provider whose access token is inside the refresh margin, so
    GetToken refreshes it first."""
    return import_tokens(conn, provider="p", subject="s", access_token="AT-old", refresh_token="RT-old",
                         expires_in=10)["id"]


def stop_timed(daemon, within):
    """Sends SIGTERM and returns (exit status, seconds until exit), failing after `within` seconds."""
    started = time.monotonic()
    daemon.process.send_signal(signal.SIGTERM)
    daemon.notify.wait_for("STOPPING", timeout=within)
    status = daemon.process.wait(max(0.1, within - (time.monotonic() - started)))
    return status, time.monotonic() - started


def test_stopping_takes_at_most_the_shutdown_timeout_whatever_clients_do(tmp_path):
    provider = HeldProvider(tmp_path / "providers.d")
    daemon = Daemon(tmp_path, config=(
        f'[daemon]\nproviders_directory = "{tmp_path / "providers.d"}"\nshutdown_timeout = 2\n'
        "[events]\nqueue_limit = 65536\n[limits]\nconnections_per_user = 1000\naccounts_per_user = 65536\n"))
    try:
        daemon.wait_ready()
        control = RawConnection(daemon.socket_path)
        account = account_due_for_refresh(control)
        # A refresh in flight, with a caller waiting for it.
        waiting = RawConnection(daemon.socket_path)
        waiting.send("io.sesame.Accounts.GetToken", {"account": account})
        assert provider.requested.wait(20)
        # A client that sends call after call and reads no reply: by the time the events below
        # are sent, the server is stuck writing it replies that do not fit anywhere.
        flooding = RawConnection(daemon.socket_path)
        flooding.sock.setblocking(False)
        flooding.sock.send(b'{"method": "org.varlink.service.GetInfo"}\0' * 20000)
        # A device login in flight: its provider never answers the device authorization.
        login = RawConnection(daemon.socket_path)
        login.send("io.sesame.Accounts.Login", {"provider": "p"}, more=True)
        # Subscribers that stopped reading, with their socket buffers full: events are sent
        # until they fill (far below the queue limit, so none is cut off with Lagged).
        stalled = []
        for _ in range(3):
            conn = RawConnection(daemon.socket_path)
            conn.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            conn.send("io.sesame.Events.Subscribe", {}, more=True)
            stalled.append(conn)
        for start in range(0, 2000, 50):
            control.send_raw(b"".join(json.dumps({"method": "io.sesame.Accounts.ImportTokens", "parameters": {
                "provider": "p", "subject": f"s{i}", "tokens": {"accessToken": f"t{i}"}}}).encode() + b"\0"
                for i in range(start, start + 50)))
            for _ in range(50):
                assert "error" not in control.reply()
        # Many connections with half a call sent (no terminating NUL), each served before.
        half_sent = [RawConnection(daemon.socket_path) for _ in range(100)]
        for conn in half_sent:
            assert "error" not in conn.call("org.varlink.service.GetInfo")
            conn.send_raw(b'{"method": "io.sesame.Accounts.List", "parame')
        assert control.call("io.sesame.Accounts.List")["parameters"]["accounts"]  # all of them are in

        status, took = stop_timed(daemon, within=20)
        assert status == 0, daemon.log()
        assert took < 20
        log = daemon.log()
        assert "closed connections that had not finished" in log, log
        assert "calls=io.sesame.Accounts.GetToken,org.varlink.service.GetInfo" in log, log
        assert "stopped" in log and "Fatal error" not in log
        assert not daemon.socket_path.exists()
        with pytest.raises((EOFError, ConnectionResetError)):
            waiting.reply()
    finally:
        daemon.kill()
        provider.close()


def test_a_call_being_answered_when_stopping_still_gets_its_answer(tmp_path):
    provider = HeldProvider(tmp_path / "providers.d")
    daemon = Daemon(tmp_path, config=(
        f'[daemon]\nproviders_directory = "{tmp_path / "providers.d"}"\nshutdown_timeout = 60\n'))
    try:
        daemon.wait_ready()
        control = RawConnection(daemon.socket_path)
        account = account_due_for_refresh(control)
        subscriber = Subscription(daemon)
        half_sent = RawConnection(daemon.socket_path)
        half_sent.send_raw(b'{"method": "io.sesame.Accounts.List"')
        waiting = RawConnection(daemon.socket_path, timeout=30)
        waiting.send("io.sesame.Accounts.GetToken", {"account": account})
        assert provider.requested.wait(20)

        daemon.process.send_signal(signal.SIGTERM)
        daemon.notify.wait_for("STOPPING")
        # Idle connections, half-sent calls and subscriptions end at once; the socket is closed.
        assert control.is_closed_by_peer()
        assert half_sent.is_closed_by_peer()
        with pytest.raises(EOFError):
            while True:
                subscriber.reply()
        assert daemon.process.poll() is None, "the call being answered holds the daemon"
        # The refresh the call waits for completes, and the caller gets its token.
        provider.answer.set()
        assert waiting.reply()["parameters"]["accessToken"] == "AT-after-refresh"
        assert waiting.is_closed_by_peer(), "once answered, the connection closes"
        assert daemon.process.wait(20) == 0, daemon.log()
    finally:
        daemon.kill()
        provider.close()
