"""Kakao end to end: the real sesamed and sesamectl against standin_kakao.py (written from Kakao's
documentation), one quirk per test: a fixed registered redirect_uri with PKCE, refresh tokens
rotated only in their last month, KOE322, ID tokens with OpenID Connect on and /v2/user/me's
numeric id with it off, Logout/Unlink by Bearer with a refresh when the access token is dead,
and codes handed over by an app. No test prints a token: comparisons of secrets use `check`.
The helpers above the tests serve test_provider_naver.py too."""

import contextlib
import json
import queue
import secrets
import socket
import subprocess
import threading
import time
from datetime import datetime
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest
import requests

from harness import SESAMECTL, Daemon, RawConnection, Subscription, call, running
from standin import bearer
from standin_kakao import DAY, REFRESH_LIFETIME, Kakao, s256
from test_oauth import state_of

KAKAO_SECRET = "kakao-client-secret-for-tests"
KAKAO_ID = "4258514384"  # standin_kakao's user: above 2^32, a JSON number on the wire


# Helpers (shared with test_provider_naver.py)


def check(condition: bool, message: str):
    """An assertion that never shows its operands: for comparisons of tokens."""
    if not condition:
        pytest.fail(message, pytrace=False)


def loopback_redirect(path: str) -> str:
    """A redirect URI on a port free right now, as one registered at the provider."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}{path}"


@contextlib.contextmanager
def provider_daemon(tmp_path: Path, name: str, stand_in, secret: str | None, **keys):
    """sesamed with one provider file NAME.toml of `type = NAME` pointing every endpoint at
    `stand_in`; `keys` are more top-level keys (scopes, logout_method, ...)."""
    providers = tmp_path / "providers.d"
    providers.mkdir(exist_ok=True)
    lines = [f'type = "{name}"', f'client_id = "{stand_in.client_id}"', f'redirect_uri = "{stand_in.redirect}"',
             "timeout = 10", "token_timeout = 20"]
    if secret is not None:
        secret_file = tmp_path / f"{name}.secret"
        secret_file.write_text(secret)
        secret_file.chmod(0o600)
        lines.append(f'client_secret_file = "{secret_file}"')
    lines += [f"{key} = {json.dumps(value)}" for key, value in keys.items()]
    lines += ["[endpoints]", *(f'{key} = "{url}"' for key, url in stand_in.endpoints().items())]
    (providers / f"{name}.toml").write_text("\n".join(lines) + "\n")
    config = (f'[daemon]\nproviders_directory = "{providers}"\n'
              "[sessions]\nrefresh_ahead = false\n[store]\nallow_generated_key = true\n")
    with running(Daemon(tmp_path, config=config)) as instance:
        yield instance


def follow_authorization(url: str, redirect: str) -> dict[str, str]:
    """The browser at the provider: GET the authorize URL, which must send it to `redirect`."""
    answer = requests.get(url, allow_redirects=False, timeout=30)
    assert answer.status_code == 302, (answer.status_code, answer.text)
    location = answer.headers["Location"]
    assert location.startswith(redirect + "?"), "the provider sent the browser elsewhere"
    return {key: values[0] for key, values in parse_qs(urlparse(location).query).items()} | {"location": location}


def varlink_login(daemon: Daemon, stand_in, provider: str) -> dict:
    """Login and CompleteLogin over Varlink, the test as browser; returns CompleteLogin's reply."""
    conn = RawConnection(daemon.socket_path, timeout=60)
    try:
        started = conn.call("io.sesame.Accounts.Login", {"provider": provider, "redirectUri": stand_in.redirect})
        assert "error" not in started, started
        authorization = started["parameters"]["authorization"]
        back = follow_authorization(authorization["url"], stand_in.redirect)
        assert back.get("state") == authorization["state"]
        return conn.call("io.sesame.Accounts.CompleteLogin", {"state": back["state"], "code": back["code"]})
    finally:
        conn.close()


def logged_in(daemon: Daemon, stand_in, provider: str) -> dict:
    done = varlink_login(daemon, stand_in, provider)
    assert "error" not in done, done
    return done["parameters"]["account"]


def sesamectl(daemon: Daemon, *args, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(SESAMECTL), *args, "--socket", str(daemon.socket_path)], input=stdin,
                          capture_output=True, text=True, timeout=120)


def printed_url(process: subprocess.Popen, timeout: float = 60) -> tuple[str, str]:
    """The first stdout line starting with http, and everything printed up to it."""
    lines: queue.Queue = queue.Queue()

    def read():
        for line in process.stdout:
            lines.put(line)
            if line.startswith("http"):
                return
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    printed = ""
    deadline = time.monotonic() + timeout
    while True:
        line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
        assert line is not None, f"sesamectl printed no URL: {printed!r} {process.stderr.read()!r}"
        printed += line
        if line.startswith("http"):
            return line.strip(), printed


def sesamectl_login(daemon: Daemon, stand_in, provider: str) -> dict:
    """`sesamectl login PROVIDER` with the test as the browser: it opens the printed URL at the
    stand-in without following the redirect, then takes the Location to sesamectl's listener."""
    process = subprocess.Popen([str(SESAMECTL), "login", provider, "--socket", str(daemon.socket_path)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url, printed = printed_url(process)
        back = follow_authorization(url, stand_in.redirect)
        page = requests.get(back["location"], timeout=90)
        out, err = process.communicate(timeout=90)
    finally:
        process.kill()
    query = {key: values[0] for key, values in parse_qs(urlparse(url).query).items()}
    return {"query": query, "page": page.text, "out": printed + out, "err": err, "status": process.returncode}


def account_of(daemon: Daemon, account_id: str) -> dict:
    reply = call(daemon, "io.sesame.Accounts.Get", {"account": account_id})
    assert "error" not in reply, reply
    return reply["parameters"]["account"]


def accounts(daemon: Daemon) -> list[dict]:
    return call(daemon, "io.sesame.Accounts.List", {})["parameters"]["accounts"]


def refresh(daemon: Daemon, account_id: str) -> dict:
    return call(daemon, "io.sesame.Accounts.Refresh", {"account": account_id})


def seconds_until(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() - time.time()


def get_token(daemon: Daemon, account_id: str) -> str:
    reply = call(daemon, "io.sesame.Accounts.GetToken", {"account": account_id})
    assert "error" not in reply, reply.get("error")
    return reply["parameters"]["accessToken"]


def assert_nothing_leaked(secret_values, *texts: str):
    text = "\n".join(texts)
    leaked = [index for index, value in enumerate(secret_values) if value and value in text]
    assert not leaked, f"{len(leaked)} of {len(secret_values)} secrets appear in the log or output"


# Fixtures


@pytest.fixture
def kakao():
    redirect = loopback_redirect("/kakao/callback")
    with Kakao(redirect_uris=[redirect], client_secret=KAKAO_SECRET) as stand_in:
        stand_in.redirect = redirect
        yield stand_in


@pytest.fixture
def start(tmp_path, kakao):
    """start(**keys): sesamed with providers.d/kakao.toml (issuer = the stand-in, the secret)."""
    with contextlib.ExitStack() as stack:
        yield lambda **keys: stack.enter_context(
            provider_daemon(tmp_path, "kakao", kakao, KAKAO_SECRET, issuer=kakao.issuer, **keys))


@pytest.fixture
def daemon(start):
    return start()


# Login through sesamectl


def test_sesamectl_login_uses_the_registered_redirect_uri_pkce_and_the_secret(daemon, kakao):
    provider = next(p for p in call(daemon, "io.sesame.Accounts.ListProviders", {})["parameters"]["providers"]
                    if p["name"] == "kakao")
    assert provider["type"] == "kakao" and provider["redirectUri"] == kakao.redirect, provider
    assert "authorizationCode" in provider["flows"], provider
    result = sesamectl_login(daemon, kakao, "kakao")
    assert result["status"] == 0, result["err"]
    assert result["out"].rstrip().endswith("(Alice)") and "logged in: " in result["out"], result["out"]
    query = result["query"]
    assert query["redirect_uri"] == kakao.redirect and query["client_id"] == kakao.client_id
    assert query["response_type"] == "code" and query["code_challenge_method"] == "S256"
    assert "nonce" not in query and "scope" not in query, "no openid, no scopes: neither is sent"
    [exchange] = kakao.token_requests("authorization_code")
    assert "authorization" not in exchange.headers, "client credentials go in the form, not HTTP Basic"
    assert exchange.form["redirect_uri"] == kakao.redirect
    check(exchange.form.get("client_secret") == KAKAO_SECRET, "client_secret missing from the code exchange")
    check(s256(exchange.form.get("code_verifier", "")) == query["code_challenge"], "code_verifier does not match")
    [account] = accounts(daemon)
    assert (account["provider"], account["subject"], account["displayName"]) == ("kakao", KAKAO_ID, "Alice")
    listed = json.loads(sesamectl(daemon, "accounts", "--json").stdout)
    assert [entry["subject"] for entry in listed] == [KAKAO_ID], listed


# Conditional rotation of refresh tokens


def test_a_refresh_without_rotation_keeps_the_refresh_token_and_its_expiry(daemon, kakao):
    account = logged_in(daemon, kakao, "kakao")
    before = account_of(daemon, account["id"])
    assert before["refreshTokenExpiresAt"] and 59 * DAY < seconds_until(before["refreshTokenExpiresAt"]) < 61 * DAY
    [original] = kakao.live_refresh_tokens()
    kakao.set_refresh_remaining(45 * DAY)  # more than a month left: Kakao sends no refresh token
    for _ in range(2):  # the second refresh only works with the refresh token kept
        reply = refresh(daemon, account["id"])
        assert "error" not in reply and reply["parameters"]["account"]["state"] == "active", reply
        assert account_of(daemon, account["id"])["refreshTokenExpiresAt"] == before["refreshTokenExpiresAt"]
    sent = [r.form.get("refresh_token") for r in kakao.token_requests("refresh_token")]
    check(sent == [original, original], "a refresh did not send the refresh token from the login")
    check(get_token(daemon, account["id"]) == kakao.latest_access_token(), "GetToken is not the refreshed token")


def test_a_refresh_in_the_last_month_rotates_and_the_new_refresh_token_is_used(daemon, kakao):
    kakao.refresh_lifetime = 25 * DAY  # the login's refresh token has less than a month
    account = logged_in(daemon, kakao, "kakao")
    assert 24 * DAY < seconds_until(account_of(daemon, account["id"])["refreshTokenExpiresAt"]) < 26 * DAY
    kakao.refresh_lifetime = REFRESH_LIFETIME
    [old] = kakao.live_refresh_tokens()
    reply = refresh(daemon, account["id"])
    assert "error" not in reply, reply
    [new] = kakao.live_refresh_tokens()  # Kakao ended the old one when it rotated
    check(new != old, "the stand-in did not rotate")
    rotated = account_of(daemon, account["id"])["refreshTokenExpiresAt"]
    assert 59 * DAY < seconds_until(rotated) < 61 * DAY, "the expiry moved with the new refresh token"
    reply = refresh(daemon, account["id"])
    assert "error" not in reply and reply["parameters"]["account"]["state"] == "active", reply
    check(kakao.token_requests("refresh_token")[-1].form.get("refresh_token") == new, "the old token was sent")
    assert account_of(daemon, account["id"])["refreshTokenExpiresAt"] == rotated


def test_a_refresh_token_near_its_end_is_announced_before_it_runs_out(daemon, kakao):
    """[REST] Kakao's refresh tokens live two months and are replaced only by a refresh in their
    last month; one that was not replaced is announced `refresh_token_warning` (7 days) before
    it runs out, with its date, so a person can log in again in time."""
    kakao.refresh_lifetime = 5 * DAY
    events = Subscription(daemon, kinds=["refreshTokenExpiring"])
    account = logged_in(daemon, kakao, "kakao")
    event = events.next()
    expires = account_of(daemon, account["id"])["refreshTokenExpiresAt"]
    assert event["account"] == account["id"] and event["refreshTokenExpiresAt"] == expires, event
    assert 4 * DAY < seconds_until(expires) < 6 * DAY
    # A refresh in the last month replaces it with one that lives two months: nothing to warn of.
    kakao.refresh_lifetime = REFRESH_LIFETIME
    assert "error" not in refresh(daemon, account["id"])
    assert 59 * DAY < seconds_until(account_of(daemon, account["id"])["refreshTokenExpiresAt"]) < 61 * DAY


def test_no_more_refreshes_than_kakao_issues_one_user_reach_kakao(daemon, kakao):
    """[REST] Kakao issues one user at most 20 access tokens in 10 minutes (and 30 refresh
    tokens an hour): the 21st refresh in ten minutes is held back before Kakao is asked, saying
    when the next is due, and the token sesamed holds is still handed out. The hold is announced
    as a refresh that did not happen (refreshFailed, the rule in its detail), and sesamectl says
    that sesamed holds it, under which rule, until when."""
    account = logged_in(daemon, kakao, "kakao")
    for _ in range(20):
        assert "error" not in refresh(daemon, account["id"])
    held = get_token(daemon, account["id"])
    events = Subscription(daemon, kinds=["refreshFailed"])
    reply = refresh(daemon, account["id"])
    assert reply.get("error") == "io.sesame.Accounts.RefreshFailed", reply
    reason = reply["parameters"]["reason"]
    assert reason.startswith("sesamed holds this refresh back until "), reply
    assert "at most 20 access tokens in 10 minutes" in reason, reply
    assert len(kakao.token_requests("refresh_token")) == 20, "the 21st refresh reached Kakao"
    check(get_token(daemon, account["id"]) == held, "the token held was not handed out")
    event = events.next()
    assert event["detail"] == reason and event["retryAt"], event
    said = sesamectl(daemon, "refresh", account["id"])
    assert said.returncode == 6, said.stderr
    assert said.stderr.startswith(f"did not refresh {account['id']}: sesamed holds this refresh back"), \
        said.stderr
    assert "it refreshes by itself then" in said.stderr and "provider did not" not in said.stderr, said.stderr


@pytest.mark.parametrize("status", [400, 401])
def test_koe322_on_refresh_needs_login(daemon, kakao, status):
    kakao.koe322_status = status
    account = logged_in(daemon, kakao, "kakao")
    events = Subscription(daemon, kinds=["needsLogin", "refreshFailed", "tokenRefreshed"])
    kakao.set_refresh_remaining(0)  # expired: KOE322
    reply = refresh(daemon, account["id"])
    assert reply.get("error") == "io.sesame.Accounts.NeedsLogin", reply
    event = events.next()
    assert event["kind"] == "needsLogin" and "KOE322" in event.get("detail", ""), event
    assert state_of(daemon, account["id"]) == "needsLogin"


# Identity: ID token with OpenID Connect on, /v2/user/me with it off


def test_with_oidc_the_subject_comes_from_the_verified_id_token(start, kakao):
    kakao.oidc = True
    daemon = start(scopes=["openid"])
    account = logged_in(daemon, kakao, "kakao")
    authorize = kakao.seen("/oauth/authorize")[-1].query
    assert authorize.get("nonce") and "openid" in authorize["scope"].replace(",", " ").split(), authorize
    check(any(value.count(".") == 2 for value in kakao.issued), "the stand-in issued no ID token")
    # Kakao's ID token names the person in `nickname` (no `name`, no `preferred_username`).
    assert (account["subject"], account.get("displayName")) == (KAKAO_ID, "Alice"), account
    assert kakao.count("/v2/user/me") == 0, "the ID token named the user; /v2/user/me is not needed"
    reply = refresh(daemon, account["id"])  # the refreshed ID token carries no nonce
    assert "error" not in reply and reply["parameters"]["account"]["state"] == "active", reply


@pytest.mark.parametrize("fault", ["nonce", "aud", "key"])
def test_with_oidc_an_id_token_that_does_not_verify_is_refused(start, kakao, fault):
    kakao.oidc, kakao.id_token_fault = True, fault
    daemon = start(scopes=["openid"])
    done = varlink_login(daemon, kakao, "kakao")
    assert done.get("error") == "io.sesame.Accounts.ProviderFailed", done
    assert accounts(daemon) == []
    # The grant Kakao issued is ended (Kakao's logout API), not left live with nobody holding it.
    assert kakao.count("/v1/user/logout") == 1
    assert kakao.live_access_tokens() == [] and kakao.live_refresh_tokens() == []


@pytest.mark.parametrize("style", ["account", "properties"])
def test_without_oidc_the_subject_is_the_numeric_id_from_user_me(daemon, kakao, style):
    kakao.profile_style = style  # the nickname in kakao_account.profile, or only in properties
    account = logged_in(daemon, kakao, "kakao")
    assert (account["subject"], account["displayName"]) == (KAKAO_ID, "Alice"), account
    assert "nonce" not in kakao.seen("/oauth/authorize")[-1].query
    [me] = kakao.seen("/v2/user/me")
    check(bearer(me) == kakao.latest_access_token(), "/v2/user/me was not asked with the access token")


# Logout and Unlink


@pytest.mark.parametrize("method", ["logout", "unlink"])
def test_logout_calls_kakaos_logout_or_unlink_with_the_access_token(start, kakao, method):
    daemon = start(logout_method=method)
    account = logged_in(daemon, kakao, "kakao")
    access = kakao.latest_access_token()
    events = Subscription(daemon, kinds=["loggedOut"])
    reply = call(daemon, "io.sesame.Accounts.Logout", {"account": account["id"]})
    assert "error" not in reply, reply
    assert reply["parameters"]["revokedRemotely"] is True, reply
    assert reply["parameters"]["account"]["state"] == "loggedOut"
    other = {"logout": "unlink", "unlink": "logout"}[method]
    assert (kakao.count(f"/v1/user/{method}", "POST"), kakao.count(f"/v1/user/{other}")) == (1, 0)
    check(bearer(kakao.seen(f"/v1/user/{method}")[0]) == access, f"{method} was not called with the access token")
    check(not kakao.live_refresh_tokens() and not kakao.live_access_tokens(), "tokens still live at Kakao")
    assert events.next()["revokedRemotely"] is True


def test_logout_with_a_dead_access_token_refreshes_once_and_logs_out(daemon, kakao):
    account = logged_in(daemon, kakao, "kakao")
    kakao.expire_access_tokens()  # Kakao answers -401 to the first logout
    reply = call(daemon, "io.sesame.Accounts.Logout", {"account": account["id"]})
    assert "error" not in reply and reply["parameters"]["revokedRemotely"] is True, reply
    logouts = kakao.seen("/v1/user/logout", "POST")
    assert len(logouts) == 2 and len(kakao.token_requests("refresh_token")) == 1
    check(bearer(logouts[1]) == kakao.latest_access_token(), "the second logout did not use the refreshed token")
    check(not kakao.live_refresh_tokens(), "the refresh token still works at Kakao")


# Tokens and codes an app obtained itself


def app_authorization_code(kakao: Kakao, verifier: str) -> str:
    """What an app does before handing over: authorize with its own state and PKCE."""
    query = {"response_type": "code", "client_id": kakao.client_id, "redirect_uri": kakao.redirect,
             "state": secrets.token_urlsafe(8), "code_challenge": s256(verifier), "code_challenge_method": "S256"}
    url = requests.Request("GET", kakao.endpoints()["authorization"], params=query).prepare().url
    return follow_authorization(url, kakao.redirect)["code"]


def test_a_code_handed_over_with_its_verifier_logs_in_and_a_used_one_is_koe320(daemon, kakao):
    verifier = secrets.token_urlsafe(48)
    code = app_authorization_code(kakao, verifier)
    handover = json.dumps({"code": code, "redirect_uri": kakao.redirect, "code_verifier": verifier})
    result = sesamectl(daemon, "import", "kakao", "--code", "-", stdin=handover)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("logged in: ") and result.stdout.endswith("(Alice)\n"), result.stdout
    [exchange] = kakao.token_requests("authorization_code")
    check(exchange.form.get("code_verifier") == verifier and exchange.form.get("code") == code, "not the app's")
    assert exchange.form.get("redirect_uri") == kakao.redirect
    # The same code again: Kakao answers KOE320 and echoes the code in error_description.
    again = sesamectl(daemon, "import", "kakao", "--code", "-", stdin=handover)
    assert again.returncode != 0 and ("KOE320" in again.stderr or "invalid_grant" in again.stderr), again.stderr
    assert_nothing_leaked([code, verifier], again.stdout, again.stderr, daemon.log())
    assert len(accounts(daemon)) == 1


def test_imported_tokens_without_an_id_token_are_checked_with_token_info(daemon, kakao):
    verifier = secrets.token_urlsafe(48)
    code = app_authorization_code(kakao, verifier)
    tokens = requests.post(kakao.endpoints()["token"], timeout=30, data={
        "grant_type": "authorization_code", "client_id": kakao.client_id, "client_secret": KAKAO_SECRET,
        "redirect_uri": kakao.redirect, "code": code, "code_verifier": verifier}).json()
    handed = {"accessToken": tokens["access_token"], "refreshToken": tokens["refresh_token"],
              "expiresIn": tokens["expires_in"], "refreshExpiresIn": tokens["refresh_token_expires_in"]}
    refused = call(daemon, "io.sesame.Accounts.ImportTokens", {"provider": "kakao", "subject": "1", "tokens": handed})
    assert refused.get("error") == "io.sesame.Accounts.InvalidTokens", refused
    accepted = call(daemon, "io.sesame.Accounts.ImportTokens", {"provider": "kakao", "subject": KAKAO_ID,
                                                                "tokens": handed})
    assert "error" not in accepted, accepted
    infos = kakao.seen("/v1/user/access_token_info", "GET")
    assert len(infos) >= 2, "each import asked Kakao whose token it is"
    check(all(bearer(r) == tokens["access_token"] for r in infos), "token_info was asked with another token")


# Secrets stay secret


def test_no_token_code_or_secret_reaches_the_log_or_sesamectls_output(start, kakao):
    kakao.oidc = True
    daemon = start(scopes=["openid"])
    result = sesamectl_login(daemon, kakao, "kakao")
    assert result["status"] == 0, result["err"]
    [account] = accounts(daemon)
    kakao.set_refresh_remaining(10 * DAY)  # rotation
    assert "error" not in refresh(daemon, account["id"])
    kakao.expire_access_tokens()  # Logout: -401, refresh, logout again
    assert call(daemon, "io.sesame.Accounts.Logout", {"account": account["id"]})["parameters"]["revokedRemotely"]
    listed = sesamectl(daemon, "accounts", "--json")
    verifiers = [r.form.get("code_verifier") for r in kakao.token_requests("authorization_code")]
    assert_nothing_leaked([*kakao.issued, KAKAO_SECRET, *verifiers], daemon.log(), result["out"], result["err"],
                          result["page"], listed.stdout, listed.stderr)
