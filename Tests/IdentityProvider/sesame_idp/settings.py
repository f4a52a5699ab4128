"""Django settings for the test identity provider, built from what idp.py decides at start-up."""

from pathlib import Path

# The grant each test client uses (DOT gives an Application exactly one).
DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"


def build(*, state: Path, issuer: str, access_token_lifetime: int, secret_key: str, signing_key: str) -> dict:
    """Keyword arguments for django.conf.settings.configure()."""
    base = issuer.removesuffix("/o")
    return {
        "DEBUG": False,
        "SECRET_KEY": secret_key,
        "ALLOWED_HOSTS": ["127.0.0.1", "localhost"],
        "ROOT_URLCONF": "sesame_idp.urls",
        "INSTALLED_APPS": [
            "django.contrib.auth",
            "django.contrib.contenttypes",
            "django.contrib.sessions",
            "oauth2_provider",
        ],
        "MIDDLEWARE": [
            # First, so that faults and counters see every request, including ones DOT rejects.
            "sesame_idp.control.FaultsAndCountersMiddleware",
            "django.contrib.sessions.middleware.SessionMiddleware",
            "django.contrib.auth.middleware.AuthenticationMiddleware",
        ],
        # DOT renders a page for some authorization errors (e.g. an unregistered redirect URI).
        "TEMPLATES": [{"BACKEND": "django.template.backends.django.DjangoTemplates", "APP_DIRS": True}],
        "DATABASES": {
            "default": {
                "ENGINE": "django.db.backends.sqlite3",
                "NAME": str(state / "idp.sqlite3"),
                # The server is threaded: writers wait for each other instead of failing with
                # "database is locked", and transactions take the write lock up front.
                "OPTIONS": {
                    "timeout": 20,
                    "transaction_mode": "IMMEDIATE",
                    "init_command": "PRAGMA journal_mode=WAL;",
                },
            }
        },
        # A throwaway database: tables straight from the models (migrate --run-syncdb) start
        # in a fraction of the seconds that replaying some forty migrations takes.
        "MIGRATION_MODULES": {app: None for app in ("auth", "contenttypes", "sessions", "oauth2_provider")},
        "DEFAULT_AUTO_FIELD": "django.db.models.BigAutoField",
        "USE_TZ": True,
        # Test users only: a slow password hash would just slow start-up down.
        "PASSWORD_HASHERS": ["django.contrib.auth.hashers.MD5PasswordHasher"],
        # There is no login page; tests log in through POST /_test/login.
        "LOGIN_URL": "/_test/login",
        "OAUTH2_PROVIDER": {
            "OIDC_ENABLED": True,
            "OIDC_ISS_ENDPOINT": issuer,
            "OIDC_RSA_PRIVATE_KEY": signing_key,
            "OAUTH2_VALIDATOR_CLASS": "sesame_idp.provider.Validator",
            "SCOPES": {
                "openid": "OpenID Connect",
                "profile": "Name and username",
                "email": "Email address",
                # DOT issues refresh tokens whatever the scope; offline_access is accepted
                # because real providers want it and Sesame asks for it.
                "offline_access": "Stay logged in",
            },
            "ACCESS_TOKEN_EXPIRE_SECONDS": access_token_lifetime,
            # Every refresh returns a new refresh token and revokes the old one. With no grace
            # period a second use of the old one is refused (invalid_grant), and reuse protection
            # then revokes the whole family, the new refresh token included, as a stolen token would.
            "ROTATE_REFRESH_TOKEN": True,
            "REFRESH_TOKEN_GRACE_PERIOD_SECONDS": 0,
            "REFRESH_TOKEN_REUSE_PROTECTION": True,
            "PKCE_REQUIRED": True,
            "OAUTH_DEVICE_VERIFICATION_URI": f"{base}/o/device/",
            "OAUTH_DEVICE_VERIFICATION_URI_COMPLETE": f"{base}/o/device/?user_code={{user_code}}",
            "DEVICE_FLOW_INTERVAL": 1,  # RFC 8628 suggests 5 s; tests would wait for nothing
            # RFC 9700 gates (scheduled to default to True in DOT 4.0): refuse the implicit and
            # password grants, "plain" PKCE and access tokens in query strings.
            "COMPLIANT_BCP_RFC9700_IMPLICIT_GRANT": True,
            "COMPLIANT_BCP_RFC9700_PASSWORD_GRANT": True,
            "COMPLIANT_BCP_RFC9700_PKCE_METHOD": True,
            "COMPLIANT_BCP_RFC9700_ACCESS_TOKEN_TRANSPORT": True,
        },
        # With DEBUG off Django logs server errors nowhere by default. On stderr, with the faults
        # applied, so that a 500 in the log can be told from a real one.
        "LOGGING": {
            "version": 1,
            "disable_existing_loggers": False,
            "handlers": {"stderr": {"class": "logging.StreamHandler"}},
            "loggers": {
                "django.request": {"handlers": ["stderr"], "level": "ERROR"},
                "sesame_idp": {"handlers": ["stderr"], "level": "INFO"},
            },
        },
    }
