"""Test-only control of the provider under /_test/: approve device logins, log a browser in,
switch behaviours on and off, inject faults, count what reached DOT, and look tokens up. JSON in and out, no CSRF and no
authentication: the server listens on 127.0.0.1 only and holds test users only."""

import base64
import dataclasses
import functools
import hashlib
import json
import logging
import re
import threading
import time
from collections import Counter
from urllib.parse import unquote_plus

from django.conf import settings
from django.contrib.auth import get_user_model, login
from django.core.exceptions import ObjectDoesNotExist
from django.http import HttpResponse, JsonResponse, QueryDict
from django.urls import path, reverse
from django.views.decorators.csrf import csrf_exempt
from jwcrypto import jwk, jwt
from oauth2_provider.models import (
    get_access_token_model,
    get_application_model,
    get_device_grant_model,
    get_refresh_token_model,
)
from oauth2_provider.settings import oauth2_settings
from oauth2_provider.utils import jwk_from_pem

ID_TOKEN_FAULTS = ("foreign_key", "wrong_audience", "wrong_issuer", "expired", "wrong_nonce", "alg_none")
log = logging.getLogger("sesame_idp")

# {{name}} in a canned answer's body or header values becomes what the request carried under that
# name, as providers that echo a rejected token in error_description do. Two braces cannot occur
# in JSON outside a string, so a JSON body never holds one by accident.
PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")
# Form fields of token (RFC 6749 §4.1.3, §6; RFC 8628 §3.4; RFC 7636 §4.5), revocation (RFC 7009
# §2.1) and userinfo (RFC 6750 §2.2) requests.
FORM_PLACEHOLDERS = (
    "grant_type", "refresh_token", "code", "code_verifier", "redirect_uri", "device_code", "scope",
    "token", "token_type_hint", "client_id", "client_secret", "access_token",
)


@dataclasses.dataclass
class Fault:
    """What the next `count` requests under path_prefix get instead of (or on top of) DOT's answer.

    With a status, the canned answer is sent after `delay` seconds and DOT never sees the request.
    Without one, DOT serves the request at once and its answer is held back `delay` seconds, as an
    answer lost on the way would be (a client that gave up has then lost, say, a rotated refresh
    token); `id_token` then alters the ID token in that answer.
    """

    path_prefix: str = "/o/token/"
    status: int | None = None
    body: str = ""
    content_type: str = "application/json"
    headers: dict[str, str] = dataclasses.field(default_factory=dict)
    delay: float = 0.0
    count: int = 1
    grant_type: str | None = None  # only token requests with this grant_type match
    id_token: str | None = None

    def __post_init__(self):
        # Placeholders in a body given as JSON are filled in escaped for a JSON string.
        self.json_body = not isinstance(self.body, str)
        if self.json_body:
            self.body = json.dumps(self.body)
        for text in (self.body, *self.headers.values()):
            for name in PLACEHOLDER.findall(text):
                if name not in FORM_PLACEHOLDERS:
                    raise ValueError(f"no placeholder {{{{{name}}}}}; known: {FORM_PLACEHOLDERS}")
        if self.count < 1:
            raise ValueError("count must be at least 1")
        if self.id_token is not None and (self.id_token not in ID_TOKEN_FAULTS or self.status is not None):
            raise ValueError(f"id_token must be one of {ID_TOKEN_FAULTS}, without a status")

    def matches(self, request_path: str, grant_type: str | None) -> bool:
        return request_path.startswith(self.path_prefix) and self.grant_type in (None, grant_type)

    def canned_answer(self, request) -> HttpResponse:
        """The answer given instead of DOT's, placeholders filled in from the request."""
        values = carried(request) if PLACEHOLDER.search(self.body + "".join(self.headers.values())) else {}

        def fill(text: str, escape=lambda value: value) -> str:
            return PLACEHOLDER.sub(lambda match: escape(values.get(match[1], "")), text)

        escape = (lambda value: json.dumps(value)[1:-1]) if self.json_body else (lambda value: value)
        response = HttpResponse(fill(self.body, escape), status=self.status, content_type=self.content_type)
        for name, value in self.headers.items():
            response[name] = fill(value)
        return response


def carried(request) -> dict[str, str]:
    """What a request carried, by placeholder name: its form fields, the client's credentials in
    HTTP Basic (RFC 6749 §2.3.1: form-encoded, then base64) and a Bearer token (RFC 6750 §2.1) as
    access_token. Names it did not carry are missing (and filled in as empty)."""
    values = {}
    if request.content_type == "application/x-www-form-urlencoded":
        form = QueryDict(request.body)
        values = {name: form[name] for name in FORM_PLACEHOLDERS if name in form}
    scheme, _, credentials = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() == "bearer":
        values["access_token"] = credentials.strip()
    elif scheme.lower() == "basic":
        try:
            client_id, _, client_secret = base64.b64decode(credentials.strip()).decode().partition(":")
        except ValueError:
            return values
        values["client_id"], values["client_secret"] = unquote_plus(client_id), unquote_plus(client_secret)
    return values


# Switches that make the provider behave as other conformant servers do (README.md, "Switches").
# provider.py reads them; POST /_test/settings changes them until DELETE restores these.
DEFAULT_SETTINGS = {
    # RFC 8628 §3.5 answers the device grant with a plain RFC 6749 §5.1 token response; OpenID
    # Connect Core defines no device grant. False: no ID token there, though openid was granted.
    "device_id_token": True,
    # OpenID Connect Core §12.2: a refresh answer "might not contain an id_token".
    "refresh_id_token": True,
    # RFC 6749 §3.3: scopes granted to nobody, left out of what is granted (e.g. ["openid"]: a
    # server that does no OpenID Connect, so no ID tokens at all).
    "withhold_scopes": [],
    # OpenID Connect Core §5.3 serves userinfo for access tokens granted with openid (DOT refuses
    # the others). True: any valid access token, as a plain OAuth server's "who am I" endpoint.
    "userinfo_any_token": False,
    # Discovery (OpenID Connect Discovery §3) and RFC 8414 §2 metadata make most fields optional:
    # these are left out of both documents (the endpoints themselves keep working).
    "discovery_omit": [],
    # RFC 7591 §3.2.1: seconds a registered confidential client's secret lasts (0: for ever);
    # an RFC 7592 read renews it once half its life has passed, and an expired one is refused.
    "registration_secret_lifetime": 0,
    # RFC 7591 §3.1: the initial access token a registration must bear ("": none needed).
    "registration_initial_token": "",
}


def checked_settings(current: dict, changes: dict) -> dict:
    """current with changes applied; a ValueError (answered 400) names what is wrong."""
    merged = dict(current)
    for key, value in changes.items():
        if key not in DEFAULT_SETTINGS:
            raise ValueError(f"unknown setting {key!r}; known: {sorted(DEFAULT_SETTINGS)}")
        default = DEFAULT_SETTINGS[key]
        if isinstance(default, bool) and not isinstance(value, bool):
            raise ValueError(f"{key} must be true or false")
        if isinstance(default, int) and not isinstance(default, bool) and not (
            isinstance(value, int) and not isinstance(value, bool) and value >= 0
        ):
            raise ValueError(f"{key} must be a whole number of seconds")
        if isinstance(default, str) and not isinstance(value, str):
            raise ValueError(f"{key} must be a string")
        if isinstance(default, list) and not (
            isinstance(value, list) and all(isinstance(item, str) for item in value)
        ):
            raise ValueError(f"{key} must be a list of strings")
        merged[key] = value
    return merged


class State:
    """Settings, faults waiting to happen and what was counted; shared by the server's threads."""

    def __init__(self):
        self.lock = threading.Lock()
        self.faults: list[Fault] = []
        self.settings = dict(DEFAULT_SETTINGS)
        self.reset_counters()

    def setting(self, key: str):
        with self.lock:
            return self.settings[key]

    def reset_counters(self):
        with self.lock:
            self.token_requests = Counter()
            self.revocations = 0
            self.device_authorizations = 0
            self.userinfo_requests = 0
            # DOT's answers to requests served under a fault without status, in arrival order.
            self.held_back: list[dict] = []

    def take_fault(self, request_path: str, grant_type: str | None) -> Fault | None:
        with self.lock:
            for fault in self.faults:
                if fault.matches(request_path, grant_type):
                    fault.count -= 1
                    if fault.count == 0:
                        self.faults.remove(fault)
                    return fault
        return None


state = State()


class FaultsAndCountersMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response
        self.token_path = reverse("oauth2_provider:token")
        self.revoke_path = reverse("oauth2_provider:revoke-token")
        self.device_path = reverse("oauth2_provider:device-authorization")
        self.userinfo_path = reverse("oauth2_provider:user-info")

    def __call__(self, request):
        if request.path.startswith("/_test/"):
            return self.get_response(request)
        grant_type = self.count(request)
        fault = state.take_fault(request.path, grant_type)
        if fault is None:
            return self.get_response(request)
        log.info("Fault for %s %s: %s", request.method, request.path, fault)
        if fault.status is not None:
            response = fault.canned_answer(request)
            time.sleep(fault.delay)
            return response
        response = self.get_response(request)
        if fault.id_token:
            response = alter_id_token(response, fault.id_token)
        # Recorded once DOT has served it, so that a test whose client gave up can wait for DOT
        # to have done its part (rotated a refresh token, revoked one) and see what was lost.
        record = {
            "path": request.path,
            "grant_type": grant_type,
            "status": response.status_code,
            "body": response.content.decode(errors="replace"),
            "released": False,
        }
        with state.lock:
            state.held_back.append(record)
        time.sleep(fault.delay)
        with state.lock:
            record["released"] = True
        return response

    def count(self, request) -> str | None:
        """Counts the request if it is one the tests ask about; returns its grant_type if it has one."""
        if request.path == self.userinfo_path:  # GET or POST (OpenID Connect Core §5.3.1)
            with state.lock:
                state.userinfo_requests += 1
            return None
        if request.method != "POST":
            return None
        grant_type = None
        if request.path == self.token_path:
            # Reading the body here leaves it cached for DOT, which parses it again.
            grant_type = QueryDict(request.body).get("grant_type", "")
        with state.lock:
            if grant_type is not None:
                state.token_requests[grant_type] += 1
            elif request.path == self.revoke_path:
                state.revocations += 1
            elif request.path == self.device_path:
                state.device_authorizations += 1
        return grant_type


def alter_id_token(response, mode: str):
    """Re-signs the ID token in a token response: with a key the JWKS does not have (keeping the
    real key's kid, so only the signature check can catch it), or for another client's audience."""
    try:
        payload = json.loads(response.content)
        header, claims = (json.loads(b64decode(part)) for part in payload["id_token"].split(".")[:2])
    except (ValueError, KeyError, TypeError):
        return response  # an error answer: nothing to alter
    key = jwk_from_pem(oauth2_settings.OIDC_RSA_PRIVATE_KEY)
    if mode == "wrong_audience":
        others = get_application_model().objects.exclude(client_id=claims["aud"])
        claims["aud"] = others.values_list("client_id", flat=True).first()
    elif mode == "wrong_issuer":
        claims["iss"] = "https://issuer.invalid/o"
    elif mode == "expired":
        claims["iat"], claims["exp"] = int(time.time()) - 7200, int(time.time()) - 3600
    elif mode == "wrong_nonce":
        claims["nonce"] = "not-the-nonce-of-this-login"
    elif mode == "foreign_key":
        key = foreign_key()
    if mode == "alg_none":
        # An unsigned token that claims everything is fine: the oldest trick against JWT libraries.
        def part(value):
            return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()
        payload["id_token"] = f"{part({**header, 'alg': 'none'})}.{part(claims)}."
    else:
        token = jwt.JWT(header=header, claims=claims)
        token.make_signed_token(key)
        payload["id_token"] = token.serialize()
    response.content = json.dumps(payload)
    return response


def b64decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@functools.cache
def foreign_key() -> jwk.JWK:
    return jwk.JWK.generate(kty="RSA", size=2048)


def endpoint(*methods):
    """A test endpoint: JSON body in (empty means {}), JSON out, bad input answered with 400."""

    def wrap(handler):
        @csrf_exempt
        def view(request):
            if request.method not in methods:
                return JsonResponse({"error": f"use {' or '.join(methods)}"}, status=405)
            try:
                data = json.loads(request.body or b"{}")
                return handler(request, data)
            except ObjectDoesNotExist as error:
                return JsonResponse({"error": str(error)}, status=404)
            except (ValueError, TypeError, KeyError) as error:
                return JsonResponse({"error": f"bad request: {error!r}"}, status=400)

        return view

    return wrap


def decide_device_grant(data, status):
    DeviceGrant = get_device_grant_model()
    grant = DeviceGrant.objects.get(user_code=data["user_code"], status=DeviceGrant.AUTHORIZATION_PENDING)
    grant.user = get_user_model().objects.get(username=data.get("username", "alice"))
    grant.status = status
    grant.save(update_fields=["user", "status"])
    return JsonResponse({"user_code": grant.user_code, "status": status})


@endpoint("POST")
def approve_device(request, data):
    return decide_device_grant(data, get_device_grant_model().AUTHORIZED)


@endpoint("POST")
def deny_device(request, data):
    return decide_device_grant(data, get_device_grant_model().DENIED)


@endpoint("POST")
def login_browser(request, data):
    """Logs the caller's session in; the Set-Cookie it answers with then opens /o/authorize/."""
    user = get_user_model().objects.get(username=data["username"])
    login(request, user, backend="django.contrib.auth.backends.ModelBackend")
    return JsonResponse({"cookies": {settings.SESSION_COOKIE_NAME: request.session.session_key}})


@endpoint("GET", "POST", "DELETE")
def switch_settings(request, data):
    """POST changes the settings it names (the rest stay), DELETE restores the defaults; all
    three answer the settings now in force."""
    with state.lock:
        if request.method == "POST":
            if not isinstance(data, dict):
                raise ValueError("send a JSON object")
            state.settings = checked_settings(state.settings, data)
        elif request.method == "DELETE":
            state.settings = dict(DEFAULT_SETTINGS)
        return JsonResponse(state.settings)


@endpoint("GET", "POST", "DELETE")
def faults(request, data):
    with state.lock:
        if request.method == "POST":
            state.faults.append(Fault(**data))
        elif request.method == "DELETE":
            state.faults.clear()
        return JsonResponse({"faults": [dataclasses.asdict(fault) for fault in state.faults]})


@endpoint("GET")
def counters(request, data):
    with state.lock:
        return JsonResponse(
            {
                "token_requests": dict(state.token_requests),
                "revocations": state.revocations,
                "device_authorizations": state.device_authorizations,
                "userinfo_requests": state.userinfo_requests,
                "held_back_served": len(state.held_back),
                "held_back_released": sum(record["released"] for record in state.held_back),
            }
        )


@endpoint("GET")
def held_back(request, data):
    with state.lock:
        return JsonResponse({"answers": [dict(record) for record in state.held_back]})


@endpoint("POST")
def reset_counters(request, data):
    state.reset_counters()
    return JsonResponse({})


@endpoint("POST")
def token_status(request, data):
    """Whether DOT would still honour a token: an access token until it expires, a refresh token
    until it is revoked or loses its access token (DOT refuses such an orphan)."""
    checksum = hashlib.sha256(data["token"].encode()).hexdigest()
    access = get_access_token_model().objects.filter(token_checksum=checksum).first()
    if access is not None:
        return JsonResponse({"active": not access.is_expired(), "kind": "access_token"})
    refresh = get_refresh_token_model().objects.filter(token_checksum=checksum)
    if refresh.exists():
        active = refresh.filter(revoked__isnull=True, access_token__isnull=False).exists()
        return JsonResponse({"active": active, "kind": "refresh_token"})
    return JsonResponse({"active": False, "kind": None})


urlpatterns = [
    path("device/approve", approve_device),
    path("device/deny", deny_device),
    path("login", login_browser),
    path("settings", switch_settings),
    path("faults", faults),
    path("counters", counters),
    path("counters/reset", reset_counters),
    path("held-back", held_back),
    path("token-status", token_status),
]
