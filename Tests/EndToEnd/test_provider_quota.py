"""No local user can spend the provider quota every user of the machine shares: sesamed talks to
a provider as one client, and providers count requests per client (Kakao also per user). Calls
that reach a provider are limited per uid and minute (`provider_calls_per_minute`); the rest are
refused with TooManyProviderCalls before the provider is asked."""

import json
import subprocess
import sys

import pytest

from harness import daemon_reachable_by_other_users
from standin_kakao import Kakao
from test_hostile_user import HOSTILE_PEER, NOBODY, as_user

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
