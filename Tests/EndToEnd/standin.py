"""What every provider stand-in (standin_*.py) shares: a threaded HTTP server on 127.0.0.1 that
records each request, JSON and redirect answers, and an RSA key that signs ID tokens and is
published as a JWKS. Each stand-in is written from its provider's public documentation, not from
what sesamed happens to send."""

import json
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from jwcrypto import jwk, jwt


@dataclass
class Request:
    """One request as the stand-in saw it; `form` holds the body's fields (first value each)."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    form: dict[str, str] = field(default_factory=dict)
    body: bytes = b""


@dataclass
class Answer:
    """What a route returns: a status, a JSON body (or raw bytes), extra headers."""

    status: int = 200
    json: object = None
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)

    @staticmethod
    def redirect(location: str) -> "Answer":
        return Answer(302, headers={"Location": location})


class StandIn:
    """Subclasses register routes as {("GET"|"POST", path): handler(request) -> Answer}.
    Start with `start()`, stop with `stop()`; `base` is http://127.0.0.1:PORT."""

    def __init__(self):
        self.requests: list[Request] = []
        self.routes: dict[tuple[str, str], callable] = {}
        self.lock = threading.RLock()
        self.kid = uuid.uuid4().hex[:8]
        self.signing_key = jwk.JWK.generate(kty="RSA", size=2048, kid=self.kid, alg="RS256", use="sig")
        self.server: ThreadingHTTPServer | None = None
        self.base = ""

    # Life cycle

    def start(self) -> "StandIn":
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                stand_in._serve(self, "GET")

            def do_POST(self):
                stand_in._serve(self, "POST")

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self):
        if self.server:
            self.server.shutdown()
            self.server.server_close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    # Requests

    def seen(self, path: str, method: str | None = None) -> list[Request]:
        """The requests to `path` so far, oldest first."""
        with self.lock:
            return [r for r in self.requests if r.path == path and (method is None or r.method == method)]

    def _serve(self, handler: BaseHTTPRequestHandler, method: str):
        url = urlsplit(handler.path)
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length else b""
        form = {}
        if handler.headers.get("Content-Type", "").startswith("application/x-www-form-urlencoded"):
            form = {k: v[0] for k, v in parse_qs(body.decode(), keep_blank_values=True).items()}
        request = Request(method, url.path, {k: v[0] for k, v in parse_qs(url.query).items()},
                          {k.lower(): v for k, v in handler.headers.items()}, form, body)
        with self.lock:
            self.requests.append(request)
            route = self.routes.get((method, url.path))
        answer = route(request) if route else Answer(404, {"error": "not_found"})
        payload = json.dumps(answer.json).encode() if answer.json is not None else answer.body
        handler.send_response(answer.status)
        if answer.json is not None:
            handler.send_header("Content-Type", "application/json;charset=UTF-8")
        for name, value in answer.headers.items():
            handler.send_header(name, value)
        handler.send_header("Content-Length", str(len(payload)))
        handler.end_headers()
        handler.wfile.write(payload)

    # ID tokens

    def jwks(self) -> dict:
        return {"keys": [json.loads(self.signing_key.export_public())]}

    def id_token(self, claims: dict, lifetime: int = 3600) -> str:
        """An RS256 ID token with iat/exp filled in; `claims` carries iss, aud, sub, nonce, ..."""
        now = int(time.time())
        token = jwt.JWT(header={"alg": "RS256", "kid": self.kid, "typ": "JWT"},
                        claims={"iat": now, "exp": now + lifetime, **claims})
        token.make_signed_token(self.signing_key)
        return token.serialize()


def bearer(request: Request) -> str | None:
    """The access token an `Authorization: Bearer` header presents (RFC 6750 §2.1)."""
    value = request.headers.get("authorization", "")
    return value[7:] if value.lower().startswith("bearer ") else None


def new_token(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex}"
