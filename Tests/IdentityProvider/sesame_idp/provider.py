"""Where the test provider departs from django-oauth-toolkit 3.4.1 / oauthlib 3.3.1 as they come:
each change makes it answer as the RFCs, and the providers Sesame meets, do."""

import base64
import hashlib
import json
import time
from urllib.parse import unquote_plus, urlparse

from django.http import JsonResponse
from django.urls import reverse
from oauth2_provider import views
from oauth2_provider.oauth2_validators import OAuth2Validator

from .control import state
from .settings import DEVICE_GRANT


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


class DiscoveryView(views.ConnectDiscoveryInfoView):
    """DOT's OpenID discovery document, plus what DOT leaves out of it: it names revocation and
    introspection only in its RFC 8414 document and the device authorization endpoint nowhere.
    Real providers list them here, and Sesame finds its endpoints here."""

    def get(self, request, *args, **kwargs):
        document = json.loads(super().get(request, *args, **kwargs).content)
        for key, view in [
            ("device_authorization_endpoint", "device-authorization"),
            ("revocation_endpoint", "revoke-token"),
            ("introspection_endpoint", "introspect"),
        ]:
            document[key] = self._get_endpoint_url(request, view, required=True)
        document["grant_types_supported"] = ["authorization_code", "refresh_token", DEVICE_GRANT]
        return metadata_response(document)


class MetadataView(views.OAuthServerMetadataView):
    """DOT's RFC 8414 document, plus the device authorization endpoint RFC 8628 §4 registers
    for it (DOT lists the device grant but not its endpoint)."""

    def get(self, request, *args, **kwargs):
        document = json.loads(super().get(request, *args, **kwargs).content)
        document["device_authorization_endpoint"] = request.build_absolute_uri(
            reverse("oauth2_provider:device-authorization")
        )
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
