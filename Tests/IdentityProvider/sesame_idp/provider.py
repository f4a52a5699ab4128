"""Where the test provider departs from django-oauth-toolkit 3.4.1 / oauthlib 3.3.1 as they come:
each change makes it answer as the RFCs, and the providers Sesame meets, do."""

import base64
import hashlib
import json
import time
from datetime import timedelta
from urllib.parse import unquote_plus, urlparse, urlsplit

from django.http import JsonResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.decorators import method_decorator
from django.views.decorators.debug import sensitive_post_parameters
from oauthlib.common import Request as OauthlibRequest
from oauthlib.oauth2.rfc6749.tokens import random_token_generator
from oauth2_provider import views
from oauth2_provider.models import get_access_token_model, get_application_model, set_token_value
from oauth2_provider.oauth2_validators import OAuth2Validator, is_valid_resource_uri
from oauth2_provider.settings import oauth2_settings

from . import registration
from .control import state
from .settings import DEVICE_GRANT

# RFC 8693 token exchange: the grant type, and the one token type taken and issued.
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"


class Validator(OAuth2Validator):
    def get_additional_claims(self):
        """The profile and email claims Sesame shows; DOT only hands out those the scopes allow."""
        return {
            "preferred_username": lambda request: request.user.username,
            "name": lambda request: request.user.get_full_name(),
            "email": lambda request: request.user.email,
        }

    def validate_bearer_token(self, token, scopes, request):
        """oauthlib's userinfo endpoint asks for an access token granted with openid (OpenID
        Connect Core §5.3.1: "The Access Token obtained from an OpenID Connect Authentication
        Request MUST be sent") and DOT answers others 401 invalid_token. With userinfo_any_token on,
        any valid (known, unexpired) access token does, as at a plain OAuth server's "who am I"
        endpoint. The request then counts as holding openid: oauthlib insists on it, and DOT
        hands out `sub` for it; the other claims still follow the token's scopes (§5.4)."""
        userinfo = urlparse(request.uri).path == reverse("oauth2_provider:user-info")
        if not (userinfo and state.setting("userinfo_any_token")):
            return super().validate_bearer_token(token, scopes, request)
        if not super().validate_bearer_token(token, [], request):
            return False
        if "openid" not in request.scopes:
            request.scopes = [*request.scopes, "openid"]
        return True

    def validate_scopes(self, client_id, scopes, client, request, *args, **kwargs):
        """RFC 6749 §3.3: the server "MAY fully or partially ignore the scope requested by the
        client", and then MUST name the scope it granted in the token answer (oauthlib always
        sends `scope`). The withhold_scopes setting names scopes granted to nobody. oauthlib asks
        here about the scopes of an authorization request (DOT stores the narrowed ones with the
        code) and of a device token request (DOT takes them from the device authorization, which
        checks none); a refresh keeps its grant's scopes (§6). Without openid, oauthlib's OpenID
        grants add no ID token, and DOT's userinfo refuses the access token. Nothing left to
        grant is invalid_scope (§4.1.2.1, §5.2)."""
        withheld = state.setting("withhold_scopes")
        if withheld:
            scopes = request.scopes = [scope for scope in scopes if scope not in withheld]
            if not scopes:
                return False
        return super().validate_scopes(client_id, scopes, client, request, *args, **kwargs)

    def save_bearer_token(self, token, request, *args, **kwargs):
        # oauthlib's device grant has no OpenID Connect part: it answers without an ID token even
        # when openid was granted. The token dict is sent as it stands after this call, and DOT
        # links the access token to an ID token found in it, so the ID token is added here, made
        # as oauthlib's OpenID grants make theirs. With the device_id_token setting off it is
        # left out, as RFC 8628 §3.5 has it: a plain RFC 6749 §5.1 answer (access and refresh
        # token, token_type, expires_in, scope); OpenID Connect Core defines no device grant.
        if request.grant_type == DEVICE_GRANT and "openid" in request.scopes and state.setting("device_id_token"):
            claims = {"aud": request.client_id, "iat": int(time.time()), "at_hash": at_hash(token["access_token"])}
            token["id_token"] = self.finalize_id_token(claims, token, None, request)
        super().save_bearer_token(token, request, *args, **kwargs)

    def authenticate_client(self, request, *args, **kwargs):
        """A registered client whose secret has expired (RFC 7591 §3.2.1,
        client_secret_expires_at) is refused as if the secret were wrong: invalid_client."""
        if not super().authenticate_client(request, *args, **kwargs):
            return False
        client = getattr(request, "client", None)
        return not registration.secret_expired(getattr(client, "client_id", None) or request.client_id)

    def refresh_id_token(self, request):
        """Whether oauthlib's OpenID refresh grant adds an ID token (it does when openid was
        granted). OpenID Connect Core §12.2: the refresh answer "might not contain an id_token";
        the refresh_id_token setting off leaves it out."""
        return state.setting("refresh_id_token")


def at_hash(access_token: str) -> str:
    """OpenID Connect Core §3.1.3.6: the left half of the token's SHA-256, base64url."""
    digest = hashlib.sha256(access_token.encode()).digest()
    return base64.urlsafe_b64encode(digest[:16]).decode().rstrip("=")


class DeviceAuthorizationView(views.DeviceAuthorizationView):
    """RFC 8628 §3.1 lets a confidential client authenticate with HTTP Basic alone; oauthlib still
    wants client_id in the body, so it is taken from the credentials (which are then checked)."""

    def post(self, request, *args, **kwargs):
        scheme, _, credentials = request.headers.get("Authorization", "").partition(" ")
        if "client_id" not in request.POST and scheme.lower() == "basic":
            try:
                client_id = unquote_plus(base64.b64decode(credentials).decode().partition(":")[0])
            except ValueError:  # not base64, or not UTF-8: oauthlib rejects the request
                client_id = None
            if client_id:
                request.POST = request.POST.copy()
                request.POST["client_id"] = client_id
        return super().post(request, *args, **kwargs)


class ExchangeRefused(Exception):
    """A token exchange answered with an RFC 6749 §5.2 error."""

    def __init__(self, error: str, description: str, status: int = 400):
        super().__init__(description)
        self.error, self.description, self.status = error, description, status


class TokenView(views.TokenView):
    """DOT's token endpoint, plus OAuth 2.0 Token Exchange (RFC 8693), which neither DOT nor
    oauthlib has: an access token of the user (any client's) is exchanged for a new access token
    of the calling client, with the same or fewer scopes (never openid: no ID token flow), bound
    to the audiences (client_ids of this server) and resources (absolute http(s) URIs) asked for.
    The new token is an ordinary DOT AccessToken, so introspection, userinfo and revocation see
    it; introspection shows its targets as `aud` (DOT answers the token's RFC 8707 `resource`
    list there). No refresh token. Every other grant goes to DOT unchanged."""

    @method_decorator(sensitive_post_parameters("subject_token", "actor_token", "client_secret"))
    def post(self, request, *args, **kwargs):
        if request.POST.get("grant_type") != TOKEN_EXCHANGE:
            return super().post(request, *args, **kwargs)
        headers = {"Cache-Control": "no-store", "Pragma": "no-cache"}  # RFC 6749 §5.1
        try:
            answer, status = self.exchange(request), 200
        except ExchangeRefused as refusal:
            answer, status = {"error": refusal.error, "error_description": refusal.description}, refusal.status
            if status == 401:
                # RFC 6749 §5.2: the scheme a client may authenticate with (DOT says Bearer here).
                headers["WWW-Authenticate"] = 'Basic realm="token"'
        return JsonResponse(answer, status=status, headers=headers)

    def exchange(self, request) -> dict:
        """RFC 8693 §2.1 request to §2.2.1 answer; ExchangeRefused for §2.2.2 errors. Error
        descriptions name no value the client sent, so never a token."""
        form = request.POST
        # RFC 6749 §3.2: parameters "MUST NOT be included more than once"; RFC 8693 §2.1 lets
        # audience and resource repeat.
        if any(len(values) > 1 for name, values in form.lists() if name not in ("audience", "resource")):
            raise ExchangeRefused("invalid_request", "a parameter other than audience or resource is repeated")
        oauth_request, client = self.authenticated_client(request)

        # RFC 6749 §3.1: "Parameters sent without a value MUST be treated as if they were omitted".
        def given(name: str) -> str | None:
            return form.get(name) or None

        subject_token = given("subject_token")
        if subject_token is None or given("subject_token_type") is None:
            raise ExchangeRefused("invalid_request", "subject_token and subject_token_type are required")
        if given("subject_token_type") != ACCESS_TOKEN_TYPE:
            raise ExchangeRefused("invalid_request", f"the only subject_token_type taken is {ACCESS_TOKEN_TYPE}")
        if given("requested_token_type") not in (None, ACCESS_TOKEN_TYPE):
            raise ExchangeRefused("invalid_request", f"the only requested_token_type issued is {ACCESS_TOKEN_TYPE}")
        if given("actor_token") is not None:
            raise ExchangeRefused("invalid_request", "delegation (actor_token) is not supported")
        if given("actor_token_type") is not None:  # §2.1: "MUST NOT be included otherwise"
            raise ExchangeRefused("invalid_request", "actor_token_type without actor_token")
        audiences = unique(value for value in form.getlist("audience") if value)
        resources = unique(value for value in form.getlist("resource") if value)
        # RFC 8707 §2: an absolute URI without fragment, else invalid_target (DOT's check also
        # wants a host and no user info); only http(s) here.
        if not all(urlsplit(uri).scheme.lower() in ("http", "https") and is_valid_resource_uri(uri) for uri in resources):
            raise ExchangeRefused("invalid_target", "resource must be an absolute http or https URI without fragment")

        # §2.2.2: a subject token "invalid for any reason" MUST be answered invalid_request.
        checksum = hashlib.sha256(subject_token.encode()).hexdigest()
        subject = get_access_token_model().objects.select_related("user").filter(token_checksum=checksum).first()
        if subject is None or subject.is_expired():
            raise ExchangeRefused("invalid_request", "subject_token is not an active access token")

        held = subject.scope.split()
        asked = unique((given("scope") or "").split()) or held  # none (or blanks): the subject's
        if not set(asked) <= set(held):
            raise ExchangeRefused("invalid_scope", "scope goes beyond the subject token's")
        granted = [scope for scope in asked if scope != "openid"]  # not an ID token flow
        if not granted:
            raise ExchangeRefused("invalid_scope", "no scope left to grant (openid is not granted by an exchange)")

        # §2.2.2: "unwilling or unable to issue a token for any target service" is invalid_target.
        known = set(get_application_model().objects.filter(client_id__in=audiences).values_list("client_id", flat=True))
        if not set(audiences) <= known:
            raise ExchangeRefused("invalid_target", "audience must be the client_id of a client of this server")
        # None asked for: the subject token's own targets, so an exchange never widens them.
        targets = unique([*audiences, *resources]) or list(subject.resource or [])

        lifetime = oauth2_settings.ACCESS_TOKEN_EXPIRE_SECONDS
        generate = oauth2_settings.ACCESS_TOKEN_GENERATOR or random_token_generator
        value = generate(oauth_request)
        token = get_access_token_model()(
            user=subject.user,
            application=client,
            scope=" ".join(granted),
            expires=timezone.now() + timedelta(seconds=lifetime),
            resource=targets,
        )
        set_token_value(token, value)
        token.save()
        return {
            "access_token": value,
            "issued_token_type": ACCESS_TOKEN_TYPE,
            "token_type": "Bearer",
            "expires_in": lifetime,
            "scope": token.scope,
        }

    def authenticated_client(self, request):
        """The calling client as DOT's token endpoint authenticates it (oauthlib's order, DOT's
        validator): a confidential client by HTTP Basic or client_id and client_secret in the form,
        a public one by client_id. Failure is invalid_client (401)."""
        core = self.get_oauthlib_core()
        oauth_request = OauthlibRequest(*core._extract_params(request))
        validator = core.server.request_validator
        if validator.client_authentication_required(oauth_request):
            authenticated = validator.authenticate_client(oauth_request)
        else:
            authenticated = validator.authenticate_client_id(oauth_request.client_id, oauth_request)
        client = oauth_request.client
        # A client_id in the form must name the client HTTP Basic authenticated.
        if not authenticated or client is None or request.POST.get("client_id", client.client_id) != client.client_id:
            raise ExchangeRefused("invalid_client", "client authentication failed", status=401)
        return oauth_request, client


def unique(values) -> list[str]:
    """values without repeats, in order."""
    return list(dict.fromkeys(values))


class DiscoveryView(views.ConnectDiscoveryInfoView):
    """DOT's OpenID discovery document, plus what DOT leaves out of it: it names revocation and
    introspection only in its RFC 8414 document and the device authorization endpoint nowhere.
    Real providers list them here, and Sesame finds its endpoints here."""

    def get(self, request, *args, **kwargs):
        document = json.loads(super().get(request, *args, **kwargs).content)
        document["registration_endpoint"] = request.build_absolute_uri(reverse("client-registration"))
        for key, view in [
            ("device_authorization_endpoint", "device-authorization"),
            ("revocation_endpoint", "revoke-token"),
            ("introspection_endpoint", "introspect"),
        ]:
            document[key] = self._get_endpoint_url(request, view, required=True)
        document["grant_types_supported"] = ["authorization_code", "refresh_token", DEVICE_GRANT, TOKEN_EXCHANGE]
        return metadata_response(document)


class MetadataView(views.OAuthServerMetadataView):
    """DOT's RFC 8414 document, plus the device authorization endpoint RFC 8628 §4 registers
    for it (DOT lists the device grant but not its endpoint) and the token exchange grant."""

    def get(self, request, *args, **kwargs):
        document = json.loads(super().get(request, *args, **kwargs).content)
        document["device_authorization_endpoint"] = request.build_absolute_uri(
            reverse("oauth2_provider:device-authorization")
        )
        document["registration_endpoint"] = request.build_absolute_uri(reverse("client-registration"))
        if TOKEN_EXCHANGE not in document.setdefault("grant_types_supported", []):
            document["grant_types_supported"].append(TOKEN_EXCHANGE)
        return metadata_response(document)


def metadata_response(document: dict) -> JsonResponse:
    """A metadata document as served, without the fields the discovery_omit setting names.
    OpenID Connect Discovery §3 requires only issuer, authorization_endpoint, token_endpoint,
    jwks_uri, response_types_supported, subject_types_supported and
    id_token_signing_alg_values_supported; RFC 8414 §2 only issuer, response_types_supported
    and the endpoints its grants use (jwks_uri is optional there: a server without ID tokens).
    Providers leave out more than DOT does (no device, revocation or userinfo endpoint), and
    anything may be omitted here, required fields too."""
    omitted = state.setting("discovery_omit")
    document = {key: value for key, value in document.items() if key not in omitted}
    return JsonResponse(document, headers={"Access-Control-Allow-Origin": "*"})
