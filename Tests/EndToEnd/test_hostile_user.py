"""No local user can hurt another, end to end: other uids attack the real sesamed the
way the issue's items 1-4 describe, while root, the owner of an account, keeps asking for its
token. Each test asserts what the issue's "Done when" asks: the owner's GetToken stays under
50 ms at p99, the watchdog keeps pinging (WATCHDOG=1 on the test's NOTIFY_SOCKET, no gap as
long as WatchdogSec), the daemon's memory stays bounded, and the stranger gets named errors.

The attackers run as other uids (setpriv): hostile_peer.py sends the messages and calls
(`nest`, `calls`), and peer.py floods connections as test_trust.py does. They
are paced so that they keep sesamed busy without spending much CPU themselves: the suite must
pass on two busy cores."""

import grp
import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from harness import (OFFLINE_PROVIDER, SESAMECTL, SESAMED, RawConnection, call, import_tokens, wait_until)
from standin import Answer, StandIn
from vitals import OWNER_ACCESS, Vitals, watched_daemon

# Alone, after the parallel part of the suite (scripts/test): it bounds what the owner sees
# while an attack runs, which a test on the other worker would skew.
pytestmark = pytest.mark.serial

PEER = Path(__file__).resolve().parent / "peer.py"
HOSTILE_PEER = Path(__file__).resolve().parent / "hostile_peer.py"
NOBODY = 65534
# Further uids without passwd entries, as a user's subordinate uid range shows up.
UIDS_WITHOUT_ENTRIES = (61301, 61302, 61303)
IDLE_UID = 61304  # holds nothing; its refusal shows the total limit


INVALID_MESSAGE = "io.sesame.Varlink.InvalidMessage"
INVALID_PARAMETER = "org.varlink.service.InvalidParameter"
TOO_MANY_CONNECTIONS = "io.sesame.Varlink.TooManyConnections"
TOO_MANY_ACCOUNTS = "io.sesame.Accounts.TooManyAccounts"
INVALID_TOKENS = "io.sesame.Accounts.InvalidTokens"
NO_SUCH_ACCOUNT = "io.sesame.Accounts.NoSuchAccount"


def as_user(uid: int, *command) -> list[str]:
    """`command` run as `uid` (its gid the same number; nobody's is nogroup), no other groups."""
    return ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", *map(str, command)]


def hostile(uid: int, *args) -> subprocess.Popen:
    """hostile_peer.py, run as `uid`."""
    env = {**os.environ, "SESAME_BIN_DIR": str(SESAMED.parent)}
    return subprocess.Popen(as_user(uid, sys.executable, HOSTILE_PEER, *args), env=env, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)


def peer_call(daemon, uid: int, method: str, parameters: dict) -> dict:
    """One call as `uid` with peer.py, its reply."""
    result = subprocess.run(as_user(uid, "/usr/bin/python3", PEER, "call", daemon.socket_path, method,
                                    json.dumps(parameters)), capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def owner_account(daemon) -> str:
    return import_tokens(daemon, subject="owner", access_token=OWNER_ACCESS, expires_in=3600)["id"]


# Item 1: deep and wide nesting from 16 connections.

NEST_CONNECTIONS = 16
NEST_SECONDS = 5


def test_deep_and_wide_messages_from_16_connections_leave_the_owner_served():
    """Item 1: `nobody` keeps 16 connections busy for a few seconds, each pipelining two 1 MB
    calls whose parameter is `[[],[],...]` (wide) and one nested 500 deep (deep), then
    reconnecting. Wide calls are answered with InvalidParameter, deep ones with InvalidMessage
    and a close; meanwhile the owner is served, the watchdog pings and memory stays bounded."""
    with watched_daemon() as daemon:
        account = owner_account(daemon)
        with Vitals(daemon, account, "deep and wide nesting") as vitals:
            attacker = hostile(NOBODY, "nest", daemon.socket_path, NEST_CONNECTIONS, NEST_SECONDS)
            out, _ = attacker.communicate(timeout=600)
        assert attacker.returncode == 0
        counts = json.loads(out)
        print(f"stranger's answers: {counts}")
        rounds = counts.pop("rounds")
        assert rounds >= NEST_CONNECTIONS, counts
        assert counts == {f"wide: {INVALID_PARAMETER}": 2 * rounds,
                          f"deep: {INVALID_MESSAGE}: nested deeper than 64 levels, then closed": rounds}
        vitals.assert_owner_unharmed()


# Item 2: 100 imports of maximal size.

IMPORTS = 100
SUBJECTS = 40  # taken in turn: 32 fill the quota, the other 8 are refused each time they come
ACCOUNT_LIMIT = 32  # [limits] accounts_per_user, default
CLIENT_ID = "sesame-tests"


@pytest.fixture
def jwks_provider(tmp_path):
    """A providers directory with the offline `google` (the owner's) and `hostile`, whose ID
    tokens are signed by a stand-in's key, so an import can carry a 16 KiB ID token that
    verifies. Yields the directory and the stand-in."""
    with StandIn() as stand_in:
        stand_in.routes[("GET", "/jwks")] = lambda request: Answer(json=stand_in.jwks())
        providers = tmp_path / "providers.d"
        providers.mkdir()
        (providers / "google.toml").write_text(OFFLINE_PROVIDER)
        (providers / "hostile.toml").write_text(
            f'issuer = "{stand_in.base}"\ndiscovery = false\nclient_id = "{CLIENT_ID}"\ntimeout = 2\n'
            f'[endpoints]\ntoken = "http://127.0.0.1:9/token"\njwks = "{stand_in.base}/jwks"\n')
        yield providers, stand_in


def id_token_of_size(stand_in, subject: str, size: int) -> str:
    """A signed ID token about `subject` of `size` bytes or up to 4 less (padded with a claim)."""
    claims, pad = {"iss": stand_in.base, "aud": CLIENT_ID, "sub": subject}, 0
    while not size - 4 <= len(token := stand_in.id_token({**claims, "pad": "x" * pad})) <= size:
        pad += (size - len(token)) * 3 // 4 or (1 if len(token) < size else -1)  # base64: 4 bytes per 3
    return token


def random_text(size: int) -> str:
    return os.urandom(size // 2).hex()


def maximal_import(subject: str, id_token: str) -> dict:
    """ImportTokens' parameters with every field at its bound: 64 KiB access and refresh tokens,
    a 16 KiB ID token, a 64-byte token type, 64 scopes of 256 bytes, and a display name that
    sesamed keeps at ~2,000 bytes (200 private-use characters, each escaped as \\u{10fffd})."""
    return {"provider": "hostile", "subject": subject, "displayName": "\U0010fffd" * 201,
            "tokens": {"accessToken": random_text(65536), "refreshToken": random_text(65536), "idToken": id_token,
                       "tokenType": "Bearer" + "x" * 58, "expiresIn": 3600, "refreshExpiresIn": 86400 * 365,
                       "scopes": [f"{n:03}" + random_text(252) + "x" for n in range(64)]}}


def one_over(parameters: dict, stand_in) -> list[tuple[dict, str]]:
    """The same import with one field over its bound each, and the InvalidTokens reason it gets."""
    def changed(**tokens):
        return {**parameters, "tokens": {**parameters["tokens"], **tokens}}
    scopes = "at most 64 scopes of 1 to 256 bytes each"
    return [
        (changed(accessToken=random_text(65536) + "x"), "access token must be 1 to 65536 bytes"),
        (changed(refreshToken=random_text(65536) + "x"), "refresh token must be 1 to 65536 bytes"),
        (changed(idToken=id_token_of_size(stand_in, parameters["subject"], 16384 + 5)),
         "the ID token must be at most 16384 bytes"),
        (changed(tokenType="B" * 65), "the token type must be 1 to 64 bytes"),
        (changed(scopes=[f"s{n}" for n in range(65)]), scopes),
        (changed(scopes=["s" * 257]), scopes),
        (changed(expiresIn=10**12), "an expiry time is outside the years 2000 to 2200"),
    ]


def test_a_hundred_maximal_imports_are_held_to_quota_and_field_bounds(jwks_provider):
    """Item 2: `nobody` imports 100 accounts' worth of tokens with every field at its bound, on
    one connection, one after the other: 32 accounts fill its quota (TooManyAccounts after that;
    the rest renew its accounts, so every accepted import rewrites a store at its largest),
    then each field just over its bound (InvalidTokens, naming the bound). The owner is served
    meanwhile, and afterwards root's `sesamectl accounts` still lists every account."""
    providers, stand_in = jwks_provider
    id_tokens = [id_token_of_size(stand_in, f"s{n:02}", 16384) for n in range(SUBJECTS)]
    imports = [maximal_import(f"s{n % SUBJECTS:02}", id_tokens[n % SUBJECTS]) for n in range(IMPORTS)]
    oversized = one_over(imports[0], stand_in)
    requests = [{"method": "io.sesame.Accounts.ImportTokens", "parameters": p}
                for p in imports + [p for p, _ in oversized]]
    answered = len(requests)
    stdin = "".join(json.dumps(request) + "\n" for request in requests)
    # What is tested here is quota and bounds, not the rate of calls that reach a provider
    # (test_provider_quota.py): that limit is lifted.
    unlimited = "[limits]\nprovider_calls_per_minute = 100000\n"
    with watched_daemon(unlimited, extra_args=("--providers-dir", str(providers))) as daemon:
        account = owner_account(daemon)
        with Vitals(daemon, account, "maximal imports") as vitals:
            attacker = hostile(NOBODY, "calls", daemon.socket_path)
            out, _ = attacker.communicate(stdin, timeout=600)
        assert attacker.returncode == 0
        answers = [json.loads(line) for line in out.splitlines()]
        assert len(answers) == answered, out
        expected = [{} if n % SUBJECTS < ACCOUNT_LIMIT else {"error": TOO_MANY_ACCOUNTS,
                                                            "parameters": {"limit": ACCOUNT_LIMIT}}
                    for n in range(IMPORTS)]
        assert answers[:IMPORTS] == expected
        assert answers[IMPORTS:] == [{"error": INVALID_TOKENS, "parameters": {"reason": reason}}
                                     for _, reason in oversized]

        # What the stranger made sesamed keep is bounded, and root still sees all of it.
        store = daemon.state_dir / "sessions.store"
        print(f"store: {store.stat().st_size >> 10} KiB")
        # The store appends changes until they outgrow the state, then rewrites it (StoreWriter):
        # at most about twice what it holds.
        assert store.stat().st_size < 2 * (ACCOUNT_LIMIT + 1) * 200_000 + (256 << 10)
        listed = subprocess.run([SESAMECTL, "accounts", "--json", "--socket", daemon.socket_path],
                                capture_output=True, text=True, timeout=60)
        assert listed.returncode == 0, listed.stderr
        listed = json.loads(listed.stdout)
        assert sorted(entry["owner"] for entry in listed) == [0] + [NOBODY] * ACCOUNT_LIMIT
        # Each of them as large as sesamed keeps: the display name at ~2,000 bytes, 64 scopes.
        kept = [entry for entry in listed if entry["owner"] == NOBODY]
        assert min(len(entry["displayName"].encode()) for entry in kept) >= 2000
        assert {len(entry["scopes"]) for entry in kept} == {64}
        vitals.assert_owner_unharmed()


# Item 3: connection exhaustion near the descriptor limit.

OPEN_FILES = 600  # the daemon's RLIMIT_NOFILE, soft and hard
TOTAL = OPEN_FILES - 256  # connections_total (4096) clamped 256 below the open-file limit
PER_USER = 128  # [limits] connections_per_user, default
ROOT_RESERVE = 32  # connections root may open beyond the total
FLOOD = 150  # connections each stranger tries


def few_open_files():
    resource.setrlimit(resource.RLIMIT_NOFILE, (OPEN_FILES, OPEN_FILES))


def flood(daemon, uid: int) -> subprocess.Popen:
    """peer.py opening FLOOD connections as `uid`; its first line counts how they were answered,
    and it holds the served ones until its stdin closes."""
    return subprocess.Popen(as_user(uid, "/usr/bin/python3", PEER, "flood", daemon.socket_path, FLOOD),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def test_connection_exhaustion_near_the_descriptor_limit_leaves_root_served():
    """Item 3: sesamed runs with 600 open files; `nobody` and three uids without passwd entries
    try 150 connections each at once. Together they get exactly the 344 the total allows (minus
    the owner's), none more than 128; every other attempt is TooManyConnections. The owner is
    served meanwhile, root can open 32 connections beyond the total (and is refused the 33rd),
    a fifth uid is refused naming the total, and sesamed neither runs out of descriptors nor
    spins."""
    with watched_daemon(preexec_fn=few_open_files) as daemon:
        account = owner_account(daemon)
        limits = Path(f"/proc/{daemon.process.pid}/limits").read_text()
        assert f"Max open files            {OPEN_FILES}                  {OPEN_FILES}" in limits
        with Vitals(daemon, account, "connection exhaustion") as vitals:
            floods = {uid: flood(daemon, uid) for uid in (NOBODY, *UIDS_WITHOUT_ENTRIES)}
            counts = {uid: json.loads(process.stdout.readline()) for uid, process in floods.items()}
            print(f"strangers' answers: {counts}")
            # While the strangers hold every connection they can get, root has 32 more of its own.
            extra_root = [RawConnection(daemon.socket_path) for _ in range(ROOT_RESERVE)]
            tokens = [c.call("io.sesame.Accounts.GetToken", {"account": account}) for c in extra_root]
            beyond_reserve = call(daemon, "io.sesame.Accounts.List", {})
            refused = peer_call(daemon, IDLE_UID, "io.sesame.Accounts.List", {})
            descriptors = len(os.listdir(f"/proc/{daemon.process.pid}/fd"))
            # Held for three watchdog periods: an accept loop spinning at EMFILE would burn a core.
            busy = vitals.wait_for_pings(3)
        served = sum(c.get("served", 0) for c in counts.values())
        assert served == TOTAL - 1, counts  # the owner's connection is the other one
        for uid, c in counts.items():
            assert c.get("served", 0) <= PER_USER and set(c) <= {"served", TOO_MANY_CONNECTIONS}, (uid, c)
            assert sum(c.values()) == FLOOD, (uid, c)
        assert all(t.get("parameters", {}).get("accessToken") == OWNER_ACCESS for t in tokens), \
            [t.get("error") for t in tokens]
        assert beyond_reserve == refused == {"error": TOO_MANY_CONNECTIONS, "parameters": {"limit": TOTAL}}
        print(f"descriptors open: {descriptors}; daemon CPU while held: {busy:.0%}")
        assert descriptors < OPEN_FILES - 64
        assert busy < 0.5, f"sesamed used {busy:.0%} of a CPU while the connections were held"
        vitals.assert_owner_unharmed()

        # Letting go gives the strangers their connections back.
        for conn in extra_root:
            conn.close()
        for process in floods.values():
            process.stdin.close()
            process.wait(30)
        wait_until(lambda: "error" not in peer_call(daemon, IDLE_UID, "io.sesame.Accounts.List", {}),
                   what="the strangers' connections to be released")


# Item 4: group removal and reload.

@pytest.fixture
def admin_group_with_nobody():
    """A group of the system's user database with `nobody` as a (supplementary) member, removed
    again after the test. Yields its name and gid."""
    name = f"sesame-e2e-{os.getpid()}"
    subprocess.run(["groupadd", "--system", name], check=True, capture_output=True)
    try:
        subprocess.run(["gpasswd", "--add", "nobody", name], check=True, capture_output=True)
        yield name, grp.getgrnam(name).gr_gid
    finally:
        subprocess.run(["groupdel", name], check=True, capture_output=True)


def test_a_live_subscription_loses_admin_rights_when_the_group_membership_goes(admin_group_with_nobody):
    """Item 4: `nobody` is a member of `admin_group` through the user database (not its primary
    group) and watches every account's events; `gpasswd --delete` and a SIGHUP later, its
    running subscription gets none of root's events, and its calls on root's account are
    NoSuchAccount. (test_trust.py withdraws a grant from the config; this is the membership.)"""
    name, gid = admin_group_with_nobody
    with watched_daemon(f"[access]\nadmin_group = {gid}\n") as daemon:
        root = RawConnection(daemon.socket_path)
        first = owner_account(daemon)
        watch = subprocess.Popen(as_user(NOBODY, "/usr/bin/python3", PEER, "watch", daemon.socket_path),
                                 stdout=subprocess.PIPE, text=True)
        try:
            assert "ready" in json.loads(watch.stdout.readline())["parameters"]
            second = import_tokens(root, subject="second", access_token=OWNER_ACCESS)["id"]
            seen_as_admin = json.loads(watch.stdout.readline())["parameters"]["event"]
            assert (seen_as_admin["account"], seen_as_admin["kind"]) == (second, "loggedIn")
            listed = peer_call(daemon, NOBODY, "io.sesame.Accounts.List", {})["parameters"]["accounts"]
            assert {a["id"] for a in listed} == {first, second}

            subprocess.run(["gpasswd", "--delete", "nobody", name], check=True, capture_output=True)
            daemon.process.send_signal(signal.SIGHUP)
            daemon.wait_for_log("access policy reloaded")
            assert root.call("io.sesame.Accounts.Logout", {"account": first})["parameters"]["account"]["state"] == \
                "loggedOut"
            import_tokens(root, subject="third", access_token=OWNER_ACCESS)
            # An event nobody may see, its own account's: events come in order, so one of root's
            # sent to it wrongly would come first.
            own = import_tokens(lambda method, parameters: peer_call(daemon, NOBODY, method, parameters),
                                subject="nobody's own", access_token="AT-hostile-nobody")["id"]
            seen_after = json.loads(watch.stdout.readline())["parameters"]["event"]
            assert (seen_after["account"], seen_after["kind"]) == (own, "loggedIn"), \
                "the removed member's subscription still got root's events"
        finally:
            watch.kill()
            watch.wait()
        for method in ("Get", "GetToken", "Logout"):
            reply = peer_call(daemon, NOBODY, f"io.sesame.Accounts.{method}", {"account": second})
            assert reply == {"error": NO_SUCH_ACCOUNT, "parameters": {"account": second}}, (method, reply)
        listed = peer_call(daemon, NOBODY, "io.sesame.Accounts.List", {})["parameters"]["accounts"]
        assert [a["id"] for a in listed] == [own]
