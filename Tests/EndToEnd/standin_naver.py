"""A local stand-in for Naver Login (nid.naver.com/oauth2.0 and openapi.naver.com/v1/nid/me) on
one 127.0.0.1 server, written from Naver's public documentation:

  [API]     developers.naver.com/docs/login/api/api.md (네이버 로그인 API 명세: 인증 요청, 접근 토큰
            발급/갱신/삭제 요청; one token endpoint, grant_type authorization_code | refresh_token |
            delete)
  [PROFILE] developers.naver.com/docs/login/profile/profile.md (회원 프로필 조회 API: resultcode,
            message, response.id; error codes 024/028)
  [ERRORS]  developers.naver.com/docs/common/openapiguide/errorcode.md (401 for a missing, wrong or
            expired access token)

What the pages show and every client library notes (e.g. arcticjs.dev/providers/naver): the token
answer's `expires_in` is a JSON string ("3600"), and token errors come back with HTTP 200 and
`error`/`error_description` in the body. Tests run it in-process and steer it with attributes."""

import time
import uuid
from urllib.parse import urlencode

from standin import Answer, Request, StandIn, bearer, new_token

# [API] an access token lives one hour (expires_in "3600"); a refresh token is not said to expire.
ACCESS_LIFETIME = 3600
CODE_LIFETIME = 600  # not documented; the code is good for one request [API]


def token_error(error: str, description: str) -> Answer:
    """[API] token endpoint errors: HTTP 200 with error and error_description."""
    return Answer(200, {"error": error, "error_description": description})


class Naver(StandIn):
    def __init__(self, client_id: str = "naver-client-id", client_secret: str = "naver-client-secret",
                 redirect_uris=(), user_id: str = "uKjX9aB3cD_-4eF5gH6iJ7kL8mN9oP0qR1sT2uV3wX4",
                 nickname: str = "minji", name: str = "Kim Minji"):
        super().__init__()
        self.client_id, self.client_secret = client_id, client_secret
        self.redirect_uris = list(redirect_uris)  # the registered Callback URL(s); exact match here
        self.user = {"id": user_id, "nickname": nickname, "name": name, "email": "minji@example.invalid"}
        # Controls
        self.access_lifetime = ACCESS_LIFETIME  # sent as a string, as Naver does
        self.token_fault: dict | None = None  # answered with HTTP 200 to the next code exchange
        self.profile_fault = False  # the profile API refuses every token (401, resultcode 024)
        self.delete_ends_nothing = False  # a delete answers "success" and the grant lives on
        # The error a dead refresh token is refused with: not documented; invalid_request is what
        # Naver answers in the field, invalid_grant what RFC 6749 §5.2 names.
        self.dead_refresh_error = "invalid_grant"
        # State
        self.codes: dict[str, dict] = {}
        self.access_tokens: dict[str, dict] = {}  # token -> {"expires": t, "alive": bool, "grant": {...}}
        self.refresh_tokens: dict[str, dict] = {}
        self.issued: list[str] = []  # every code and token, for leak checks
        self.routes.update({
            ("GET", "/oauth2.0/authorize"): self._authorize,
            ("GET", "/oauth2.0/token"): self._token,  # [API] the token endpoint takes GET and POST
            ("POST", "/oauth2.0/token"): self._token,
            ("GET", "/v1/nid/me"): self._profile,
        })

    def endpoints(self) -> dict[str, str]:
        return {"authorization": f"{self.base}/oauth2.0/authorize", "token": f"{self.base}/oauth2.0/token",
                "profile": f"{self.base}/v1/nid/me"}

    # Controls

    def expire_access_tokens(self):
        with self.lock:
            for info in self.access_tokens.values():
                info["expires"] = time.time() - 1

    def count(self, path: str, method: str | None = None) -> int:
        return len(self.seen(path, method))

    def token_requests(self, grant_type: str) -> list[Request]:
        return [r for r in self.seen("/oauth2.0/token") if self._params(r).get("grant_type") == grant_type]

    def live_access_tokens(self) -> list[str]:
        with self.lock:
            return [t for t, i in self.access_tokens.items() if i["alive"] and i["expires"] > time.time()]

    def live_refresh_tokens(self) -> list[str]:
        with self.lock:
            return [t for t, i in self.refresh_tokens.items() if i["alive"]]

    def issued_access_tokens(self) -> list[str]:
        with self.lock:
            return list(self.access_tokens)

    def latest_access_token(self) -> str:
        with self.lock:
            return list(self.access_tokens)[-1]

    def app_token_response(self) -> dict:
        """A token response exactly as Naver's token endpoint answers a code exchange, for the
        test to hand over as an app that logged in with Naver's own SDK would."""
        return self._new_grant()

    @staticmethod
    def _params(request: Request) -> dict:
        """[API] parameters come in the query string (Naver's examples) or a form body."""
        return {**request.query, **request.form}

    # 네이버 로그인 인증 요청 [API]

    def _authorize(self, request: Request) -> Answer:
        query = request.query
        redirect_uri = query.get("redirect_uri", "")
        if query.get("client_id") != self.client_id or redirect_uri not in self.redirect_uris:
            # Naver shows an error page for an unknown client or Callback URL; no redirect.
            return Answer(400, body=b"invalid client_id or redirect_uri")
        # [API] state is required (CSRF); what Naver shows without it is not documented: an error
        # page here.
        state = query.get("state")
        if not state:
            return Answer(400, body=b"state is required")
        if query.get("response_type") != "code":
            return Answer.redirect(f"{redirect_uri}?{urlencode({'state': state, 'error': 'unsupported_response_type'})}")
        code = new_token("NC")
        with self.lock:
            self.codes[code] = {"state": state, "expires": time.time() + CODE_LIFETIME}
            self.issued.append(code)
        # [API] success: CALLBACK?code=...&state=...
        return Answer.redirect(f"{redirect_uri}?{urlencode({'code': code, 'state': state})}")

    # 접근 토큰 발급/갱신/삭제 요청 [API]

    def _token(self, request: Request) -> Answer:
        params = self._params(request)
        # [API] client_id and client_secret are parameters of every grant type. Naver's exact
        # answer to a wrong pair is not in the pages found; this wording is seen in the field.
        if params.get("client_id") != self.client_id or params.get("client_secret") != self.client_secret:
            return token_error("invalid_request", "wrong client id / client secret pair")
        grant_type = params.get("grant_type")
        if grant_type == "authorization_code":
            return self._exchange(params)
        if grant_type == "refresh_token":
            return self._refresh(params)
        if grant_type == "delete":
            return self._delete(params)
        return token_error("unsupported_grant_type", "unsupported grant_type")

    def _exchange(self, params: dict) -> Answer:
        if self.token_fault is not None:
            fault, self.token_fault = self.token_fault, None
            return Answer(200, fault)
        with self.lock:
            code = self.codes.pop(params.get("code", ""), None)  # one request per code
        # [API] code and state are both required and must be the pair the redirect carried. The
        # description for a bad code ("no valid data in session") is what Naver answers in the
        # field; the documented error list only says invalid_request.
        if not code or code["expires"] < time.time() or params.get("state") != code["state"]:
            return token_error("invalid_request", "no valid data in session")
        return Answer(json=self._new_grant())

    def _new_grant(self) -> dict:
        """A new grant: its first access token and its refresh token, as the exchange answers."""
        grant = {"id": uuid.uuid4().hex}
        answer = self._issue(grant)
        token = new_token("NRT")
        with self.lock:
            self.refresh_tokens[token] = {"alive": True, "grant": grant}
            self.issued.append(token)
        return {**answer, "refresh_token": token}

    def _refresh(self, params: dict) -> Answer:
        with self.lock:
            info = self.refresh_tokens.get(params.get("refresh_token", ""))
            if not info or not info["alive"]:
                # Naver's answer to a dead refresh token is not documented (dead_refresh_error).
                return token_error(self.dead_refresh_error, "invalid refresh token")
            # [API] 갱신: access_token, token_type, expires_in; no new refresh token.
            return Answer(json=self._issue(info["grant"]))

    def _issue(self, grant: dict) -> dict:
        token = new_token("NAT")
        with self.lock:
            self.access_tokens[token] = {"expires": time.time() + self.access_lifetime, "alive": True, "grant": grant}
            self.issued.append(token)
        return {"access_token": token, "token_type": "bearer", "expires_in": str(self.access_lifetime)}

    def _delete(self, params: dict) -> Answer:
        # [API] 삭제: grant_type=delete, client_id, client_secret, access_token,
        # service_provider=NAVER. The answer echoes the access token with result "success", also
        # for tokens Naver does not know. Only a valid access token ends the grant: the page asks
        # for an expired one to be refreshed before deleting, so here an expired or unknown token
        # is answered "success" and nothing ends.
        if params.get("service_provider") != "NAVER":
            return token_error("invalid_request", "service_provider must be NAVER")
        token = params.get("access_token", "")
        with self.lock:
            info = self.access_tokens.get(token)
            if info and info["alive"] and info["expires"] > time.time() and not self.delete_ends_nothing:
                for table in (self.access_tokens, self.refresh_tokens):
                    for entry in table.values():
                        if entry["grant"] is info["grant"]:
                            entry["alive"] = False
        return Answer(json={"access_token": token, "result": "success"})

    # 회원 프로필 조회 [PROFILE]

    def _profile(self, request: Request) -> Answer:
        token = bearer(request)
        if token is None:
            return Answer(401, {"resultcode": "028", "message": "Authentication header not exists."})
        with self.lock:
            info = self.access_tokens.get(token)
        if self.profile_fault or not info or not info["alive"] or info["expires"] <= time.time():
            # [PROFILE]/[ERRORS] 401 with resultcode 024 for a wrong or expired access token.
            return Answer(401, {"resultcode": "024", "message": "Authentication failed (인증 실패하였습니다.)"})
        return Answer(json={"resultcode": "00", "message": "success", "response": dict(self.user)})
