"""One bad provider file takes out its own provider, not the daemon: the others work, the bad
one is listed with what is wrong and what to do, and a reload after the fix brings it in."""

import json
import signal
import subprocess

import pytest

from harness import OFFLINE_PROVIDER, SESAMECTL, Daemon, import_tokens, running, wait_until

GOOD = OFFLINE_PROVIDER
# A registered redirect must name its port (RFC 8252 §7.3): this file cannot be used.
BAD = OFFLINE_PROVIDER.replace("[endpoints]", 'redirect_uri = "http://127.0.0.1/callback"\n[endpoints]')


def providers(daemon) -> dict[str, dict]:
    listed = subprocess.run([str(SESAMECTL), "providers", "--json", "--socket", str(daemon.socket_path)],
                            capture_output=True, text=True, check=True).stdout
    return {provider["name"]: provider for provider in json.loads(listed)}


def test_a_bad_provider_file_leaves_the_others_working_and_says_what_to_fix(tmp_path):
    directory = tmp_path / "providers.d"
    directory.mkdir()
    (directory / "good.toml").write_text(GOOD)
    (directory / "bad.toml").write_text(BAD)
    config = f'[daemon]\nproviders_directory = "{directory}"\n'
    with running(Daemon(tmp_path, config=config)) as daemon:
        import_tokens(daemon, provider="good", access_token="AT-good")
        listed = providers(daemon)
        assert listed["good"]["flows"], listed
        unavailable = listed["bad"].get("loginUnavailable") or ""
        assert "bad.toml" in unavailable and "redirect_uri" in unavailable, listed["bad"]
        assert "systemctl reload sesamed" in unavailable
        assert "provider file not used" in daemon.log()

        (directory / "bad.toml").write_text(GOOD)
        daemon.process.send_signal(signal.SIGHUP)
        wait_until(lambda: providers(daemon)["bad"].get("flows"), what="the fixed provider after the reload")


@pytest.mark.parametrize("file_name, named", [("good", ""), ("work-file", 'name = "good"\n')])
def test_a_provider_whose_file_turns_bad_keeps_running_with_its_settings(tmp_path, file_name, named):
    """Also when the file names its provider itself: the provider is found by the file it came from."""
    directory = tmp_path / "providers.d"
    directory.mkdir()
    (directory / f"{file_name}.toml").write_text(named + GOOD)
    config = f'[daemon]\nproviders_directory = "{directory}"\n'
    with running(Daemon(tmp_path, config=config)) as daemon:
        (directory / f"{file_name}.toml").write_text(named + BAD)
        daemon.process.send_signal(signal.SIGHUP)
        wait_until(lambda: "provider file not used" in daemon.log(), what="the reload to read the bad file")
        assert providers(daemon)["good"]["flows"]
        assert file_name == "good" or file_name not in providers(daemon), "listed once, by its own name"
        import_tokens(daemon, provider="good", access_token="AT-still-good")

        daemon.process.send_signal(signal.SIGHUP)
        wait_until(lambda: daemon.log().count("provider file not used") >= 2, what="a second reload")
        assert providers(daemon)["good"]["flows"], "still kept on the reload after"
