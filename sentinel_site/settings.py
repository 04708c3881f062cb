"""Django settings for Rollout Sentinel; every value comes from ``config.load``."""

import os
from pathlib import Path

from sentinel_site import config

BASE_DIR = Path(__file__).resolve().parent.parent
SENTINEL = config.load(os.environ, BASE_DIR)

SECRET_KEY = SENTINEL.secret_key
DEBUG = SENTINEL.debug
ALLOWED_HOSTS = list(SENTINEL.allowed_hosts)

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "django_q",
    "analyses",
    "sentinel_operator",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Serves the admin's and the API docs' static files from gunicorn, so the UI needs no CDN
    # and no separate web server.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "sentinel_site.urls"
WSGI_APPLICATION = "sentinel_site.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
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
Q_CLUSTER = {
    "name": "sentinel",
    "workers": SENTINEL.q_workers,
    "timeout": 60,
    "retry": 120,
    "max_attempts": 1,
    "catch_up": False,
    "ack_failures": True,
    "save_limit": 250,
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

# --- REST API (analyses/api; SPEC §7) -------------------------------------------------------
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
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
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
    # The schema document itself is public (it holds no data); every endpoint needs a login.
    "SERVE_INCLUDE_SCHEMA": False,
    # Separate request and response components, so status is absent from request bodies.
    "COMPONENT_SPLIT_REQUEST": True,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    # No badge fetched from validator.swagger.io: the page talks to this server only.
    "SWAGGER_UI_SETTINGS": {"deepLinking": True, "validatorUrl": None},
    # One name for the outcome choices shared by evaluations and metric results.
    "ENUM_NAME_OVERRIDES": {"OutcomeEnum": "analyses.models.OUTCOME_CHOICES"},
}
# --- end REST API ---------------------------------------------------------------------------
