"""A stand-in for Google's OAuth 2.0 and OpenID Connect endpoints, written from Google's public
documentation (developers.google.com/identity/...):

- openid-connect/openid-connect#discovery: the discovery document; `issuer` is this stand-in's base.
- protocols/oauth2/native-app ("installed apps"): loopback redirect, PKCE, `access_type=offline`,
  the code exchange with client_secret, refreshing, and revoking (#tokenrevoke).
- protocols/oauth2/limited-input-device ("TV and limited-input devices"): device/code answers with
  `verification_url` (not RFC 8628's verification_uri), polling with client_secret.

Tests play the person: the authorization endpoint approves at once (the signed-in person is
`self.person`), and device codes are approved or denied with `approve`/`deny`."""

import base64
import hashlib
import time
from urllib.parse import parse_qs, urlencode, urlsplit

from standin import Answer, Request, StandIn, bearer, new_token

DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"
LOOPBACK_HOSTS = {"127.0.0.1", "[::1]", "::1", "localhost"}
# native-app: Google answers scope with the long names of `email` and `profile`, e.g. "openid
# https://www.googleapis.com/auth/userinfo.email". The docs only say `scope` lists what was
# granted; the long names are what Google is seen to send (uncertain, not documented).
LONG_SCOPES = {"email": "https://www.googleapis.com/auth/userinfo.email",
               "profile": "https://www.googleapis.com/auth/userinfo.profile"}


def s256(verifier: str) -> str:
    """RFC 7636 §4.2, the only PKCE method the adapters use."""
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()


def oauth_error(status: int, error: str, description: str | None = None) -> Answer:
    body = {"error": error}
    if description:
        body["error_description"] = description
    return Answer(status, body)


# [DEVICE] limited-input-device "Allowed scopes": OpenID Connect's and a few of Drive's and YouTube's.
DEVICE_SCOPES = {"openid", "email", "profile", *(f"https://www.googleapis.com/auth/{name}" for name in (
    "userinfo.email", "userinfo.profile", "drive.appdata", "drive.file", "youtube", "youtube.readonly"))}


class GoogleStandIn(StandIn):
    """Google as a desktop ("installed app") client and a "TV and limited input" client see it."""

    AUTHORIZE, TOKEN, DEVICE = "/o/oauth2/v2/auth", "/token", "/device/code"
    REVOKE, USERINFO, JWKS = "/revoke", "/v1/userinfo", "/oauth2/v3/certs"

    def __init__(self, client_id: str = "sesame-tests.apps.googleusercontent.com",
                 client_secret: str = "GOCSPX-standin-secret", interval: int = 1):
        super().__init__()
        self.client_id, self.client_secret, self.interval = client_id, client_secret, interval
        self.person = {"sub": "110169484474386276334", "email": "alice.kim@gmail.com", "email_verified": True,
                       "name": "Alice Kim", "given_name": "Alice", "family_name": "Kim"}
        self.codes: dict[str, dict] = {}      # authorization code -> what it was issued for
        self.devices: dict[str, dict] = {}    # device_code -> state, user_code, script, polls
        self.refresh_tokens: dict[str, dict] = {}  # refresh token -> {"alive", "scope", "sub"}
        self.access_tokens: dict[str, dict] = {}   # access token -> {"alive", "refresh", "sub"}
        self.answers: list[dict] = []         # every token answer given, for leak checks
        self.routes.update({
            ("GET", "/.well-known/openid-configuration"): self._discovery,
            ("GET", self.AUTHORIZE): self._authorize,
            ("POST", self.TOKEN): self._token,
            ("POST", self.DEVICE): self._device_code,
            ("POST", self.REVOKE): self._revoke,
            ("GET", self.USERINFO): self._userinfo,
            ("GET", self.JWKS): lambda request: Answer(json=self.jwks()),
        })

    # Test controls

    def device(self, user_code: str) -> dict:
        with self.lock:
            return next(d for d in self.devices.values() if d["user_code"] == user_code)

    def approve(self, user_code: str, script=()):
        """The person enters `user_code` and allows access. `script` lists errors the next polls
        get first (e.g. ["authorization_pending", "slow_down"]), whatever the person did."""
        with self.lock:
            device = self.device(user_code)
            device["state"], device["script"] = "approved", list(script)

    def deny(self, user_code: str):
        with self.lock:
            self.device(user_code)["state"] = "denied"

    def revoke_grant(self, refresh_token: str):
        """The person removes the app's access in their Google Account."""
        with self.lock:
            self._kill(refresh_token)

    def alive(self, token: str) -> bool:
        with self.lock:
            entry = self.refresh_tokens.get(token) or self.access_tokens.get(token)
            return bool(entry and entry["alive"])

    def secrets(self) -> dict[str, str]:
        """Every secret value handed out, by a name safe to print."""
        with self.lock:
            found = {"client_secret": self.client_secret}
            for i, answer in enumerate(self.answers):
                for key in ("access_token", "refresh_token", "id_token"):
                    if key in answer:
                        found[f"answer {i} {key}"] = answer[key]
            found.update({f"code {i}": code for i, code in enumerate(self.codes)})
            found.update({f"device_code {i}": code for i, code in enumerate(self.devices)})
            return found

    # Discovery (openid-connect#discovery; the real document is at
    # https://accounts.google.com/.well-known/openid-configuration)

    def _discovery(self, request: Request) -> Answer:
        return Answer(json={
            "issuer": self.base,
            "authorization_endpoint": self.base + self.AUTHORIZE,
            "device_authorization_endpoint": self.base + self.DEVICE,
            "token_endpoint": self.base + self.TOKEN,
            "userinfo_endpoint": self.base + self.USERINFO,
            "revocation_endpoint": self.base + self.REVOKE,
            "jwks_uri": self.base + self.JWKS,
            "response_types_supported": ["code", "token", "id_token", "code token", "code id_token",
                                         "token id_token", "code token id_token", "none"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "scopes_supported": ["openid", "email", "profile"],
            "token_endpoint_auth_methods_supported": ["client_secret_post", "client_secret_basic"],
            "claims_supported": ["aud", "email", "email_verified", "exp", "family_name", "given_name",
                                 "iat", "iss", "name", "picture", "sub"],
            "code_challenge_methods_supported": ["plain", "S256"],
            "grant_types_supported": ["authorization_code", "refresh_token", DEVICE_GRANT,
                                      "urn:ietf:params:oauth:grant-type:jwt-bearer"],
        })

    # Authorization (native-app, "Step 2: Send a request to Google's OAuth 2.0 server")

    def _authorize(self, request: Request) -> Answer:
        q = request.query
        redirect = q.get("redirect_uri", "")
        parts = urlsplit(redirect)
        # native-app#redirect-uri_loopback: desktop clients may use any port on the loopback
        # address; Google shows an error page (no redirect) for anything else.
        if q.get("client_id") != self.client_id:
            return Answer(401, body=b"Error 401: invalid_client")
        if parts.scheme != "http" or parts.hostname not in LOOPBACK_HOSTS:
            return Answer(400, body=b"Error 400: redirect_uri_mismatch")
        if q.get("response_type") != "code" or "scope" not in q:
            return Answer.redirect(f"{redirect}?{urlencode({'error': 'invalid_request', 'state': q.get('state', '')})}")
        code = new_token("4/0A")
        scope = self._granted(q["scope"])
        with self.lock:
            self.codes[code] = {
                "redirect_uri": redirect, "challenge": q.get("code_challenge"),
                "method": q.get("code_challenge_method", "plain"), "nonce": q.get("nonce"), "scope": scope,
                # native-app#offline: a refresh token only when access_type=offline was asked for.
                # (Google gives one only at the first consent unless prompt=consent; not modelled.)
                "offline": q.get("access_type") == "offline", "expires": time.time() + 600, "used": False,
            }
        query = {"code": code, "scope": scope}
        if "state" in q:
            query["state"] = q["state"]
        return Answer.redirect(f"{redirect}{'&' if parts.query else '?'}{urlencode(query)}")

    # Token endpoint (native-app "Step 5", #offline refreshing; limited-input-device "Step 4")

    def _token(self, request: Request) -> Answer:
        form = request.form
        client_id, secret = form.get("client_id"), form.get("client_secret")
        basic = request.headers.get("authorization", "")
        if basic.lower().startswith("basic "):  # Google accepts either; the adapters send the body
            client_id, _, secret = base64.b64decode(basic[6:]).decode().partition(":")
        if client_id != self.client_id:
            return oauth_error(401, "invalid_client", "The OAuth client was not found.")
        if secret != self.client_secret:
            return oauth_error(401, "invalid_client", "Unauthorized")
        grant = form.get("grant_type")
        if grant == "authorization_code":
            return self._exchange(form)
        if grant == "refresh_token":
            return self._refresh(form)
        if grant == DEVICE_GRANT:
            return self._poll(form)
        return oauth_error(400, "unsupported_grant_type", "Invalid grant_type: " + str(grant))

    def _exchange(self, form: dict) -> Answer:
        with self.lock:
            issued = self.codes.get(form.get("code", ""))
            if not issued or issued["used"] or issued["expires"] < time.time():
                return oauth_error(400, "invalid_grant", "Malformed auth code.")
            issued["used"] = True
        if form.get("redirect_uri") != issued["redirect_uri"]:
            return oauth_error(400, "redirect_uri_mismatch", "Bad Request")
        if issued["challenge"]:
            verifier = form.get("code_verifier")
            if not verifier:
                return oauth_error(400, "invalid_grant", "Missing code verifier.")
            expected = s256(verifier) if issued["method"] == "S256" else verifier
            if expected != issued["challenge"]:
                return oauth_error(400, "invalid_grant", "Invalid code verifier.")
        return Answer(json=self._tokens(issued["scope"], issued["offline"], issued["nonce"]))

    def _refresh(self, form: dict) -> Answer:
        with self.lock:
            entry = self.refresh_tokens.get(form.get("refresh_token", ""))
            if not entry or not entry["alive"]:
                return oauth_error(400, "invalid_grant", "Token has been expired or revoked.")
            access = new_token("ya29.a0")
            self.access_tokens[access] = {"alive": True, "refresh": form["refresh_token"], "sub": entry["sub"]}
            # native-app#offline: the answer to a refresh carries a new access token and no new
            # refresh token. The documented example has no id_token either.
            answer = {"access_token": access, "expires_in": 3599, "scope": entry["scope"], "token_type": "Bearer"}
            self.answers.append(answer)
        return Answer(json=answer)

    def _tokens(self, scope: str, offline: bool, nonce: str | None) -> dict:
        with self.lock:
            access, refresh = new_token("ya29.a0"), new_token("1//0g") if offline else None
            self.access_tokens[access] = {"alive": True, "refresh": refresh, "sub": self.person["sub"]}
            answer = {"access_token": access, "expires_in": 3599, "scope": scope, "token_type": "Bearer"}
            if refresh:
                self.refresh_tokens[refresh] = {"alive": True, "scope": scope, "sub": self.person["sub"]}
                answer["refresh_token"] = refresh
            if "openid" in scope.split():
                claims = {"iss": self.base, "azp": self.client_id, "aud": self.client_id,
                          "sub": self.person["sub"], "at_hash": at_hash(access)}
                if LONG_SCOPES["email"] in scope:
                    claims |= {"email": self.person["email"], "email_verified": True}
                if LONG_SCOPES["profile"] in scope:
                    claims |= {k: self.person[k] for k in ("name", "given_name", "family_name")}
                if nonce:
                    claims["nonce"] = nonce
                answer["id_token"] = self.id_token(claims)
            self.answers.append(answer)
            return answer

    def _granted(self, requested: str) -> str:
        return " ".join(LONG_SCOPES.get(s, s) for s in requested.split())

    # Device flow (limited-input-device "Step 1" and "Step 4"/"Step 6")

    def _device_code(self, request: Request) -> Answer:
        form = request.form
        if form.get("client_id") != self.client_id:
            return oauth_error(401, "invalid_client", "The OAuth client was not found.")
        if not form.get("scope"):
            return oauth_error(400, "invalid_scope", "Missing required parameter: scope")
        # [DEVICE] "Allowed scopes": the device flow grants only these; any other fails the request.
        refused = [scope for scope in form["scope"].split() if scope not in DEVICE_SCOPES]
        if refused:
            return oauth_error(400, "invalid_scope", f"Invalid device flow scope: {refused[0]}")
        device_code = new_token("AH-1Ng")
        digits = hashlib.sha256(device_code.encode()).hexdigest().upper()
        user_code = f"{digits[:4]}-{digits[4:8]}"
        with self.lock:
            self.devices[device_code] = {"user_code": user_code, "state": "pending", "script": [],
                                         "scope": self._granted(form["scope"]), "expires": time.time() + 1800,
                                         "polls": [], "used": False}
        # The documented answer names `verification_url` (RFC 8628 says verification_uri).
        return Answer(json={"device_code": device_code, "user_code": user_code, "expires_in": 1800,
                            "interval": self.interval, "verification_url": self.base + "/device"})

    def _poll(self, form: dict) -> Answer:
        """limited-input-device "Step 6: Handle responses to polling requests". The error
        values come from the docs; the statuses (428 authorization_pending, 403 slow_down and
        access_denied, 400 expired_token) are what Google answers with and what the contract
        names. The docs list the error codes but are not explicit about every status (uncertain)."""
        with self.lock:
            device = self.devices.get(form.get("device_code", ""))
            if not device or device["used"]:
                return oauth_error(400, "invalid_grant", "Bad Request")
            if device["expires"] < time.time():
                device["state"] = "expired"
            outcome = device["script"].pop(0) if device["script"] else device["state"]
            device["polls"].append((time.monotonic(), outcome))
            if outcome in ("pending", "authorization_pending"):
                return oauth_error(428, "authorization_pending", "Precondition Required")
            if outcome == "slow_down":
                return oauth_error(403, "slow_down", "Forbidden")
            if outcome == "denied":
                return oauth_error(403, "access_denied", "Forbidden")
            if outcome == "expired":
                return oauth_error(400, "expired_token", "Bad Request")
            device["used"] = True
            # A device grant is always offline: the answer carries a refresh token.
            return Answer(json=self._tokens(device["scope"], True, None))

    # Revocation (native-app#tokenrevoke): token in the query or a form body; 200 on success,
    # 400 with an error code otherwise. Revoking an access token revokes its refresh token too.

    def _revoke(self, request: Request) -> Answer:
        token = request.form.get("token") or request.query.get("token")
        with self.lock:
            if not token or not self.alive(token):
                return oauth_error(400, "invalid_token", "Token expired or revoked")
            access = self.access_tokens.get(token)
            self._kill(access["refresh"] if access and access["refresh"] else token)
        return Answer(json={})

    def _kill(self, token: str):
        """Ends a grant: the refresh token and every access token issued with it."""
        if token in self.refresh_tokens:
            self.refresh_tokens[token]["alive"] = False
            for access in self.access_tokens.values():
                if access["refresh"] == token:
                    access["alive"] = False
        elif token in self.access_tokens:
            self.access_tokens[token]["alive"] = False

    # userinfo (openid-connect#obtaininguserprofileinformation)

    def _userinfo(self, request: Request) -> Answer:
        token = bearer(request)
        with self.lock:
            entry = self.access_tokens.get(token or "")
            if not entry or not entry["alive"]:
                return Answer(401, {"error": "invalid_request", "error_description": "Invalid Credentials"},
                              headers={"WWW-Authenticate": 'Bearer realm="https://accounts.google.com/", error="invalid_token"'})
        return Answer(json=dict(self.person))


def at_hash(access_token: str) -> str:
    """OpenID Connect Core §3.1.3.6: the left half of SHA-256 of the access token, base64url."""
    digest = hashlib.sha256(access_token.encode()).digest()
    return base64.urlsafe_b64encode(digest[:16]).rstrip(b"=").decode()


def query_of(url: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}
