"""Starts the test identity provider (Tests/IdentityProvider/idp.py) and drives its /_test/ controls."""

import json
import selectors
import signal
import subprocess
import sys
from pathlib import Path

import requests

from harness import wait_until

REPO = Path(__file__).resolve().parents[2]
IDP = REPO / "Tests" / "IdentityProvider" / "idp.py"
DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"
SCOPE = "openid profile email offline_access"


class IdentityProvider:
    """One idp.py process with its state in state_dir; its log is state_dir/idp.log."""

    def __init__(self, state_dir: Path, access_token_lifetime: int = 2, port: int = 0):
        self.state_dir = Path(state_dir)
        self.args = ["--port", str(port), "--access-token-lifetime", str(access_token_lifetime)]
        self.process: subprocess.Popen | None = None
        self.issuer = self.base = None
        self.clients: dict[str, dict] = {}
        self._endpoints: dict = {}

    def start(self, timeout: float = 30.0) -> "IdentityProvider":
        self.state_dir.mkdir(parents=True, exist_ok=True)
        with open(self.state_dir / "idp.log", "ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, str(IDP), "--state", str(self.state_dir), *self.args],
                stdout=subprocess.PIPE,
                stderr=log,
            )
        # Its one line on stdout says it is serving.
        with selectors.DefaultSelector() as selector:
            selector.register(self.process.stdout, selectors.EVENT_READ)
            if not selector.select(timeout):
                self.kill()
                raise AssertionError(f"idp.py printed nothing within {timeout}s:\n{self.log()}")
        line = self.process.stdout.readline()
        if not line:
            raise AssertionError(f"idp.py exited with {self.process.wait()}:\n{self.log()}")
        ready = json.loads(line)
        self.issuer, self.base, self.clients = ready["issuer"], ready["base"], ready["clients"]
        # Every endpoint, while the discovery_omit setting leaves nothing out.
        self._endpoints = self.discovery()
        return self

    def stop(self, timeout: float = 10.0) -> int:
        """SIGTERM, then its exit status (0 when it stopped cleanly)."""
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout)

    def kill(self):
        if self.process and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def log(self) -> str:
        return (self.state_dir / "idp.log").read_text(errors="replace")

    # The /_test/ controls

    def control(self, method: str, path: str, body: dict | None = None) -> dict:
        response = requests.request(method, f"{self.base}/_test/{path}", json=body, timeout=10)
        assert response.ok, f"{method} /_test/{path}: {response.status_code} {response.text}"
        return response.json()

    def approve(self, user_code: str, username: str = "alice"):
        self.control("POST", "device/approve", {"user_code": user_code, "username": username})

    def deny(self, user_code: str, username: str = "alice"):
        self.control("POST", "device/deny", {"user_code": user_code, "username": username})

    def login_cookie(self, username: str) -> dict[str, str]:
        """Session cookies of a browser logged in as username (for requests' cookies=)."""
        return self.control("POST", "login", {"username": username})["cookies"]

    def set_settings(self, **changes) -> dict:
        """Changes the switches named (README.md, "Switches"), e.g. set_settings(device_id_token=False);
        the others keep their values. Returns every setting now in force. They last until
        reset_settings() (or a restart), across tests: reset them in the test's fixture."""
        return self.control("POST", "settings", changes)

    def get_settings(self) -> dict:
        return self.control("GET", "settings")

    def reset_settings(self) -> dict:
        """Every switch back to its default; returns the defaults."""
        return self.control("DELETE", "settings")

    def fault(self, **fault) -> None:
        """Queues a fault; see Tests/IdentityProvider/README.md for its fields."""
        self.control("POST", "faults", fault)

    def clear_faults(self):
        self.control("DELETE", "faults")

    def counters(self) -> dict:
        return self.control("GET", "counters")

    def reset_counters(self):
        self.control("POST", "counters/reset")

    def held_back(self) -> list[dict]:
        """DOT's answers to requests served under a fault without status, oldest first:
        {"path", "grant_type" (token requests) or None, "status", "body" (text), "released"
        (the delay is over and the answer went out, or to a client that had gone)}."""
        return self.control("GET", "held-back")["answers"]

    def wait_for_held_back(self, count: int = 1, released: bool = False, timeout: float = 30.0) -> list[dict]:
        """Waits until DOT has served `count` held-back requests (and, with released, their
        answers went out); returns held_back() then."""
        answers: list[dict] = []

        def enough() -> bool:
            answers[:] = self.held_back()
            return sum(1 for answer in answers if answer["released"] or not released) >= count

        wait_until(enough, timeout, what=lambda: f"{count} held-back answers: {answers}")
        return answers

    def token_status(self, token: str) -> bool:
        return self.control("POST", "token-status", {"token": token})["active"]

    # Plain OAuth requests, as a client would make them

    def discovery(self) -> dict:
        response = requests.get(f"{self.issuer}/.well-known/openid-configuration", timeout=10)
        assert response.status_code == 200, response.text
        return response.json()

    def metadata(self) -> dict:
        """The RFC 8414 authorization server metadata (DOT serves it under the issuer)."""
        response = requests.get(f"{self.issuer}/.well-known/oauth-authorization-server", timeout=10)
        assert response.status_code == 200, response.text
        return response.json()

    def endpoint(self, name: str) -> str:
        """An endpoint named in discovery, e.g. endpoint("token"), as fetched at start (so the
        discovery_omit setting does not hide it)."""
        return self._endpoints[f"{name}_endpoint"]

    def post(self, endpoint: str, client: str, timeout: float = 10, **fields) -> requests.Response:
        """A form POST to an endpoint as client: HTTP Basic for a confidential client, client_id
        in the form for a public one (RFC 6749 §2.3)."""
        data = self.clients[client]
        auth = (data["client_id"], data["client_secret"]) if data["client_secret"] else None
        if auth is None:
            fields["client_id"] = data["client_id"]
        return requests.post(self.endpoint(endpoint), data=fields, auth=auth, timeout=timeout)

    def userinfo(self, access_token: str, timeout: float = 10) -> requests.Response:
        """GET userinfo with the access token as a Bearer token (RFC 6750 §2.1)."""
        headers = {"Authorization": f"Bearer {access_token}"}
        return requests.get(self.endpoint("userinfo"), headers=headers, timeout=timeout)

    def start_device_login(self, client: str = "device", scope: str = SCOPE) -> dict:
        response = self.post("device_authorization", client, scope=scope)
        assert response.status_code == 200, response.text
        return response.json()

    def poll(self, device_code: str, client: str = "device", **kwargs) -> requests.Response:
        return self.post("token", client, grant_type=DEVICE_GRANT, device_code=device_code, **kwargs)

    def device_login(self, client: str = "device", username: str = "alice") -> dict:
        """The tokens of a device login approved at once."""
        authorization = self.start_device_login(client)
        self.approve(authorization["user_code"], username)
        response = self.poll(authorization["device_code"], client)
        assert response.status_code == 200, response.text
        return response.json()

    def refresh(self, refresh_token: str, client: str = "device", **kwargs) -> requests.Response:
        return self.post("token", client, grant_type="refresh_token", refresh_token=refresh_token, **kwargs)

    def revoke(self, token: str, client: str = "device", **kwargs) -> requests.Response:
        """RFC 7009 revocation; kwargs: timeout, token_type_hint."""
        return self.post("revocation", client, token=token, **kwargs)
