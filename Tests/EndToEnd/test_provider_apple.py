"""The apple provider type through the real sesamed and sesamectl, against the Sign in with Apple
stand-in (standin_apple.py). Sesame never logs in with Apple: an app signs the person in and hands
sesamed the authorization code (`sesamectl import apple --code -`), which sesamed redeems with a
client secret it signs itself (ES256, from the .p8 key). No test prints a token or the secret."""

import json
import os
import re
import subprocess
import time

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from jwcrypto import jwk

from harness import SESAMECTL, Daemon, Subscription, call, running
from standin_apple import AUDIENCE, MAX_SECRET_LIFETIME, AppleStandIn
from test_oauth import state_of

TEAM, KEY_ID, CLIENT = "TEAM123456", "KEY1234567", "io.sesame.tests.signin"
REDIRECT = "https://sesame.example/apple/callback"  # Apple accepts https redirects only
IMPORT_SENTENCE = "sesamectl import apple --code -"
# signinwithapplejs UserI: what Apple posts as the `user` form field the first time, a JSON string.
USER = json.dumps({"name": {"firstName": "Hana", "lastName": "Lee"}, "email": "hana@privaterelay.appleid.com"})


def public_pem(key) -> bytes:
    return key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


@pytest.fixture
def signing_key(tmp_path):
    """The team's Sign in with Apple key, as the developer account hands it out: a PKCS#8 .p8
    file, created 0600."""
    key = ec.generate_private_key(ec.SECP256R1())
    path = tmp_path / f"AuthKey_{KEY_ID}.p8"
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "wb") as file:
        file.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                     serialization.NoEncryption()))
    return path, key


@pytest.fixture
def apple(signing_key):
    with AppleStandIn(public_pem(signing_key[1]), TEAM, KEY_ID, CLIENT) as standin:
        yield standin


@pytest.fixture
def daemon(tmp_path, apple, signing_key):
    """`apple` as the developer account says, and `wrongteam`: the same with another team id;
    both refresh whenever asked (`min_refresh_interval = 0`), so tests can refresh on purpose.
    `daily` keeps Apple's once-a-day pacing. `issuer` is the stand-in, so a client secret must
    name Apple's audience, not the issuer."""
    providers = tmp_path / "providers.d"
    providers.mkdir()
    def provider(team: str, pacing: str = "min_refresh_interval = 0\n") -> str:
        return (f'type = "apple"\nissuer = "{apple.base}"\nclient_id = "{CLIENT}"\nteam_id = "{team}"\n{pacing}'
                f'key_id = "{KEY_ID}"\nprivate_key_file = "{signing_key[0]}"\ntimeout = 10\ntoken_timeout = 20\n'
                f'[endpoints]\ntoken = "{apple.base}/auth/token"\nrevocation = "{apple.base}/auth/revoke"\n'
                f'jwks = "{apple.base}/auth/keys"\n')
    (providers / "apple.toml").write_text(provider(TEAM))
    (providers / "wrongteam.toml").write_text(provider("WRONG98765"))
    (providers / "daily.toml").write_text(provider(TEAM, pacing=""))
    config = (f'[daemon]\nproviders_directory = "{providers}"\n'
              "[sessions]\nexpiring_margin = 1\nrefresh_margin = 0\nrefresh_ahead = false\n"
              "[store]\nallow_generated_key = true\n")
    with running(Daemon(tmp_path, config=config)) as instance:
        yield instance


def redeem(daemon: Daemon, provider: str, handed_over: dict) -> subprocess.CompletedProcess:
    """`sesamectl import PROVIDER --code -` with Apple's form_post fields as JSON on stdin."""
    return subprocess.run([str(SESAMECTL), "import", provider, "--code", "-", "--socket", str(daemon.socket_path)],
                          input=json.dumps(handed_over), capture_output=True, text=True, timeout=60)


def logged_in(result: subprocess.CompletedProcess, name: str, apple: AppleStandIn) -> str:
    verdicts = [s["verdict"] for s in apple.client_secrets]  # what the stand-in thought of the secrets
    assert result.returncode == 0, (result.stderr, verdicts)
    shown = re.fullmatch(rf"logged in: (\S+) \({re.escape(name)}\)\n", result.stdout)
    assert shown, result.stdout
    return shown[1]


def leaks(text: str, apple: AppleStandIn, signing_key) -> list[str]:
    """The names (never the values) of the secrets in `text`, the .p8's key material included."""
    found = [name for name, value in apple.secrets().items() if value and value in text]
    pem = signing_key[0].read_bytes()
    private = [json.loads(jwk.JWK.from_pem(pem).export_private())["d"], *pem.decode().splitlines()[1:-1]]
    return found + (["private key"] if any(part in text for part in private) else [])


def accounts(daemon: Daemon) -> list[dict]:
    return call(daemon, "io.sesame.Accounts.List", {})["parameters"]["accounts"]


def test_login_is_refused_with_the_sentence_naming_the_import_command(daemon, apple):
    result = subprocess.run([str(SESAMECTL), "login", "apple", "--socket", str(daemon.socket_path)],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode != 0 and "logged in" not in result.stdout, result
    assert result.stderr.count(IMPORT_SENTENCE) == 1, result.stderr
    listed = {p["name"]: p for p in call(daemon, "io.sesame.Accounts.ListProviders", {})["parameters"]["providers"]}
    assert listed["apple"]["type"] == "apple" and listed["apple"]["flows"] == [], listed["apple"]
    assert IMPORT_SENTENCE in listed["apple"]["loginUnavailable"], listed["apple"]
    refused = call(daemon, "io.sesame.Accounts.Login", {"provider": "apple"})
    assert refused.get("error") == "io.sesame.Accounts.LoginUnsupported", refused
    assert apple.seen("/auth/token") == [] and apple.seen("/auth/revoke") == [], "nothing was asked of Apple"


def test_a_code_is_redeemed_once_with_a_valid_client_secret_and_named_from_user(daemon, apple, signing_key):
    code = apple.mint_code("001234.5f0c.0812", "hana@privaterelay.appleid.com", redirect_uri=REDIRECT,
                           claims_as="string", private_email=True, nonce="the-apps-nonce")
    handed_over = {"code": code, "redirect_uri": REDIRECT, "user": USER}
    first = redeem(daemon, "apple", handed_over)
    account_id = logged_in(first, "Hana Lee", apple)
    account = call(daemon, "io.sesame.Accounts.Get", {"account": account_id})["parameters"]["account"]
    assert account["subject"] == "001234.5f0c.0812" and account["displayName"] == "Hana Lee", account
    request = apple.seen("/auth/token", "POST")[0]
    assert "authorization" not in request.headers, "client credentials never as HTTP Basic"
    form = request.form
    assert form.get("grant_type") == "authorization_code" and form.get("client_id") == CLIENT
    assert form.get("redirect_uri") == REDIRECT
    # "Creating a client secret": the JWT the stand-in verified with the .p8's public key.
    secret = apple.client_secrets[0]
    assert secret["verdict"] == "ok", secret["verdict"]
    assert secret["header"]["alg"] == "ES256" and secret["header"]["kid"] == KEY_ID, secret["header"]
    claims, now = secret["claims"], time.time()
    assert claims["iss"] == TEAM and claims["sub"] == CLIENT and claims["aud"] == AUDIENCE, claims
    assert 0 < claims["exp"] - claims["iat"] <= MAX_SECRET_LIFETIME, claims
    assert claims["exp"] > now and claims["iat"] <= now + 60, claims
    # The code is single-use: the second redemption is refused and creates nothing.
    second = redeem(daemon, "apple", handed_over)
    assert second.returncode != 0 and "invalid_grant" in second.stderr, second.stderr
    assert len(apple.seen("/auth/token", "POST")) == 2
    # ... and lives five minutes.
    stale = apple.mint_code("001234.5f0c.0812", "hana@privaterelay.appleid.com", lifetime=-1)
    third = redeem(daemon, "apple", {"code": stale, "user": USER})
    assert third.returncode != 0 and "invalid_grant" in third.stderr, third.stderr
    assert [a["id"] for a in accounts(daemon)] == [account_id]
    said = daemon.log() + "".join(r.stdout + r.stderr for r in (first, second, third))
    assert leaks(said, apple, signing_key) == []


def test_string_and_boolean_email_claims_are_both_accepted_and_refreshes_keep_the_refresh_token(daemon, apple, signing_key):
    """Apple writes email_verified and is_private_email as "true"/"false" in some identity
    tokens and as booleans in others. The codes come from an app's sign-in without a redirect
    URI, so none is sent. Refresh answers carry no refresh token; the first one is kept."""
    said, grants = "", {}
    for style, subject, name in (("string", "000111.aaaa.0001", "Ji Park"), ("boolean", "000222.bbbb.0002", "Min Seo")):
        first, last = name.split()
        code = apple.mint_code(subject, f"{style}@example.com", claims_as=style, private_email=style == "boolean")
        result = redeem(daemon, "apple", {"code": code, "user": json.dumps({"name": {"firstName": first, "lastName": last}})})
        grants[logged_in(result, name, apple)] = apple.answers[-1]["refresh_token"]
        assert "redirect_uri" not in apple.seen("/auth/token", "POST")[-1].form
        said += result.stdout + result.stderr
    for account_id, refresh_token in grants.items():
        before = len(apple.seen("/auth/token", "POST"))
        for _ in range(2):
            reply = call(daemon, "io.sesame.Accounts.Refresh", {"account": account_id})
            assert "error" not in reply, reply
            assert reply["parameters"]["account"]["state"] == "active", reply
        forms = [r.form for r in apple.seen("/auth/token", "POST")[before:]]
        assert [f.get("grant_type") for f in forms] == ["refresh_token", "refresh_token"]
        assert all(f.get("refresh_token") == refresh_token for f in forms), "the redeemed refresh token, both times"
    assert all(s["verdict"] == "ok" for s in apple.client_secrets)
    assert leaks(daemon.log() + said, apple, signing_key) == []


def test_a_refresh_token_is_validated_at_most_once_a_day(daemon, apple):
    """"Generate and validate tokens": verify a refresh token at most once a day, or Apple may
    throttle the app. The second refresh within the day is answered from what sesamed holds,
    saying when the next is due, and never reaches Apple."""
    code = apple.mint_code("000555.eeee.0005", "daily@example.com")
    account_id = logged_in(redeem(daemon, "daily", {"code": code, "user": USER}), "Hana Lee", apple)
    before = len(apple.seen("/auth/token", "POST"))
    assert "error" not in call(daemon, "io.sesame.Accounts.Refresh", {"account": account_id})
    held = call(daemon, "io.sesame.Accounts.GetToken", {"account": account_id})["parameters"]["accessToken"]
    again = call(daemon, "io.sesame.Accounts.Refresh", {"account": account_id})
    assert again.get("error") == "io.sesame.Accounts.RefreshFailed", again
    reason = again["parameters"]["reason"]
    assert reason.startswith("sesamed holds this refresh back until") and "at most once a day" in reason, again
    assert len(apple.seen("/auth/token", "POST")) == before + 1, "the second refresh reached Apple"
    token = call(daemon, "io.sesame.Accounts.GetToken", {"account": account_id})
    still_held = token.get("parameters", {}).get("accessToken") == held
    assert still_held and state_of(daemon, account_id) == "active", token.get("error")


def test_a_wrong_team_id_is_reported_as_a_configuration_problem(daemon, apple):
    code = apple.mint_code("000333.cccc.0003", "team@example.com", claims_as="boolean")
    result = redeem(daemon, "wrongteam", {"code": code, "user": USER})
    assert result.returncode != 0, result.stdout
    said = result.stderr.lower()  # the reason tells the administrator to fix the provider file
    assert "invalid_client" in said and ("configuration" in said or "provider file" in said), result.stderr
    assert apple.client_secrets[-1]["verdict"] == "wrong iss"
    assert accounts(daemon) == []
    # The stand-in refused the client before looking at the code, so the right file redeems it.
    logged_in(redeem(daemon, "apple", {"code": code, "user": USER}), "Hana Lee", apple)


def test_invalid_client_on_refresh_is_not_a_reason_to_log_in_again(daemon, apple):
    """A refused client secret (here: the key was revoked in the developer account) is a
    configuration problem; the person's grant is fine, so the account must not need a login."""
    code = apple.mint_code("000444.dddd.0004", "key@example.com")
    account_id = logged_in(redeem(daemon, "apple", {"code": code, "user": USER}), "Hana Lee", apple)
    registered = apple.public_key
    apple.public_key = jwk.JWK.from_pem(public_pem(ec.generate_private_key(ec.SECP256R1())))
    events = Subscription(daemon, kinds=["refreshFailed", "needsLogin"])
    reply = call(daemon, "io.sesame.Accounts.Refresh", {"account": account_id})
    assert reply.get("error") != "io.sesame.Accounts.NeedsLogin", reply
    event = events.next()
    assert event["kind"] == "refreshFailed" and "invalid_client" in event["detail"], event
    assert apple.client_secrets[-1]["verdict"].startswith("bad signature")
    assert state_of(daemon, account_id) != "needsLogin"
    apple.public_key = registered  # the administrator fixed the key
    reply = call(daemon, "io.sesame.Accounts.Refresh", {"account": account_id})
    assert "error" not in reply and reply["parameters"]["account"]["state"] == "active", reply


def test_logout_revokes_at_apple(daemon, apple, signing_key):
    code = apple.mint_code("000555.eeee.0005", "bye@example.com", redirect_uri=REDIRECT)
    result = redeem(daemon, "apple", {"code": code, "redirect_uri": REDIRECT, "user": USER})
    account_id = logged_in(result, "Hana Lee", apple)
    granted = apple.answers[-1]
    events = Subscription(daemon, kinds=["loggedOut"])
    reply = call(daemon, "io.sesame.Accounts.Logout", {"account": account_id})
    assert "error" not in reply, reply
    assert reply["parameters"]["revokedRemotely"] is True, reply
    assert len(apple.revoked) >= 1
    form = apple.revoked[0]
    assert form.get("client_id") == CLIENT and apple.client_secrets[-1]["verdict"] == "ok"
    kind = {granted["refresh_token"]: "refresh_token", granted["access_token"]: "access_token"}.get(form.get("token"))
    assert kind, "one of the account's tokens was revoked"
    assert form.get("token_type_hint") in (None, kind), "a hint, when given, names the token's kind"
    assert events.next()["revokedRemotely"] is True
    assert state_of(daemon, account_id) == "loggedOut"
    assert leaks(daemon.log() + result.stdout + result.stderr, apple, signing_key) == []
