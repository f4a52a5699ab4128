"""The test identity provider's dynamic client registration (RFC 7591) and its management
(RFC 7592): what Sesame's registration will be tested against, shown here in use."""

import base64
import hashlib
import time
from urllib.parse import parse_qs, urlparse

import pytest
import requests

from harness import wait_until
from idp_harness import DEVICE_GRANT

NATIVE = {
    "application_type": "native",
    "client_name": "Sesame on testhost",
    "redirect_uris": ["http://127.0.0.1/callback"],
    "grant_types": ["authorization_code", "refresh_token"],
    "token_endpoint_auth_method": "none",
}


@pytest.fixture(autouse=True)
def clean_slate(idp):
    idp.reset_settings()
    yield
    idp.reset_settings()


def register(idp, metadata, token: str | None = None) -> requests.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return requests.post(idp.discovery()["registration_endpoint"], json=metadata, headers=headers, timeout=10)


def manage(method: str, client: dict, token: str | None = None) -> requests.Response:
    headers = {"Authorization": f"Bearer {token or client['registration_access_token']}"}
    return requests.request(method, client["registration_client_uri"], headers=headers, timeout=10)


VERIFIER = "v" * 64
CHALLENGE = base64.urlsafe_b64encode(hashlib.sha256(VERIFIER.encode()).digest()).rstrip(b"=").decode()


def code_login(idp, client_id: str, port: int = 49152) -> dict:
    """A browser login of alice with the registered client, on a loopback port of its choosing
    (RFC 8252 §7.3: the registered redirect names none)."""
    redirect = f"http://127.0.0.1:{port}/callback"
    query = {"response_type": "code", "client_id": client_id, "redirect_uri": redirect,
             "scope": "openid offline_access", "state": "s", "code_challenge": CHALLENGE,
             "code_challenge_method": "S256"}
    answer = requests.get(idp.endpoint("authorization"), params=query, cookies=idp.login_cookie("alice"),
                          allow_redirects=False, timeout=10)
    assert answer.status_code == 302, answer.text
    code = parse_qs(urlparse(answer.headers["Location"]).query)["code"][0]
    idp.clients["registered"] = {"client_id": client_id, "client_secret": None}
    response = idp.post("token", "registered", grant_type="authorization_code", code=code, redirect_uri=redirect,
                        code_verifier=VERIFIER)
    assert response.status_code == 200, response.text
    return response.json()


def test_discovery_names_the_registration_endpoint(idp):
    assert idp.discovery()["registration_endpoint"] == idp.issuer + "/register/"
    assert idp.metadata()["registration_endpoint"] == idp.issuer + "/register/"


def test_a_native_public_client_registers_and_logs_in_on_any_loopback_port(idp):
    answer = register(idp, NATIVE)
    assert answer.status_code == 201, answer.text
    client = answer.json()
    assert client["client_id"] and client["registration_access_token"] and "client_secret" not in client
    assert client["registration_client_uri"] == f"{idp.issuer}/register/{client['client_id']}"
    assert (client["grant_types"], client["redirect_uris"]) == (NATIVE["grant_types"], NATIVE["redirect_uris"])
    assert answer.headers["Cache-Control"] == "no-store"
    tokens = code_login(idp, client["client_id"])
    assert tokens["refresh_token"] and tokens["id_token"]
    read = manage("GET", client)
    assert read.status_code == 200 and read.json()["client_id"] == client["client_id"]
    assert "registration_access_token" not in read.json()


def test_a_client_asking_for_both_grants_is_told_which_it_got(idp):
    """DOT gives a client one grant: the answer says so, as RFC 7591 §3.2.1 requires."""
    both = {**NATIVE, "grant_types": ["authorization_code", DEVICE_GRANT, "refresh_token"]}
    client = register(idp, both).json()
    assert client["grant_types"] == ["authorization_code", "refresh_token"]
    device = {**NATIVE, "grant_types": [DEVICE_GRANT, "refresh_token"], "redirect_uris": []}
    client = register(idp, device).json()
    assert client["grant_types"] == [DEVICE_GRANT, "refresh_token"]
    idp.clients["registered"] = {"client_id": client["client_id"], "client_secret": None}
    assert idp.device_login(client="registered")["refresh_token"]


@pytest.mark.parametrize("metadata, error", [
    ({**NATIVE, "redirect_uris": ["https://evil.example/callback"]}, "invalid_redirect_uri"),
    ({**NATIVE, "redirect_uris": []}, "invalid_redirect_uri"),
    ({**NATIVE, "grant_types": ["implicit"]}, "invalid_client_metadata"),
    ({**NATIVE, "token_endpoint_auth_method": "private_key_jwt"}, "invalid_client_metadata"),
    (["not", "an", "object"], "invalid_client_metadata"),
])
def test_metadata_it_does_not_take_is_refused_by_name(idp, metadata, error):
    answer = register(idp, metadata)
    assert answer.status_code == 400 and answer.json()["error"] == error, answer.text


def test_an_initial_access_token_is_required_when_set(idp):
    idp.set_settings(registration_initial_token="initial-7c1e")
    assert register(idp, NATIVE).status_code == 401
    assert register(idp, NATIVE, token="wrong").status_code == 401
    assert register(idp, NATIVE, token="initial-7c1e").status_code == 201


def test_a_confidential_clients_expiring_secret_is_renewed_by_a_read_and_refused_once_expired(idp):
    idp.set_settings(registration_secret_lifetime=2)
    device = {"grant_types": [DEVICE_GRANT, "refresh_token"], "client_name": "Sesame confidential"}
    client = register(idp, device).json()
    assert client["token_endpoint_auth_method"] == "client_secret_basic" and client["client_secret"]
    assert client["client_secret_expires_at"] > time.time()
    idp.clients["registered"] = {"client_id": client["client_id"], "client_secret": client["client_secret"]}
    assert idp.device_login(client="registered")["access_token"]
    # Past half its life a read hands out a new secret, which works; the old one is replaced.
    renewed = wait_until(lambda: manage("GET", client).json().get("client_secret"), what="a renewed secret")
    assert renewed != client["client_secret"]
    idp.clients["registered"]["client_secret"] = renewed
    assert idp.device_login(client="registered")["access_token"]
    # Unread, it expires: the token endpoint refuses the client.
    wait_until(lambda: idp.post("token", "registered", grant_type="refresh_token",
                                refresh_token="x").json().get("error") == "invalid_client",
               what="the expired secret refused")


def test_a_deleted_client_is_gone_and_its_token_no_longer_reads_it(idp):
    client = register(idp, NATIVE).json()
    assert manage("GET", client, token="not-the-token").status_code == 401
    deleted = manage("DELETE", client)
    assert deleted.status_code == 204, deleted.text
    assert manage("GET", client).status_code == 401
    idp.clients["registered"] = {"client_id": client["client_id"], "client_secret": None}
    assert idp.post("token", "registered", grant_type="refresh_token", refresh_token="x").json()["error"] == \
        "invalid_client"
    assert manage("PUT", register(idp, NATIVE).json()).status_code == 405
