"""Every login ends: a browser login that is interrupted (Ctrl-C) or refused at the provider
gives its login allowance back at once, so the limit of logins under way (8 per user) counts
only logins that can still finish, and a person who gave up on nine logins is not locked out of
the tenth. Every grant is accounted for: a second login of the same person revokes the grant it
replaced. Driven with the real sesamectl and sesamed against the test identity provider."""

import json
import signal
import subprocess
from urllib.parse import parse_qs, urlparse

import requests

from harness import SESAMECTL, Subscription, call, import_from_idp, running, subject_of, wait_until
from test_oauth import oauth_daemon
from test_sesamectl_login import as_browser, browser_url, daemon, login  # noqa: F401 (a fixture)


def started_browser_login(daemon) -> tuple[subprocess.Popen, str]:
    """`sesamectl login web --browser` up to the URL it asks the person to open."""
    process = login(daemon, "web", "--browser")
    try:
        return process, browser_url(process)
    except BaseException:
        process.kill()
        raise


def interrupted(daemon) -> None:
    """A browser login given up with Ctrl-C while sesamectl waits for the browser."""
    process, _ = started_browser_login(daemon)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=30)
    assert process.returncode != 0, err


def denied(daemon) -> None:
    """A browser login the person refused at the provider: the redirect brings access_denied."""
    process, url = started_browser_login(daemon)
    try:
        query = parse_qs(urlparse(url).query)
        refusal = f'{query["redirect_uri"][0]}?state={query["state"][0]}&error=access_denied'
        requests.get(refusal, timeout=30)
        _, err = process.communicate(timeout=30)
    finally:
        process.kill()
    assert process.returncode == 1 and "refused the login" in err, err


def device_interrupted(daemon) -> None:
    """A device login given up with Ctrl-C while sesamectl shows the code."""
    process = login(daemon, "local", "--device")
    try:
        assert process.stdout.readline().startswith("Open "), "no device code shown"
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=30)
    finally:
        process.kill()
    assert process.returncode != 0, err


def test_nine_abandoned_logins_leave_the_tenth_working(daemon, idp):
    for attempt in range(9):
        (interrupted, denied, device_interrupted)[attempt % 3](daemon)
    process, url = started_browser_login(daemon)
    try:
        page = as_browser(idp, url)
        out, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert page.status_code == 200 and "logged in as Bob" in page.text, page.text
    assert process.returncode == 0 and out.startswith("logged in: web-"), (out, err)


def test_a_second_login_of_the_same_person_revokes_the_grant_it_replaces(tmp_path, idp):
    """RFC 9700 §2.2.2: the refresh token a new login replaces is revoked at the provider once the
    new one is saved, and the reply and the loggedIn event say so. When the provider is down, the
    old grant is kept and tried again until the provider confirms it."""
    idp.clear_faults()
    with running(oauth_daemon(tmp_path, idp)) as instance:
        account, first = import_from_idp(instance, idp)
        events = Subscription(instance, kinds=["loggedIn"])
        second = idp.device_login()
        reply = import_again(instance, second)
        assert reply["account"]["id"] == account["id"], reply
        assert reply["replacedGrant"] == {"revokedRemotely": True, "retrying": False}, reply
        assert events.next()["revokedRemotely"] is True
        assert not idp.token_status(first["refresh_token"]), "the replaced refresh token is still active"
        assert idp.token_status(second["refresh_token"]), "the new grant was revoked too"

        idp.fault(path_prefix="/o/revoke_token/", status=503, body="down", content_type="text/plain", count=1)
        third = idp.device_login()
        reply = import_again(instance, third)
        assert reply["replacedGrant"]["revokedRemotely"] is False and reply["replacedGrant"]["retrying"], reply
        assert events.next()["revokedRemotely"] is False
        # The deadline loop tries again after its backoff (5 s and up) and the provider answers.
        wait_until(lambda: not idp.token_status(second["refresh_token"]), timeout=60,
                   what="the kept grant revoked on a later try")
        assert idp.token_status(third["refresh_token"])


def import_again(daemon, tokens: dict) -> dict:
    """ImportTokens of another login of the same person at the test identity provider."""
    reply = call(daemon, "io.sesame.Accounts.ImportTokens", {
        "provider": "local", "subject": subject_of(tokens["id_token"]),
        "tokens": {"accessToken": tokens["access_token"], "refreshToken": tokens["refresh_token"],
                   "idToken": tokens["id_token"], "expiresIn": tokens["expires_in"],
                   "scopes": tokens["scope"].split()}})
    assert "error" not in reply, reply
    return reply["parameters"]


def test_sesamectl_says_what_became_of_the_replaced_grant(tmp_path, idp):
    """`sesamectl import` over a live account of the same person prints the account on stdout and,
    on stderr, that the grant it replaced was revoked."""
    idp.clear_faults()
    with running(oauth_daemon(tmp_path, idp)) as instance:
        _, first = import_from_idp(instance, idp)
        second = idp.device_login()
        imported = subprocess.run(
            [str(SESAMECTL), "import", "local", "--subject", subject_of(second["id_token"]), "--socket",
             str(instance.socket_path)], input=json.dumps(second), capture_output=True, text=True, timeout=60)
        assert imported.returncode == 0, imported.stderr
        assert imported.stdout.startswith("local-") and imported.stdout.count("\n") == 1, imported.stdout
        assert imported.stderr == "the grant this login replaced was revoked at the provider\n", imported.stderr
        assert not idp.token_status(first["refresh_token"])
        secrets = [second[key] for key in ("access_token", "refresh_token", "id_token")]
        leaked = any(secret in imported.stdout + imported.stderr for secret in secrets)
        assert not leaked, "a token reached sesamectl's output"
