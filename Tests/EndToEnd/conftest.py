"""Fixtures every module may use. Which daemon fixture to pick, and why there are two, is
explained at the top of harness.py."""

import pytest

import harness
from harness import Daemon, running
from idp_harness import IdentityProvider


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "serial: runs alone after the tests scripts/test runs on two workers, because it measures "
        "timing under load or changes the machine",
    )


@pytest.fixture
def daemon(tmp_path):
    """A running sesamed on a private socket (under pytest's 0700 tmp_path: only the user running
    the tests reaches it); after the test it must stop cleanly with status 0."""
    with running(Daemon(tmp_path, config="[limits]\nmax_message_size = 65536\n")) as instance:
        yield instance


@pytest.fixture
def daemon_reachable_by_other_users():
    """A running sesamed (empty config) whose socket other users reach, for tests that connect
    as other uids; see harness.daemon_reachable_by_other_users, which takes a config."""
    with harness.daemon_reachable_by_other_users() as instance:
        yield instance


@pytest.fixture(scope="module")
def idp(tmp_path_factory):
    """The test identity provider (Tests/IdentityProvider), one per test module; its access
    tokens live 2 s. It must stop cleanly after the module."""
    provider = IdentityProvider(tmp_path_factory.mktemp("idp")).start()
    try:
        yield provider
        assert provider.stop() == 0, provider.log()
    finally:
        provider.kill()
