"""A stand-in for Sign in with Apple's REST endpoints, written from Apple's public documentation
(developer.apple.com/documentation/...):

- sign_in_with_apple "Generate and validate tokens" (POST /auth/token) and its Account &
  Organizational Data Sharing twin accountorganizationaldatasharing/generate-and-validate-tokens;
  "Creating a client secret" (accountorganizationaldatasharing/creating-a-client-secret).
- "Revoke tokens" (POST /auth/revoke), "Fetch Apple's public key" (GET /auth/keys).
- signinwithapplejs UserI/NameI: the `user` form field ({"name": {"firstName", "lastName"},
  "email"}), sent only the first time a person authorizes the app.
- The identity token's claims: email_verified and is_private_email "can either be a String
  ("true") or a Boolean (true)".

The newer Account & Organizational Data Sharing pages name /auth/oauth2/v2/token and
/auth/oauth2/v2/revoke; the Sign in with Apple REST API pages name /auth/token and /auth/revoke.
This stand-in serves the latter, as the contract does (which Apple serves today is uncertain).

There is no authorization endpoint here: Sesame never logs in with Apple itself. A test mints an
authorization code as if the person had signed in in an app (`mint_code`), then hands it over."""

import base64
import hashlib
import json
import time
import uuid

from jwcrypto import jwk, jws

from standin import Answer, Request, StandIn, new_token

AUDIENCE = "https://appleid.apple.com"
# "Creating a client secret": exp "must not be greater than 15777000 (6 months in seconds)" after
# iat. Apple does not document how much clock skew it allows on iat; this stand-in allows 60 s.
MAX_SECRET_LIFETIME = 15777000
CLOCK_SKEW = 60
CODE_LIFETIME = 300  # "The code is single-use only and valid for five minutes."


def invalid(error: str) -> Answer:
    """Apple's ErrorResponse: HTTP 400 with `error` only (no description), invalid_client included."""
    return Answer(400, {"error": error})


def at_hash(access_token: str) -> str:
    digest = hashlib.sha256(access_token.encode()).digest()
    return base64.urlsafe_b64encode(digest[:16]).rstrip(b"=").decode()


def unverified_parts(token: str) -> tuple[dict, dict]:
    """The JOSE header and claims of a compact JWS, without checking anything."""
    def part(text: str) -> dict:
        return json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
    header, payload, _ = token.split(".")
    return part(header), part(payload)


class AppleStandIn(StandIn):
    """Apple's token, revocation and keys endpoints for one Services ID (`client_id`) of one team,
    whose Sign in with Apple key is `key_id` (the test holds the private half, the .p8)."""

    def __init__(self, public_key_pem: bytes, team_id: str, key_id: str, client_id: str, issuer: str | None = None):
        super().__init__()
        self.public_key = jwk.JWK.from_pem(public_key_pem)
        self.team_id, self.key_id, self.client_id = team_id, key_id, client_id
        self.issuer = issuer  # defaults to the base URL once started
        # Apple publishes several keys at /auth/keys; the adapter must pick the one named by kid.
        self.decoy_key = jwk.JWK.generate(kty="RSA", size=2048, kid=uuid.uuid4().hex[:10], alg="RS256", use="sig")
        self.codes: dict[str, dict] = {}
        self.grants: dict[str, dict] = {}         # refresh token -> {"alive", "person"}
        self.access_tokens: dict[str, dict] = {}  # access token -> {"alive", "refresh"}
        self.client_secrets: list[dict] = []      # {"path", "header", "claims", "verdict"} per request
        self.revoked: list[dict] = []             # the forms of every revocation request
        self.answers: list[dict] = []
        self.routes.update({
            ("POST", "/auth/token"): self._token,
            ("POST", "/auth/revoke"): self._revoke,
            ("GET", "/auth/keys"): lambda request: Answer(json=self.jwks()),
        })

    def jwks(self) -> dict:
        return {"keys": [json.loads(self.decoy_key.export_public()), *super().jwks()["keys"]]}

    # Test controls

    def mint_code(self, sub: str, email: str, redirect_uri: str | None = None, claims_as: str = "string",
                  private_email: bool = False, nonce: str | None = None, lifetime: int = CODE_LIFETIME) -> str:
        """An authorization code as Apple gives an app after the person signed in. `claims_as`
        "string" or "boolean" chooses how email_verified and is_private_email are written in the
        ID tokens of this grant."""
        code = "c" + uuid.uuid4().hex + ".0.standin." + uuid.uuid4().hex[:22]
        with self.lock:
            self.codes[code] = {"sub": sub, "email": email, "redirect_uri": redirect_uri, "claims_as": claims_as,
                                "private_email": private_email, "nonce": nonce,
                                "expires": time.time() + lifetime, "used": False}
        return code

    def secrets(self) -> dict[str, str]:
        with self.lock:
            found = {f"code {i}": code for i, code in enumerate(self.codes)}
            for i, answer in enumerate(self.answers):
                for key in ("access_token", "refresh_token", "id_token"):
                    if key in answer:
                        found[f"answer {i} {key}"] = answer[key]
            for i, request in enumerate(self.requests):
                if "client_secret" in request.form:
                    found[f"client_secret {i}"] = request.form["client_secret"]
            return found

    def alive(self, token: str) -> bool:
        with self.lock:
            entry = self.grants.get(token) or self.access_tokens.get(token)
            return bool(entry and entry["alive"])

    # Client authentication ("Creating a client secret")

    def _client_problem(self, request: Request) -> str | None:
        """Why the client_secret JWT does not authenticate this client, or None when it does."""
        form, secret = request.form, request.form.get("client_secret", "")
        record = {"path": request.path, "header": None, "claims": None, "verdict": "ok"}
        with self.lock:
            self.client_secrets.append(record)
        try:
            record["header"], record["claims"] = unverified_parts(secret)
            verifier = jws.JWS()
            verifier.deserialize(secret)
            verifier.verify(self.public_key, alg="ES256")  # raw r||s signature (RFC 7518 §3.4)
        except Exception as error:  # malformed, not ES256, or signed by another key
            record["verdict"] = f"bad signature: {type(error).__name__}"
            return record["verdict"]
        header, claims, now = record["header"], record["claims"], time.time()
        # iat and exp are "the number of seconds since Epoch". Whether Apple accepts fractional
        # seconds is not documented (uncertain); RFC 7519 §2 NumericDate allows them, so this
        # stand-in does, and notes whether both were whole numbers.
        iat, exp = claims.get("iat"), claims.get("exp")
        dated = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (iat, exp))
        record["whole_seconds"] = dated and all(float(v).is_integer() for v in (iat, exp))
        checks = [
            (header.get("alg") == "ES256", "alg"), (header.get("kid") == self.key_id, "kid"),
            (claims.get("iss") == self.team_id, "iss"), (claims.get("aud") == AUDIENCE, "aud"),
            (claims.get("sub") == self.client_id, "sub"), (form.get("client_id") == self.client_id, "client_id"),
            (dated and iat <= now + CLOCK_SKEW, "iat"), (dated and exp > now, "exp"),
            (dated and exp - iat <= MAX_SECRET_LIFETIME, "exp - iat"),
        ]
        failed = [name for ok, name in checks if not ok]
        record["verdict"] = "ok" if not failed else "wrong " + ", ".join(failed)
        return None if not failed else record["verdict"]

    # Token endpoint ("Generate and validate tokens")

    def _token(self, request: Request) -> Answer:
        if self._client_problem(request):
            return invalid("invalid_client")
        grant = request.form.get("grant_type")
        if grant == "authorization_code":
            return self._redeem(request.form)
        if grant == "refresh_token":
            return self._refresh(request.form)
        return invalid("unsupported_grant_type")

    def _redeem(self, form: dict) -> Answer:
        with self.lock:
            issued = self.codes.get(form.get("code", ""))
            if not issued or issued["used"] or issued["expires"] < time.time():
                return invalid("invalid_grant")
            issued["used"] = True  # single-use, even when the rest of the request is wrong
            # "include the redirect_uri parameter only if the application provided a
            # redirect_uri in the initial authorization request": it must then match.
            if issued["redirect_uri"] is not None and form.get("redirect_uri") != issued["redirect_uri"]:
                return invalid("invalid_grant")
            access, refresh = new_token("a" + uuid.uuid4().hex[:6]), new_token("r" + uuid.uuid4().hex[:6])
            self.grants[refresh] = {"alive": True, "person": issued}
            self.access_tokens[access] = {"alive": True, "refresh": refresh}
            answer = {"access_token": access, "token_type": "Bearer", "expires_in": 3600,
                      "refresh_token": refresh, "id_token": self._identity(issued, access, with_email=True)}
            self.answers.append(answer)
        return Answer(json=answer)

    def _refresh(self, form: dict) -> Answer:
        with self.lock:
            grant = self.grants.get(form.get("refresh_token", ""))
            if not grant or not grant["alive"]:
                return invalid("invalid_grant")
            access = new_token("a" + uuid.uuid4().hex[:6])
            self.access_tokens[access] = {"alive": True, "refresh": form["refresh_token"]}
            # "Validate an existing refresh token": the answer has access_token, token_type,
            # expires_in and id_token, and no refresh_token.
            answer = {"access_token": access, "token_type": "Bearer", "expires_in": 3600,
                      "id_token": self._identity(grant["person"], access, with_email=False)}
            self.answers.append(answer)
        return Answer(json=answer)

    def _identity(self, person: dict, access: str, with_email: bool) -> str:
        """The identity token. Whether Apple repeats email in a refresh's token is not
        documented (uncertain); this stand-in leaves it out there."""
        now = int(time.time())
        claims = {"iss": self.issuer or self.base, "aud": self.client_id, "sub": person["sub"],
                  "at_hash": at_hash(access), "auth_time": now, "nonce_supported": True}
        if with_email:
            verified, private = True, person["private_email"]
            if person["claims_as"] == "string":
                verified, private = "true", "true" if private else "false"
            claims |= {"email": person["email"], "email_verified": verified, "is_private_email": private}
        if person["nonce"]:
            claims["nonce"] = person["nonce"]  # the app's nonce, which sesamed never saw
        return self.id_token(claims, lifetime=600)

    # Revocation ("Revoke tokens": client_id, client_secret, token, token_type_hint)

    def _revoke(self, request: Request) -> Answer:
        with self.lock:
            self.revoked.append(dict(request.form))
        if self._client_problem(request):
            return invalid("invalid_client")
        token = request.form.get("token", "")
        with self.lock:
            if token in self.grants:
                self.grants[token]["alive"] = False
                for access in self.access_tokens.values():
                    if access["refresh"] == token:
                        access["alive"] = False
            elif token in self.access_tokens:
                self.access_tokens[token]["alive"] = False
        # 200 for any token, known or not (the docs describe only the success answer).
        return Answer(200, body=b"")
