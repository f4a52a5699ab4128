"""Tokens for fewer scopes, an audience or a resource (GetToken's scopes / audience / resource,
`sesamectl token --scope/--audience/--resource`): exchanged for the account's own by OAuth 2.0
Token Exchange (RFC 8693) at the test identity provider, which checks them by introspection
(RFC 7662); never by a refresh, so the account's grant keeps every scope it had."""

import subprocess
import threading

import pytest

from harness import OFFLINE_PROVIDER, SESAMECTL, Daemon, call, import_tokens, running
from idp_harness import IdentityProvider
from test_oauth import device_login, get_token, oauth_daemon

EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"


@pytest.fixture(scope="module")
def idp(tmp_path_factory):
    """The test IdP with access tokens that outlive any wait here (five minutes): a narrowed
    token held by sesamed stays good between two calls however busy the machine is."""
    provider = IdentityProvider(tmp_path_factory.mktemp("idp"), access_token_lifetime=300).start()
    try:
        yield provider
        assert provider.stop() == 0, provider.log()
    finally:
        provider.kill()


@pytest.fixture
def daemon(tmp_path, idp):
    idp.reset_settings()
    idp.clear_faults()
    idp.reset_counters()
    with running(oauth_daemon(tmp_path, idp)) as instance:
        yield instance


def introspect(idp: IdentityProvider, token: str) -> dict:
    """What the provider says of a token (RFC 7662), asked by its confidential client."""
    response = idp.post("introspection", "confidential", token=token)
    assert response.status_code == 200, response.status_code
    return response.json()


def narrowed(daemon: Daemon, account: str, **asked) -> dict:
    """The reply of GetToken with `asked` (scopes, audience, resource)."""
    return call(daemon, "io.sesame.Accounts.GetToken", {"account": account, **asked})


def exchanges(idp: IdentityProvider) -> int:
    return idp.counters()["token_requests"].get(EXCHANGE, 0)


def test_a_token_for_fewer_scopes_is_exchanged_and_the_grant_keeps_its_own(daemon, idp):
    account = device_login(daemon, idp)
    refreshes_before = idp.counters()["token_requests"].get("refresh_token", 0)
    result = subprocess.run([str(SESAMECTL), "token", account["id"], "--scope", "profile",
                             "--socket", str(daemon.socket_path)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    token = result.stdout.strip()
    told = introspect(idp, token)
    assert told["active"] is True and told["scope"] == "profile", {k: told.get(k) for k in ("active", "scope")}
    assert exchanges(idp) == 1
    assert idp.counters()["token_requests"].get("refresh_token", 0) == refreshes_before, "no refresh was used"

    # The grant was not narrowed: a refresh still brings every scope the login granted.
    result = subprocess.run([str(SESAMECTL), "refresh", account["id"], "--socket", str(daemon.socket_path)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    own = introspect(idp, get_token(daemon, account["id"]))
    assert set(own["scope"].split()) >= {"openid", "profile", "email"}, own.get("scope")
    own_is_other = get_token(daemon, account["id"]) != token
    assert own_is_other, "the account's own token is not the narrowed one"


def test_audience_and_resource_tokens_name_them(daemon, idp):
    account = device_login(daemon, idp)
    audience = narrowed(daemon, account["id"], audience="sesame-code")
    assert "error" not in audience, audience.get("error")
    told = introspect(idp, audience["parameters"]["accessToken"])
    assert told["active"] is True and "sesame-code" in told.get("aud", []), told.get("aud")

    resource = narrowed(daemon, account["id"], resource="https://api.example.test/", scopes=["email"])
    assert "error" not in resource, resource.get("error")
    told = introspect(idp, resource["parameters"]["accessToken"])
    assert "https://api.example.test/" in told.get("aud", []) and told["scope"] == "email", told.get("aud")


def test_callers_asking_at_once_share_one_exchange_and_its_token_is_kept(daemon, idp):
    account = device_login(daemon, idp)
    replies: list[dict] = []

    def ask():
        replies.append(narrowed(daemon, account["id"], scopes=["email", "profile"]))

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all("error" not in reply for reply in replies), [reply.get("error") for reply in replies]
    tokens = {reply["parameters"]["accessToken"] for reply in replies}
    assert len(tokens) == 1, f"{len(tokens)} different tokens"
    assert exchanges(idp) == 1
    # The same scopes in another order are the same request; the token is handed out again.
    again = narrowed(daemon, account["id"], scopes=["profile", "email", "profile"])
    same = again["parameters"]["accessToken"] in tokens
    assert same and exchanges(idp) == 1


def test_what_cannot_be_had_is_refused_by_name_before_or_by_the_provider(daemon, idp):
    account = device_login(daemon, idp)
    beyond = narrowed(daemon, account["id"], scopes=["admin"])
    assert beyond.get("error") == "io.sesame.Accounts.NarrowingRefused", beyond.get("error")
    assert exchanges(idp) == 0, "a scope the account was never granted is refused before the provider is asked"

    unknown = narrowed(daemon, account["id"], audience="nobody-knows-this")
    assert unknown.get("error") == "io.sesame.Accounts.NarrowingRefused", unknown.get("error")
    assert "invalid_target" in unknown["parameters"]["reason"]

    for asked in ({"resource": "not a uri"}, {"resource": "https://x.test/#f"}, {"scopes": ["a b"]},
                  {"scopes": ["s"] * 33}, {"audience": ""}, {"audience": "a" * 2049}):
        reply = narrowed(daemon, account["id"], **asked)
        assert reply.get("error") == "org.varlink.service.InvalidParameter", (list(asked), reply.get("error"))

    result = subprocess.run([str(SESAMECTL), "token", account["id"], "--audience", "nobody-knows-this",
                             "--socket", str(daemon.socket_path)], capture_output=True, text=True, timeout=60)
    assert result.returncode != 0 and "refused" in result.stderr and "invalid_target" in result.stderr, result.stderr


def test_a_provider_without_token_exchange_says_so(tmp_path, idp):
    idp.reset_settings()
    idp.set_settings(discovery_omit=["grant_types_supported"])
    daemon = oauth_daemon(tmp_path, idp)
    # A provider without discovery: whether its server exchanges tokens cannot be known.
    (tmp_path / "providers.d" / "p.toml").write_text(OFFLINE_PROVIDER)
    try:
        with running(daemon):
            account = device_login(daemon, idp)
            reply = narrowed(daemon, account["id"], scopes=["profile"])
            assert reply.get("error") == "io.sesame.Accounts.NarrowingUnsupported", reply.get("error")
            assert "token exchange" in reply["parameters"]["reason"]
            offline = import_tokens(daemon, provider="p", access_token="AT-p")
            reply = narrowed(daemon, offline["id"], audience="anything")
            assert reply.get("error") == "io.sesame.Accounts.NarrowingUnsupported", reply.get("error")
            assert "discovery off" in reply["parameters"]["reason"]
    finally:
        idp.reset_settings()


def test_a_logout_ends_and_revokes_the_narrowed_tokens_too_and_none_is_logged(daemon, idp):
    account = device_login(daemon, idp)
    reply = narrowed(daemon, account["id"], scopes=["profile"])
    token = reply["parameters"]["accessToken"]
    own = get_token(daemon, account["id"])
    result = subprocess.run([str(SESAMECTL), "logout", account["id"], "--socket", str(daemon.socket_path)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    after = narrowed(daemon, account["id"], scopes=["profile"])
    assert after.get("error") == "io.sesame.Accounts.NeedsLogin", after.get("error")
    assert introspect(idp, token)["active"] is False, "the exchanged token was revoked with the login"
    log = daemon.log()
    leaked = token in log or own in log
    assert not leaked, "a token reached the log"
    assert "token exchanged" in log
