"""A local stand-in for Kakao Login (kauth.kakao.com and the user APIs of kapi.kakao.com) on one
127.0.0.1 server, written from Kakao's public documentation:

  [REST]   developers.kakao.com/docs/latest/en/kakaologin/rest-api (Get authorization code, Get
           tokens, Refresh tokens, Logout, Unlink, Retrieve token information, Retrieve user info)
  [ERRORS] developers.kakao.com/docs/latest/en/kakaologin/trouble-shooting and
           developers.kakao.com/docs/latest/en/rest-api/error-code (KOE codes; -401)
  [KOE322] devtalk.kakao.com/t/koe322-expired-or-invalid-refresh-token/126899 (Kakao's own answer:
           the refresh answer carries refresh_token only in the refresh token's last month, and
           the old refresh token expires then)
  [401]    devtalk.kakao.com/t/topic/134883 (the bodies of -401 answers)
  [OIDC]   devtalk.kakao.com/t/121888 and the Kakao SDK references (ID token, nonce; the SDKs
           send code_verifier to the token endpoint, so kauth takes PKCE)

Tests run it in-process and steer it with plain attributes and methods (see "Controls")."""

import base64
import hashlib
import time
import uuid
from urllib.parse import urlencode

from jwcrypto import jwk

from standin import Answer, Request, StandIn, bearer, new_token

DAY = 24 * 3600
# [KOE322]/[REST] "only when the refresh token has less than one month left". Kakao never says how
# long "a month" is; 30 days is this stand-in's reading.
MONTH = 30 * DAY
# [REST] token lifetimes for REST API logins: access token 6 hours, refresh token 2 months. Kakao's
# own examples show expires_in 21599/43199 and refresh_token_expires_in 5183999.
ACCESS_LIFETIME = 21599
REFRESH_LIFETIME = 5183999
# How long an authorization code lives is not documented; 10 minutes here.
CODE_LIFETIME = 600


def s256(verifier: str) -> str:
    """RFC 7636 §4.2: BASE64URL(SHA256(ASCII(code_verifier))) without padding."""
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()


def koe(status: int, error: str, description: str, code: str) -> Answer:
    """[ERRORS] kauth errors: `error`, `error_description` and Kakao's `error_code`."""
    return Answer(status, {"error": error, "error_description": description, "error_code": code})


def api_error(message: str, code: int = -401, status: int = 401) -> Answer:
    """[ERRORS]/[401] kapi errors: `{"msg": ..., "code": -401}` with HTTP 401 for a bad token."""
    return Answer(status, {"msg": message, "code": code})


class Kakao(StandIn):
    def __init__(self, client_id: str = "kakao-rest-api-key", redirect_uris=(), client_secret: str | None = None,
                 user_id: int = 4258514384, nickname: str = "Alice"):
        super().__init__()
        self.client_id = client_id
        self.redirect_uris = list(redirect_uris)  # registered in the console; exact match
        self.client_secret = client_secret  # None: the console's "Client Secret" switch is off
        self.user_id = user_id  # > 2^32, as real service user IDs are
        self.nickname = nickname
        self.app_id = 1234567
        # Controls
        self.oidc = False  # the console's "OpenID Connect" switch
        self.require_pkce = True  # Kakao makes PKCE optional; sesame always sends it
        self.access_lifetime = ACCESS_LIFETIME
        self.refresh_lifetime = REFRESH_LIFETIME  # of refresh tokens issued from now on
        self.koe322_status = 400  # the HTTP status of KOE322 is not documented
        self.profile_style = "account"  # "account": kakao_account.profile and properties; "properties" only
        self.id_token_fault: str | None = None  # "nonce", "aud" or "key": a bad ID token, for tests
        self.issuer = ""  # set by start(); tests put the same in the provider file
        # State: every token issued, by value
        self.codes: dict[str, dict] = {}
        self.access_tokens: dict[str, dict] = {}  # token -> {"expires": t, "alive": bool, "grant": id}
        self.refresh_tokens: dict[str, dict] = {}
        self.issued: list[str] = []  # every code, token and ID token, for leak checks
        self.routes.update({
            ("GET", "/oauth/authorize"): self._authorize,
            ("POST", "/oauth/token"): self._token,
            ("GET", "/.well-known/jwks.json"): lambda r: Answer(json=self.jwks()),
            ("GET", "/v2/user/me"): self._me,
            ("POST", "/v2/user/me"): self._me,
            ("POST", "/v1/user/logout"): lambda r: self._end(r, unlink=False),
            ("POST", "/v1/user/unlink"): lambda r: self._end(r, unlink=True),
            ("GET", "/v1/user/access_token_info"): self._token_info,
        })

    def start(self) -> "Kakao":
        super().start()
        self.issuer = self.issuer or self.base
        return self

    # Endpoints for a provider file's [endpoints] table

    def endpoints(self) -> dict[str, str]:
        return {"authorization": f"{self.base}/oauth/authorize", "token": f"{self.base}/oauth/token",
                "jwks": f"{self.base}/.well-known/jwks.json", "user": f"{self.base}/v2/user/me",
                "logout": f"{self.base}/v1/user/logout", "unlink": f"{self.base}/v1/user/unlink",
                "token_info": f"{self.base}/v1/user/access_token_info"}

    # Controls

    def expire_access_tokens(self, token: str | None = None):
        """The access token (every one when None) expires now; the refresh tokens stay."""
        with self.lock:
            for value, info in self.access_tokens.items():
                if token in (None, value):
                    info["expires"] = time.time() - 1

    def set_refresh_remaining(self, seconds: float, token: str | None = None):
        """What is left of the refresh token's life (every live one when None); 0 expires it."""
        with self.lock:
            for value, info in self.refresh_tokens.items():
                if token in (None, value) and info["alive"]:
                    info["expires"] = time.time() + seconds

    def count(self, path: str, method: str | None = None) -> int:
        return len(self.seen(path, method))

    def token_requests(self, grant_type: str) -> list[Request]:
        return [r for r in self.seen("/oauth/token", "POST") if r.form.get("grant_type") == grant_type]

    def live_access_tokens(self) -> list[str]:
        with self.lock:
            return [t for t, i in self.access_tokens.items() if i["alive"] and i["expires"] > time.time()]

    def live_refresh_tokens(self) -> list[str]:
        with self.lock:
            return [t for t, i in self.refresh_tokens.items() if i["alive"] and i["expires"] > time.time()]

    def latest_access_token(self) -> str:
        with self.lock:
            return list(self.access_tokens)[-1]

    # Get authorization code [REST]

    def _authorize(self, request: Request) -> Answer:
        query = request.query
        if query.get("client_id") != self.client_id:
            # [ERRORS] KOE101: a wrong app key. Kakao shows an error page; no redirect.
            return Answer(400, body=b"KOE101: invalid app key")
        redirect_uri = query.get("redirect_uri", "")
        if redirect_uri not in self.redirect_uris:
            # [ERRORS] KOE006: a Redirect URI not registered in the console; no redirect.
            return Answer(400, body=b"KOE006: unregistered redirect_uri")
        back = {"state": query["state"]} if "state" in query else {}
        if query.get("response_type") != "code":
            return Answer.redirect(f"{redirect_uri}?{urlencode({'error': 'unsupported_response_type', **back})}")
        challenge, method = query.get("code_challenge"), query.get("code_challenge_method")
        if self.require_pkce and (not challenge or method != "S256"):
            return Answer.redirect(f"{redirect_uri}?{urlencode({'error': 'invalid_request', **back})}")
        # [REST] scope: Kakao's page says consent items are comma-separated; sesame's contract says
        # space-separated. Both are read here.
        scopes = set(query.get("scope", "").replace(",", " ").split())
        code = new_token("KC")
        with self.lock:
            self.codes[code] = {"client_id": self.client_id, "redirect_uri": redirect_uri, "challenge": challenge,
                                "nonce": query.get("nonce"), "scopes": scopes, "expires": time.time() + CODE_LIFETIME}
            self.issued.append(code)
        # [REST] 302 to redirect_uri with code (and state when one was sent).
        return Answer.redirect(f"{redirect_uri}?{urlencode({'code': code, **back})}")

    # Get tokens / Refresh tokens [REST]

    def _client_error(self, form: dict) -> Answer | None:
        if form.get("client_id") != self.client_id:
            return koe(401, "invalid_client", f"Not exist client_id [{form.get('client_id', '')}]", "KOE101")
        # [REST] client_secret is required when the console's Client Secret is enabled; [ERRORS]
        # KOE010 "Bad client credentials". The form body carries it, never HTTP Basic.
        if self.client_secret is not None and form.get("client_secret") != self.client_secret:
            return koe(401, "invalid_client", "Bad client credentials", "KOE010")
        return None

    def _token(self, request: Request) -> Answer:
        form = request.form
        error = self._client_error(form)
        if error:
            return error
        if form.get("grant_type") == "authorization_code":
            return self._exchange(form)
        if form.get("grant_type") == "refresh_token":
            return self._refresh(form)
        return koe(400, "unsupported_grant_type", "unsupported grant_type", "KOE001")

    def _exchange(self, form: dict) -> Answer:
        with self.lock:
            code = self.codes.pop(form.get("code", ""), None)  # [REST] a code is good for one request
        if not code or code["expires"] < time.time():
            # [ERRORS]/KOE320: the real description echoes the code ("...not found for code=...").
            return koe(400, "invalid_grant", f"authorization code not found for code={form.get('code', '')}", "KOE320")
        if form.get("redirect_uri") != code["redirect_uri"]:
            return koe(400, "invalid_grant", "Redirect URI mismatch.", "KOE303")  # [ERRORS] KOE303
        if code["challenge"] and s256(form.get("code_verifier", "")) != code["challenge"]:
            # Kakao's error code for a failed PKCE check is not in the pages found; KOE320 (the code
            # is refused) is this stand-in's guess. The error itself is invalid_grant.
            return koe(400, "invalid_grant", "code_verifier does not match code_challenge", "KOE320")
        grant = {"id": uuid.uuid4().hex, "scopes": code["scopes"], "nonce": code["nonce"]}
        answer = self._issue(grant, nonce=code["nonce"])
        answer.update(self._new_refresh_token(grant))
        if code["scopes"]:
            answer["scope"] = " ".join(sorted(code["scopes"]))  # [REST] space-separated in answers
        return Answer(json=answer)

    def _refresh(self, form: dict) -> Answer:
        now = time.time()
        with self.lock:
            info = self.refresh_tokens.get(form.get("refresh_token", ""))
            if not info or not info["alive"] or info["expires"] <= now:
                return koe(self.koe322_status, "invalid_grant", "expired_or_invalid_refresh_token", "KOE322")
            grant = info["grant"]
            answer = self._issue(grant, nonce=None)
            # [KOE322]/[REST] a new refresh token (and refresh_token_expires_in) only when the old
            # one has less than a month left; the old one then expires. Otherwise both are absent.
            if info["expires"] - now < MONTH:
                info["alive"] = False
                answer.update(self._new_refresh_token(grant))
        return Answer(json=answer)

    def _issue(self, grant: dict, nonce: str | None) -> dict:
        token = new_token("KAT")
        with self.lock:
            self.access_tokens[token] = {"expires": time.time() + self.access_lifetime, "alive": True, "grant": grant}
            self.issued.append(token)
        answer = {"token_type": "bearer", "access_token": token, "expires_in": self.access_lifetime}
        # [OIDC] with OpenID Connect on, an ID token comes with the tokens when openid was consented
        # to; Kakao says to ask for openid in scope. Refreshes also bring one (no nonce in it: OIDC
        # Core §12.2; whether Kakao repeats the nonce there is not documented).
        if self.oidc and "openid" in grant["scopes"]:
            answer["id_token"] = self._id_token(nonce)
            with self.lock:
                self.issued.append(answer["id_token"])
        return answer

    def _new_refresh_token(self, grant: dict) -> dict:
        token = new_token("KRT")
        with self.lock:
            self.refresh_tokens[token] = {"expires": time.time() + self.refresh_lifetime, "alive": True, "grant": grant}
            self.issued.append(token)
        return {"refresh_token": token, "refresh_token_expires_in": self.refresh_lifetime}

    def _id_token(self, nonce: str | None) -> str:
        # [OIDC] payload: iss https://kauth.kakao.com (here: self.issuer), aud = app key, sub =
        # service user ID as a string, auth_time, nonce when sent, nickname.
        claims = {"iss": self.issuer, "aud": self.client_id, "sub": str(self.user_id),
                  "auth_time": int(time.time()), "nickname": self.nickname}
        if nonce is not None:
            claims["nonce"] = nonce
        fault = self.id_token_fault
        if fault == "nonce":
            claims["nonce"] = "not-the-nonce-sent"
        elif fault == "aud":
            claims["aud"] = "another-app-key"
        if fault != "key":
            return self.id_token(claims)
        signer = StandIn.__new__(StandIn)  # same kid, another key: the signature cannot verify
        signer.kid = self.kid
        signer.signing_key = jwk.JWK.generate(kty="RSA", size=2048, kid=self.kid, alg="RS256")
        return StandIn.id_token(signer, claims)

    # kapi: user info, logout, unlink, token information [REST]

    def _check(self, request: Request) -> tuple[dict | None, Answer | None]:
        token = bearer(request)
        with self.lock:
            info = self.access_tokens.get(token or "")
        if not info or not info["alive"]:
            return None, api_error("this access token does not exist")  # [401]
        if info["expires"] <= time.time():
            return None, api_error("this access token is already expired")  # [401]
        return info, None

    def _me(self, request: Request) -> Answer:
        info, error = self._check(request)
        if error:
            return error
        # [REST] Retrieve user info: `id` is a JSON number (Long); the nickname sits in
        # kakao_account.profile (newer apps) and/or properties (older apps).
        user = {"id": self.user_id, "connected_at": "2026-01-05T01:02:03Z",
                "properties": {"nickname": self.nickname}}
        if self.profile_style == "account":
            user["kakao_account"] = {"profile_nickname_needs_agreement": False,
                                     "profile": {"nickname": self.nickname, "is_default_nickname": False}}
        return Answer(json=user)

    def _end(self, request: Request, unlink: bool) -> Answer:
        info, error = self._check(request)
        if error:
            return error
        # [REST] Logout expires the user's access and refresh tokens; Unlink also disconnects the
        # user from the app, which ends every token issued to them. Both answer {"id": N}.
        with self.lock:
            for table in (self.access_tokens, self.refresh_tokens):
                for entry in table.values():
                    if unlink or entry["grant"] is info["grant"]:
                        entry["alive"] = False
        return Answer(json={"id": self.user_id})

    def _token_info(self, request: Request) -> Answer:
        info, error = self._check(request)
        if error:
            return error
        # [REST] Retrieve token information: id, expires_in (seconds left), app_id.
        return Answer(json={"id": self.user_id, "expires_in": int(info["expires"] - time.time()), "app_id": self.app_id})
