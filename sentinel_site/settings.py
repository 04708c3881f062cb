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
