"""Naver end to end: the real sesamed and sesamectl against standin_naver.py (written from Naver's
documentation), one quirk per test: `expires_in` as a string, errors under HTTP 200, one token
endpoint for issue, refresh (no new refresh token) and delete, and a delete that only ends the
grant with a valid access token. No test prints a token."""

import json

import pytest
import requests

from harness import Subscription, call
from standin_naver import Naver
from test_provider_kakao import (account_of, accounts, assert_nothing_leaked, check, get_token, logged_in,
                                 loopback_redirect, provider_daemon, refresh, seconds_until, sesamectl,
                                 sesamectl_login, varlink_login)

NAVER_SECRET = "naver-client-secret-for-tests"


@pytest.fixture
def naver():
    redirect = loopback_redirect("/naver/callback")
    with Naver(redirect_uris=[redirect], client_secret=NAVER_SECRET) as stand_in:
        stand_in.redirect = redirect
        yield stand_in


@pytest.fixture
def daemon(tmp_path, naver):
    with provider_daemon(tmp_path, "naver", naver, NAVER_SECRET) as instance:
        yield instance


def test_sesamectl_login_reads_the_string_expires_in_and_the_profile_id(daemon, naver):
    result = sesamectl_login(daemon, naver, "naver")
    assert result["status"] == 0, result["err"]
    assert "logged in: " in result["out"], result["out"]
    query = result["query"]
    assert query["redirect_uri"] == naver.redirect and query["client_id"] == naver.client_id
    assert query["response_type"] == "code" and query.get("state"), query
    assert "code_challenge" not in query, "Naver takes no PKCE"
    [exchange] = naver.token_requests("authorization_code")
    assert "authorization" not in exchange.headers, "client credentials go in the form, not HTTP Basic"
    sent = {**exchange.query, **exchange.form}
    assert sent.get("state") == query["state"], "the token request carries the state of the redirect"
    check(sent.get("client_secret") == NAVER_SECRET, "client_secret missing from the code exchange")
    [account] = accounts(daemon)
    assert account["subject"] == naver.user["id"], account
    assert account["displayName"] in (naver.user["nickname"], naver.user["name"]), account
    # expires_in came as the string "3600": the access token expires in about an hour.
    assert account["accessTokenExpiresAt"], account
    assert 3600 - 300 < seconds_until(account["accessTokenExpiresAt"]) < 3600 + 60, account
    assert naver.count("/v1/nid/me") == 1


def test_a_token_error_under_http_200_fails_the_login_clearly(daemon, naver):
    """Naver answers a refused code exchange with HTTP 200 and `error` in the body: the login
    fails with that error, sesamectl says so, and no account is made of it."""
    naver.token_fault = {"error": "invalid_request", "error_description": "no valid data in session"}
    result = sesamectl_login(daemon, naver, "naver")
    assert result["status"] != 0 and "logged in" not in result["out"], result
    assert "invalid_request" in result["err"], result["err"]
    assert "logged in" not in result["page"]
    assert accounts(daemon) == [] and naver.count("/v1/nid/me") == 0
    assert call(daemon, "io.sesame.Accounts.List", {})["parameters"] == {"accounts": []}, "sesamed still answers"


def test_a_profile_refused_with_resultcode_024_fails_the_login(daemon, naver):
    naver.profile_fault = True
    done = varlink_login(daemon, naver, "naver")
    assert done.get("error") == "io.sesame.Accounts.ProviderFailed", done
    assert accounts(daemon) == []
    # The grant Naver issued is deleted, not left live with nobody holding it.
    assert len(naver.token_requests("delete")) == 1
    assert naver.live_access_tokens() == [] and naver.live_refresh_tokens() == []


def test_a_refresh_brings_no_refresh_token_and_the_old_one_is_kept(daemon, naver):
    account = logged_in(daemon, naver, "naver")
    before = account_of(daemon, account["id"])
    [original] = naver.live_refresh_tokens()
    for _ in range(2):  # the second refresh only works with the refresh token kept
        reply = refresh(daemon, account["id"])
        assert "error" not in reply and reply["parameters"]["account"]["state"] == "active", reply
        after = account_of(daemon, account["id"])
        assert after.get("refreshTokenExpiresAt") == before.get("refreshTokenExpiresAt")  # Naver gives none
        assert 3600 - 300 < seconds_until(after["accessTokenExpiresAt"]) < 3600 + 60, after
    sent = [{**r.query, **r.form}.get("refresh_token") for r in naver.token_requests("refresh_token")]
    check(sent == [original, original], "a refresh did not send the refresh token from the login")
    check(get_token(daemon, account["id"]) == naver.latest_access_token(), "GetToken is not the refreshed token")


def test_logout_deletes_the_grant_with_grant_type_delete(daemon, naver):
    account = logged_in(daemon, naver, "naver")
    access = naver.latest_access_token()
    events = Subscription(daemon, kinds=["loggedOut"])
    reply = call(daemon, "io.sesame.Accounts.Logout", {"account": account["id"]})
    assert "error" not in reply, reply
    assert reply["parameters"]["revokedRemotely"] is True, reply
    [delete] = naver.token_requests("delete")
    sent = {**delete.query, **delete.form}
    assert sent.get("service_provider") == "NAVER" and sent.get("client_id") == naver.client_id
    check(sent.get("client_secret") == NAVER_SECRET, "client_secret missing from the delete")
    check(sent.get("access_token") == access, "the delete named another access token")
    check(not naver.live_refresh_tokens(), "the grant still works at Naver")
    assert events.next()["revokedRemotely"] is True


def test_a_deletion_is_confirmed_by_invalid_request_for_the_dead_refresh_token(daemon, naver):
    """Naver refuses a refresh token that no longer works with invalid_request, not RFC 6749's
    invalid_grant: the check after the deletion reads it as the refresh path does, a dead grant."""
    account = logged_in(daemon, naver, "naver")
    naver.dead_refresh_error = "invalid_request"
    reply = call(daemon, "io.sesame.Accounts.Logout", {"account": account["id"]})
    assert "error" not in reply, reply
    assert reply["parameters"]["revokedRemotely"] is True, reply
    check(not naver.live_refresh_tokens(), "the grant still works at Naver")


def test_import_reads_navers_own_token_response(daemon, naver):
    """`sesamectl import naver` takes Naver's token response as Naver sends it, `expires_in` a
    string of digits, as the token endpoint's answers are read."""
    answer = naver.app_token_response()
    assert isinstance(answer["expires_in"], str)
    result = sesamectl(daemon, "import", "naver", "--subject", naver.user["id"], "--json",
                       stdin=json.dumps(answer))
    assert result.returncode == 0, result.stderr
    imported = json.loads(result.stdout)
    assert imported["provider"] == "naver" and imported["state"] == "active", imported
    assert 3000 < seconds_until(imported["accessTokenExpiresAt"]) <= int(answer["expires_in"]), imported


def test_a_deletion_naver_answers_success_to_but_does_not_end_is_not_called_confirmed(daemon, naver):
    """Naver answers "success" to any delete, so its answer proves nothing: sesamed checks that
    the refresh token stopped working, and says the grant was not revoked when it did not."""
    account = logged_in(daemon, naver, "naver")
    naver.delete_ends_nothing = True
    reply = call(daemon, "io.sesame.Accounts.Logout", {"account": account["id"]})
    assert "error" not in reply, reply
    assert reply["parameters"]["revokedRemotely"] is False, reply
    assert "still works" in reply["parameters"]["notRevokedReason"], reply
    # Every access token the checks were handed was deleted in turn, so none is left unasked.
    deleted = {{**r.query, **r.form}.get("access_token") for r in naver.token_requests("delete")}
    check(set(naver.issued_access_tokens()) <= deleted, "an access token of the grant was never deleted")


def test_logout_with_an_expired_access_token_refreshes_before_deleting(daemon, naver):
    """Naver answers "success" to a delete with an expired token but ends nothing: the access
    token sesamed knows to be expired is refreshed first."""
    account = logged_in(daemon, naver, "naver")
    expired = Subscription(daemon, kinds=["expired"], accounts=[account["id"]])
    naver.access_lifetime = 3  # the refresh below hands out a token that expires in 3 s
    assert "error" not in refresh(daemon, account["id"])
    expires = account_of(daemon, account["id"])["accessTokenExpiresAt"]
    assert seconds_until(expires) < 10, expires
    expired.next()  # sesamed itself says the access token has expired
    naver.access_lifetime = 3600
    reply = call(daemon, "io.sesame.Accounts.Logout", {"account": account["id"]})
    assert "error" not in reply and reply["parameters"]["revokedRemotely"] is True, reply
    [delete] = naver.token_requests("delete")
    assert len(naver.token_requests("refresh_token")) == 3, "one refresh before the delete, one to check it"
    check({**delete.query, **delete.form}.get("access_token") == naver.latest_access_token(),
          "the delete did not use the refreshed access token")
    check(not naver.live_refresh_tokens(), "the grant still works at Naver")


def test_no_token_code_or_secret_reaches_the_log_or_sesamectls_output(daemon, naver):
    result = sesamectl_login(daemon, naver, "naver")
    assert result["status"] == 0, result["err"]
    [account] = accounts(daemon)
    assert "error" not in refresh(daemon, account["id"])
    assert call(daemon, "io.sesame.Accounts.Logout", {"account": account["id"]})["parameters"]["revokedRemotely"]
    listed = sesamectl(daemon, "accounts", "--json")
    assert_nothing_leaked([*naver.issued, NAVER_SECRET], daemon.log(), result["out"], result["err"],
                          result["page"], listed.stdout, listed.stderr)


def test_standin_answers_as_naver_does(naver):
    """The stand-in itself (no daemon): expires_in a string, errors under 200, delete echoes."""
    token = naver.endpoints()["token"]
    wrong = requests.post(token, timeout=10, data={"grant_type": "authorization_code", "client_id": naver.client_id,
                                                   "client_secret": "wrong", "code": "x", "state": "y"})
    assert wrong.status_code == 200 and wrong.json()["error"] == "invalid_request"
    delete = requests.post(token, timeout=10, data={"grant_type": "delete", "client_id": naver.client_id,
                                                    "client_secret": NAVER_SECRET, "access_token": "unknown",
                                                    "service_provider": "NAVER"})
    assert delete.json() == {"access_token": "unknown", "result": "success"}
    me = requests.get(naver.endpoints()["profile"], headers={"Authorization": "Bearer unknown"}, timeout=10)
    assert (me.status_code, me.json()["resultcode"]) == (401, "024")


def test_a_grant_ended_at_naver_is_found_by_a_check_through_the_profile_api(daemon, naver):
    """The person removed the app at Naver: the access token is still valid by its time, the
    profile API refuses it (401, resultcode 024), and the refresh that follows is refused too."""
    account = logged_in(daemon, naver, "naver")
    with naver.lock:
        for table in (naver.access_tokens, naver.refresh_tokens):
            for entry in table.values():
                entry["alive"] = False
    reply = call(daemon, "io.sesame.Accounts.Check", {"account": account["id"]})
    assert "error" not in reply, reply
    checked = reply["parameters"]
    assert (checked["verdict"], checked["refreshed"], checked["account"]["state"]) == ("rejected", False, "needsLogin")
    assert "024" in checked["detail"], checked
