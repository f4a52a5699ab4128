import pytest

from harness import Daemon


@pytest.fixture
def daemon(tmp_path):
    """A running sesamed on a private socket; after the test it must stop cleanly with status 0."""
    instance = Daemon(tmp_path, config="[limits]\nmax_message_size = 65536\n")
    try:
        instance.wait_ready()
        yield instance
        assert instance.stop() == 0, instance.log()
        assert "Fatal error" not in instance.log()
    finally:
        instance.kill()
