"""sesame-notify on a real desktop session: a real `dbus-daemon --session`, dunst (Debian's
notification server) on an Xvfb display, and the release sesamed with the test identity
provider. A needed login and a login about to end each show one notice; a new notification
server is shown them again; a restart of sesamed replaces them rather than stacking them; a renewed login withdraws its notice; and a click,
invoked through the bus as dunst does for one, starts the browser login that makes the account
usable again."""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import requests

from harness import SESAME_NOTIFY, Daemon, call, import_tokens, running, subject_of, wait_until
from test_identity_provider import code_login
from test_oauth import oauth_daemon

DUNST_CONFIG = """[global]
    font = DejaVu Sans 11
    width = 520
    origin = top-right
    offset = 10x10
"""


class Desktop:
    """An X display, a session bus and a notification server on it, as a graphical login has."""

    def __init__(self):
        self.processes = []

    def open(self, tmp: Path):
        read_end, write_end = os.pipe()
        self.start(["Xvfb", "-displayfd", str(write_end), "-screen", "0", "1024x400x24", "-nolisten", "tcp"],
                   pass_fds=(write_end,))
        os.close(write_end)
        # Xvfb writes the number and the newline apart, and dies if the second write finds the
        # pipe closed: read to the newline.
        number = b""
        while not number.endswith(b"\n"):
            chunk = os.read(read_end, 16)
            assert chunk, "Xvfb ended before it said its display"
            number += chunk
        os.close(read_end)
        self.display = ":" + number.decode().strip()
        self.bus_address = f"unix:path={tmp}/session-bus"
        self.env = {**os.environ, "DISPLAY": self.display, "DBUS_SESSION_BUS_ADDRESS": self.bus_address}
        self.start(["dbus-daemon", "--session", "--nofork", "--nopidfile", f"--address={self.bus_address}"])
        wait_until(lambda: self.owned("org.freedesktop.DBus"), what="the session bus")
        self.monitor_log = tmp / "bus-monitor.log"
        self.start(["dbus-monitor", "--session", "interface='org.freedesktop.Notifications'"],
                   stdout=open(self.monitor_log, "w"))
        (tmp / "dunstrc").write_text(DUNST_CONFIG)
        self.tmp = tmp
        self.start_server()

    def start_server(self):
        """dunst, with this test's settings, as the notification server."""
        self.server = subprocess.Popen(["dunst", "-config", str(self.tmp / "dunstrc")], env=self.env,
                                       stderr=open(self.tmp / "dunst.log", "a"))
        self.processes.append(self.server)
        # Asked without starting it: a bus-activated dunst would be another one.
        wait_until(lambda: self.owned("org.freedesktop.Notifications"), what="dunst on the bus")

    def restart_server(self):
        """Another dunst in place of the first, as after a desktop's restart of its notices: it
        shows none of what the first one showed."""
        self.server.terminate()
        self.server.wait(10)
        self.start_server()

    def owned(self, name: str) -> bool:
        answer = self.run("dbus-send", "--session", "--print-reply", "--dest=org.freedesktop.DBus", "/",
                          "org.freedesktop.DBus.NameHasOwner", f"string:{name}")
        return "boolean true" in answer.stdout

    def start(self, command, **options):
        self.processes.append(subprocess.Popen(command, env=getattr(self, "env", None), **options))

    def run(self, *command) -> subprocess.CompletedProcess:
        return subprocess.run(command, env=self.env, capture_output=True, text=True, timeout=30)

    def displayed(self) -> int:
        return int(self.run("dunstctl", "count", "displayed").stdout)

    def notify_calls(self) -> list[tuple[int, str]]:
        """Every Notify call on the bus so far, as (replaces_id, summary)."""
        calls = []
        for block in re.split(r"\n(?=\S)", self.monitor_log.read_text()):
            if "member=Notify" in block:
                arguments = re.findall(r'^\s+(?:string "(.*)"|uint32 (\d+))$', block, re.M)
                calls.append((int(arguments[1][1]), arguments[3][0]))
        return calls

    def screenshot(self, path: Path):
        assert self.run("import", "-display", self.display, "-window", "root", str(path)).returncode == 0

    def close(self):
        for process in reversed(self.processes):
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()


@pytest.fixture
def desktop(tmp_path):
    missing = [tool for tool in ("Xvfb", "dbus-daemon", "dbus-monitor", "dunst", "dunstctl", "import")
               if not shutil.which(tool)]
    assert not missing, f"scripts/bootstrap installs {missing}"
    session = Desktop()
    try:
        session.open(tmp_path)
        yield session
    finally:
        session.close()


@pytest.fixture
def browser(tmp_path):
    """An xdg-open that notes the address it was given, as the login's browser."""
    directory = tmp_path / "bin"
    directory.mkdir()
    (directory / "xdg-open").write_text(f'#!/bin/sh\nprintf "%s\\n" "$1" > {tmp_path}/opened\n')
    (directory / "xdg-open").chmod(0o755)
    return directory


def import_web(daemon, idp, username, refresh_expires_in=None) -> str:
    """A login of `username` at the provider `web` (the IdP's code client), its refresh token
    said to end in `refresh_expires_in` seconds; the account's id."""
    response = code_login(idp, username)
    assert response.status_code == 200, response.text
    tokens = response.json()
    return import_tokens(daemon, provider="web", subject=subject_of(tokens["id_token"]),
                         access_token=tokens["access_token"], refresh_token=tokens["refresh_token"],
                         expires_in=3600, refresh_expires_in=refresh_expires_in)["id"]


def test_a_needed_login_is_a_notice_replaced_withdrawn_and_clicked_into_a_login(tmp_path, idp, desktop, browser):
    idp.clear_faults()
    daemon = oauth_daemon(tmp_path, idp)
    notify = None
    output = ""
    try:
        with running(daemon):
            work = import_web(daemon, idp, "alice")
            assert "error" not in call(daemon, "io.sesame.Accounts.Rename", {"account": work, "name": "work"})
            bob = import_web(daemon, idp, "bob", refresh_expires_in=3 * 86400)
            notify = subprocess.Popen([str(SESAME_NOTIFY), "--socket", str(daemon.socket_path)],
                                      env={**desktop.env, "PATH": f"{browser}:{os.environ['PATH']}"},
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            # bob's refresh token ends in three days: said as soon as sesame-notify looks.
            wait_until(lambda: desktop.displayed() == 1, what="the notice that bob's login ends")
            idp.fault(grant_type="refresh_token", status=400, body={"error": "invalid_grant"})
            assert call(daemon, "io.sesame.Accounts.Refresh", {"account": work})["error"]
            idp.clear_faults()
            wait_until(lambda: desktop.displayed() == 2, what="the notice that work needs a login")
            desktop.screenshot(tmp_path / "notices.png")
            # A new notification server is shown the notices again.
            desktop.restart_server()
            wait_until(lambda: desktop.displayed() == 2, what="both notices shown by the new server")
            summaries = [summary for _, summary in desktop.notify_calls()]
            assert "Log in to work again" in summaries, summaries
            assert any(summary.startswith(f"The login of {bob} ends on ") for summary in summaries), summaries
            posted_before_the_restart = len(desktop.notify_calls())
        again = Daemon(tmp_path, config=daemon.config_path.read_text())
        with running(again):
            replaced_after_a_restart(desktop, bob, posted_before_the_restart)
            # bob logs in again, with a refresh token that lasts: his notice is withdrawn.
            import_web(again, idp, "bob", refresh_expires_in=90 * 86400)
            wait_until(lambda: desktop.displayed() == 1, what="bob's notice withdrawn")
            clicked_into_a_login(tmp_path, idp, desktop, again, work)
    finally:
        if notify:
            notify.kill()
            output = notify.communicate(timeout=30)[0]
    assert "Fatal error" not in output and "token" not in output.lower(), output


def replaced_after_a_restart(desktop, bob, before: int):
    """sesame-notify reconnects to the new sesamed and looks again: each notice is posted in
    place of the one shown for its account and cause, so there are still two. `before` is how
    many posts there were before the restart."""

    def reposted():
        again = [summary for replaces, summary in desktop.notify_calls()[before:] if replaces != 0]
        return "Log in to work again" in again and any(s.startswith(f"The login of {bob}") for s in again)

    wait_until(reposted, what="both notices posted again in place of the ones shown")
    assert desktop.displayed() == 2, "replaced, not stacked"


def clicked_into_a_login(tmp_path, idp, desktop, daemon, work):
    """A click on work's notice, as dunst reports one on the bus (`dunstctl action`): the
    browser login starts, the person logs in, and the notice is gone."""
    assert desktop.run("dunstctl", "action", "0").returncode == 0
    opened = tmp_path / "opened"
    start = wait_until(lambda: opened.exists() and opened.read_text().strip(), what="the login's page opened")
    browser = requests.Session()
    browser.cookies.update(idp.login_cookie("alice"))
    page = browser.get(start, timeout=30)
    assert page.status_code == 200, page.text
    wait_until(lambda: call(daemon, "io.sesame.Accounts.Get", {"account": work})["parameters"]["account"]["state"]
               == "active", what="work usable again")
    wait_until(lambda: desktop.displayed() == 0, what="work's notice gone")


def test_without_a_session_bus_it_says_so_once_and_exits_0(tmp_path, daemon):
    """An ssh login or a server has no session bus: nothing to post, and no failure for systemd
    to restart."""
    env = {key: value for key, value in os.environ.items() if key != "DBUS_SESSION_BUS_ADDRESS"}
    env["XDG_RUNTIME_DIR"] = str(tmp_path)  # no `bus` socket in it
    result = subprocess.run([str(SESAME_NOTIFY), "--socket", str(daemon.socket_path)], env=env,
                            capture_output=True, text=True, timeout=30)
    assert (result.returncode, result.stdout) == (0, ""), result
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("sesame-notify: no session bus"), result
