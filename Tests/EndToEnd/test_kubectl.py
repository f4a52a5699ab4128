"""kubectl uses a Sesame account through its exec plugin: `sesamectl token NAME --format
exec-credential` (the access token, or with --id-token the ID token an OpenID Connect API server
wants). The real kubectl talks to a local https server (kubectl sends credentials only over TLS,
so the test makes a certificate) that answers only the token it expects."""

import json
import shutil
import ssl
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from harness import SESAMECTL, import_from_idp, import_tokens, running, subject_of
# Access tokens that live a minute.
from test_any_provider import idp  # noqa: F401 (a fixture)
from test_oauth import get_token, oauth_daemon
from tls_server import make_certificates

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None,
                                reason="kubectl is not installed (Debian does not package it)")


@pytest.fixture
def daemon(tmp_path, idp):
    idp.reset_settings()
    with running(oauth_daemon(tmp_path, idp)) as instance:
        yield instance


@pytest.fixture
def api_server(tmp_path):
    """An https server on 127.0.0.1 answering GET /api only with `server.expected` as Bearer."""
    ca, cert, key = make_certificates(tmp_path / "tls", "good")

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            good = self.headers.get("Authorization") == f"Bearer {httpd.expected}"
            body = json.dumps({"kind": "APIVersions", "versions": ["v1"]} if good else
                              {"kind": "Status", "status": "Failure", "code": 401}).encode()
            httpd.answers.append(good)
            self.send_response(200 if good else 401)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.expected, httpd.answers, httpd.ca = None, [], ca
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield httpd
    httpd.shutdown()


def kubectl(tmp_path, daemon, server, account: str, *extra: str):
    config = tmp_path / "kubeconfig"
    args = ["token", account, "--format", "exec-credential", *extra, "--socket", str(daemon.socket_path)]
    config.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "t", "cluster": {"server": f"https://127.0.0.1:{server.server_address[1]}",
                                               "certificate-authority": str(server.ca)}}],
        "users": [{"name": "u", "user": {"exec": {"apiVersion": "client.authentication.k8s.io/v1",
                                                  "command": str(SESAMECTL), "args": args,
                                                  "interactiveMode": "Never"}}}],
        "contexts": [{"name": "c", "context": {"cluster": "t", "user": "u"}}]}))
    return subprocess.run(["kubectl", "--kubeconfig", str(config), "get", "--raw", "/api"], capture_output=True,
                          text=True, timeout=60, env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"})


def test_kubectl_gets_the_access_token_through_the_exec_plugin(tmp_path, daemon, idp, api_server):
    account, _ = import_from_idp(daemon, idp)
    api_server.expected = get_token(daemon, account["id"])
    result = kubectl(tmp_path, daemon, api_server, account["id"])
    assert result.returncode == 0 and json.loads(result.stdout)["kind"] == "APIVersions", result.stderr[-300:]
    assert api_server.answers and all(api_server.answers)
    leaked = api_server.expected in result.stdout + result.stderr
    assert not leaked, "the token reached kubectl's output"


def test_kubectl_gets_the_id_token_for_an_openid_connect_api_server(tmp_path, daemon, idp, api_server):
    account, tokens = import_from_idp(daemon, idp)
    api_server.expected = tokens["id_token"]
    result = kubectl(tmp_path, daemon, api_server, account["id"], "--id-token")
    assert result.returncode == 0 and json.loads(result.stdout)["kind"] == "APIVersions", result.stderr[-300:]
    assert api_server.answers and all(api_server.answers)
    said = result.stdout + result.stderr
    leaked = any(tokens[name] in said for name in ("access_token", "refresh_token", "id_token"))
    assert not leaked


def test_an_account_without_an_id_token_says_why(tmp_path, daemon, idp):
    tokens = idp.device_login()  # handed over without its ID token: sesamed asks userinfo whose it is
    id = import_tokens(daemon, provider="local", subject=subject_of(tokens["id_token"]),
                       access_token=tokens["access_token"], expires_in=tokens["expires_in"])["id"]
    result = subprocess.run([str(SESAMECTL), "token", id, "--id-token", "--socket", str(daemon.socket_path)],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 1 and "no ID token" in result.stderr, result.stderr
