"""OAuth end to end: the real sesamed logging accounts in, refreshing and revoking against a real
authorization server (django-oauth-toolkit, Tests/IdentityProvider) on 127.0.0.1, and every
fault class ending in the right state and event while the daemon keeps serving."""

import asyncio
import json
import subprocess
import time
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest
import requests

from harness import (SESAMECTL, Daemon, RawConnection, Subscription, call, import_from_idp, import_tokens, running,
                     subject_of, wait_until)
from idp_harness import IdentityProvider

SCOPES = ["openid", "profile", "email", "offline_access"]


def provider_files(directory: Path, idp: IdentityProvider, timeout: int = 2, token_timeout: int = 3):
    """providers.d with the device client as `local` and the PKCE client as `web`. Callers wait
    `timeout` seconds; a token request is given up after `token_timeout`."""
    directory.mkdir(exist_ok=True)
    scopes = json.dumps(SCOPES)
    (directory / "local.toml").write_text(
        f'issuer = "{idp.issuer}"\nclient_id = "{idp.clients["device"]["client_id"]}"\n'
        f'scopes = {scopes}\nflow = "device"\ntimeout = {timeout}\ntoken_timeout = {token_timeout}\n'
    )
    (directory / "web.toml").write_text(
        f'issuer = "{idp.issuer}"\nclient_id = "{idp.clients["code"]["client_id"]}"\n'
        f'scopes = {scopes}\nflow = "authorizationCode"\ntimeout = {timeout}\ntoken_timeout = {token_timeout}\n'
    )


def oauth_daemon(tmp_path: Path, idp: IdentityProvider, refresh_ahead: bool = False, limits: str = "") -> Daemon:
    """A daemon (not yet started) with the test IdP's providers; use it with harness.running,
    which waits for it, kills it if start-up fails, and requires a clean stop."""
    providers = tmp_path / "providers.d"
    provider_files(providers, idp)
    config = (
        f'[daemon]\nproviders_directory = "{providers}"\n'
        f"[sessions]\nexpiring_margin = 1\nrefresh_margin = 0\nrefresh_ahead = {str(refresh_ahead).lower()}\n"
        f"[store]\nallow_generated_key = true\n[limits]\nconnections_per_user = 300\n{limits}"
    )
    return Daemon(tmp_path, config=config)


@pytest.fixture
def daemon(tmp_path, idp):
    """conftest's `daemon` for this module: private as that one, with the test IdP's providers
    (oauth_daemon) and the IdP's faults and counters cleared."""
    idp.clear_faults()
    idp.reset_counters()
    with running(oauth_daemon(tmp_path, idp)) as instance:
        yield instance


def device_login(daemon: Daemon, idp: IdentityProvider, username="alice") -> dict:
    """Logs in with the device flow the way a client does: Login with more, approve, done."""
    conn = RawConnection(daemon.socket_path, timeout=30)
    conn.send("io.sesame.Accounts.Login", {"provider": "local"}, more=True)
    first = conn.reply()
    assert first.get("continues") is True, first
    verification = first["parameters"]["verification"]
    assert verification["uri"].startswith(idp.base) and verification["userCode"]
    idp.approve(verification["userCode"], username)
    done = conn.reply()
    assert "error" not in done and not done.get("continues"), done
    conn.close()
    return done["parameters"]["account"]


def get_token(daemon: Daemon, account_id: str) -> str:
    reply = call(daemon, "io.sesame.Accounts.GetToken", {"account": account_id})
    assert "error" not in reply, reply
    return reply["parameters"]["accessToken"]


def state_of(daemon: Daemon, account_id: str) -> str:
    reply = call(daemon, "io.sesame.Accounts.Get", {"account": account_id})
    assert "error" not in reply, reply
    return reply["parameters"]["account"]["state"]


def assert_no_token_in(text: str, tokens):
    for token in tokens:
        assert token not in text, "a token leaked"


def test_device_login_refresh_with_rotation_and_logout_revocation(daemon, idp):
    events = Subscription(daemon, kinds=["loggedIn", "expired", "tokenRefreshed", "loggedOut"])
    account = device_login(daemon, idp)
    assert account["provider"] == "local" and account["state"] == "active"
    assert account["displayName"] == "Alice" and set(SCOPES) <= set(account["scopes"])
    first = get_token(daemon, account["id"])
    assert idp.token_status(first)
    assert events.kinds(2) == ["loggedIn", "expired"]  # DOT's tokens live 2 s

    idp.reset_counters()
    second = get_token(daemon, account["id"])  # expired, so refreshed on the way
    assert second != first and idp.token_status(second)
    assert idp.counters()["token_requests"] == {"refresh_token": 1}
    refreshed = events.next()
    assert refreshed["kind"] == "tokenRefreshed" and refreshed["state"] == "active"
    # Rotation: the next refresh uses the refresh token DOT handed back, or DOT would refuse it.
    reply = call(daemon, "io.sesame.Accounts.Refresh", {"account": account["id"]})
    assert reply["parameters"]["account"]["state"] == "active", reply
    third = get_token(daemon, account["id"])
    assert third not in (first, second) and events.next()["kind"] == "tokenRefreshed"

    reply = call(daemon, "io.sesame.Accounts.Logout", {"account": account["id"]})
    assert reply["parameters"]["account"]["state"] == "loggedOut", reply
    logged_out = events.next()
    assert logged_out["kind"] == "loggedOut" and logged_out["reason"] == "user"
    assert logged_out["revokedRemotely"] is True
    assert not idp.token_status(third), "DOT still takes the access token after logout"
    assert idp.counters()["revocations"] >= 1
    assert_no_token_in(daemon.log(), [first, second, third])


def test_reusing_a_rotated_refresh_token_ends_in_needs_login(daemon, idp):
    account, tokens = import_from_idp(daemon, idp)
    events = Subscription(daemon, kinds=["tokenRefreshed", "needsLogin", "refreshFailed"])
    # Someone else refreshes with the same refresh token first; DOT rotates it, so the daemon's
    # copy is now a reused token, and reuse revokes the whole family.
    assert idp.refresh(tokens["refresh_token"]).status_code == 200
    reply = call(daemon, "io.sesame.Accounts.Refresh", {"account": account["id"]})
    assert reply["error"] == "io.sesame.Accounts.NeedsLogin", reply
    assert events.next()["kind"] == "needsLogin"
    assert state_of(daemon, account["id"]) == "needsLogin"
    reply = call(daemon, "io.sesame.Accounts.GetToken", {"account": account["id"]})
    assert reply["error"] == "io.sesame.Accounts.NeedsLogin", reply
    assert events.nothing_within(0.5)


def test_browser_login_with_pkce_through_sesamectl(daemon, idp):
    """sesamectl listens on 127.0.0.1, the test plays the browser: it opens the URL sesamectl
    prints with a logged-in session and follows the redirect back to sesamectl."""
    events = Subscription(daemon, kinds=["loggedIn"])
    login = subprocess.Popen(
        [str(SESAMECTL), "login", "web", "--browser", "--socket", str(daemon.socket_path)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert login.stdout.readline().startswith("Open this URL")
        url = login.stdout.readline().strip()
        query = parse_qs(urlparse(url).query)
        assert query["code_challenge_method"] == ["S256"] and len(query["code_challenge"][0]) == 43
        assert "code_verifier" not in url and query["state"][0]
        assert urlparse(query["redirect_uri"][0]).hostname == "127.0.0.1"
        browser = requests.Session()
        browser.cookies.update(idp.login_cookie("bob"))
        page = browser.get(url, timeout=10)  # DOT redirects to sesamectl's listener
        assert page.status_code == 200 and "close" in page.text.lower(), page.text
        out, err = login.communicate(timeout=30)
        assert login.returncode == 0, err
        assert out.startswith("logged in: web-")
    finally:
        login.kill()
    event = events.next()
    assert event["kind"] == "loggedIn" and event["provider"] == "web"
    accounts = call(daemon, "io.sesame.Accounts.List", {})["parameters"]["accounts"]
    assert [a["displayName"] for a in accounts if a["provider"] == "web"] == ["Bob"]


def test_a_login_state_is_single_use_and_must_match(daemon, idp):
    """The raw Varlink side of the code flow: CompleteLogin with the code from the redirect,
    once; a replayed or unknown state is NoSuchLogin."""
    conn = RawConnection(daemon.socket_path)
    reply = conn.call("io.sesame.Accounts.Login",
                      {"provider": "web", "flow": "authorizationCode", "redirectUri": "http://127.0.0.1:49999/callback"})
    authorization = reply["parameters"]["authorization"]
    browser = requests.Session()
    browser.cookies.update(idp.login_cookie("alice"))
    answer = browser.get(authorization["url"], allow_redirects=False, timeout=10)
    assert answer.status_code == 302, answer.text
    back = parse_qs(urlparse(answer.headers["Location"]).query)
    assert back["state"] == [authorization["state"]]
    bogus = conn.call("io.sesame.Accounts.CompleteLogin", {"state": "forged", "code": back["code"][0]})
    assert bogus["error"] == "io.sesame.Accounts.NoSuchLogin", bogus
    done = conn.call("io.sesame.Accounts.CompleteLogin", {"state": back["state"][0], "code": back["code"][0]})
    assert done["parameters"]["account"]["state"] == "active", done
    again = conn.call("io.sesame.Accounts.CompleteLogin", {"state": back["state"][0], "code": back["code"][0]})
    assert again["error"] == "io.sesame.Accounts.NoSuchLogin", again


def test_a_denied_device_login_is_login_denied(daemon, idp):
    conn = RawConnection(daemon.socket_path, timeout=30)
    conn.send("io.sesame.Accounts.Login", {"provider": "local"}, more=True)
    verification = conn.reply()["parameters"]["verification"]
    idp.deny(verification["userCode"])
    assert conn.reply()["error"] == "io.sesame.Accounts.LoginDenied"
    assert call(daemon, "io.sesame.Accounts.List", {})["parameters"]["accounts"] == []


def test_an_expired_device_code_is_login_expired(daemon, idp):
    idp.fault(status=400, body={"error": "expired_token"}, grant_type="urn:ietf:params:oauth:grant-type:device_code")
    conn = RawConnection(daemon.socket_path, timeout=30)
    conn.send("io.sesame.Accounts.Login", {"provider": "local"}, more=True)
    assert "verification" in conn.reply()["parameters"]
    assert conn.reply()["error"] == "io.sesame.Accounts.LoginExpired"
    assert call(daemon, "io.sesame.Accounts.List", {})["parameters"]["accounts"] == []


def test_a_device_code_past_its_own_expiry_is_not_polled_again(daemon, idp):
    """DOT never expires a device code; the daemon stops polling at the expiry the provider
    stated (here 2 s, in a device authorization answer the test controls)."""
    authorization = idp.start_device_login()
    idp.fault(path_prefix="/o/device-authorization/", status=200,
              body={**authorization, "expires_in": 2, "interval": 1})
    idp.reset_counters()
    started = time.monotonic()
    conn = RawConnection(daemon.socket_path, timeout=30)
    conn.send("io.sesame.Accounts.Login", {"provider": "local"}, more=True)
    assert conn.reply()["parameters"]["verification"]["userCode"] == authorization["user_code"]
    assert conn.reply()["error"] == "io.sesame.Accounts.LoginExpired"
    assert time.monotonic() - started < 5
    polls = idp.counters()["token_requests"].get("urn:ietf:params:oauth:grant-type:device_code", 0)
    assert 1 <= polls <= 2, polls


def test_slow_down_adds_five_seconds_to_the_polling_interval(daemon, idp):
    idp.fault(status=400, body={"error": "slow_down"}, grant_type="urn:ietf:params:oauth:grant-type:device_code")
    started = time.monotonic()
    conn = RawConnection(daemon.socket_path, timeout=30)
    conn.send("io.sesame.Accounts.Login", {"provider": "local"}, more=True)
    verification = conn.reply()["parameters"]["verification"]
    idp.approve(verification["userCode"])
    done = conn.reply()
    assert done["parameters"]["account"]["state"] == "active", done
    polls = idp.counters()["token_requests"]["urn:ietf:params:oauth:grant-type:device_code"]
    # First poll after 1 s gets slow_down; the next waits 1 + 5 s and succeeds.
    assert polls == 2 and time.monotonic() - started >= 6


def test_a_thousand_concurrent_get_tokens_on_an_expired_token_make_one_refresh(daemon, idp):
    account = device_login(daemon, idp)
    expired = Subscription(daemon, kinds=["expired"])
    expired.next()  # the 2-s token has run out; nothing refreshed it ahead
    idp.reset_counters()

    async def get_tokens(connections: int, calls_each: int) -> list[str]:
        async def one_connection():
            reader, writer = await asyncio.open_unix_connection(str(daemon.socket_path))
            request = json.dumps({"method": "io.sesame.Accounts.GetToken",
                                  "parameters": {"account": account["id"]}}).encode() + b"\0"
            writer.write(request * calls_each)  # pipelined
            await writer.drain()
            replies = [json.loads((await reader.readuntil(b"\0"))[:-1]) for _ in range(calls_each)]
            writer.close()
            return replies
        batches = await asyncio.gather(*(one_connection() for _ in range(connections)))
        return [reply["parameters"]["accessToken"] for batch in batches for reply in batch]

    tokens = asyncio.run(get_tokens(250, 4))
    assert len(tokens) == 1000 and len(set(tokens)) == 1
    assert idp.counters()["token_requests"] == {"refresh_token": 1}
    assert idp.token_status(tokens[0])


def test_refresh_ahead_keeps_the_token_fresh_without_anyone_asking(tmp_path, idp):
    """With refresh ahead on, the daemon refreshes by itself; DOT's 2-s tokens are below the
    minimum interval, so it uses an imported token with a longer stated lifetime."""
    idp.clear_faults()
    idp.reset_counters()
    with running(oauth_daemon(tmp_path, idp, refresh_ahead=True)) as daemon:
        events = Subscription(daemon, kinds=["tokenRefreshed"])
        tokens = idp.device_login()
        # Stated to live 32 s, just over the shortest lifetime refresh ahead plans for (30 s;
        # shorter ones are refreshed on demand): the 60-s margin would make it due at once, so it
        # is due at half its lifetime, 16 s after the import. The schedule itself is
        # RefreshTests' (TestClock); this is the daemon doing it by itself against a real server.
        import_tokens(daemon, provider="local", subject=subject_of(tokens["id_token"]),
                      access_token=tokens["access_token"], refresh_token=tokens["refresh_token"], expires_in=32,
                      scopes=SCOPES)
        assert events.next(timeout=60)["kind"] == "tokenRefreshed"
        assert idp.counters()["token_requests"].get("refresh_token") == 1


TRANSIENT_FAULTS = {
    "timeout": {"status": 200, "body": "{}", "delay": 4},
    "HTTP 500": {"status": 500, "body": "oops", "content_type": "text/plain"},
    "HTTP 429": {"status": 429, "body": {"error": "slow down"}, "headers": {"Retry-After": "7"}},
    "temporarily_unavailable": {"status": 503, "body": {"error": "temporarily_unavailable"}},
}


@pytest.mark.parametrize("name", TRANSIENT_FAULTS)
def test_a_transient_fault_is_refresh_failed_and_changes_nothing_else(daemon, idp, name):
    account, tokens = import_from_idp(daemon, idp)
    events = Subscription(daemon, kinds=["tokenRefreshed", "refreshFailed", "needsLogin", "loggedOut"])
    idp.fault(grant_type="refresh_token", **TRANSIENT_FAULTS[name])
    before = time.time()
    reply = call(daemon, "io.sesame.Accounts.Refresh", {"account": account["id"]})
    if name == "timeout":
        # The caller stops waiting after the provider's timeout (2 s); the request itself is
        # given up after token_timeout (3 s), which the event then reports.
        assert reply.get("error") == "io.sesame.Accounts.RefreshFailed" or \
            reply["parameters"]["account"]["state"] == "refreshing", reply
    else:
        assert reply["error"] == "io.sesame.Accounts.RefreshFailed", reply
    failed = events.next()
    assert failed["kind"] == "refreshFailed" and failed["state"] in ("active", "expired")
    retry_in = time.mktime(time.strptime(failed["retryAt"], "%Y-%m-%dT%H:%M:%SZ")) - time.timezone - before
    assert retry_in >= (6 if name == "HTTP 429" else 4), failed  # Retry-After honoured, 5 s backoff
    assert state_of(daemon, account["id"]) in ("active", "expired")
    # The fault has passed: the next refresh works with the same refresh token.
    reply = call(daemon, "io.sesame.Accounts.Refresh", {"account": account["id"]})
    assert "error" not in reply and reply["parameters"]["account"]["state"] == "active", reply
    assert events.next()["kind"] == "tokenRefreshed"
    assert_no_token_in(daemon.log(), [tokens["access_token"], tokens["refresh_token"]])


def status_details(daemon: Daemon, id: str) -> dict:
    """`sesamectl status ID`'s lines under the first (which must say usable), by their names."""
    status = subprocess.run([str(SESAMECTL), "status", id, "--socket", str(daemon.socket_path)],
                            capture_output=True, text=True, timeout=30)
    lines = status.stdout.splitlines()
    assert (status.returncode, lines[0]) == (0, f"{id}: usable"), status
    return dict(line.strip().split(": ", 1) for line in lines[1:])


def test_status_says_when_the_account_last_refreshed_next_refreshes_and_last_failed(tmp_path, idp):
    """`status ACCOUNT` under its first line: the token times, the planned refresh, the last
    refresh and the last error with its time, the last two still there after a restart."""
    idp.clear_faults()
    idp.reset_counters()
    daemon = oauth_daemon(tmp_path, idp, refresh_ahead=True)
    with running(daemon):
        tokens = idp.device_login()
        account = import_tokens(daemon, provider="local", subject=subject_of(tokens["id_token"]),
                                access_token=tokens["access_token"], refresh_token=tokens["refresh_token"],
                                expires_in=3600, refresh_expires_in=30 * 86400, scopes=SCOPES)
        id = account["id"]
        planned = status_details(daemon, id)
        assert set(planned) == {"access token", "refresh token", "next refresh"}, planned
        assert planned["refresh token"].endswith(", as the provider said"), planned
        idp.fault(grant_type="refresh_token", **TRANSIENT_FAULTS["HTTP 500"])
        assert call(daemon, "io.sesame.Accounts.Refresh", {"account": id})["error"] == "io.sesame.Accounts.RefreshFailed"
        idp.clear_faults()
        assert "error" not in call(daemon, "io.sesame.Accounts.Refresh", {"account": id})
        before = call(daemon, "io.sesame.Accounts.Get", {"account": id})["parameters"]["account"]
        assert before["lastErrorAt"] <= before["lastRefreshAt"] and "HTTP 500" in before["lastError"], before
    again = Daemon(tmp_path, config=daemon.config_path.read_text())
    with running(again):
        # DOT's access tokens live two seconds: status refreshes the expired one, so the last
        # refresh may be newer than before the restart; the last error is the one kept. DOT
        # does not say when its refresh tokens end, so the renewed one's end is not shown.
        details = status_details(again, id)
        assert set(details) == {"access token", "last refresh", "last error"}, details
        assert details["last refresh"] >= before["lastRefreshAt"], details
        assert details["last error"].startswith(before["lastErrorAt"] + ": ") and "HTTP 500" in details["last error"]
        as_json = json.loads(subprocess.run([str(SESAMECTL), "status", id, "--json", "--socket", str(again.socket_path)],
                                            capture_output=True, text=True, timeout=30).stdout)
        assert as_json["usable"] and as_json["lastErrorAt"] == before["lastErrorAt"], as_json
        assert as_json["lastRefreshAt"] >= before["lastRefreshAt"] and "refreshTokenExpiresAt" not in as_json, as_json


INVALID_RESPONSES = {
    "malformed JSON": {"status": 200, "body": "{not json"},
    "token response for another client": {"id_token": "wrong_audience"},
    "ID token signed with a key not in the JWKS": {"id_token": "foreign_key"},
    "ID token from another issuer": {"id_token": "wrong_issuer"},
    "expired ID token": {"id_token": "expired"},
    "unsigned ID token (alg none)": {"id_token": "alg_none"},
}


def test_a_malformed_refresh_answer_changes_no_state(daemon, idp):
    account, tokens = import_from_idp(daemon, idp)
    events = Subscription(daemon)
    sequence = events.sequence
    idp.fault(grant_type="refresh_token", **INVALID_RESPONSES["malformed JSON"])
    reply = call(daemon, "io.sesame.Accounts.Refresh", {"account": account["id"]})
    assert reply["error"] == "io.sesame.Accounts.RefreshFailed", reply
    assert events.nothing_within(0.5), "garbage from the provider announced something"
    assert state_of(daemon, account["id"]) in ("active", "expired")
    assert Subscription(daemon).sequence == sequence


@pytest.mark.parametrize("name", [name for name in INVALID_RESPONSES if name != "malformed JSON"])
def test_a_refused_refresh_answer_ends_in_needs_login_with_the_reason(daemon, idp, name):
    """DOT issued (and rotated) tokens, but their ID token is refused: the old refresh token is
    dead, so the session cannot go on; it says why, once, and what was issued is revoked."""
    account, tokens = import_from_idp(daemon, idp)
    events = Subscription(daemon, kinds=["needsLogin", "refreshFailed", "tokenRefreshed"])
    idp.fault(grant_type="refresh_token", **INVALID_RESPONSES[name])
    reply = call(daemon, "io.sesame.Accounts.Refresh", {"account": account["id"]})
    assert reply["error"] == "io.sesame.Accounts.NeedsLogin", reply
    event = events.next()
    assert event["kind"] == "needsLogin" and "refused" in event["detail"], event
    assert state_of(daemon, account["id"]) == "needsLogin"


@pytest.mark.parametrize("name", INVALID_RESPONSES)
def test_an_invalid_login_answer_creates_no_account(daemon, idp, name):
    idp.fault(grant_type="urn:ietf:params:oauth:grant-type:device_code", **INVALID_RESPONSES[name])
    conn = RawConnection(daemon.socket_path, timeout=30)
    conn.send("io.sesame.Accounts.Login", {"provider": "local"}, more=True)
    idp.approve(conn.reply()["parameters"]["verification"]["userCode"])
    failed = conn.reply()
    assert failed["error"] == "io.sesame.Accounts.ProviderFailed", failed
    assert call(daemon, "io.sesame.Accounts.List", {})["parameters"]["accounts"] == []
    assert Subscription(daemon).sequence == 0


def test_invalid_grant_ends_in_needs_login(daemon, idp):
    account, _ = import_from_idp(daemon, idp)
    events = Subscription(daemon, kinds=["needsLogin", "refreshFailed"])
    idp.fault(grant_type="refresh_token", status=400, body={"error": "invalid_grant"})
    reply = call(daemon, "io.sesame.Accounts.Refresh", {"account": account["id"]})
    assert reply["error"] == "io.sesame.Accounts.NeedsLogin", reply
    assert events.next()["kind"] == "needsLogin"
    assert state_of(daemon, account["id"]) == "needsLogin"


def test_logout_wipes_locally_when_the_provider_is_down_and_says_so(daemon, idp):
    account, tokens = import_from_idp(daemon, idp)
    events = Subscription(daemon, kinds=["loggedOut"])
    idp.fault(path_prefix="/o/revoke_token/", status=503, body="down", content_type="text/plain", count=5)
    reply = call(daemon, "io.sesame.Accounts.Logout", {"account": account["id"]})
    assert reply["parameters"]["account"]["state"] == "loggedOut", reply
    event = events.next()
    assert event["reason"] == "user" and event["revokedRemotely"] is False
    reply = call(daemon, "io.sesame.Accounts.GetToken", {"account": account["id"]})
    assert reply["error"] == "io.sesame.Accounts.NeedsLogin", reply
    assert idp.token_status(tokens["refresh_token"]), "revocation was faulted, so DOT still has it"


def test_logins_under_way_are_limited_per_user_across_both_flows(tmp_path, idp):
    idp.clear_faults()
    with running(oauth_daemon(tmp_path, idp, limits="logins_per_user = 2\n")) as daemon:
        code_flow = {"provider": "web", "flow": "authorizationCode", "redirectUri": "http://127.0.0.1:40000/cb"}
        # A code login waits for CompleteLogin only while the connection that started it is open.
        browser = RawConnection(daemon.socket_path, timeout=30)
        assert "authorization" in browser.call("io.sesame.Accounts.Login", code_flow)["parameters"]
        device = RawConnection(daemon.socket_path, timeout=30)
        device.send("io.sesame.Accounts.Login", {"provider": "local"}, more=True)
        assert "verification" in device.reply()["parameters"]
        refused = call(daemon, "io.sesame.Accounts.Login", code_flow)
        assert refused == {"error": "io.sesame.Accounts.TooManyLogins", "parameters": {"limit": 2}}, refused
        device.close()  # the device login ends with its caller, and its allowance comes back
        wait_until(lambda: "error" not in call(daemon, "io.sesame.Accounts.Login", code_flow),
                   what="the closed device login's allowance to come back")
        browser.close()


def test_a_code_login_whose_id_token_has_another_nonce_is_refused(daemon, idp):
    """The nonce ties the ID token to this login (a replayed token from another login fails)."""
    conn = RawConnection(daemon.socket_path)
    reply = conn.call("io.sesame.Accounts.Login",
                      {"provider": "web", "flow": "authorizationCode", "redirectUri": "http://127.0.0.1:49999/callback"})
    authorization = reply["parameters"]["authorization"]
    assert parse_qs(urlparse(authorization["url"]).query)["nonce"][0]
    browser = requests.Session()
    browser.cookies.update(idp.login_cookie("alice"))
    back = parse_qs(urlparse(browser.get(authorization["url"], allow_redirects=False, timeout=10)
                             .headers["Location"]).query)
    idp.fault(grant_type="authorization_code", id_token="wrong_nonce")
    refused = conn.call("io.sesame.Accounts.CompleteLogin", {"state": back["state"][0], "code": back["code"][0]})
    assert refused["error"] == "io.sesame.Accounts.ProviderFailed" and "nonce" in refused["parameters"]["reason"]
    assert call(daemon, "io.sesame.Accounts.List", {})["parameters"]["accounts"] == []
