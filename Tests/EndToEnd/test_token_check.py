"""A grant revoked at the provider: the access token stays valid by its expiry time, so sesamed
kept handing it out. `sesamectl status --check` asks the provider (token introspection, RFC
7662, which the test identity provider offers; else its userinfo endpoint), and `sesamectl
token --rejected` says an API refused it; either way sesamed refreshes once, and a refused
refresh leaves the account needing a login."""

import json
import subprocess
from urllib.parse import urlparse

import pytest

from harness import SESAMECTL, import_from_idp, running
# The identity provider whose access tokens live a minute: every check here meets a token that is
# still valid by its expiry time.
from test_any_provider import idp  # noqa: F401 (a fixture)
from test_oauth import get_token, oauth_daemon, state_of


@pytest.fixture
def daemon(tmp_path, idp):
    idp.reset_settings()
    with running(oauth_daemon(tmp_path, idp)) as instance:
        yield instance


def sesamectl(daemon, *args):
    return subprocess.run([str(SESAMECTL), *args[:1], "--socket", str(daemon.socket_path), *args[1:]],
                          capture_output=True, text=True, timeout=60)


def test_a_grant_revoked_at_the_provider_is_found_by_status_check(daemon, idp):
    account, tokens = import_from_idp(daemon, idp)
    id = account["id"]
    for token in (tokens["refresh_token"], tokens["access_token"]):
        assert idp.revoke(token).status_code == 200
    # What the issue saw: the revoked token is still handed out, by its expiry time. (Tokens are
    # compared into a truth value first: a failed assertion would print what it compared.)
    still_handed_out = get_token(daemon, id) == tokens["access_token"]
    assert still_handed_out
    checked = sesamectl(daemon, "status", id, "--check")
    assert checked.returncode == 1, (checked.stdout, checked.stderr)
    assert checked.stdout.splitlines()[0] == (
        f"{id}: needsLogin; the provider no longer accepts its access token "
        "(the provider says the access token is no longer active); run `sesamectl login local`")
    assert state_of(daemon, id) == "needsLogin"
    token = sesamectl(daemon, "token", id)
    assert token.returncode == 5 and token.stdout == "", token
    leaked = tokens["access_token"] in checked.stdout + checked.stderr + token.stderr
    assert not leaked, "the token reached sesamectl's output"


def path_of(url: str) -> str:
    return urlparse(url).path


def test_a_rejected_token_whose_grant_lives_is_replaced_by_status_check(daemon, idp):
    """The provider says the access token is no longer active, but the refresh token still
    works (a provider that revokes access tokens alone): sesamed refreshes, and says so."""
    account, tokens = import_from_idp(daemon, idp)
    id = account["id"]
    idp.fault(path_prefix=path_of(idp.endpoint("introspection")), status=200, body={"active": False})
    checked = sesamectl(daemon, "status", id, "--check", "--json")
    assert checked.returncode == 0, (checked.stdout, checked.stderr)
    status = json.loads(checked.stdout)
    assert {key: status[key] for key in ("account", "checked", "state", "usable")} == {
        "account": id, "checked": "rejected", "state": "active", "usable": True}
    fresh = get_token(daemon, id)
    replaced = fresh != tokens["access_token"] and idp.userinfo(fresh).status_code == 200
    assert replaced, "the rejected token was not replaced by a working one"
    again = sesamectl(daemon, "status", id, "--check")
    assert (again.returncode, again.stdout.splitlines()[0]) == (0, f"{id}: usable; the provider accepts its access token")


def test_token_rejected_prints_the_token_that_replaces_a_refused_one(daemon, idp):
    account, tokens = import_from_idp(daemon, idp)
    id = account["id"]
    replaced = sesamectl(daemon, "token", id, "--rejected")
    assert replaced.returncode == 0, replaced.stderr
    fresh = replaced.stdout.strip()
    works = bool(fresh) and fresh != tokens["access_token"] and idp.userinfo(fresh).status_code == 200
    assert works and get_token(daemon, id) == fresh, "the printed token is not the working replacement"


def test_token_rejected_after_the_grant_was_revoked_names_the_login(daemon, idp):
    account, tokens = import_from_idp(daemon, idp)
    assert idp.revoke(tokens["refresh_token"]).status_code == 200
    replaced = sesamectl(daemon, "token", account["id"], "--rejected")
    assert (replaced.returncode, replaced.stdout) == (5, ""), replaced
    assert replaced.stderr == f"{account['id']} needs a new login: run `sesamectl login local`.\n"


def test_without_introspection_the_userinfo_endpoint_is_asked(tmp_path, idp):
    idp.set_settings(discovery_omit=["introspection_endpoint"])
    with running(oauth_daemon(tmp_path, idp)) as daemon:
        account, tokens = import_from_idp(daemon, idp)
        asked = idp.counters()["userinfo_requests"]
        idp.fault(path_prefix=path_of(idp.endpoint("userinfo")), status=401, body="",
                  headers={"WWW-Authenticate": 'Bearer error="invalid_token"'})
        checked = sesamectl(daemon, "status", account["id"], "--check")
        assert idp.counters()["userinfo_requests"] > asked, idp.counters()
    assert checked.returncode == 0, (checked.stdout, checked.stderr)
    assert checked.stdout.splitlines()[0] == (
        f"{account['id']}: usable; the provider had stopped accepting its access token "
        "(the provider refused the access token (HTTP 401)), and sesamed refreshed it")


def test_a_provider_that_offers_no_way_to_ask_is_said_so(tmp_path, idp):
    idp.set_settings(discovery_omit=["userinfo_endpoint", "introspection_endpoint"])
    with running(oauth_daemon(tmp_path, idp)) as daemon:
        account, _ = import_from_idp(daemon, idp)
        checked = sesamectl(daemon, "status", account["id"], "--check")
    assert checked.returncode == 0, (checked.stdout, checked.stderr)
    assert "could not say whether it still accepts it" in checked.stdout, checked.stdout
    assert "set endpoints.introspection or endpoints.userinfo in the provider file" in checked.stdout


def test_token_rejected_spends_no_refresh_on_a_token_that_was_already_replaced(daemon, idp):
    """The refused token is $SESAME_ACCESS_TOKEN when set (as `sesamectl exec` sets it): a script
    whose token was replaced meanwhile gets the current one without another refresh."""
    account, tokens = import_from_idp(daemon, idp)
    first = sesamectl(daemon, "token", account["id"], "--rejected")
    assert first.returncode == 0, first.stderr
    refreshes = idp.counters()["token_requests"].get("refresh_token", 0)
    stale = subprocess.run([str(SESAMECTL), "token", account["id"], "--rejected", "--socket", str(daemon.socket_path)],
                           env={"SESAME_ACCESS_TOKEN": tokens["access_token"]}, capture_output=True, text=True,
                           timeout=60)
    assert stale.returncode == 0, stale.stderr
    current = stale.stdout == first.stdout
    assert current, "the already replaced token was not answered with the current one"
    assert idp.counters()["token_requests"].get("refresh_token", 0) == refreshes, "a refresh was spent again"


def test_a_check_right_after_a_refresh_still_replaces_a_rejected_token(daemon, idp):
    """A refusal is acted on once per token refused, not once per ten seconds: a token rejected
    within seconds of a refresh (here a `sesamectl refresh`; a planned one is the same) is
    replaced at once, and `token --rejected` right after that replaces the new one too."""
    account, tokens = import_from_idp(daemon, idp)
    id = account["id"]
    assert sesamectl(daemon, "refresh", id).returncode == 0
    refreshed = get_token(daemon, id)
    idp.fault(path_prefix=path_of(idp.endpoint("introspection")), status=200, body={"active": False}, count=1)
    checked = sesamectl(daemon, "status", id, "--check", "--json")
    assert json.loads(checked.stdout)["checked"] == "rejected", checked
    after_check = get_token(daemon, id)
    assert after_check != refreshed, "the rejected token was still handed out after --check"
    replaced = sesamectl(daemon, "token", id, "--rejected")
    assert replaced.returncode == 0, replaced.stderr
    fresh = replaced.stdout.strip()
    assert fresh != after_check and idp.userinfo(fresh).status_code == 200, "--rejected gave no new token"


def test_a_scope_sesamed_refuses_itself_says_so_and_min_valid_beyond_the_lifetime_is_named(daemon, idp):
    """Words that name who holds a token back: a --scope beyond the grant is refused by sesamed
    before the provider is asked, and a --min-valid the provider's tokens cannot meet (they live
    a minute here) renews the token and says so instead of calling a good token expired (exit 6)."""
    account, _ = import_from_idp(daemon, idp)
    id = account["id"]
    scoped = sesamectl(daemon, "token", id, "--scope", "not-granted")
    assert scoped.returncode != 0 and "sesamed refuses it without asking the provider" in scoped.stderr, scoped
    assert "provider refused" not in scoped.stderr, scoped.stderr
    long = sesamectl(daemon, "token", id, "--min-valid", "3600")
    assert long.returncode == 0 and long.stdout.strip(), long.stderr
    assert "gives tokens that live" in long.stderr and "less than --min-valid 3600" in long.stderr, long.stderr
