#!/usr/bin/env python3
"""A local OAuth 2.0 / OpenID Connect provider for Sesame's end-to-end tests (django-oauth-toolkit).

    .venv/bin/python Tests/IdentityProvider/idp.py --state DIR [--port 0] [--access-token-lifetime 2]

Sets up DIR (database, signing key; kept, so a second start finds the same clients), serves on
127.0.0.1, prints one line of JSON (issuer, base URL, test clients) on stdout and serves until
SIGTERM or SIGINT, then exits 0. README.md beside this file tells the endpoints.
"""

import argparse
import json
import secrets
import signal
import sys
import threading
from pathlib import Path
from socketserver import ThreadingMixIn
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))

USERS = ("alice", "bob")
PASSWORD = "password"
LOOPBACK_CALLBACK = "http://127.0.0.1/callback"  # DOT accepts it on any port (RFC 8252 §7.3)


class Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True  # a request sleeping in a fault's delay must not hold up shutdown

    def handle_error(self, request, client_address):
        # A client that timed out (as fault tests make them) has hung up: not worth a traceback.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def read_or_create(path: Path, make) -> str:
    """The secret in path, made (readable by the owner only) if missing."""
    if not path.exists():
        path.touch(mode=0o600)
        path.write_text(make())
    return path.read_text()


def rsa_private_key_pem() -> str:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()


def seed() -> dict:
    """Creates or updates the users and one Application per flow; returns the clients' data."""
    from django.contrib.auth import get_user_model
    from oauth2_provider.models import get_application_model

    for username in USERS:
        user, created = get_user_model().objects.get_or_create(
            username=username, defaults={"email": f"{username}@example.test", "first_name": username.title()}
        )
        if created:
            user.set_password(PASSWORD)
            user.save()

    Application = get_application_model()
    specs = {
        "device": (Application.CLIENT_PUBLIC, Application.GRANT_DEVICE_CODE, []),
        "code": (Application.CLIENT_PUBLIC, Application.GRANT_AUTHORIZATION_CODE, [LOOPBACK_CALLBACK]),
        "confidential": (Application.CLIENT_CONFIDENTIAL, Application.GRANT_DEVICE_CODE, []),
    }
    clients = {}
    for name, (client_type, grant, redirect_uris) in specs.items():
        secret = secrets.token_urlsafe(32) if client_type == Application.CLIENT_CONFIDENTIAL else ""
        settings = {
            "name": f"Sesame tests ({name})",
            "client_type": client_type,
            "authorization_grant_type": grant,
            "redirect_uris": " ".join(redirect_uris),
            "skip_authorization": True,  # a logged-in browser goes straight back with a code
            "algorithm": Application.RS256_ALGORITHM,
        }
        app, _ = Application.objects.update_or_create(
            client_id=f"sesame-{name}",
            defaults=settings,
            # The secret is kept in clear so that a restart can print it again (a test secret).
            create_defaults={**settings, "client_secret": secret, "hash_client_secret": False},
        )
        clients[name] = {
            "client_id": app.client_id,
            "client_secret": app.client_secret or None,
            "grant_type": "authorization_code" if grant == Application.GRANT_AUTHORIZATION_CODE else grant,
        }
        if redirect_uris:
            clients[name]["redirect_uris"] = redirect_uris
    return clients


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--state", type=Path, required=True, help="directory for the database and keys")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: any free one)")
    parser.add_argument("--access-token-lifetime", type=int, default=2, metavar="SECONDS")
    args = parser.parse_args()

    state = args.state.resolve()
    if state == REPO or REPO in state.parents:
        parser.error(f"--state must be outside the repository ({REPO})")
    state.mkdir(parents=True, exist_ok=True)

    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())

    # Bound first: the issuer, which goes into the settings, names the port.
    server = Server(("127.0.0.1", args.port), WSGIRequestHandler)
    base = f"http://127.0.0.1:{server.server_port}"
    issuer = f"{base}/o"

    import django
    from django.conf import settings
    from django.core.management import call_command
    from django.core.wsgi import get_wsgi_application

    from sesame_idp.settings import build

    settings.configure(
        **build(
            state=state,
            issuer=issuer,
            access_token_lifetime=args.access_token_lifetime,
            secret_key=read_or_create(state / "django-secret-key", lambda: secrets.token_urlsafe(50)),
            signing_key=read_or_create(state / "oidc-signing-key.pem", rsa_private_key_pem),
        )
    )
    django.setup()
    call_command("migrate", run_syncdb=True, verbosity=0)
    clients = seed()

    server.set_app(get_wsgi_application())
    threading.Thread(target=server.serve_forever, name="http", daemon=True).start()
    print(json.dumps({"issuer": issuer, "base": base, "clients": clients}), flush=True)

    stop.wait()
    server.shutdown()
    server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
