"""Dynamic client registration, which DOT lacks: RFC 7591 (register) and RFC 7592 (read and
delete), for native public clients and confidential ones, as the OpenID providers that offer it
(Keycloak, Authentik, node oidc-provider) answer. A client is a DOT Application like the seeded
ones; what DOT has no field for (the registration access token's hash, when the secret expires,
the metadata as registered) is kept in registrations.json beside the database."""

import hashlib
import json
import secrets
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

from django.conf import settings
from django.http import HttpResponse, JsonResponse
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt
from oauth2_provider.models import get_application_model

from .control import state
from .settings import DEVICE_GRANT

LOCK = threading.Lock()
REFRESH = "refresh_token"
# DOT gives an Application one grant: a client asking for both gets the code grant (it names
# redirect URIs), and the answer lists what it was given (RFC 7591 §3.2.1 lets the server
# replace requested metadata and requires it to say so).
GRANTS = ("authorization_code", DEVICE_GRANT)
AUTH_METHODS = ("none", "client_secret_basic", "client_secret_post")
LOOPBACK_HOSTS = ("127.0.0.1", "[::1]", "localhost")


def store_path() -> Path:
    return Path(settings.DATABASES["default"]["NAME"]).with_name("registrations.json")


def load() -> dict:
    path = store_path()
    return json.loads(path.read_text()) if path.exists() else {}


def save(registrations: dict):
    path = store_path()
    path.with_suffix(".tmp").write_text(json.dumps(registrations))
    path.with_suffix(".tmp").replace(path)


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def error(code: str, description: str, status: int = 400) -> JsonResponse:
    """RFC 7591 §3.2.2."""
    return JsonResponse({"error": code, "error_description": description}, status=status)


def unauthorized() -> JsonResponse:
    """RFC 7592 §2 (and RFC 6750 §3): a missing or wrong registration access token, or a client
    that no longer exists."""
    response = JsonResponse({"error": "invalid_token"}, status=401)
    response["WWW-Authenticate"] = 'Bearer error="invalid_token"'
    return response


def bearer(request) -> str:
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


def checked_metadata(metadata) -> tuple[dict, str]:
    """The client metadata as this server registers it, and the grant DOT gets; ValueError
    with (error code, description) for what it refuses."""
    if not isinstance(metadata, dict):
        raise ValueError("invalid_client_metadata", "the body must be a JSON object")
    grants = metadata.get("grant_types", ["authorization_code"])
    if not isinstance(grants, list) or not set(grants) <= {*GRANTS, REFRESH} or not set(grants) & set(GRANTS):
        raise ValueError("invalid_client_metadata", f"grant_types must name one of {sorted(GRANTS)}")
    grant = "authorization_code" if "authorization_code" in grants else DEVICE_GRANT
    redirects = metadata.get("redirect_uris", [])
    if not isinstance(redirects, list) or not all(isinstance(uri, str) for uri in redirects):
        raise ValueError("invalid_redirect_uri", "redirect_uris must be a list of strings")
    if grant == "authorization_code" and not redirects:
        raise ValueError("invalid_redirect_uri", "the authorization_code grant needs redirect_uris")
    if metadata.get("application_type", "web") == "native":
        # OpenID Connect Dynamic Client Registration 1.0 §2, RFC 8252 §7.3: loopback over http.
        for uri in redirects:
            parts = urlsplit(uri)
            if parts.scheme != "http" or parts.netloc.rsplit(":", 1)[0] not in LOOPBACK_HOSTS:
                raise ValueError("invalid_redirect_uri", f"a native client's redirect {uri} is not loopback")
    method = metadata.get("token_endpoint_auth_method", "client_secret_basic")
    if method not in AUTH_METHODS:
        raise ValueError("invalid_client_metadata", f"token_endpoint_auth_method must be one of {AUTH_METHODS}")
    registered = {key: value for key, value in metadata.items()
                  if key in ("client_name", "application_type", "scope", "response_types")}
    registered.update(redirect_uris=redirects, token_endpoint_auth_method=method,
                      grant_types=[grant] + ([REFRESH] if REFRESH in grants else []))
    return registered, grant


def issue_secret(entry: dict) -> str:
    """A new client secret, and when it expires (0: never, RFC 7591 §3.2.1)."""
    lifetime = state.setting("registration_secret_lifetime")
    entry["client_secret_expires_at"] = int(time.time()) + lifetime if lifetime else 0
    return secrets.token_urlsafe(32)


def answer(request, app, entry: dict, secret: str | None, token: str | None, status: int) -> JsonResponse:
    """RFC 7591 §3.2.1's answer (RFC 7592 §3 for a read)."""
    body = {"client_id": app.client_id, "client_id_issued_at": entry["issued_at"], **entry["metadata"],
            "registration_client_uri": request.build_absolute_uri(reverse("client-configuration",
                                                                          args=[app.client_id]))}
    if token:
        body["registration_access_token"] = token
    if entry["metadata"]["token_endpoint_auth_method"] != "none":
        body["client_secret_expires_at"] = entry["client_secret_expires_at"]
        if secret:
            body["client_secret"] = secret
    return JsonResponse(body, status=status, headers={"Cache-Control": "no-store", "Pragma": "no-cache"})


@csrf_exempt
def register(request):
    """POST {issuer}/register/: RFC 7591 §3. With the registration_initial_token setting, only a
    caller bearing that initial access token may register (§3.1)."""
    if request.method != "POST":
        return JsonResponse({"error": "use POST"}, status=405)
    initial = state.setting("registration_initial_token")
    if initial and not secrets.compare_digest(bearer(request), initial):
        return unauthorized()
    try:
        metadata, grant = checked_metadata(json.loads(request.body or b"null"))
    except json.JSONDecodeError:
        return error("invalid_client_metadata", "the body is not JSON")
    except ValueError as refused:
        return error(*refused.args)
    Application = get_application_model()
    public = metadata["token_endpoint_auth_method"] == "none"
    entry = {"issued_at": int(time.time()), "metadata": metadata}
    secret = None if public else issue_secret(entry)
    token = secrets.token_urlsafe(32)
    entry["token"] = digest(token)
    app = Application.objects.create(
        client_id="dyn-" + secrets.token_hex(8), name=metadata.get("client_name", "registered client")[:255],
        client_type=Application.CLIENT_PUBLIC if public else Application.CLIENT_CONFIDENTIAL,
        authorization_grant_type=(Application.GRANT_AUTHORIZATION_CODE if grant == "authorization_code"
                                  else Application.GRANT_DEVICE_CODE),
        redirect_uris=" ".join(metadata["redirect_uris"]), client_secret=secret or "", hash_client_secret=False,
        skip_authorization=True, algorithm=Application.RS256_ALGORITHM)
    with LOCK:
        registrations = load()
        registrations[app.client_id] = entry
        save(registrations)
    return answer(request, app, entry, secret, token, 201)


@csrf_exempt
def configuration(request, client_id: str):
    """{issuer}/register/CLIENT_ID: RFC 7592 §2.1 read (a confidential client's secret is
    renewed when it has expired, or with registration_secret_lifetime when half its life has
    passed) and §2.3 delete. Update (§2.2) is not offered: 405."""
    Application = get_application_model()
    with LOCK:
        registrations = load()
        entry = registrations.get(client_id)
        app = Application.objects.filter(client_id=client_id).first()
        if not entry or not app or not secrets.compare_digest(digest(bearer(request)), entry["token"]):
            return unauthorized()
        if request.method == "DELETE":
            app.delete()  # its tokens go with it
            del registrations[client_id]
            save(registrations)
            return HttpResponse(status=204)
        if request.method != "GET":
            return JsonResponse({"error": "use GET or DELETE"}, status=405, headers={"Allow": "GET, DELETE"})
        secret = None
        expires = entry.get("client_secret_expires_at", 0)
        lifetime = state.setting("registration_secret_lifetime")
        if expires and expires - time.time() < lifetime / 2:
            secret = issue_secret(entry)
            app.client_secret = secret
            app.save()
            save(registrations)
    return answer(request, app, entry, secret, None, 200)


def secret_expired(client_id: str) -> bool:
    """Whether a registered client's secret is past client_secret_expires_at: the token
    endpoint then refuses it as invalid_client (RFC 7591 §3.2.1)."""
    expires = load().get(client_id, {}).get("client_secret_expires_at", 0)
    return bool(expires) and time.time() >= expires
