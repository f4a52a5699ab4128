"""A git server over smart HTTP on 127.0.0.1 (git's own `git http-backend`, as CGI) that takes
a request only with a token it accepts, as the password of HTTP Basic or as a Bearer token; any
other request is answered 401, as a forge answers a stale or revoked token. It records which
tokens it was shown (to compare, never to print)."""

import base64
import os
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


class GitServer:
    def __init__(self, root: Path, accepts):
        """`root` holds the bare repositories; `accepts(token)` says whether a token is good."""
        self.root, self.accepts = root, accepts
        self.shown: list[str] = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                server._serve(self)

            def do_POST(self):
                server._serve(self)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()

    @staticmethod
    def token_of(header: str) -> str | None:
        scheme, _, value = header.partition(" ")
        if scheme.lower() == "bearer":
            return value.strip()
        if scheme.lower() == "basic":
            try:
                return base64.b64decode(value.strip()).decode().partition(":")[2]
            except ValueError:
                return None
        return None

    def _serve(self, request: BaseHTTPRequestHandler):
        token = self.token_of(request.headers.get("Authorization", ""))
        if token is not None:
            with self.lock:
                self.shown.append(token)
        if token is None or not self.accepts(token):
            request.send_response(401)
            request.send_header("WWW-Authenticate", 'Basic realm="git"')
            request.send_header("Content-Length", "0")
            request.end_headers()
            return
        self._backend(request)

    def _body(self, request: BaseHTTPRequestHandler) -> bytes:
        if request.headers.get("Transfer-Encoding", "").lower() == "chunked":
            body = b""
            while size := int(request.rfile.readline().strip(), 16):
                body += request.rfile.read(size)
                request.rfile.readline()
            request.rfile.readline()
            return body
        return request.rfile.read(int(request.headers.get("Content-Length", "0")))

    def _backend(self, request: BaseHTTPRequestHandler):
        path, _, query = request.path.partition("?")
        env = {**os.environ, "GIT_PROJECT_ROOT": str(self.root), "GIT_HTTP_EXPORT_ALL": "1", "PATH_INFO": path,
               "REQUEST_METHOD": request.command, "QUERY_STRING": query, "REMOTE_USER": "sesame-test",
               "REMOTE_ADDR": "127.0.0.1", "CONTENT_TYPE": request.headers.get("Content-Type", ""),
               "HTTP_CONTENT_ENCODING": request.headers.get("Content-Encoding", ""),
               "GIT_PROTOCOL": request.headers.get("Git-Protocol", "")}
        body = self._body(request) if request.command == "POST" else b""
        env["CONTENT_LENGTH"] = str(len(body))
        out = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True, timeout=60).stdout
        head, _, payload = out.partition(b"\r\n\r\n")
        if not payload and b"\n\n" in out:
            head, _, payload = out.partition(b"\n\n")
        headers = [line.split(":", 1) for line in head.decode().splitlines() if ":" in line]
        status = next((value.strip() for name, value in headers if name.lower() == "status"), "200 OK")
        request.send_response(int(status.split()[0]))
        for name, value in headers:
            if name.lower() != "status":
                request.send_header(name, value.strip())
        request.send_header("Content-Length", str(len(payload)))
        request.end_headers()
        request.wfile.write(payload)
