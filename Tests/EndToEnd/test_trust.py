"""Trust end to end: real processes under other uids (setpriv) against the real sesamed. Who may
see, use and change which account; events filtered per subscriber, also after a reload; per-user
limits that stop one user without starving the others; and tokens nowhere they should not be."""

import json
import signal
import subprocess
import threading
from pathlib import Path

import pytest

from harness import SESAMECTL, Daemon, RawConnection, daemon_reachable_by_other_users, import_tokens, wait_until

PEER = Path(__file__).resolve().parent / "peer.py"
OWNER, ADMIN, OBSERVER, USER, STRANGER = 61001, 61002, 61003, 61004, 61005
ADMIN_GROUP, USE_GROUP = 61100, 61204
ACCESS = "AT-trust-5c0ffee1"
REFRESH = "RT-trust-0ddba11s"
OTHER_ACCESS = "AT-trust-kakao-77"
# The owner's two accounts, as import_tokens(caller(daemon, "owner", outputs), **GOOGLE_ACCOUNT).
GOOGLE_ACCOUNT = {"provider": "google", "subject": "alice@google", "access_token": ACCESS, "refresh_token": REFRESH,
                  "expires_in": 3600}
KAKAO_ACCOUNT = {**GOOGLE_ACCOUNT, "provider": "kakao", "subject": "alice@kakao", "access_token": OTHER_ACCESS}

CONFIG = f"""
[access]
admin_group = {ADMIN_GROUP}

[limits]
connections_per_user = 64
subscriptions_per_user = 8

[[grants]]
user = {OBSERVER}
provider = "google"
allow = ["observe"]

[[grants]]
group = {USE_GROUP}
provider = "google"
allow = ["use"]
"""

# uid -> (uid, primary gid) each caller runs as; root runs as the test itself.
IDENTITIES = {
    "owner": (OWNER, OWNER),
    "admin": (ADMIN, ADMIN_GROUP),
    "observer": (OBSERVER, OBSERVER),
    "user": (USER, USE_GROUP),
    "stranger": (STRANGER, STRANGER),
}


def as_user(role: str, *args, **kwargs) -> list[str]:
    if role == "root":
        return ["/usr/bin/python3", str(PEER), *args]
    uid, gid = IDENTITIES[role]
    return ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "/usr/bin/python3", str(PEER), *args]


def peer_call(daemon: Daemon, role: str, method: str, parameters: dict, outputs: list) -> dict:
    result = subprocess.run(as_user(role, "call", str(daemon.socket_path), method, json.dumps(parameters)),
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    outputs.append(result.stdout + result.stderr)
    return json.loads(result.stdout)


def caller(daemon: Daemon, role: str, outputs: list):
    """peer_call as `role`, in the shape import_tokens takes for its `via`."""
    return lambda method, parameters: peer_call(daemon, role, method, parameters, outputs)


@pytest.fixture
def trusting_daemon():
    """A daemon with an admin group, two grants and low limits, on a socket other users reach."""
    with daemon_reachable_by_other_users(CONFIG) as instance:
        yield instance


ROLES = ["owner", "root", "admin", "observer", "user", "stranger"]
ALLOWED = "allowed"
DENIED = "org.varlink.service.PermissionDenied"
HIDDEN = "io.sesame.Accounts.NoSuchAccount"

# Each method against the owner's google account, per caller. Logout and Remove come last in
# their own loop because they end the session.
MATRIX = {
    "Get":            [ALLOWED, ALLOWED, ALLOWED, ALLOWED, ALLOWED, HIDDEN],
    "GetToken":       [ALLOWED, ALLOWED, DENIED, DENIED, ALLOWED, HIDDEN],
    "ReportRejected": [ALLOWED, ALLOWED, DENIED, DENIED, ALLOWED, HIDDEN],
    "Refresh":        [ALLOWED, ALLOWED, DENIED, DENIED, DENIED, HIDDEN],
    "Check":          [ALLOWED, ALLOWED, DENIED, DENIED, ALLOWED, HIDDEN],
    "GetIDToken":     [ALLOWED, ALLOWED, DENIED, DENIED, ALLOWED, HIDDEN],
    "Rename":         [ALLOWED, ALLOWED, DENIED, DENIED, DENIED, HIDDEN],
    "Logout":         [ALLOWED, ALLOWED, ALLOWED, DENIED, DENIED, HIDDEN],
    "Remove":         [ALLOWED, ALLOWED, DENIED, DENIED, DENIED, HIDDEN],
}


def outcome(reply: dict) -> str:
    # The test's providers are offline: a refresh that was allowed fails at the provider.
    if reply.get("error") == "io.sesame.Accounts.RefreshFailed":
        return ALLOWED
    # The imported accounts hold no ID token: asking for one was allowed.
    if reply.get("error") == "io.sesame.Accounts.NoIDToken":
        return ALLOWED
    return reply.get("error", ALLOWED)


def parameters_for(method: str, account: str) -> dict:
    if method == "ReportRejected":
        return {"account": account, "accessToken": "not-the-current-one"}
    if method == "Rename":
        return {"account": account, "name": "renamed"}
    return {"account": account}


def test_every_method_for_every_kind_of_caller(trusting_daemon):
    daemon, outputs = trusting_daemon, []
    owner = caller(daemon, "owner", outputs)
    account = import_tokens(owner, **GOOGLE_ACCOUNT)["id"]
    other = import_tokens(owner, **KAKAO_ACCOUNT)["id"]
    failures = []

    def check(method: str, role: str, expected: str):
        reply = peer_call(daemon, role, f"io.sesame.Accounts.{method}", parameters_for(method, account), outputs)
        if outcome(reply) != expected:
            failures.append(f"{method} as {role}: expected {expected}, got {reply}")
        return reply

    for method in ("Get", "GetToken", "ReportRejected", "Refresh", "Check", "GetIDToken", "Rename"):
        for role, expected in zip(ROLES, MATRIX[method]):
            reply = check(method, role, expected)
            if method == "GetToken" and expected == ALLOWED:
                assert reply["parameters"]["accessToken"] == ACCESS
    for method in ("Logout", "Remove"):
        for role, expected in zip(ROLES, MATRIX[method]):
            check(method, role, expected)
            if expected == ALLOWED:
                account = import_tokens(owner, **GOOGLE_ACCOUNT)["id"]  # the same account again, or a new one
    assert not failures, "\n".join(failures)

    # List: everyone may call it and sees what they may observe.
    seen = {role: sorted(a["id"] for a in peer_call(daemon, role, "io.sesame.Accounts.List", {}, outputs)
                         ["parameters"]["accounts"]) for role in ROLES}
    assert seen["owner"] == seen["root"] == seen["admin"] == sorted([account, other])
    assert seen["observer"] == seen["user"] == [account], "the grants cover google only"
    assert seen["stranger"] == []
    assert outcome(peer_call(daemon, "observer", "io.sesame.Accounts.Get", {"account": other}, outputs)) == HIDDEN

    # Creating one's own account is open to all; naming another owner is root's alone.
    tokens = {"accessToken": "AT-trust-stranger-own"}
    mine = peer_call(daemon, "stranger", "io.sesame.Accounts.ImportTokens",
                     {"provider": "google", "subject": "s", "tokens": tokens}, outputs)
    assert mine["parameters"]["account"]["owner"] == STRANGER
    theirs = peer_call(daemon, "stranger", "io.sesame.Accounts.ImportTokens",
                       {"provider": "google", "subject": "s", "owner": OWNER, "tokens": tokens}, outputs)
    assert outcome(theirs) == DENIED
    for role in ROLES:
        login = peer_call(daemon, role, "io.sesame.Accounts.Login", {"provider": "none"}, outputs)
        assert outcome(login) == "io.sesame.Accounts.NoSuchProvider", (role, login)
        complete = peer_call(daemon, role, "io.sesame.Accounts.CompleteLogin", {"state": "s", "code": "c"}, outputs)
        assert outcome(complete) == "io.sesame.Accounts.NoSuchLogin", (role, complete)
        stats = peer_call(daemon, role, "io.sesame.Admin.Stats", {}, outputs)
        assert outcome(stats) == (ALLOWED if role == "root" else DENIED), (role, stats)

    # Tokens only ever in GetToken replies: never in any other reply, error or log line.
    others = [text for text in outputs if '"accessToken"' not in text or "ImportTokens" in text]
    for text in others + [daemon.log()]:
        for token in (REFRESH, OTHER_ACCESS):
            assert token not in text
    assert ACCESS not in daemon.log()
    assert all(ACCESS not in text for text in outputs if '"error"' in text)


class Watcher:
    """peer.py watch as `role`: a live subscription under another uid, its replies read in the
    background as they come, so a test can wait until it has what it should see."""

    def __init__(self, daemon: Daemon, role: str):
        self.role = role
        self.process = subprocess.Popen(as_user(role, "watch", str(daemon.socket_path)), stdout=subprocess.PIPE,
                                        text=True)
        ready = json.loads(self.process.stdout.readline())
        assert "ready" in ready["parameters"], ready
        self.replies: list[dict] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.process.stdout:
            self.replies.append(json.loads(line))

    def wait_for(self, count: int):
        """Waits until `count` events have come."""
        wait_until(lambda: len(self.replies) >= count, what=lambda: f"{count} events for {self.role}: {self.replies}")

    def stop(self) -> list[dict]:
        """Ends the watch (SIGTERM) and returns every event it received."""
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(10)
        self.reader.join(10)
        assert not self.reader.is_alive()
        return [reply["parameters"]["event"] for reply in self.replies]


def test_events_reach_only_those_who_may_observe_and_a_reload_withdraws_a_grant(trusting_daemon):
    daemon, outputs = trusting_daemon, []
    watchers = {role: Watcher(daemon, role) for role in ROLES}
    owner = caller(daemon, "owner", outputs)
    account = import_tokens(owner, **GOOGLE_ACCOUNT)["id"]
    other = import_tokens(owner, **KAKAO_ACCOUNT)["id"]
    control = RawConnection(daemon.socket_path)
    # Every watcher has what it may see of the two imports before the grant is withdrawn.
    for role, count in {"owner": 2, "root": 2, "admin": 2, "observer": 1, "user": 1}.items():
        watchers[role].wait_for(count)

    # Withdraw the observer's grant; its live subscription must stop seeing google at once.
    daemon.config_path.write_text(CONFIG.replace(f"user = {OBSERVER}", f"user = {STRANGER + 1}"))
    daemon.process.send_signal(signal.SIGHUP)
    daemon.wait_for_log("access policy reloaded")
    assert control.call("io.sesame.Accounts.Logout", {"account": account})["parameters"]["account"]["state"] == \
        "loggedOut"
    control.call("io.sesame.Accounts.Logout", {"account": other})
    for role, count in {"owner": 4, "root": 4, "admin": 4, "user": 2}.items():
        watchers[role].wait_for(count)
    # The observer and the stranger must get nothing more. Each now gets an event it may see (an
    # account of its own); events reach a subscriber in order, so one sent to it wrongly would
    # have arrived before that one.
    markers = {role: import_tokens(caller(daemon, role, outputs), **GOOGLE_ACCOUNT)["id"]
               for role in ("observer", "stranger")}
    watchers["observer"].wait_for(2)
    watchers["stranger"].wait_for(1)

    seen = {role: [(e["account"], e["kind"]) for e in watcher.stop()] for role, watcher in watchers.items()}
    without_markers = {role: [e for e in events if e[0] not in markers.values()] for role, events in seen.items()}
    everything = [(account, "loggedIn"), (other, "loggedIn"), (account, "loggedOut"), (other, "loggedOut")]
    assert without_markers["owner"] == without_markers["root"] == without_markers["admin"] == everything
    assert without_markers["user"] == [(account, "loggedIn"), (account, "loggedOut")]
    assert seen["observer"] == [(account, "loggedIn"), (markers["observer"], "loggedIn")], \
        "the withdrawn grant still delivered events"
    assert seen["stranger"] == [(markers["stranger"], "loggedIn")]
    for text in [daemon.log(), json.dumps(seen)]:
        assert ACCESS not in text and REFRESH not in text and OTHER_ACCESS not in text


def flood(daemon: Daemon, role: str, command: str, count: int) -> subprocess.Popen:
    """A peer opening `count` connections; its first line counts how they were answered."""
    def more_descriptors():
        import resource
        resource.setrlimit(resource.RLIMIT_NOFILE, (count + 256, count + 256))
    return subprocess.Popen(as_user(role, command, str(daemon.socket_path), str(count)), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, preexec_fn=more_descriptors)


def test_a_stranger_flooding_connections_and_subscriptions_hits_its_limits_while_the_owner_is_served(
        trusting_daemon):
    daemon, outputs = trusting_daemon, []
    account = import_tokens(caller(daemon, "owner", outputs), **GOOGLE_ACCOUNT)["id"]

    subscriber = flood(daemon, "stranger", "subscribe-flood", 64)
    counts = json.loads(subscriber.stdout.readline())
    assert counts == {"served": 8, "io.sesame.Events.TooManySubscriptions": 56}, counts

    connections = flood(daemon, "stranger", "flood", 10_000)
    counts = json.loads(connections.stdout.readline())
    # The 8 subscriptions still hold 8 of the stranger's 64 connections.
    assert counts == {"served": 56, "io.sesame.Varlink.TooManyConnections": 9_944}, counts

    # While the stranger holds everything it may, the owner is served as ever.
    reply = peer_call(daemon, "owner", "io.sesame.Accounts.GetToken", {"account": account}, outputs)
    assert reply["parameters"]["accessToken"] == ACCESS
    owner_watch = Watcher(daemon, "owner")
    owner_watch.process.kill()
    # What the stranger's own tools say meanwhile: one clear sentence, no trace.
    uid, gid = IDENTITIES["stranger"]
    refused = subprocess.run(["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", str(SESAMECTL),
                              "accounts", "--socket", str(daemon.socket_path)], capture_output=True, text=True,
                             timeout=30)
    assert (refused.returncode, refused.stderr) == (1, "sesamed: too many connections for this user (the limit is 64).\n")

    # Letting go gives the stranger its allowance back.
    for process in (subscriber, connections):
        process.stdin.close()
        process.wait(30)
    def stranger_served():
        reply = peer_call(daemon, "stranger", "io.sesame.Accounts.List", {}, outputs)
        return None if "error" in reply else reply
    reply = wait_until(stranger_served, what="the stranger's allowance to come back")
    assert reply["parameters"]["accounts"] == []


def test_a_name_picks_only_the_callers_own_account(trusting_daemon):
    """Names are the owner's: another user who names an account `work` never has it picked up
    by someone else's `work`, root's scripts included; a provider's name likewise."""
    daemon, outputs = trusting_daemon, []
    owner = caller(daemon, "owner", outputs)
    stranger = caller(daemon, "stranger", outputs)
    theirs = import_tokens(stranger, provider="kakao", subject="mallory", access_token="AT-trust-mallory-5",
                           expires_in=3600)["id"]
    renamed = peer_call(daemon, "stranger", "io.sesame.Accounts.Rename", {"account": theirs, "name": "work"}, outputs)
    assert renamed["parameters"]["account"]["name"] == "work", renamed
    for role in ("owner", "root"):
        for reference in ("work", "kakao"):
            reply = peer_call(daemon, role, "io.sesame.Accounts.GetToken", {"account": reference}, outputs)
            assert reply.get("error") == HIDDEN, (role, reference, reply.get("error"))
    mine = import_tokens(owner, **GOOGLE_ACCOUNT)["id"]
    assert "error" not in peer_call(daemon, "owner", "io.sesame.Accounts.Rename", {"account": mine, "name": "work"},
                                    outputs)
    for role, reference, token in (("owner", "work", ACCESS), ("owner", "google", ACCESS),
                                   ("stranger", "work", "AT-trust-mallory-5"), ("stranger", "kakao", "AT-trust-mallory-5")):
        reply = peer_call(daemon, role, "io.sesame.Accounts.GetToken", {"account": reference}, outputs)
        picked = reply.get("parameters", {}).get("accessToken") == token
        assert picked, (role, reference, reply.get("error"))
