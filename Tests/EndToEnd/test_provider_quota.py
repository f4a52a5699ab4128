"""No local user can spend the provider quota every user of the machine shares: sesamed talks to
a provider as one client, and providers count requests per client (Kakao also per user). Calls
that reach a provider are limited per uid and minute (`provider_calls_per_minute`); the rest are
refused with TooManyProviderCalls before the provider is asked."""

import json
import subprocess
import sys
import threading
from pathlib import Path

import time

import pytest

from harness import daemon_reachable_by_other_users, wait_until
from standin import Answer, StandIn
from standin_kakao import Kakao
from test_hostile_user import HOSTILE_PEER, NOBODY, as_user, owner_account
from vitals import Vitals, watched_daemon

PEER = Path(__file__).resolve().parent / "peer.py"

LIMIT = 10
IMPORTS = 40
TOO_MANY = "io.sesame.Accounts.TooManyProviderCalls"


@pytest.fixture
def kakao_daemon(tmp_path):
    """A daemon other uids reach, with a Kakao stand-in as `kakao` (ImportTokens asks its
    token-information API whose token it is) and `provider_calls_per_minute = LIMIT`."""
    with Kakao() as kakao:
        providers = tmp_path / "providers.d"
        providers.mkdir()
        endpoints = "\n".join(f'{key} = "{url}"' for key, url in kakao.endpoints().items())
        (providers / "kakao.toml").write_text(f'type = "kakao"\nclient_id = "{kakao.client_id}"\n'
                                              f'issuer = "{kakao.issuer}"\n[endpoints]\n{endpoints}\n')
        config = f'[daemon]\nproviders_directory = "{providers}"\n[limits]\nprovider_calls_per_minute = {LIMIT}\n'
        with daemon_reachable_by_other_users(config) as daemon:
            yield daemon, kakao


def test_one_users_imports_reach_the_provider_at_most_the_limit_a_minute(kakao_daemon):
    daemon, kakao = kakao_daemon
    calls = "".join(json.dumps({"method": "io.sesame.Accounts.ImportTokens", "parameters": {
        "provider": "kakao", "subject": str(number), "tokens": {"accessToken": f"not-kakaos-{number}"}}}) + "\n"
        for number in range(IMPORTS))
    answered = subprocess.run(as_user(NOBODY, sys.executable, HOSTILE_PEER, "calls", daemon.socket_path),
                              input=calls, capture_output=True, text=True, timeout=300)
    assert answered.returncode == 0, answered.stderr
    errors = [json.loads(line).get("error") for line in answered.stdout.splitlines()]
    assert len(errors) == IMPORTS
    # Burst: the first LIMIT reach the provider (which does not know the tokens); the rest are
    # refused before it is asked (a few may have been allowed back while the calls went on).
    asked = kakao.count("/v1/user/access_token_info")
    assert LIMIT <= asked <= LIMIT + 2 and errors.count(TOO_MANY) == IMPORTS - asked, (asked, errors)


RENEWALS = 100


def test_renewing_ones_own_account_cannot_make_sesamed_write_without_end():
    """Each accepted import is written to the store and made durable before it is answered; a
    user renewing an account with 64 KiB tokens in a loop made 1,281 such writes (367 MB) in
    20 s. Renewals are imports, counted against provider_calls_per_minute (30), so a user can
    cause only that many writes a minute; the owner is served meanwhile."""
    token = "t" * 65536
    renewal = json.dumps({"method": "io.sesame.Accounts.ImportTokens", "parameters": {
        "provider": "google", "subject": "renewed", "tokens": {"accessToken": token, "refreshToken": token}}})
    with watched_daemon() as daemon:
        account = owner_account(daemon)
        written_before = written_bytes(daemon)
        with Vitals(daemon, account, "renewals in a loop") as vitals:
            answered = subprocess.run(as_user(NOBODY, sys.executable, HOSTILE_PEER, "calls", daemon.socket_path),
                                      input=(renewal + "\n") * RENEWALS, capture_output=True, text=True,
                                      timeout=300)
        written = written_bytes(daemon) - written_before
    assert answered.returncode == 0, answered.stderr
    accepted = [json.loads(line).get("error") for line in answered.stdout.splitlines()].count(None)
    print(f"{accepted} of {RENEWALS} renewals accepted, {written >> 10} KiB written")
    assert 30 <= accepted <= 32, accepted
    assert written < 40 * 4 * 65536, f"{written >> 10} KiB written for {accepted} renewals"
    vitals.assert_owner_unharmed()


RENAMES = 1000


def test_renaming_in_a_loop_cannot_make_sesamed_write_without_end():
    """Each rename is a durable write of the account, whose tokens may be 64 KiB each: a user
    renaming one in a loop made 238 such writes a second. Renames are paid from
    changes_per_minute (60), and the rest are TooManyChanges, changing nothing; the owner is
    served meanwhile."""
    token = "t" * 65536
    calls = [{"method": "io.sesame.Accounts.ImportTokens", "parameters": {
        "provider": "google", "subject": "renamed", "tokens": {"accessToken": token, "refreshToken": token}}}]
    calls += [{"method": "io.sesame.Accounts.Rename", "parameters": {"account": "google", "name": f"n{n % 2}"}}
              for n in range(RENAMES)]
    with watched_daemon() as daemon:
        account = owner_account(daemon)
        written_before = written_bytes(daemon)
        with Vitals(daemon, account, "renames in a loop") as vitals:
            answered = subprocess.run(as_user(NOBODY, sys.executable, HOSTILE_PEER, "calls", daemon.socket_path),
                                      input="".join(json.dumps(call) + "\n" for call in calls),
                                      capture_output=True, text=True, timeout=300)
        written = written_bytes(daemon) - written_before
    assert answered.returncode == 0, answered.stderr
    errors = [json.loads(line).get("error") for line in answered.stdout.splitlines()]
    print(f"{errors[1:].count(None)} of {RENAMES} renames accepted, {written >> 10} KiB written")
    vitals.assert_owner_unharmed()
    assert errors[0] is None and 60 <= errors[1:].count(None) <= 62, errors[:3]
    assert set(errors[1:]) == {None, "io.sesame.Accounts.TooManyChanges"}
    assert written < 16 << 20, f"{written >> 10} KiB written for {RENAMES} renames"


def written_bytes(daemon) -> int:
    """What sesamed has written to storage so far (proc(5), /proc/PID/io write_bytes)."""
    fields = dict(line.split(": ") for line in Path(f"/proc/{daemon.process.pid}/io").read_text().splitlines())
    return int(fields["write_bytes"])


POLL_LIMIT = 3
POLLED_FOR = 8


def test_a_device_logins_polls_are_paid_from_the_same_allowance(tmp_path):
    """Each poll of a device login is a request to the provider: polls are paid from the user's
    provider calls, and wait, saying so, while none are left. With 3 a minute and a provider that
    asks for a poll a second, the Login and two polls spend them; in 8 s no more than one poll
    more can have been paid (a fewer under load)."""
    stand_in = StandIn()
    stand_in.routes[("POST", "/device")] = lambda request: Answer(json={
        "device_code": "DEVICE-CODE-quota", "user_code": "QUOT-AAAA", "expires_in": 600, "interval": 1,
        "verification_uri": stand_in.base + "/activate"})
    stand_in.routes[("POST", "/token")] = lambda request: Answer(status=400, json={"error": "authorization_pending"})
    with stand_in:
        providers = tmp_path / "providers.d"
        providers.mkdir()
        (providers / "polled.toml").write_text(
            f'issuer = "{stand_in.base}"\ndiscovery = false\nclient_id = "quota"\nflow = "device"\n'
            f'[endpoints]\ndevice_authorization = "{stand_in.base}/device"\ntoken = "{stand_in.base}/token"\n')
        config = (f'[daemon]\nproviders_directory = "{providers}"\n'
                  f'[limits]\nprovider_calls_per_minute = {POLL_LIMIT}\n')
        with daemon_reachable_by_other_users(config) as daemon:
            login = subprocess.Popen(as_user(NOBODY, sys.executable, PEER, "stream", daemon.socket_path,
                                             "io.sesame.Accounts.Login",
                                             json.dumps({"provider": "polled", "flow": "device"})),
                                     stdout=subprocess.PIPE, text=True)
            replies = []
            reader = threading.Thread(target=lambda: replies.extend(json.loads(line) for line in login.stdout))
            reader.start()
            try:
                time.sleep(POLLED_FOR)  # an upper bound on polls: a loaded machine polls fewer
                polls = len(stand_in.seen("/token"))
                assert polls <= POLL_LIMIT, f"{polls} polls with {POLL_LIMIT} provider calls a minute"
                wait_until(lambda: len(replies) >= 2, what="the login to say why it polls more slowly")
                assert "verification" in replies[0]["parameters"], replies
                assert [reply["parameters"].get("trouble") for reply in replies[1:]] == [
                    "this user's calls to the provider are at sesamed's limit; polling more slowly"], replies
            finally:
                login.kill()
                login.wait()
                reader.join(timeout=30)
