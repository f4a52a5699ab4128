"""The test identity provider (Tests/IdentityProvider) does what Sesame's OAuth end-to-end tests
rely on: the real flows over plain HTTP, and /_test/ controls that steer and observe it."""

import base64
import hashlib
import json
import secrets
import subprocess
import sys
import time
from urllib.parse import parse_qs, urlparse

import pytest
import requests
from jwcrypto import jwk, jws, jwt

from harness import wait_until
from idp_harness import DEVICE_GRANT, IDP, REPO, SCOPE, IdentityProvider


@pytest.fixture(autouse=True)
def clean_slate(idp):
    idp.clear_faults()
    idp.reset_counters()
    idp.reset_settings()


def verified_claims(idp, id_token: str) -> dict:
    """The ID token's claims, once its signature checks out against the provider's JWKS."""
    keys = jwk.JWKSet.from_json(requests.get(idp.discovery()["jwks_uri"], timeout=10).text)
    return json.loads(jwt.JWT(jwt=id_token, key=keys, algs=["RS256"]).claims)


def error_of(response) -> str:
    assert response.status_code == 400, response.text
    return response.json()["error"]


# Discovery and the flows


def test_discovery_names_every_endpoint(idp):
    document = idp.discovery()
    assert document["issuer"] == idp.issuer
    for name in ("authorization", "token", "device_authorization", "revocation", "introspection", "userinfo"):
        assert document[f"{name}_endpoint"].startswith(idp.issuer + "/"), name
    assert document["code_challenge_methods_supported"] == ["S256"]
    assert "RS256" in document["id_token_signing_alg_values_supported"]
    assert {"openid", "offline_access"} <= set(document["scopes_supported"])
    keys = requests.get(document["jwks_uri"], timeout=10).json()["keys"]
    assert [(key["kty"], key["alg"]) for key in keys] == [("RSA", "RS256")]


def test_rfc8414_metadata_names_the_same_endpoints(idp):
    metadata, discovery = idp.metadata(), idp.discovery()
    assert metadata["issuer"] == idp.issuer
    for key in ("authorization_endpoint", "token_endpoint", "device_authorization_endpoint",
                "revocation_endpoint", "introspection_endpoint", "jwks_uri"):
        assert metadata[key] == discovery[key], key


def test_device_flow_is_pending_until_approved_then_gives_tokens(idp):
    authorization = idp.start_device_login()
    assert authorization["interval"] == 1
    assert authorization["verification_uri_complete"].endswith(authorization["user_code"])
    assert error_of(idp.poll(authorization["device_code"])) == "authorization_pending"

    idp.approve(authorization["user_code"], "bob")
    response = idp.poll(authorization["device_code"])
    assert response.status_code == 200, response.text
    tokens = response.json()
    assert tokens["expires_in"] == 2 and tokens["refresh_token"]
    claims = verified_claims(idp, tokens["id_token"])
    assert (claims["iss"], claims["aud"], claims["preferred_username"]) == (idp.issuer, "sesame-device", "bob")
    assert idp.token_status(tokens["access_token"]) and idp.token_status(tokens["refresh_token"])


def test_denied_device_login_gets_access_denied(idp):
    authorization = idp.start_device_login()
    idp.deny(authorization["user_code"])
    assert error_of(idp.poll(authorization["device_code"])) == "access_denied"
    # Only a pending login can be decided.
    response = requests.post(f"{idp.base}/_test/device/approve", json={"user_code": authorization["user_code"]})
    assert response.status_code == 404


def test_confidential_client_authenticates_with_basic_and_may_introspect(idp):
    tokens = idp.device_login("confidential")
    assert verified_claims(idp, tokens["id_token"])["aud"] == "sesame-confidential"
    introspection = idp.post("introspection", "confidential", token=tokens["access_token"]).json()
    assert introspection["active"] and introspection["username"] == "alice"

    wrong = requests.post(
        idp.endpoint("device_authorization"), data={"scope": SCOPE}, auth=("sesame-confidential", "wrong"), timeout=10
    )
    assert (wrong.status_code, wrong.json()["error"]) == (401, "invalid_client")


def test_refresh_rotates_and_a_reused_refresh_token_is_refused(idp):
    first = idp.device_login()
    response = idp.refresh(first["refresh_token"])
    assert response.status_code == 200, response.text
    second = response.json()
    assert second["refresh_token"] != first["refresh_token"]
    assert second["access_token"] != first["access_token"]
    assert verified_claims(idp, second["id_token"])["sub"] == verified_claims(idp, first["id_token"])["sub"]

    assert error_of(idp.refresh(first["refresh_token"])) == "invalid_grant"
    # Reuse protection then revokes the whole family, as for a stolen token.
    assert not idp.token_status(second["refresh_token"])
    assert error_of(idp.refresh(second["refresh_token"])) == "invalid_grant"


def test_access_token_lives_for_the_lifetime_given_at_launch(idp):
    tokens = idp.device_login()
    issued = time.monotonic()  # DOT issued the token before this
    assert idp.token_status(tokens["access_token"])

    def expired() -> bool:
        asked = time.monotonic()
        if not idp.token_status(tokens["access_token"]):
            return True
        # DOT answers by its own clock, so whenever a question asked after the lifetime is
        # answered, however slow the machine, the token must be expired.
        assert asked - issued < tokens["expires_in"] + 0.2, f"still active {asked - issued:.1f}s after it was issued"
        return False

    wait_until(expired, what="DOT to let the access token expire")
    assert idp.refresh(tokens["refresh_token"]).status_code == 200


def test_revocation_ends_the_grant(idp):
    tokens = idp.device_login()
    assert idp.post("revocation", "device", token=tokens["refresh_token"], token_type_hint="refresh_token").ok
    assert not idp.token_status(tokens["refresh_token"])
    assert not idp.token_status(tokens["access_token"])
    assert error_of(idp.refresh(tokens["refresh_token"])) == "invalid_grant"

    # Revoking just the access token strands its refresh token too: DOT refuses it from then on.
    tokens = idp.device_login()
    assert idp.post("revocation", "device", token=tokens["access_token"]).ok
    assert not idp.token_status(tokens["refresh_token"])
    assert idp.counters()["revocations"] == 2


def authorize(idp, redirect_uri: str, cookies: dict, scope: str = SCOPE) -> tuple[requests.Response, str, str]:
    """Opens the authorization URL as a browser would; returns the answer, PKCE verifier, nonce."""
    verifier, nonce = secrets.token_urlsafe(48), secrets.token_urlsafe(16)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
    query = {
        "response_type": "code",
        "client_id": "sesame-code",
        "redirect_uri": redirect_uri,
        "scope": scope,
        "state": "state-" + nonce,
        "nonce": nonce,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
    }
    response = requests.get(
        idp.endpoint("authorization"), params=query, cookies=cookies, allow_redirects=False, timeout=10
    )
    return response, verifier, nonce


def code_login(idp, username: str = "alice", scope: str = SCOPE) -> requests.Response:
    """The token endpoint's answer for a code from a browser logged in as username."""
    redirect_uri = "http://127.0.0.1:8765/callback"
    response, verifier, _ = authorize(idp, redirect_uri, idp.login_cookie(username), scope)
    assert response.status_code == 302, response.text
    code = parse_qs(urlparse(response.headers["Location"]).query)["code"][0]
    fields = {"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri}
    return idp.post("token", "code", code_verifier=verifier, **fields)


@pytest.mark.parametrize("port", [8765, 50321])
def test_authorization_code_with_pkce_on_any_loopback_port(idp, port):
    redirect_uri = f"http://127.0.0.1:{port}/callback"
    response, verifier, nonce = authorize(idp, redirect_uri, idp.login_cookie("alice"))
    assert response.status_code == 302, response.text
    location = response.headers["Location"]
    assert location.startswith(redirect_uri + "?")
    query = parse_qs(urlparse(location).query)
    assert query["state"] == ["state-" + nonce]

    fields = {"grant_type": "authorization_code", "code": query["code"][0], "redirect_uri": redirect_uri}
    assert error_of(idp.post("token", "code", code_verifier="not-the-verifier", **fields)) == "invalid_grant"
    response, verifier, nonce = authorize(idp, redirect_uri, idp.login_cookie("alice"))
    fields["code"] = parse_qs(urlparse(response.headers["Location"]).query)["code"][0]
    response = idp.post("token", "code", code_verifier=verifier, **fields)
    assert response.status_code == 200, response.text
    tokens = response.json()
    assert tokens["refresh_token"]
    claims = verified_claims(idp, tokens["id_token"])
    assert (claims["aud"], claims["nonce"], claims["preferred_username"]) == ("sesame-code", nonce, "alice")


@pytest.mark.parametrize("redirect_uri", ["http://127.0.0.1:8765/elsewhere", "http://localhost:8765/callback"])
def test_authorization_refuses_unregistered_redirects(idp, redirect_uri):
    response, _, _ = authorize(idp, redirect_uri, idp.login_cookie("alice"))
    assert response.status_code == 400
    assert "Location" not in response.headers


def test_authorization_without_a_session_goes_to_login(idp):
    response, _, _ = authorize(idp, "http://127.0.0.1:8765/callback", cookies={})
    assert response.status_code == 302
    assert response.headers["Location"].startswith("/_test/login?")


# Token exchange (RFC 8693)

TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"


def exchange(idp, subject_token: str, client: str = "confidential", **fields) -> requests.Response:
    """An RFC 8693 exchange of an access token at the token endpoint (HTTP Basic for the
    confidential client, client_id in the form for a public one)."""
    fields.setdefault("subject_token_type", ACCESS_TOKEN_TYPE)
    return idp.post("token", client, grant_type=TOKEN_EXCHANGE, subject_token=subject_token, **fields)


def issued(response) -> dict:
    """A successful exchange's answer. Assertion messages never show a token: only an error
    answer (which names none) is shown."""
    ok = response.status_code == 200
    assert ok, f"HTTP {response.status_code}: {response.text}"
    return response.json()


def refused(response, status: int = 400) -> str:
    """The error of a refused exchange, once its description is checked not to repeat a token."""
    ok = response.status_code == status
    assert ok, f"HTTP {response.status_code}" + ("" if response.status_code == 200 else f": {response.text}")
    assert response.headers["Cache-Control"] == "no-store"
    answer = response.json()
    assert set(answer) == {"error", "error_description"}
    return answer["error"]


def introspect(idp, token: str) -> dict:
    """RFC 7662 introspection by the confidential client."""
    response = idp.post("introspection", "confidential", token=token)
    assert response.status_code == 200, response.status_code
    return response.json()


def test_token_exchange_narrows_the_scope(idp):
    subject = idp.device_login()
    response = exchange(idp, subject["access_token"], scope="profile")
    answer = issued(response)
    assert response.headers["Cache-Control"] == "no-store"
    # RFC 8693 §2.2.1: no refresh token, and the scope is named.
    assert set(answer) == {"access_token", "issued_token_type", "token_type", "expires_in", "scope"}
    assert (answer["issued_token_type"], answer["token_type"]) == (ACCESS_TOKEN_TYPE, "Bearer")
    assert (answer["scope"], answer["expires_in"]) == ("profile", 2)
    fresh = answer["access_token"] != subject["access_token"]
    assert fresh

    introspection = introspect(idp, answer["access_token"])
    assert introspection["active"] is True and introspection["scope"] == "profile"
    assert (introspection["username"], introspection["client_id"]) == ("alice", "sesame-confidential")
    assert "aud" not in introspection  # nothing asked for: no audience restriction
    # The subject token is not used up.
    assert introspect(idp, subject["access_token"])["scope"] == SCOPE

    # No scope asked for: the subject token's, without openid (an exchange is no ID token flow).
    # A public client authenticates by client_id, and may exchange another client's token.
    answer = issued(exchange(idp, subject["access_token"], client="code"))
    assert answer["scope"] == "profile email offline_access"
    introspection = introspect(idp, answer["access_token"])
    assert (introspection["scope"], introspection["client_id"]) == (answer["scope"], "sesame-code")
    assert idp.counters()["token_requests"][TOKEN_EXCHANGE] == 2


def test_token_exchange_for_an_audience(idp):
    subject = idp.device_login()
    answer = issued(exchange(idp, subject["access_token"], audience="sesame-code", scope="email"))
    introspection = introspect(idp, answer["access_token"])
    assert introspection["active"] and introspection["aud"] == ["sesame-code"]
    assert introspection["scope"] == "email"

    # Audience may repeat (§2.1); and an exchanged token may be exchanged again, for another.
    answer = issued(exchange(idp, subject["access_token"], audience=["sesame-code", "sesame-device"]))
    assert introspect(idp, answer["access_token"])["aud"] == ["sesame-code", "sesame-device"]
    again = issued(exchange(idp, answer["access_token"], audience="sesame-confidential"))
    assert introspect(idp, again["access_token"])["aud"] == ["sesame-confidential"]
    # Asking for none keeps the subject token's targets, so an exchange never widens them.
    kept = issued(exchange(idp, answer["access_token"]))
    assert introspect(idp, kept["access_token"])["aud"] == ["sesame-code", "sesame-device"]


def test_token_exchange_for_a_resource(idp):
    subject = idp.device_login()
    resource = "https://api.example.test/v1?tenant=1"
    answer = issued(exchange(idp, subject["access_token"], resource=resource))
    introspection = introspect(idp, answer["access_token"])
    assert introspection["active"] and introspection["aud"] == [resource]

    both = {"audience": "sesame-code", "resource": [resource, "http://127.0.0.1:9/other"]}
    answer = issued(exchange(idp, subject["access_token"], **both))
    assert introspect(idp, answer["access_token"])["aud"] == ["sesame-code", resource, "http://127.0.0.1:9/other"]

    # RFC 8707 §2: an absolute URI without fragment (and http or https here).
    for bad in ("api.example.test/v1", "/v1", "https://api.example.test/v1#part", "urn:example:api", "https://user@api.example.test/"):
        assert refused(exchange(idp, subject["access_token"], resource=bad)) == "invalid_target", bad


def test_token_exchange_refuses_a_scope_beyond_the_subject_tokens(idp):
    subject = idp.device_login()
    narrow = issued(exchange(idp, subject["access_token"], scope="profile"))
    assert refused(exchange(idp, narrow["access_token"], scope="profile email")) == "invalid_scope"
    assert refused(exchange(idp, subject["access_token"], scope="profile admin")) == "invalid_scope"
    # openid alone leaves nothing to grant.
    assert refused(exchange(idp, subject["access_token"], scope="openid")) == "invalid_scope"
    # openid among others is dropped silently.
    assert issued(exchange(idp, subject["access_token"], scope="openid email"))["scope"] == "email"


def test_token_exchange_refuses_an_unknown_audience(idp):
    subject = idp.device_login()
    for audience in ("sesame-nobody", "https://api.example.test/", ["sesame-code", "sesame-nobody"]):
        assert refused(exchange(idp, subject["access_token"], audience=audience)) == "invalid_target", audience


def test_token_exchange_refuses_a_subject_token_that_is_not_active(idp):
    # RFC 8693 §2.2.2: a subject token "invalid for any reason" MUST be answered invalid_request.
    def refused_without_echo(token: str) -> str:
        response = exchange(idp, token)
        echoed = token in response.text
        assert not echoed
        return refused(response)

    assert refused_without_echo("not-a-token") == "invalid_request"
    subject = idp.device_login()
    assert refused_without_echo(subject["refresh_token"]) == "invalid_request"  # not an access token
    assert idp.post("revocation", "device", token=subject["access_token"]).ok
    assert refused_without_echo(subject["access_token"]) == "invalid_request"

    subject = idp.device_login()
    wait_until(lambda: not idp.token_status(subject["access_token"]), what="the access token to expire")
    assert refused_without_echo(subject["access_token"]) == "invalid_request"


def test_token_exchange_refuses_malformed_requests(idp):
    subject = idp.device_login()
    token = subject["access_token"]
    refresh_type = "urn:ietf:params:oauth:token-type:refresh_token"
    for fields in (
        {"subject_token_type": refresh_type},
        {"subject_token_type": "urn:ietf:params:oauth:token-type:id_token"},
        {"subject_token_type": ""},  # a parameter without a value counts as omitted (RFC 6749 §3.1)
        {"requested_token_type": refresh_type},
        {"actor_token": token, "actor_token_type": ACCESS_TOKEN_TYPE},  # no delegation
        {"actor_token_type": ACCESS_TOKEN_TYPE},
        {"scope": ["profile", "email"]},  # RFC 6749 §3.2: no parameter twice
    ):
        assert refused(exchange(idp, token, **fields)) == "invalid_request", fields
    assert refused(exchange(idp, "")) == "invalid_request"
    # requested_token_type may name the one type issued.
    assert issued(exchange(idp, token, requested_token_type=ACCESS_TOKEN_TYPE))["issued_token_type"] == ACCESS_TOKEN_TYPE


def test_token_exchange_authenticates_the_client_as_dot_does(idp):
    token = idp.device_login()["access_token"]
    secret = idp.clients["confidential"]["client_secret"]
    form = {"grant_type": TOKEN_EXCHANGE, "subject_token": token, "subject_token_type": ACCESS_TOKEN_TYPE}
    url = idp.endpoint("token")

    # The confidential client: HTTP Basic (exchange() above) or its secret in the form.
    in_form = requests.post(url, data={**form, "client_id": "sesame-confidential", "client_secret": secret}, timeout=10)
    assert issued(in_form)["scope"] == "profile email offline_access"
    for attempt in (
        dict(data=form, auth=("sesame-confidential", "wrong")),
        dict(data={**form, "client_id": "sesame-confidential"}),  # no secret
        dict(data={**form, "client_id": "sesame-confidential", "client_secret": "wrong"}),
        dict(data={**form, "client_id": "sesame-nobody"}),
        dict(data=form),  # no client at all
        dict(data={**form, "client_id": "sesame-code"}, auth=("sesame-confidential", secret)),  # two clients
    ):
        response = requests.post(url, timeout=10, **attempt)
        assert refused(response, 401) == "invalid_client", attempt.get("data", {}).get("client_id")
        assert response.headers["WWW-Authenticate"].startswith("Basic ")


def test_discovery_advertises_token_exchange(idp):
    assert TOKEN_EXCHANGE in idp.discovery()["grant_types_supported"]
    assert TOKEN_EXCHANGE in idp.metadata()["grant_types_supported"]
    assert {"authorization_code", "refresh_token", DEVICE_GRANT} <= set(idp.discovery()["grant_types_supported"])


def test_other_grants_still_go_to_dot(idp):
    subject = idp.device_login()
    issued(exchange(idp, subject["access_token"]))
    response = idp.refresh(subject["refresh_token"])
    assert response.status_code == 200, response.status_code
    assert verified_claims(idp, response.json()["id_token"])["preferred_username"] == "alice"
    assert code_login(idp).status_code == 200
    # DOT's own answers for grants it does not know, or without one.
    assert error_of(idp.post("token", "device", grant_type="urn:example:unknown")) == "unsupported_grant_type"
    assert error_of(idp.post("token", "device")) == "unsupported_grant_type"
    assert idp.counters()["token_requests"] == {
        DEVICE_GRANT: 1, TOKEN_EXCHANGE: 1, "refresh_token": 1, "authorization_code": 1, "urn:example:unknown": 1, "": 1
    }


def test_userinfo_for_exchanged_tokens_is_dots(idp):
    subject = idp.device_login()
    plain = issued(exchange(idp, subject["access_token"]))
    bound = issued(exchange(idp, subject["access_token"], audience="sesame-code"))
    # Granted without openid, so DOT refuses them, unless userinfo_any_token is on; even then
    # DOT refuses a token bound to an audience or resource that the userinfo URL is not under
    # (RFC 8707).
    refused_plain = idp.userinfo(plain["access_token"]).status_code
    idp.set_settings(userinfo_any_token=True)
    answered_plain = idp.userinfo(plain["access_token"])
    refused_bound = idp.userinfo(bound["access_token"]).status_code
    assert refused_plain == 401
    assert answered_plain.status_code == 200 and answered_plain.json()["preferred_username"] == "alice"
    assert refused_bound == 401


# Switches: behaviours of other conformant servers


def test_settings_change_only_what_is_named_and_reset_to_defaults(idp):
    defaults = idp.get_settings()
    assert defaults["device_id_token"] is True and defaults["refresh_id_token"] is True
    changed = idp.set_settings(device_id_token=False)
    assert changed == {**defaults, "device_id_token": False}
    assert idp.get_settings() == changed
    assert idp.reset_settings() == defaults
    for bad in ({"device_id_token": "no"}, {"colour": "red"}, {"discovery_omit": "jwks_uri"}):
        response = requests.post(f"{idp.base}/_test/settings", json=bad, timeout=10)
        assert response.status_code == 400, bad
    assert idp.get_settings() == defaults


def test_device_grant_without_id_token_is_a_plain_token_response(idp):
    idp.set_settings(device_id_token=False)
    tokens = idp.device_login()
    # RFC 8628 §3.5 / RFC 6749 §5.1, and openid still granted.
    assert set(tokens) == {"access_token", "token_type", "expires_in", "refresh_token", "scope"}
    assert tokens["scope"].split() == SCOPE.split()
    # A refresh still answers one (OpenID Connect Core §12.2), unless refresh_id_token is off too.
    refreshed = idp.refresh(tokens["refresh_token"]).json()
    assert verified_claims(idp, refreshed["id_token"])["preferred_username"] == "alice"
    idp.set_settings(refresh_id_token=False)
    refreshed = idp.refresh(refreshed["refresh_token"]).json()
    assert set(refreshed) == {"access_token", "token_type", "expires_in", "refresh_token", "scope"}

    idp.reset_settings()
    assert "id_token" in idp.device_login()


def test_refresh_without_id_token(idp):
    tokens = idp.device_login()
    idp.set_settings(refresh_id_token=False)
    response = idp.refresh(tokens["refresh_token"])
    assert response.status_code == 200, response.text
    assert "id_token" not in response.json() and response.json()["refresh_token"]
    # The device grant itself still answers one.
    assert "id_token" in idp.device_login()


def test_discovery_can_leave_fields_out(idp):
    omitted = ["device_authorization_endpoint", "revocation_endpoint", "userinfo_endpoint", "jwks_uri"]
    full = idp.discovery()
    assert idp.set_settings(discovery_omit=omitted)["discovery_omit"] == omitted
    for document, url in [
        (idp.discovery(), f"{idp.issuer}/.well-known/openid-configuration"),
        (idp.metadata(), f"{idp.issuer}/.well-known/oauth-authorization-server"),
    ]:
        assert not set(omitted) & set(document), url
        assert document["issuer"] == idp.issuer and document["token_endpoint"] == full["token_endpoint"], url
    assert not set(omitted) & set(requests.get(f"{idp.issuer}/.well-known/openid-configuration/", timeout=10).json())
    # The endpoints themselves still work.
    assert requests.get(full["jwks_uri"], timeout=10).json()["keys"]
    assert idp.device_login()["access_token"]

    idp.reset_settings()
    assert set(omitted) <= set(idp.discovery()) and set(omitted) - {"userinfo_endpoint"} <= set(idp.metadata())


def test_dot_answers_no_id_token_when_openid_is_not_asked_for(idp):
    response = code_login(idp, scope="profile email offline_access")
    assert response.status_code == 200, response.text
    assert set(response.json()) == {"access_token", "token_type", "expires_in", "refresh_token", "scope"}
    assert response.json()["scope"] == "profile email offline_access"


def test_withheld_openid_means_no_id_tokens_and_the_granted_scope_is_named(idp):
    idp.set_settings(withhold_scopes=["openid"])
    granted = "profile email offline_access"
    response = code_login(idp)  # asking for openid too
    assert response.status_code == 200, response.text
    tokens = response.json()
    # RFC 6749 §3.3 / §5.1: the scope granted differs from the one asked for, so it is named.
    assert set(tokens) == {"access_token", "token_type", "expires_in", "refresh_token", "scope"}
    assert tokens["scope"] == granted
    refreshed = idp.refresh(tokens["refresh_token"], client="code").json()
    assert "id_token" not in refreshed and refreshed["scope"] == granted

    device = idp.device_login()
    assert "id_token" not in device and device["scope"] == granted

    # Nothing left to grant.
    authorization = idp.start_device_login(scope="openid")
    idp.approve(authorization["user_code"])
    assert error_of(idp.poll(authorization["device_code"])) == "invalid_scope"

    idp.reset_settings()
    assert "id_token" in code_login(idp).json()


def test_userinfo_names_the_person_of_the_id_token(idp):
    tokens = idp.device_login(username="bob")
    response = idp.userinfo(tokens["access_token"])
    assert response.status_code == 200, response.text
    claims = verified_claims(idp, tokens["id_token"])
    assert response.json() == {key: claims[key] for key in ("sub", "preferred_username", "name", "email")}
    # A device grant without ID token was still granted openid: userinfo names the person.
    idp.set_settings(device_id_token=False)
    assert idp.userinfo(idp.device_login(username="bob")["access_token"]).json()["sub"] == claims["sub"]
    assert idp.userinfo("not-a-token").status_code == 401


def test_userinfo_for_tokens_without_openid_only_when_switched_on(idp):
    sub = verified_claims(idp, idp.device_login(username="bob")["id_token"])["sub"]
    idp.set_settings(withhold_scopes=["openid"], userinfo_any_token=True)
    tokens = idp.device_login(username="bob")
    assert "id_token" not in tokens
    response = idp.userinfo(tokens["access_token"])
    assert response.status_code == 200, response.text
    assert response.headers["Content-Type"] == "application/json"
    assert response.json() == {"sub": sub, "preferred_username": "bob", "name": "Bob", "email": "bob@example.test"}

    # DOT itself: 401 invalid_token for an access token granted without openid. (Answered 200
    # again just after, so the token had not merely expired.)
    idp.set_settings(userinfo_any_token=False)
    refused = idp.userinfo(tokens["access_token"])
    idp.set_settings(userinfo_any_token=True)
    assert idp.userinfo(tokens["access_token"]).status_code == 200
    assert refused.status_code == 401
    assert 'error="invalid_token"' in refused.headers["WWW-Authenticate"]

    # Still only for valid tokens.
    assert idp.post("revocation", "device", token=tokens["access_token"]).ok
    assert idp.userinfo(tokens["access_token"]).status_code == 401


def test_userinfo_fault(idp):
    tokens = idp.device_login()
    idp.fault(path_prefix="/o/userinfo/", status=401, headers={"WWW-Authenticate": 'Bearer error="invalid_token"'})
    faulted = idp.userinfo(tokens["access_token"])
    assert (faulted.status_code, faulted.headers["WWW-Authenticate"]) == (401, 'Bearer error="invalid_token"')
    assert idp.userinfo(tokens["access_token"]).status_code == 200
    assert idp.counters()["userinfo_requests"] == 2


# Faults


@pytest.mark.parametrize(
    "fault, content_type",
    [
        (dict(status=500, body="it broke", content_type="text/plain"), "text/plain"),
        (dict(status=429, headers={"Retry-After": "1"}), "application/json"),
        (dict(status=200, body='{"access_token": '), "application/json"),
        (dict(status=400, body={"error": "invalid_grant"}), "application/json"),
        (dict(status=503, body={"error": "temporarily_unavailable"}), "application/json"),
    ],
    ids=["500", "429", "malformed-json", "invalid_grant", "temporarily_unavailable"],
)
def test_canned_answer_replaces_one_request(idp, fault, content_type):
    tokens = idp.device_login()
    idp.fault(path_prefix="/o/token/", grant_type="refresh_token", **fault)

    faulted = idp.refresh(tokens["refresh_token"])
    assert faulted.status_code == fault["status"]
    assert faulted.headers["Content-Type"] == content_type
    body = fault.get("body", "")
    assert faulted.text == (body if isinstance(body, str) else json.dumps(body))
    for name, value in fault.get("headers", {}).items():
        assert faulted.headers[name] == value
    # DOT never saw it, so the refresh token is still good, and the fault is used up.
    assert idp.refresh(tokens["refresh_token"]).status_code == 200
    assert idp.counters()["token_requests"] == {DEVICE_GRANT: 1, "refresh_token": 2}


@pytest.mark.parametrize("error", ["slow_down", "expired_token"])
def test_device_polling_errors(idp, error):
    authorization = idp.start_device_login()
    idp.fault(grant_type=DEVICE_GRANT, status=400, body={"error": error})
    assert error_of(idp.poll(authorization["device_code"])) == error
    assert error_of(idp.poll(authorization["device_code"])) == "authorization_pending"


def test_fault_only_matches_its_grant_type_and_path(idp):
    authorization = idp.start_device_login()
    idp.fault(grant_type="refresh_token", status=500)
    idp.fault(path_prefix="/o/.well-known/openid-configuration", status=503, count=2)
    assert error_of(idp.poll(authorization["device_code"])) == "authorization_pending"
    discovery = f"{idp.issuer}/.well-known/openid-configuration"
    assert [requests.get(discovery, timeout=10).status_code for _ in range(3)] == [503, 503, 200]
    assert len(idp.control("GET", "faults")["faults"]) == 1  # the refresh fault, still waiting
    idp.clear_faults()
    assert idp.control("GET", "faults")["faults"] == []


def test_delayed_canned_answer_times_the_client_out(idp):
    tokens = idp.device_login()
    idp.fault(grant_type="refresh_token", status=500, delay=1.0)
    with pytest.raises(requests.Timeout):
        idp.refresh(tokens["refresh_token"], timeout=0.3)
    # Taken by that request, which the client gave up on and may still be on its way.
    wait_until(lambda: idp.control("GET", "faults")["faults"] == [], what="the fault to be taken")
    assert idp.refresh(tokens["refresh_token"]).status_code == 200


def test_delay_without_status_loses_a_served_answer(idp):
    tokens = idp.device_login()
    idp.reset_counters()
    idp.fault(grant_type="refresh_token", delay=3.0)
    with pytest.raises(requests.Timeout):
        idp.refresh(tokens["refresh_token"], timeout=0.5)
    # DOT rotated the refresh token before the answer was held back; the client lost the new one.
    [answer] = idp.wait_for_held_back()
    assert (answer["path"], answer["grant_type"], answer["status"]) == ("/o/token/", "refresh_token", 200)
    lost = json.loads(answer["body"])
    assert not idp.token_status(tokens["refresh_token"])
    assert idp.token_status(lost["refresh_token"])
    counters = idp.counters()
    assert (counters["token_requests"], counters["held_back_served"]) == ({"refresh_token": 1}, 1)
    assert error_of(idp.refresh(tokens["refresh_token"])) == "invalid_grant"
    # Reuse protection then revoked the lost one too.
    assert not idp.token_status(lost["refresh_token"])

    [answer] = idp.wait_for_held_back(released=True)
    assert idp.counters()["held_back_released"] == 1


def test_slow_revocation_revokes_at_once_and_answers_late(idp):
    tokens = idp.device_login()
    idp.fault(path_prefix="/o/revoke_token/", delay=3.0)
    with pytest.raises(requests.Timeout):
        idp.revoke(tokens["refresh_token"], timeout=0.5)
    [answer] = idp.wait_for_held_back()
    assert (answer["path"], answer["grant_type"], answer["status"]) == ("/o/revoke_token/", None, 200)
    assert not idp.token_status(tokens["refresh_token"])
    assert idp.counters()["revocations"] == 1


def test_slow_canned_revocation_answer_never_reaches_dot(idp):
    tokens = idp.device_login()
    idp.fault(path_prefix="/o/revoke_token/", status=503, delay=3.0)
    with pytest.raises(requests.Timeout):
        idp.revoke(tokens["refresh_token"], timeout=0.5)
    wait_until(lambda: idp.counters()["revocations"] == 1, what="DOT to count the revocation")
    assert idp.token_status(tokens["refresh_token"]) and idp.held_back() == []
    assert idp.revoke(tokens["refresh_token"]).status_code == 200
    assert not idp.token_status(tokens["refresh_token"])


def test_id_token_signed_with_a_foreign_key_fails_verification_once(idp):
    tokens = idp.device_login()
    idp.fault(grant_type="refresh_token", id_token="foreign_key")
    response = idp.refresh(tokens["refresh_token"])
    assert response.status_code == 200
    forged = jws.JWS.from_jose_token(response.json()["id_token"])
    # It names the real key, so only checking the signature can catch it.
    real_key = requests.get(idp.discovery()["jwks_uri"], timeout=10).json()["keys"][0]
    assert forged.jose_header["kid"] == real_key["kid"]
    with pytest.raises(jws.InvalidJWSSignature):
        forged.verify(jwk.JWK(**real_key))
    verified_claims(idp, idp.refresh(response.json()["refresh_token"]).json()["id_token"])


def test_id_token_for_another_audience_once(idp):
    tokens = idp.device_login()
    idp.fault(grant_type="refresh_token", id_token="wrong_audience")
    response = idp.refresh(tokens["refresh_token"])
    claims = verified_claims(idp, response.json()["id_token"])
    assert claims["aud"] in ("sesame-code", "sesame-confidential")
    next_claims = verified_claims(idp, idp.refresh(response.json()["refresh_token"]).json()["id_token"])
    assert next_claims["aud"] == "sesame-device"


def test_canned_answers_echo_what_the_request_carried(idp):
    tokens = idp.device_login("confidential")
    odd = 'quote " backslash \\ brace } ' + tokens["refresh_token"]
    idp.fault(
        grant_type="refresh_token",
        status=400,
        body={"error": "invalid_grant", "error_description": "{{refresh_token}} unknown"},
        headers={"X-Client": "{{client_id}}:{{client_secret}}"},
        count=2,
    )
    for sent in (tokens["refresh_token"], odd):
        echoed = idp.refresh(sent, client="confidential")
        assert echoed.json() == {"error": "invalid_grant", "error_description": f"{sent} unknown"}
    secret = idp.clients["confidential"]["client_secret"]
    assert echoed.headers["X-Client"] == f"sesame-confidential:{secret}"  # from HTTP Basic

    idp.fault(path_prefix="/o/revoke_token/", status=400, body='{"error": "invalid_request", "token": "{{token}}"}')
    revoked = idp.post("revocation", "device", token=tokens["access_token"])
    assert revoked.json()["token"] == tokens["access_token"]

    challenge = 'Bearer error="invalid_token", error_description="{{access_token}} expired"'
    idp.fault(path_prefix="/o/userinfo/", status=401, headers={"WWW-Authenticate": challenge})
    userinfo = idp.userinfo(tokens["access_token"])
    assert userinfo.headers["WWW-Authenticate"] == challenge.replace("{{access_token}}", tokens["access_token"])

    body = "{{grant_type}}|{{code}}|{{code_verifier}}|{{device_code}}|{{scope}}"
    idp.fault(status=400, body=body, content_type="text/plain")
    form = {"grant_type": "authorization_code", "code": "the-code", "code_verifier": "the-verifier"}
    assert idp.post("token", "code", **form).text == "authorization_code|the-code|the-verifier||"
    expired = {"error": "expired_token", "error_description": "{{device_code}}"}
    idp.fault(grant_type=DEVICE_GRANT, status=400, body=expired)
    assert idp.poll("the-device-code").json()["error_description"] == "the-device-code"


def test_bad_fault_is_refused(idp):
    for fault in (
        {"status": 500, "id_token": "foreign_key"},
        {"id_token": "nonsense"},
        {"colour": "red"},
        {"status": 400, "body": {"error_description": "{{password}}"}},
    ):
        response = requests.post(f"{idp.base}/_test/faults", json=fault, timeout=10)
        assert response.status_code == 400, fault


# Counters, lifecycle


def test_counters_count_what_reached_the_token_and_revocation_endpoints(idp):
    authorization = idp.start_device_login()
    idp.poll(authorization["device_code"])
    idp.approve(authorization["user_code"])
    tokens = idp.poll(authorization["device_code"]).json()
    idp.fault(grant_type="refresh_token", status=500)
    idp.refresh(tokens["refresh_token"])
    idp.post("revocation", "device", token=tokens["refresh_token"])
    idp.userinfo(tokens["access_token"])
    assert idp.counters() == {
        "token_requests": {DEVICE_GRANT: 2, "refresh_token": 1},
        "revocations": 1,
        "device_authorizations": 1,
        "userinfo_requests": 1,
        "held_back_served": 0,
        "held_back_released": 0,
    }
    idp.fault(path_prefix="/o/userinfo/")
    idp.userinfo(tokens["access_token"])
    assert idp.counters()["held_back_served"] == idp.counters()["held_back_released"] == 1
    idp.reset_counters()
    assert idp.counters() == {
        "token_requests": {},
        "revocations": 0,
        "device_authorizations": 0,
        "userinfo_requests": 0,
        "held_back_served": 0,
        "held_back_released": 0,
    }
    assert idp.held_back() == []


def test_restart_on_the_same_state_keeps_the_clients(tmp_path):
    providers = []
    try:
        for _ in range(2):
            provider = IdentityProvider(tmp_path).start()
            providers.append(provider)
            assert provider.device_login("confidential")["id_token"]
            assert provider.stop() == 0
        first, second = providers
        assert second.clients == first.clients
        assert set(first.clients) == {"device", "code", "confidential"}
    finally:
        for provider in providers:
            provider.kill()


def test_state_inside_the_repository_is_refused():
    state = REPO / "idp-state"
    result = subprocess.run([sys.executable, str(IDP), "--state", str(state)], capture_output=True, text=True)
    assert result.returncode == 2 and "outside the repository" in result.stderr
    assert not state.exists()
