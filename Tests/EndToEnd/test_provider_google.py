"""The google provider type through the real sesamed and sesamectl, against the Google stand-in
(standin_google.py): the browser login of an installed app (PKCE, access_type=offline, the secret
in the body), the device flow with Google's own names and statuses, refresh answers without a
refresh token, and revocation. No test prints a token: comparisons of secrets are made to
booleans before they are asserted."""

import re
import subprocess
from urllib.parse import urlsplit

import pytest
import requests

from harness import SESAMECTL, Daemon, RawConnection, Subscription, call, running
from standin_google import DEVICE_GRANT, GoogleStandIn
from test_oauth import state_of


@pytest.fixture
def google():
    with GoogleStandIn(interval=1) as standin:
        yield standin


@pytest.fixture
def daemon(tmp_path, google):
    """`google` (the defaults: browser flow, access_type=offline added by the adapter) and
    `googletv` (`flow = "device"`), both found by discovery at the stand-in's issuer."""
    providers = tmp_path / "providers.d"
    providers.mkdir()
    secret = tmp_path / "google.secret"
    secret.write_text(google.client_secret)
    secret.chmod(0o600)
    common = (f'type = "google"\nissuer = "{google.base}"\nclient_id = "{google.client_id}"\n'
              f'client_secret_file = "{secret}"\ntimeout = 10\ntoken_timeout = 20\n')
    (providers / "google.toml").write_text(common)
    (providers / "googletv.toml").write_text(common + 'flow = "device"\n')
    config = (f'[daemon]\nproviders_directory = "{providers}"\n'
              "[sessions]\nexpiring_margin = 1\nrefresh_margin = 0\nrefresh_ahead = false\n"
              "[store]\nallow_generated_key = true\n")
    with running(Daemon(tmp_path, config=config)) as instance:
        yield instance


def sesamectl(daemon: Daemon, *args) -> subprocess.Popen:
    return subprocess.Popen([str(SESAMECTL), *args, "--socket", str(daemon.socket_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def leaks(text: str, google: GoogleStandIn) -> list[str]:
    """The names (never the values) of the secrets that appear in `text`."""
    return [name for name, value in google.secrets().items() if value and value in text]


def token_requests(google: GoogleStandIn, grant: str) -> list:
    return [r for r in google.seen(google.TOKEN, "POST") if r.form.get("grant_type") == grant]


def device_account(daemon: Daemon, google: GoogleStandIn, provider: str = "googletv") -> dict:
    """A device login over raw Varlink, approved at once."""
    conn = RawConnection(daemon.socket_path, timeout=60)
    try:
        conn.send("io.sesame.Accounts.Login", {"provider": provider}, more=True)
        first = conn.reply()
        assert "error" not in first, first
        google.approve(first["parameters"]["verification"]["userCode"])
        done = conn.reply()
        assert "error" not in done, done
        return done["parameters"]["account"]
    finally:
        conn.close()


def refreshes_keep_the_refresh_token(daemon: Daemon, google: GoogleStandIn, account_id: str, refresh_token: str):
    """Two Refresh calls both work although Google's refresh answers carry no refresh token: the
    adapter keeps the one it has, and GetToken hands out the newest access token."""
    for _ in range(2):
        reply = call(daemon, "io.sesame.Accounts.Refresh", {"account": account_id})
        assert "error" not in reply, reply
        assert reply["parameters"]["account"]["state"] == "active", reply
    forms = [r.form for r in token_requests(google, "refresh_token")]
    assert len(forms) == 2
    assert all(f.get("refresh_token") == refresh_token for f in forms), "the first refresh token, both times"
    assert all(f.get("client_secret") == google.client_secret for f in forms), "client_secret in the body"
    none_sent = "refresh_token" not in google.answers[-1]
    assert none_sent, "the stand-in's refresh answers carry no refresh token"
    handed_out = call(daemon, "io.sesame.Accounts.GetToken", {"account": account_id})
    assert "error" not in handed_out, handed_out
    newest = handed_out["parameters"]["accessToken"] == google.answers[-1]["access_token"]
    assert newest, "GetToken hands out the access token of the last refresh"


def test_both_flows_are_listed_with_the_files_default(daemon):
    providers = {p["name"]: p for p in call(daemon, "io.sesame.Accounts.ListProviders", {})["parameters"]["providers"]}
    assert providers["google"]["type"] == "google" and providers["googletv"]["type"] == "google"
    assert set(providers["google"]["flows"]) == {"device", "authorizationCode"}, providers["google"]
    assert providers["google"]["defaultFlow"] == "authorizationCode"
    assert providers["googletv"]["defaultFlow"] == "device"


def test_browser_login_asks_for_offline_access_with_pkce_and_its_refresh_token_works(daemon, google):
    process = sesamectl(daemon, "login", "google")
    try:
        first = process.stdout.readline()
        assert first.startswith("Open this URL in your browser"), first
        url = process.stdout.readline().strip()
        assert url.startswith(google.base + google.AUTHORIZE + "?"), "the authorization endpoint discovery named"
        answer = requests.get(url, allow_redirects=False, timeout=30)  # the person approves at once
        assert answer.status_code == 302, answer.text
        page = requests.get(answer.headers["Location"], timeout=60)  # back to sesamectl's listener
        out, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 0, err
    assert page.status_code == 200
    shown = re.fullmatch(r"logged in: (\S+) \(Alice Kim\)\n", out)
    assert shown, out
    # native-app "Step 2": PKCE S256, a nonce, and access_type=offline, which the provider file
    # does not name: without it Google issues no refresh token.
    asked = google.seen(google.AUTHORIZE)[0].query
    assert asked.get("access_type") == "offline", asked
    assert asked.get("code_challenge_method") == "S256" and len(asked.get("code_challenge", "")) == 43, asked
    assert asked.get("nonce") and asked.get("response_type") == "code" and asked.get("client_id") == google.client_id
    assert set(asked["scope"].split()) == {"openid", "email", "profile"}, asked
    assert urlsplit(asked["redirect_uri"]).hostname == "127.0.0.1", asked
    # "Step 5": the code, the verifier (the stand-in checked it), and the secret in the body.
    exchanges = token_requests(google, "authorization_code")
    assert len(exchanges) == 1
    form = exchanges[0].form
    assert "authorization" not in exchanges[0].headers, "client credentials never as HTTP Basic"
    secret_in_body = form.get("client_secret") == google.client_secret
    assert secret_in_body, "client_secret in the body"
    assert form.get("code_verifier") and form.get("redirect_uri") == asked["redirect_uri"]
    account = call(daemon, "io.sesame.Accounts.Get", {"account": shown[1]})["parameters"]["account"]
    assert account["subject"] == google.person["sub"] and account["provider"] == "google", account
    granted = google.answers[0]
    offline = "refresh_token" in granted
    assert offline, "Google issued a refresh token: the authorize request asked for offline access"
    refreshes_keep_the_refresh_token(daemon, google, shown[1], granted["refresh_token"])
    assert leaks(daemon.log() + first + url + out + err, google) == []


def test_device_login_follows_googles_names_and_statuses(daemon, google):
    """`flow = "device"`: sesamectl shows `verification_url`; the polls get 428
    authorization_pending, then 403 slow_down, then the tokens."""
    process = sesamectl(daemon, "login", "googletv")
    try:
        line = process.stdout.readline()
        shown = re.fullmatch(r"Open (\S+) and enter the code (\S+)\n", line)
        assert shown, line
        assert shown[1] == google.base + "/device", "Google's verification_url, shown as the place to go"
        google.approve(shown[2], script=["authorization_pending", "slow_down"])
        out, err = process.communicate(timeout=120)
    finally:
        process.kill()
    assert process.returncode == 0, err
    done = re.search(r"logged in: (\S+) \(Alice Kim\)\n", out)
    assert done, out
    started = google.seen(google.DEVICE, "POST")
    assert len(started) == 1 and started[0].form.get("client_id") == google.client_id
    assert "openid" in started[0].form.get("scope", "").split(), started[0].form
    polls = google.device(shown[2])["polls"]
    outcomes = [outcome for _, outcome in polls]
    assert outcomes[-3:] == ["authorization_pending", "slow_down", "approved"], outcomes
    assert set(outcomes[:-3]) <= {"pending"}, outcomes
    # RFC 8628 §3.5: after slow_down the interval grows by 5 seconds (here 1 + 5).
    assert polls[-1][0] - polls[-2][0] >= 5.5, "the poll after slow_down waited the longer interval"
    forms = [r.form for r in token_requests(google, DEVICE_GRANT)]
    assert len(forms) == len(polls)
    assert all(f.get("client_secret") == google.client_secret for f in forms), "the secret in every poll"
    account = call(daemon, "io.sesame.Accounts.Get", {"account": done[1]})["parameters"]["account"]
    assert account["subject"] == google.person["sub"], account
    refreshes_keep_the_refresh_token(daemon, google, done[1], google.answers[0]["refresh_token"])
    assert leaks(daemon.log() + line + out + err, google) == []


def test_access_denied_under_403_ends_the_device_login_as_denied(daemon, google):
    process = sesamectl(daemon, "login", "google", "--device")
    try:
        line = process.stdout.readline()
        shown = re.fullmatch(r"Open (\S+) and enter the code (\S+)\n", line)
        assert shown, line
        google.deny(shown[2])
        out, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode != 0 and "logged in" not in out, (out, err)
    assert "the login was denied" in err, err
    outcomes = [outcome for _, outcome in google.device(shown[2])["polls"]]
    assert outcomes.count("denied") == 1 and outcomes[-1] == "denied", outcomes
    assert call(daemon, "io.sesame.Accounts.List", {})["parameters"]["accounts"] == []
    assert token_requests(google, "authorization_code") == []


def test_logout_revokes_the_grant_at_google(daemon, google):
    account = device_account(daemon, google)
    granted = google.answers[-1]
    events = Subscription(daemon, kinds=["loggedOut"])
    reply = call(daemon, "io.sesame.Accounts.Logout", {"account": account["id"]})
    assert "error" not in reply, reply
    assert reply["parameters"]["revokedRemotely"] is True, reply
    revokes = google.seen(google.REVOKE, "POST")
    assert len(revokes) >= 1
    revoked = revokes[0].form.get("token")
    assert revoked, "token= in a form body"
    ours = revoked in (granted["refresh_token"], granted["access_token"])
    assert ours, "one of the account's tokens was revoked"
    assert not google.alive(granted["refresh_token"]), "the grant is gone at Google"
    assert events.next()["revokedRemotely"] is True
    assert state_of(daemon, account["id"]) == "loggedOut"


def test_a_token_google_already_dropped_counts_as_revoked(daemon, google):
    """native-app#tokenrevoke: 400 invalid_token for a token that is already dead; the grant is
    gone either way, so Logout reports it revoked."""
    account = device_account(daemon, google)
    google.revoke_grant(google.answers[-1]["refresh_token"])  # the person removed the app's access
    reply = call(daemon, "io.sesame.Accounts.Logout", {"account": account["id"]})
    assert "error" not in reply, reply
    assert len(google.seen(google.REVOKE, "POST")) >= 1
    assert reply["parameters"]["revokedRemotely"] is True, reply
    assert state_of(daemon, account["id"]) == "loggedOut"


def test_a_refresh_token_revoked_at_google_needs_a_new_login(daemon, google):
    account = device_account(daemon, google)
    google.revoke_grant(google.answers[-1]["refresh_token"])
    events = Subscription(daemon, kinds=["needsLogin", "refreshFailed"])
    reply = call(daemon, "io.sesame.Accounts.Refresh", {"account": account["id"]})
    assert reply.get("error") == "io.sesame.Accounts.NeedsLogin", reply
    event = events.next()
    assert event["kind"] == "needsLogin"
    # Google's one answer for every way a refresh token ends, explained with the causes it names.
    assert "six months unused" in event["detail"] and "seven-day limit" in event["detail"], event
    assert state_of(daemon, account["id"]) == "needsLogin"
    assert leaks(daemon.log(), google) == []


def test_a_scope_googles_device_flow_does_not_grant_is_refused_before_google_is_asked(daemon, google):
    """limited-input-device#allowedscopes: the device flow grants OpenID Connect's scopes and a
    few of Drive's and YouTube's; Google refuses any other with invalid_scope."""
    gmail = "https://www.googleapis.com/auth/gmail.readonly"
    result = sesamectl(daemon, "login", "googletv", "--device", "--scope", "openid", "--scope", gmail)
    out, err = result.communicate(timeout=60)
    assert result.returncode != 0, (out, err)
    assert f"the scope {gmail} in its device flow" in err and "--browser" in err, err
    assert google.seen(google.DEVICE, "POST") == [], "Google was asked although it would refuse"
