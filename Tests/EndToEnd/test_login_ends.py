"""Every login ends: a browser login that is interrupted (Ctrl-C) or refused at the provider
gives its login allowance back at once, so the limit of logins under way (8 per user) counts
only logins that can still finish, and a person who gave up on nine logins is not locked out of
the tenth. Driven with the real sesamectl against the test identity provider."""

import signal
import subprocess
from urllib.parse import parse_qs, urlparse

import requests

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


def test_nine_abandoned_logins_leave_the_tenth_working(daemon, idp):
    for attempt in range(9):
        (interrupted if attempt % 2 == 0 else denied)(daemon)
    process, url = started_browser_login(daemon)
    try:
        page = as_browser(idp, url)
        out, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert page.status_code == 200 and "logged in as Bob" in page.text, page.text
    assert process.returncode == 0 and out.startswith("logged in: web-"), (out, err)
