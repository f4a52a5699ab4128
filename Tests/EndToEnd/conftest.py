import pytest

from harness import Daemon, running
from idp_harness import IdentityProvider


@pytest.fixture
def daemon(tmp_path):
    """A running sesamed on a private socket; after the test it must stop cleanly with status 0."""
    with running(Daemon(tmp_path, config="[limits]\nmax_message_size = 65536\n")) as instance:
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
