"""OAuth that holds up outside our own test server: the real sesamed against the test identity
provider switched to behave as other conformant servers do (no ID token from the device grant,
userinfo only, incomplete discovery, error text that echoes the request, answers that come late,
slow revocation), and never losing or leaking a grant on the way."""

import json
import threading
import time
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest
import requests

from harness import Daemon, RawConnection, Subscription, call, import_from_idp, import_tokens, running, subject_of
from idp_harness import IdentityProvider
from test_oauth import SCOPES, device_login, get_token, state_of

DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"


@pytest.fixture(scope="module")
def idp(tmp_path_factory):
    """Access tokens that live a minute: these tests refresh on purpose, never by expiry."""
    provider = IdentityProvider(tmp_path_factory.mktemp("idp"), access_token_lifetime=60).start()
    try:
        yield provider
        assert provider.stop() == 0, provider.log()
    finally:
        provider.kill()


def write_providers(directory: Path, idp: IdentityProvider, **extra: str):
    """`local` (device client), `web` (PKCE client) and `confidential` (device client with a
    secret): callers wait 2 s, token requests up to 20 s. `extra` adds lines to a file."""
    directory.mkdir(exist_ok=True)
    scopes = json.dumps(SCOPES)
    common = f'issuer = "{idp.issuer}"\nscopes = {scopes}\ntimeout = 2\ntoken_timeout = 20\n'
    secret = directory.parent / "client.secret"
    secret.write_text(idp.clients["confidential"]["client_secret"])
    files = {
        "local": f'client_id = "{idp.clients["device"]["client_id"]}"\n',
        "web": f'client_id = "{idp.clients["code"]["client_id"]}"\nflow = "authorizationCode"\n',
        "confidential": f'client_id = "{idp.clients["confidential"]["client_id"]}"\n'
        f'client_secret_file = "{secret}"\n',
    }
    for name, text in files.items():
        (directory / f"{name}.toml").write_text(common + text + extra.get(name, ""))


@pytest.fixture
def daemon(tmp_path, idp):
    idp.clear_faults()
    idp.reset_counters()
    idp.reset_settings()
    write_providers(tmp_path / "providers.d", idp)
    # Every GetToken finds the token due for a refresh, so each one asks the provider.
    config = (
        f'[daemon]\nproviders_directory = "{tmp_path / "providers.d"}"\n'
        "[sessions]\nrefresh_margin = 3600\nrefresh_ahead = false\n[store]\nallow_generated_key = true\n"
    )
    try:
        with running(Daemon(tmp_path, config=config)) as instance:
            yield instance
    finally:
        idp.reset_settings()


def browser_redirect(daemon: Daemon, idp: IdentityProvider, provider="web", username="alice"):
    """Starts a code login over raw Varlink and plays the browser up to DOT's redirect."""
    conn = RawConnection(daemon.socket_path, timeout=30)
    reply = conn.call("io.sesame.Accounts.Login", {"provider": provider, "redirectUri": "http://127.0.0.1:49999/callback"})
    assert "error" not in reply, reply
    authorization = reply["parameters"]["authorization"]
    browser = requests.Session()
    browser.cookies.update(idp.login_cookie(username))
    answer = browser.get(authorization["url"], allow_redirects=False, timeout=10)
    assert answer.status_code == 302, answer.text
    back = parse_qs(urlparse(answer.headers["Location"]).query)
    return conn, back["state"][0], back["code"][0]


def login_failure(daemon: Daemon, provider: str) -> dict:
    """The error a device login ends in before any code is shown."""
    conn = RawConnection(daemon.socket_path, timeout=30)
    try:
        return conn.call("io.sesame.Accounts.Login", {"provider": provider}, more=True)
    finally:
        conn.close()


def alice_subject(idp: IdentityProvider) -> str:
    return subject_of(idp.device_login()["id_token"])


# 1. Identity without an ID token


def test_a_device_grant_without_an_id_token_is_identified_by_userinfo(daemon, idp):
    alice = alice_subject(idp)
    idp.set_settings(device_id_token=False)
    account = device_login(daemon, idp)
    assert account["subject"] == alice and account["displayName"] == "Alice"
    assert idp.counters()["userinfo_requests"] >= 1


def test_a_code_login_granted_no_openid_is_identified_by_userinfo(daemon, idp):
    idp.set_settings(withhold_scopes=["openid"], userinfo_any_token=True)
    conn, state, code = browser_redirect(daemon, idp, username="bob")
    done = conn.call("io.sesame.Accounts.CompleteLogin", {"state": state, "code": code})
    assert "error" not in done, done
    assert done["parameters"]["account"]["displayName"] == "Bob"
    assert "openid" not in done["parameters"]["account"]["scopes"]


def test_without_id_token_or_userinfo_the_error_names_the_key_and_the_key_fixes_it(tmp_path, daemon, idp):
    alice = alice_subject(idp)
    idp.set_settings(device_id_token=False, discovery_omit=["userinfo_endpoint"])
    conn = RawConnection(daemon.socket_path, timeout=30)
    conn.send("io.sesame.Accounts.Login", {"provider": "local"}, more=True)
    idp.approve(conn.reply()["parameters"]["verification"]["userCode"])
    failed = conn.reply()
    assert failed["error"] == "io.sesame.Accounts.ProviderFailed", failed
    assert "endpoints.userinfo" in failed["parameters"]["reason"]
    # The same provider with [endpoints] userinfo logs in.
    extra = {"local": f'[endpoints]\nuserinfo = "{idp.base}/o/userinfo/"\n'}
    (tmp_path / "second").mkdir()
    second = Daemon(tmp_path / "second", config=daemon.config_path.read_text().replace(
        str(tmp_path / "providers.d"), str(tmp_path / "second" / "providers.d")))
    write_providers(tmp_path / "second" / "providers.d", idp, **extra)
    try:
        second.wait_ready()
        assert device_login(second, idp)["subject"] == alice
        assert second.stop() == 0
    finally:
        second.kill()


# 2. Incomplete discovery


def test_incomplete_discovery_names_the_missing_endpoint_and_its_key(daemon, idp):
    account, _ = import_from_idp(daemon, idp)
    idp.set_settings(discovery_omit=["device_authorization_endpoint", "revocation_endpoint"])
    # A daemon that has not read discovery yet: restart it.
    assert daemon.stop() == 0
    restarted = Daemon(daemon.tmp, config=daemon.config_path.read_text())
    try:
        restarted.wait_ready()
        events = Subscription(restarted, kinds=["loggedOut"])
        failed = login_failure(restarted, "local")
        assert failed["error"] == "io.sesame.Accounts.ProviderFailed", failed
        reason = failed["parameters"]["reason"]
        assert "device_authorization_endpoint" in reason and "endpoints.device_authorization" in reason
        reply = call(restarted, "io.sesame.Accounts.Logout", {"account": account["id"]})
        assert reply["parameters"]["revokedRemotely"] is False, reply
        assert "endpoints.revocation" in reply["parameters"]["notRevokedReason"]
        assert events.next()["revokedRemotely"] is False
        assert restarted.stop() == 0
    finally:
        restarted.kill()


# 3. Handed-over ID tokens are checked; a refused refresh answer ends in needsLogin


def test_an_imported_id_token_must_verify_and_name_the_subject(daemon, idp):
    tokens = idp.device_login()
    def handed_over(subject, id_token):
        return call(daemon, "io.sesame.Accounts.ImportTokens", {
            "provider": "local", "subject": subject,
            "tokens": {"accessToken": tokens["access_token"], "refreshToken": tokens["refresh_token"],
                       "idToken": id_token, "expiresIn": 60}})
    for subject, id_token in (("someone-else", tokens["id_token"]), (subject_of(tokens["id_token"]), "not.a.jwt")):
        refused = handed_over(subject, id_token)
        assert refused["error"] == "io.sesame.Accounts.InvalidTokens", refused
    assert call(daemon, "io.sesame.Accounts.List", {})["parameters"]["accounts"] == []
    assert "error" not in handed_over(subject_of(tokens["id_token"]), tokens["id_token"])


def test_a_refused_refresh_answer_ends_in_needs_login_and_revokes_what_was_issued(daemon, idp):
    account, tokens = import_from_idp(daemon, idp)
    events = Subscription(daemon, kinds=["needsLogin", "refreshFailed", "tokenRefreshed"])
    idp.fault(grant_type="refresh_token", id_token="foreign_key")
    reply = call(daemon, "io.sesame.Accounts.Refresh", {"account": account["id"]})
    assert reply["error"] == "io.sesame.Accounts.NeedsLogin", reply
    event = events.next()
    assert event["kind"] == "needsLogin" and "refused" in event["detail"] and "were revoked" in event["detail"]
    issued = json.loads(idp.wait_for_held_back(1)[0]["body"])
    assert not idp.token_status(issued["refresh_token"]) and not idp.token_status(issued["access_token"])
    assert state_of(daemon, account["id"]) == "needsLogin"
    assert daemon.log().count("refresh failed") == 1


# 4. A refresh answer that comes after the caller stopped waiting


def test_a_refresh_answer_that_comes_after_the_caller_gave_up_is_kept(daemon, idp):
    account, tokens = import_from_idp(daemon, idp)
    events = Subscription(daemon, kinds=["tokenRefreshed", "needsLogin", "refreshFailed"])
    idp.fault(grant_type="refresh_token", delay=5)  # DOT rotates at once; its answer comes 5 s late
    assert get_token(daemon, account["id"]) == tokens["access_token"], "the valid token, after the caller's 2 s"
    assert events.next()["kind"] == "tokenRefreshed", "the late answer was kept"
    issued = json.loads(idp.held_back()[0]["body"])
    assert get_token(daemon, account["id"]) != tokens["access_token"]
    reply = call(daemon, "io.sesame.Accounts.Refresh", {"account": account["id"]})
    assert reply["parameters"]["account"]["state"] == "active", "the rotated refresh token works"
    assert not idp.token_status(issued["refresh_token"]), "and was itself rotated by that refresh"


# 6. An early refresh that fails never takes away a valid token


def test_an_early_refresh_that_fails_hands_out_the_still_valid_token(daemon, idp):
    account, tokens = import_from_idp(daemon, idp)
    events = Subscription(daemon, kinds=["refreshFailed"])
    idp.fault(grant_type="refresh_token", status=503, body="down", content_type="text/plain")
    assert get_token(daemon, account["id"]) == tokens["access_token"]
    failed = events.next()
    assert failed["detail"] == "HTTP 503" and failed["state"] == "active"


# 7. Provider text that echoes a secret


def everything_said(daemon: Daemon, *replies) -> str:
    return "\n".join([daemon.log(), *(json.dumps(reply) for reply in replies)])


def test_an_echoed_refresh_token_is_redacted_everywhere(daemon, idp):
    account, tokens = import_from_idp(daemon, idp)
    events = Subscription(daemon)
    idp.fault(grant_type="refresh_token", status=400, body={
        "error": "invalid_grant", "error_description": "{{refresh_token}} unknown \u001b[31m"})
    reply = call(daemon, "io.sesame.Accounts.Refresh", {"account": account["id"]})
    assert reply["error"] == "io.sesame.Accounts.NeedsLogin", reply
    second, more = import_from_idp(daemon, idp)
    idp.fault(grant_type="refresh_token", status=400, body={"error": "{{refresh_token}}"})
    other = call(daemon, "io.sesame.Accounts.Refresh", {"account": second["id"]})
    seen = [events.reply() for _ in range(3)]
    text = everything_said(daemon, reply, other, *seen)
    for secret in (tokens["refresh_token"], more["refresh_token"], tokens["access_token"]):
        assert secret not in text
    assert "\u001b" not in daemon.log()


def test_an_echoed_code_verifier_device_code_and_client_secret_are_redacted(daemon, idp):
    echo = {"error": "invalid_grant", "error_description": "{{code}} {{code_verifier}} {{client_secret}} {{device_code}}"}
    idp.fault(grant_type="authorization_code", status=400, body=echo)
    conn, state, code = browser_redirect(daemon, idp)
    done = conn.call("io.sesame.Accounts.CompleteLogin", {"state": state, "code": code})
    assert done["error"] == "io.sesame.Accounts.ProviderFailed", done
    assert done["parameters"]["reason"].count("[redacted]") == 2, "code and verifier"
    idp.fault(grant_type=DEVICE_GRANT, status=400, body=echo)
    conn = RawConnection(daemon.socket_path, timeout=30)
    conn.send("io.sesame.Accounts.Login", {"provider": "confidential"}, more=True)
    conn.reply()
    failed = conn.reply()
    assert failed["parameters"]["reason"].count("[redacted]") == 2, "client secret and device code"
    text = everything_said(daemon, done, failed)
    assert code not in text and idp.clients["confidential"]["client_secret"] not in text


def test_an_echoing_revocation_endpoint_leaks_nothing(daemon, idp):
    account, tokens = import_from_idp(daemon, idp)
    idp.fault(path_prefix="/o/revoke_token/", status=400, body={"error": "invalid_request",
                                                                "error_description": "{{token}}"})
    reply = call(daemon, "io.sesame.Accounts.Logout", {"account": account["id"]})
    assert reply["parameters"]["revokedRemotely"] is False
    text = everything_said(daemon, reply)
    assert tokens["refresh_token"] not in text and tokens["access_token"] not in text


# 8. Logout racing a refresh


def test_a_logout_during_a_slow_refresh_revokes_the_rotated_tokens(daemon, idp):
    account, _ = import_from_idp(daemon, idp)
    events = Subscription(daemon, kinds=["tokenRefreshed", "loggedOut"])
    idp.fault(grant_type="refresh_token", delay=4)
    refresh = threading.Thread(target=call, args=(daemon, "io.sesame.Accounts.Refresh", {"account": account["id"]}))
    refresh.start()
    idp.wait_for_held_back(1)  # DOT has rotated; its answer is on the way
    reply = call(daemon, "io.sesame.Accounts.Logout", {"account": account["id"]})
    refresh.join(30)
    assert reply["parameters"]["revokedRemotely"] is True, reply
    assert "notRevokedReason" not in reply["parameters"]
    issued = json.loads(idp.held_back()[0]["body"])
    assert not idp.token_status(issued["refresh_token"]), "the refresh token that landed was revoked"
    assert events.kinds(2) == ["tokenRefreshed", "loggedOut"]


def test_no_refresh_starts_while_a_slow_revocation_runs(daemon, idp):
    account, tokens = import_from_idp(daemon, idp)
    idp.fault(path_prefix="/o/revoke_token/", delay=3, count=2)
    logout = threading.Thread(target=call, args=(daemon, "io.sesame.Accounts.Logout", {"account": account["id"]}))
    logout.start()
    idp.wait_for_held_back(1)
    idp.reset_counters()
    reply = call(daemon, "io.sesame.Accounts.GetToken", {"account": account["id"]})
    logout.join(30)
    assert reply.get("parameters", {}).get("accessToken") == tokens["access_token"], reply
    assert idp.counters()["token_requests"] == {}
    assert state_of(daemon, account["id"]) == "loggedOut"


# 12. Reloading providers.d


def test_sighup_applies_added_changed_and_removed_providers(tmp_path, daemon, idp):
    providers = tmp_path / "providers.d"
    account, tokens = import_from_idp(daemon, idp)
    (providers / "web.toml").rename(tmp_path / "web.toml")
    daemon.process.send_signal(1)
    daemon.wait_for_log("providers reloaded")
    assert call(daemon, "io.sesame.Accounts.Login", {"provider": "web"})["error"] == "io.sesame.Accounts.NoSuchProvider"
    (tmp_path / "web.toml").rename(providers / "web.toml")
    daemon.process.send_signal(1)
    daemon.wait_for_log("providers reloaded", 2)
    conn, state, code = browser_redirect(daemon, idp)  # started before the next change
    (providers / "web.toml").write_text((providers / "web.toml").read_text().replace("timeout = 2", "timeout = 3"))
    (providers / "local.toml").unlink()
    daemon.process.send_signal(1)
    daemon.wait_for_log("providers reloaded", 3)
    done = conn.call("io.sesame.Accounts.CompleteLogin", {"state": state, "code": code})
    assert "error" not in done, "a login under way keeps the provider it started with"
    assert call(daemon, "io.sesame.Accounts.Login", {"provider": "local"})["error"] == "io.sesame.Accounts.NoSuchProvider"
    refused = call(daemon, "io.sesame.Accounts.Refresh", {"account": account["id"]})
    assert refused["error"] == "io.sesame.Accounts.NoSuchProvider", refused
    assert state_of(daemon, account["id"]) == "active", "the account stays"
    rejected = call(daemon, "io.sesame.Accounts.ReportRejected",
                    {"account": account["id"], "accessToken": tokens["access_token"]})
    assert rejected.get("parameters") != {"refreshed": True}, "nothing was refreshed"
    assert "not configured" in rejected["parameters"]["reason"], rejected
    log = daemon.log()
    assert "changed: web" in log and "removed: local" in log and "accounts of a removed provider stay" in log
    assert "restart" not in log and "next start" not in log


# 5. TLS failures are configuration errors


TLS_CASES = {
    "untrusted issuer": ("good", False, "not signed by a CA sesamed trusts"),
    "name mismatch": ("other-name", True, "for another name"),
    "expired": ("expired", True, "expired at"),
}


@pytest.mark.parametrize("case", TLS_CASES)
def test_a_certificate_that_does_not_verify_is_provider_failed_naming_ca_file(tmp_path, case):
    from tls_server import TLSServer, make_certificates
    kind, with_ca, words = TLS_CASES[case]
    ca, certificate, key = make_certificates(tmp_path / "pki", kind)
    server = TLSServer(certificate, key)
    providers = tmp_path / "providers.d"
    providers.mkdir()
    ca_line = f'ca_file = "{ca}"\n' if with_ca else ""
    # Endpoints named rather than discovered, and no userinfo endpoint: an import then has
    # nothing to check its subject with at the provider and is taken as given, so the account
    # whose refresh meets the certificate can be made.
    base = f"https://127.0.0.1:{server.port}/o"
    (providers / "private.toml").write_text(
        f'issuer = "{base}"\ndiscovery = false\nclient_id = "sesame"\ntimeout = 10\n{ca_line}'
        f'[endpoints]\ntoken = "{base}/token/"\ndevice_authorization = "{base}/device-authorization/"\n')
    daemon = Daemon(tmp_path, config=f'[daemon]\nproviders_directory = "{providers}"\n'
                                     "[sessions]\nrefresh_ahead = false\n[store]\nallow_generated_key = true\n")
    try:
        daemon.wait_ready()
        failed = login_failure(daemon, "private")
        assert failed["error"] == "io.sesame.Accounts.ProviderFailed", failed  # not ProviderUnavailable
        reason = failed["parameters"]["reason"]
        assert words in reason and "ca_file" in reason, reason
        imported = import_tokens(daemon, provider="private", subject="alice", access_token="AT-tls",
                                 refresh_token="RT-tls", expires_in=3600)
        events = Subscription(daemon, kinds=["refreshFailed"])
        before = time.time()
        call(daemon, "io.sesame.Accounts.Refresh", {"account": imported["id"]})
        failed = events.next()
        assert words in failed["detail"] and "ca_file" in failed["detail"], failed
        retry = time.mktime(time.strptime(failed["retryAt"], "%Y-%m-%dT%H:%M:%SZ")) - time.timezone - before
        assert retry >= 250, "retried only at the slowest pace"
        assert daemon.stop() == 0
    finally:
        daemon.kill()
        server.close()
