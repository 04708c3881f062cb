"""Django settings for Rollout Sentinel; every value comes from ``config.load``."""

import os
from pathlib import Path

from notifications import config as notify_config
from sentinel_site import config

BASE_DIR = Path(__file__).resolve().parent.parent
SENTINEL = config.load(os.environ, BASE_DIR)
# Notification channels (docs/notifications.md): SENTINEL_NOTIFY_CONFIG, checked here so a bad file
# stops start-up with one line.
SENTINEL_NOTIFY = notify_config.load(os.environ)

SECRET_KEY = SENTINEL.secret_key
DEBUG = SENTINEL.debug
ALLOWED_HOSTS = list(SENTINEL.allowed_hosts)

INSTALLED_APPS = [
    # Django's admin with the product's site: overview first, product before framework.
    "sentinel_site.apps.SentinelAdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "django_q",
    "analyses",
    "accounts",
    "notifications",
    "sentinel_operator",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # 413 for bodies announced over DATA_UPLOAD_MAX_MEMORY_SIZE, before anything reads them.
    "sentinel_site.limits.BodySizeLimitMiddleware",
    # Serves the admin's and the API docs' static files from gunicorn, so the UI needs no CDN
    # and no separate web server.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # Single sign-on from a trusted proxy's header; does nothing unless that header is named.
    "accounts.sso.ProxyUserMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

# Larger bodies are refused with 413 before any parsing (docs/security.md#abuse-limits: 1 MiB).
DATA_UPLOAD_MAX_MEMORY_SIZE = 1024 * 1024

ROOT_URLCONF = "sentinel_site.urls"
WSGI_APPLICATION = "sentinel_site.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        # admin/base_site.html: Sentinel's stylesheet on every admin page.
        "DIRS": [BASE_DIR / "sentinel_site" / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {"default": SENTINEL.database}
# Persistent connections in every process (docs/performance.md): django-q2 calls
# close_old_connections() around every task and every ORM-broker call, which with the default
# CONN_MAX_AGE=0 opened a new SQLite connection (PRAGMAs, ~30 SQL functions) each time, a
# quarter of the pusher's and the dispatcher's CPU. The health check makes a kept connection
# that died (a PostgreSQL restart) reconnect instead of failing the next task.
DATABASES["default"].setdefault("CONN_MAX_AGE", 600)
DATABASES["default"].setdefault("CONN_HEALTH_CHECKS", True)
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    Path(DATABASES["default"]["NAME"]).parent.mkdir(parents=True, exist_ok=True)

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "var" / "static"
# Serve straight from the apps' static folders too, so `make run` needs no collectstatic step;
# the container image runs collectstatic at build time.
WHITENOISE_USE_FINDERS = True

# django-q2: the ORM broker by default (no extra service); Redis when SENTINEL_BROKER_URL says so.
# The time limit and the redelivery follow the dispatch claim (docs/operator.md#claims): a task
# is killed after half the claim (at most 60 s), and the ORM broker delivers a task again (its
# worker died) only once the claim has run out, when the task starts none of its members.
Q_CLUSTER = {
    "name": "sentinel",
    "workers": SENTINEL.q_workers,
    "timeout": SENTINEL.task_time_limit,
    "retry": SENTINEL.claim_timeout,
    "max_attempts": 1,
    "catch_up": False,
    "ack_failures": True,
    # No pruning pass over the stored successes: it loads every row, and their pickled fields
    # are a way in for whoever can write the table (the web app can: docs/security.md). The
    # operator's tasks store no success anyway (save=False).
    "save_limit": 0,
    # Off: a Schedule row names any function to run, and the web app can write the table.
    # sentinel_operator.periodic queues the resync and the pruning instead.
    "scheduler": False,
    "poll": 0.2,
    "orm": "default",
}
if SENTINEL.broker_url.startswith(("redis://", "rediss://")):
    Q_CLUSTER.pop("orm")
    Q_CLUSTER["redis"] = SENTINEL.broker_url

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": "INFO"},
}

# --- REST API (analyses/api; docs/api.md) ---------------------------------------------------
# Kubeconfig the web app writes resources with (analyses.services.kube_client); None means the
# kubernetes client's own discovery: $KUBECONFIG, ~/.kube/config, then the in-cluster config.
SENTINEL_KUBECONFIG: str | None = None

# Swagger UI assets served from this package's static files instead of a CDN.
INSTALLED_APPS += ["drf_spectacular_sidecar"]

REST_FRAMEWORK = {
    # Token first: DRF takes the 401 challenge (WWW-Authenticate) from the first class.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "analyses.api.authentication.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    # Views narrow this to model permissions; anything unlisted still needs a login.
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # JSON in and out only: errors stay JSON even for a browser.
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    # JSON that is too deep or too large is a 400 / 413, never a 500 (analyses/api/parsers.py).
    "DEFAULT_PARSER_CLASSES": ["analyses.api.parsers.BoundedJSONParser"],
    # evaluate/ per user; failed token authentications per client address (429, Retry-After).
    "DEFAULT_THROTTLE_RATES": {"evaluate": "30/min", "token_failure": "60/min"},
    # DRF's own X-Forwarded-For reading stays off (its default believes the whole header); the
    # throttles tell clients apart by accounts.client_address (SENTINEL_TRUSTED_PROXIES).
    "NUM_PROXIES": 0,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    # Maps service errors to 400/409/502/503 and adds a stable "code" to error bodies.
    "EXCEPTION_HANDLER": "analyses.api.exceptions.exception_handler",
    "TEST_REQUEST_DEFAULT_FORMAT": "json",
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Rollout Sentinel API",
    "DESCRIPTION": (
        "RolloutAnalysis resources in the custom resource's shape, and their evaluation "
        "history. Reads come from the mirror of the cluster; writes go to the cluster first, "
        "with the resourceVersion as precondition, and reach the database only from the API "
        "server's answer. Authenticate with `Authorization: Token <token>` (or `Bearer`; "
        "`python manage.py create_api_token USERNAME` prints one) or a browser session."
    ),
    "VERSION": "v1",
    "SERVE_INCLUDE_SCHEMA": False,
    # The schema and its docs page need a login like every endpoint (401 otherwise).
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    # Separate request and response components, so status is absent from request bodies.
    "COMPONENT_SPLIT_REQUEST": True,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    # No badge fetched from validator.swagger.io: the page talks to this server only. No deep
    # links: Swagger UI puts each one inside its operation's toggle button, a link in a button
    # that keyboards and screen readers cannot tell apart; no syntax colours, whose dark theme
    # writes numbers at 3.45:1 (docs/api.md, the docs page).
    "SWAGGER_UI_SETTINGS": {
        "deepLinking": False,
        "syntaxHighlight": False,
        "validatorUrl": None,
    },
    # One name for the outcome choices shared by evaluations and metric results.
    "ENUM_NAME_OVERRIDES": {"OutcomeEnum": "analyses.models.OUTCOME_CHOICES"},
}
# --- end REST API ---------------------------------------------------------------------------

# --- Who may do what, where (docs/security.md; accounts/access.py, accounts/sso.py) ---------
# Only these namespaces exist for the API, the admin and the services; () means all.
SENTINEL_NAMESPACES: tuple[str, ...] = SENTINEL.namespaces
# "django": NamespaceGrant rows; "kubernetes": a SubjectAccessReview per question.
SENTINEL_AUTHZ = SENTINEL.authz
# How long one SubjectAccessReview answer is reused for the same user and question.
SENTINEL_AUTHZ_CACHE_SECONDS = 5.0
SENTINEL_REMOTE_USER_HEADER = SENTINEL.remote_user_header
SENTINEL_REMOTE_GROUPS_HEADER = SENTINEL.remote_groups_header
# The proxies in front (accounts.client_address): where the SSO header may come from, and whose
# X-Forwarded-For hops name the client the lockouts count.
SENTINEL_TRUSTED_PROXIES: tuple[str, ...] = SENTINEL.trusted_proxies
SENTINEL_METRICS_TOKEN = SENTINEL.metrics_token
AUTHENTICATION_BACKENDS = ["django.contrib.auth.backends.ModelBackend"]
if SENTINEL_REMOTE_USER_HEADER:
    # Users named by the proxy are created on first sight, without a usable password.
    AUTHENTICATION_BACKENDS.insert(0, "accounts.sso.ProxyUserBackend")

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": f"django.contrib.auth.password_validation.{name}"}
    for name in (
        "UserAttributeSimilarityValidator",
        "MinimumLengthValidator",
        "CommonPasswordValidator",
        "NumericPasswordValidator",
    )
]
# Failed admin logins allowed per username and per client address within the window.
SENTINEL_LOGIN_ATTEMPTS = 5
SENTINEL_LOGIN_WINDOW_SECONDS = 300

# HTTPS: TLS usually ends at the proxy in front; these make Django trust and enforce it.
SESSION_COOKIE_SECURE = SENTINEL.secure_cookies
CSRF_COOKIE_SECURE = SENTINEL.secure_cookies
SECURE_HSTS_SECONDS = SENTINEL.hsts_seconds
SECURE_HSTS_INCLUDE_SUBDOMAINS = bool(SENTINEL.hsts_seconds)
SECURE_HSTS_PRELOAD = bool(SENTINEL.hsts_seconds)
SECURE_SSL_REDIRECT = SENTINEL.secure_ssl_redirect
SECURE_PROXY_SSL_HEADER = SENTINEL.secure_proxy_ssl_header
CSRF_TRUSTED_ORIGINS = list(SENTINEL.csrf_trusted_origins)
X_FRAME_OPTIONS = "DENY"

# Throttle state (login failures, DRF throttles) in process memory: per web worker.
CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
# --- end who may do what, where -------------------------------------------------------------
