"""`sesamectl login` and `accounts` as a person sees them: the real sesamectl under a pseudo-terminal
(or pipes, for what scripts see) against the test identity provider. The device login's screen (the
code, a QR code in half blocks when the terminal has room, a live line replaced cleanly by the
outcome), provider trouble shown as it happens, Ctrl-C cancelling the login in sesamed too, the
browser opened with xdg-open, --json, and the accounts table."""

import fcntl
import json
import os
import re
import select
import signal
import struct
import subprocess
import termios
import time
from pathlib import Path

import pytest
import requests

from harness import SESAMECTL, import_from_idp, running, wait_until
from idp_harness import DEVICE_GRANT
from test_oauth import oauth_daemon
from test_sesamectl_login import as_browser

BLOCKS = set("▀▄█")
ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@pytest.fixture
def daemon(tmp_path, idp):
    """test_oauth's providers: `local` (device flow) and `web` (authorization code)."""
    idp.clear_faults()
    idp.reset_counters()
    with running(oauth_daemon(tmp_path, idp)) as instance:
        yield instance


class Screen:
    """sesamectl on a pseudo-terminal of `lines` x `columns`; `text` is everything it wrote."""

    def __init__(self, args: list[str], lines: int = 60, columns: int = 120, env: dict | None = None):
        self.master, follower = os.openpty()
        fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", lines, columns, 0, 0))
        environment = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "DISPLAY", "WAYLAND_DISPLAY")}
        environment.update(env or {})
        self.process = subprocess.Popen([str(SESAMECTL), *args], stdin=follower, stdout=follower, stderr=follower,
                                        env=environment, start_new_session=True)
        os.close(follower)
        self.raw = b""

    @property
    def text(self) -> str:
        return self.raw.decode(errors="replace")

    def _read(self, timeout: float) -> bool:
        """Reads what is there within `timeout`; False once sesamectl closed the terminal."""
        ready, _, _ = select.select([self.master], [], [], timeout)
        if not ready:
            return True
        try:
            chunk = os.read(self.master, 65536)
        except OSError:  # EIO: every writer has gone
            return False
        self.raw += chunk
        return bool(chunk)

    def wait_for(self, pattern: str, timeout: float = 30.0) -> re.Match:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if found := re.search(pattern, self.text):
                return found
            if not self._read(0.1) and self.process.poll() is not None:
                break
        raise AssertionError(f"no {pattern!r} on the screen:\n{self.text}")

    def finish(self, timeout: float = 60.0) -> int:
        deadline = time.monotonic() + timeout
        while self._read(0.1) and time.monotonic() < deadline:
            pass
        status = self.process.wait(max(0.1, deadline - time.monotonic()))
        os.close(self.master)
        return status

    def kill(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def user_code(screen: Screen) -> str:
    return screen.wait_for(r"and enter the code\r?\n\r?\n +(?:\x1b\[1m)?([A-Z0-9-]+)")[1]


def last_line(text: str, back: int = 1) -> str:
    """What the terminal shows on the last line written (or `back` lines up): after the last
    carriage return."""
    lines = [line for line in text.replace("\r\n", "\n").split("\n") if line.strip()]
    return lines[-back].split("\r")[-1]


def outcome_line(text: str) -> str:
    """The login's outcome: the line before the next step a person at a terminal is shown."""
    assert ESCAPE.sub("", last_line(text)).startswith("next: `sesamectl token "), text[-400:]
    return ESCAPE.sub("", last_line(text, back=2))


def qr_lines(text: str) -> list[str]:
    return [line for line in text.replace("\r\n", "\n").split("\n") if line and set(line) <= BLOCKS | {" "}
            and set(line) & BLOCKS]


def device_polls(idp) -> int:
    return idp.counters()["token_requests"].get(DEVICE_GRANT, 0)


def test_a_device_login_on_a_terminal_shows_a_qr_code_and_ends_on_a_clean_line(daemon, idp):
    screen = Screen(["login", "local", "--socket", str(daemon.socket_path)])
    try:
        code = user_code(screen)
        screen.wait_for(r"waiting for approval · the code expires in \d+:\d\d")
        square = qr_lines(screen.text)
        # A square of half blocks: as wide as two lines per row of modules, plus the quiet zone.
        assert len(square) >= 12 and len({len(line) for line in square}) == 1, screen.text
        assert len(square) == (len(square[0]) + 1) // 2, square
        idp.approve(code)
        assert screen.finish() == 0, screen.text
    finally:
        screen.kill()
    assert re.fullmatch(r"logged in: local-\S+ \(.+\)", outcome_line(screen.text)), screen.text
    # The live line was cleared before the outcome, never run into it.
    assert "\r\x1b[Klogged in: " in screen.text, screen.text[-400:]
    assert not re.search(r"expires in [^\r\n]*logged in", screen.text), screen.text[-400:]


def test_a_terminal_too_small_for_the_code_gets_the_text_alone(daemon, idp):
    screen = Screen(["login", "local", "--socket", str(daemon.socket_path)], lines=20, columns=60)
    try:
        code = user_code(screen)
        screen.wait_for(r"the code expires in")
        idp.approve(code)
        assert screen.finish() == 0, screen.text
    finally:
        screen.kill()
    assert not BLOCKS & set(screen.text), screen.text
    assert f"{idp.base}/o/device" in screen.text and "or open http" in screen.text, screen.text


def test_off_a_terminal_the_login_prints_plain_lines_only(daemon, idp):
    process = subprocess.Popen([str(SESAMECTL), "login", "local", "--socket", str(daemon.socket_path)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = process.stdout.readline()
        shown = re.fullmatch(r"Open (\S+) and enter the code (\S+)\n", first)
        assert shown, first
        assert process.stdout.readline().startswith("  (or open http"), first
        idp.approve(shown[2])
        out, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 0, err
    assert re.fullmatch(r"logged in: local-\S+ \(.+\)\n", out), out
    assert "\x1b" not in out + err and "\r" not in out + err and not BLOCKS & set(out + err), (out, err)


def test_provider_trouble_is_shown_on_the_live_line_as_it_happens(daemon, idp):
    idp.fault(status=503, body="<h1>down {{device_code}}</h1>", content_type="text/html", count=3,
              grant_type=DEVICE_GRANT)
    screen = Screen(["login", "local", "--socket", str(daemon.socket_path)])
    try:
        code = user_code(screen)
        screen.wait_for(r"the provider answered 503; still trying(?:\x1b\[0m)? · the code expires in")
        wait_until(lambda: device_polls(idp) >= 4, what="polls past the faults")
        idp.approve(code)
        assert screen.finish() == 0, screen.text
    finally:
        screen.kill()
    assert "down" not in screen.text, screen.text  # the provider's words never reach the screen
    assert outcome_line(screen.text).startswith("logged in: local-"), screen.text[-400:]


def test_provider_trouble_off_a_terminal_is_a_line_on_stderr(daemon, idp):
    idp.fault(status=503, count=2, grant_type=DEVICE_GRANT)
    process = subprocess.Popen([str(SESAMECTL), "login", "local", "--json", "--socket", str(daemon.socket_path)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        shown = re.fullmatch(r"Open (\S+) and enter the code (\S+)\n", process.stderr.readline())
        assert shown
        process.stderr.readline()  # (or open …)
        assert process.stderr.readline() == "sesamectl: the provider answered 503; still trying\n"
        idp.approve(shown[2])
        out, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 0, err
    account = json.loads(out)  # --json: stdout is the account and nothing else
    assert account["provider"] == "local" and account["state"] == "active" and "accessToken" not in account, out


def test_ctrl_c_cancels_the_login_in_sesamed_too(daemon, idp):
    screen = Screen(["login", "local", "--socket", str(daemon.socket_path)])
    try:
        user_code(screen)
        screen.wait_for(r"the code expires in \d+:\d\d")
        wait_until(lambda: device_polls(idp) >= 1, what="a first poll")
        screen.process.send_signal(signal.SIGINT)
        assert screen.finish(timeout=10) == 130, screen.text
    finally:
        screen.kill()
    assert ESCAPE.sub("", last_line(screen.text)) == "login cancelled", screen.text[-400:]
    assert "\r\x1b[Klogin cancelled" in screen.text, screen.text[-400:]
    daemon.wait_for_log("login cancelled by its caller")
    polls = device_polls(idp)
    time.sleep(2.5)  # the IdP asks for a poll every second
    assert device_polls(idp) == polls
    assert "expired" not in daemon.log() and "login failed" not in daemon.log(), daemon.log()


def fake_xdg_open(tmp_path):
    """An xdg-open on PATH that writes down the address it was given."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    opener = bin_dir / "xdg-open"
    opener.write_text(f'#!/bin/sh\nprintf "%s\\n" "$1" > {tmp_path}/opened\n')
    opener.chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "DISPLAY": ":0"}, tmp_path / "opened"


def opened_address_leads_to(opened: Path, url: str) -> bool:
    """Whether xdg-open was given sesamectl's own address that sends this user's browser to
    `url`, without the URL itself on its command line (where other users could read it)."""
    if not opened.exists() or not (argument := opened.read_text().strip()):
        return False
    assert argument.startswith("http://127.0.0.1:") and "state=" not in argument, argument
    answer = requests.get(argument, allow_redirects=False, timeout=30)
    return answer.status_code == 302 and answer.headers["Location"] == url


@pytest.mark.parametrize("no_browser", [False, True])
def test_the_browser_is_opened_when_there_is_a_display(daemon, idp, tmp_path, no_browser):
    env, opened = fake_xdg_open(tmp_path)
    args = [str(SESAMECTL), "login", "web", "--socket", str(daemon.socket_path)] + (["--no-browser"] * no_browser)
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        first = process.stdout.readline()
        assert "(waiting up to 5:00 for the browser)" in first, first
        url = process.stdout.readline().strip()
        if no_browser:
            assert first.startswith("Open this URL in your browser"), first
        else:
            wait_until(lambda: opened_address_leads_to(opened, url), what="xdg-open to be given the login's start")
        page = as_browser(idp, url, username="bob")
        assert "logged in as Bob" in page.text, page.text
        out, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 0 and out.startswith("logged in: web-"), (out, err)
    assert opened.exists() != no_browser


def test_import_and_login_json_are_the_accounts_shape(daemon, idp):
    account, tokens = import_from_idp(daemon, idp)
    listed = json.loads(subprocess.run([str(SESAMECTL), "accounts", "--json", "--socket", str(daemon.socket_path)],
                                       capture_output=True, text=True, check=True).stdout)
    response = json.dumps({"access_token": tokens["access_token"], "expires_in": 60})
    imported = subprocess.run([str(SESAMECTL), "import", "local", "--subject", account["subject"], "--json",
                               "--socket", str(daemon.socket_path)], input=response, capture_output=True, text=True)
    assert imported.returncode == 0, imported.stderr
    again = json.loads(imported.stdout)
    assert again["id"] == account["id"] and set(again) == set(listed[0]), (again, listed)
    assert tokens["access_token"] not in imported.stdout


def accounts_screen(daemon, *args, env=None) -> str:
    screen = Screen(["accounts", *args, "--socket", str(daemon.socket_path)], env=env)
    try:
        assert screen.finish(timeout=30) == 0, screen.text
    finally:
        screen.kill()
    return screen.text


def test_the_accounts_table(daemon, idp):
    assert accounts_screen(daemon).strip() == (
        "no accounts; `sesamectl providers` lists where to log in, `sesamectl login PROVIDER` logs in")
    piped = subprocess.run([str(SESAMECTL), "accounts", "--socket", str(daemon.socket_path)],
                           capture_output=True, text=True, check=True)
    assert piped.stdout == ""
    account, _ = import_from_idp(daemon, idp)  # its access token lasts 2 s
    coloured = accounts_screen(daemon)
    assert "\x1b[32mactive" in coloured and "\x1b[1mACCOUNT" in coloured, coloured
    plain = accounts_screen(daemon, env={"NO_COLOR": "1"})
    assert "\x1b" not in plain, plain
    header, row = [line for line in plain.replace("\r\n", "\n").split("\n") if line]
    assert header.split() == ["ACCOUNT", "NAME", "PROVIDER", "USER", "STATE", "EXPIRES"], header
    assert row.index(" local ") + 1 == header.index("PROVIDER") and row.index("active") == header.index("STATE"), plain
    assert row.split()[1] == "-", "no name was chosen"
    assert accounts_screen(daemon, "--no-legend", env={"NO_COLOR": "1"}).split() == row.split()
    time.sleep(2.5)
    later = subprocess.run([str(SESAMECTL), "accounts", "--socket", str(daemon.socket_path)],
                           capture_output=True, text=True, check=True).stdout
    assert later.split()[-1] == "expired" and "ACCOUNT" not in later, later


def test_the_providers_table_names_its_columns_and_the_flow_login_uses(daemon):
    screen = Screen(["providers", "--socket", str(daemon.socket_path)], env={"NO_COLOR": "1"})
    try:
        assert screen.finish(timeout=30) == 0, screen.text
    finally:
        screen.kill()
    header, *rows = [line for line in screen.text.replace("\r\n", "\n").split("\n") if line]
    assert header.split() == ["PROVIDER", "TYPE", "LOGIN", "NOTE"], screen.text
    login = {row.split()[0]: row[header.index("LOGIN"):].strip() for row in rows}
    assert login["local"].startswith("device code"), login
    assert login["web"].startswith("browser"), login
    piped = subprocess.run([str(SESAMECTL), "providers", "--socket", str(daemon.socket_path)],
                           capture_output=True, text=True, check=True).stdout
    assert "PROVIDER" not in piped and len(piped.splitlines()) == len(rows), piped


def test_token_min_valid_refreshes_first(daemon, idp):
    account, tokens = import_from_idp(daemon, idp)  # valid for 2 s
    before = idp.counters()["token_requests"].get("refresh_token", 0)
    token = subprocess.run([str(SESAMECTL), "token", account["id"], "--min-valid", "60", "--socket",
                            str(daemon.socket_path)], capture_output=True, text=True)
    assert token.returncode == 0, token.stderr
    assert idp.counters()["token_requests"].get("refresh_token", 0) == before + 1
    assert token.stdout.strip() and token.stdout.strip() != tokens["access_token"]
