"""Settings for every mode, read from the environment (see docs/configuration.md).

The defaults need zero set-up: a SQLite file and a filesystem broker under
``var/``, so ``make run`` works on a bare machine. Production sets
``DJANGO_SETTINGS_MODULE=config.settings.production``, which refuses to start
without the values that must not be guessed.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from config.env import (
    env_bool,
    env_choice,
    env_int,
    env_int_list,
    env_list,
    env_map,
    env_str,
    host_cpus,
    host_memory_mb,
)

BASE_DIR = Path(__file__).resolve().parent.parent.parent
VAR_DIR = Path(env_str("ROCPATH_VAR_DIR", str(BASE_DIR / "var"))).resolve()


def _development_secret_key() -> str:
    """A random key generated once and kept under var/, so sessions survive restarts."""
    path = VAR_DIR / "secret_key"
    if path.exists():
        return path.read_text().strip()
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    key = secrets.token_urlsafe(50)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(key)
    return key


SECRET_KEY = env_str("SECRET_KEY") or _development_secret_key()
DEBUG = env_bool("DEBUG", False)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "portal",
    "jobs",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
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

# --- database -----------------------------------------------------------------
DATABASE_URL = env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'rocpath.sqlite3'}")
try:
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=60)}
except ValueError as exc:  # unknown scheme, malformed URL
    raise ImproperlyConfigured(f"DATABASE_URL is not usable: {exc}") from exc
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Web, worker and beat share the file: WAL lets readers run beside a writer,
    # IMMEDIATE takes the write lock up front instead of failing mid-transaction.
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 30,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "portal:dashboard"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(env_str("ROCPATH_STATIC_ROOT", str(VAR_DIR / "static")))
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = DEBUG

# --- jobs ---------------------------------------------------------------------
# What this host can give a job: every resource cap below is derived from it, and an
# operator's cap above it is refused at start-up (env_int's maximum).
HOST_CPUS = host_cpus()
HOST_MEMORY_MB = host_memory_mb()
# Every job gets a folder ROCPATH_ARTIFACT_ROOT/jobs/<id>/ holding params.json and out/.
ARTIFACT_ROOT = Path(env_str("ROCPATH_ARTIFACT_ROOT", str(VAR_DIR / "artifacts"))).resolve()
# auto: docker when the worker's engine answers and has the job image, else local.
ROCPATH_EXECUTOR = env_choice("ROCPATH_EXECUTOR", "auto", ("auto", "local", "docker"))
ROCPATH_IMAGE = env_str("ROCPATH_IMAGE", "rocpath/debian:latest")
# Per-kind images: "blas-bench=rocpath/rocm-pytorch:latest,profile=…"
ROCPATH_KIND_IMAGES = env_map("ROCPATH_KIND_IMAGES")
# A job may name its own image only from these prefixes (comma-separated).
ROCPATH_IMAGE_ALLOW = env_list("ROCPATH_IMAGE_ALLOW", ["rocpath/"])
# A container's caps: what one job may ask for at most (MAX_*) and what it gets when it
# asks nothing. Derived from the host, never above it; a job asking for more is refused.
ROCPATH_DOCKER_MAX_MEMORY_MB = env_int(
    "ROCPATH_DOCKER_MAX_MEMORY_MB", HOST_MEMORY_MB * 3 // 4, minimum=16, maximum=HOST_MEMORY_MB
)
ROCPATH_DOCKER_MEMORY_MB = env_int(
    "ROCPATH_DOCKER_MEMORY_MB", 2048, minimum=16, maximum=ROCPATH_DOCKER_MAX_MEMORY_MB
)
ROCPATH_DOCKER_MAX_CPUS = env_int(
    "ROCPATH_DOCKER_MAX_CPUS", HOST_CPUS, minimum=1, maximum=HOST_CPUS
)
ROCPATH_DOCKER_CPUS = env_int(
    "ROCPATH_DOCKER_CPUS",
    min(2, max(1, HOST_CPUS // 2)),
    minimum=1,
    maximum=ROCPATH_DOCKER_MAX_CPUS,
)
ROCPATH_DOCKER_MAX_PIDS = env_int("ROCPATH_DOCKER_MAX_PIDS", 1024, minimum=8, maximum=32768)
ROCPATH_DOCKER_PIDS = env_int(
    "ROCPATH_DOCKER_PIDS", 512, minimum=8, maximum=ROCPATH_DOCKER_MAX_PIDS
)
ROCPATH_DOCKER_TMPFS_MB = env_int("ROCPATH_DOCKER_TMPFS_MB", 1024, minimum=16)
ROCPATH_JOB_TIMEOUT_MAX_S = env_int("ROCPATH_JOB_TIMEOUT_MAX_S", 6 * 3600, minimum=1)
ROCPATH_HEARTBEAT_S = env_int("ROCPATH_HEARTBEAT_S", 5, minimum=1)
ROCPATH_RUNNING_GRACE_S = env_int("ROCPATH_RUNNING_GRACE_S", 120, minimum=1)
ROCPATH_QUEUED_GRACE_S = env_int("ROCPATH_QUEUED_GRACE_S", 24 * 3600, minimum=1)
ROCPATH_REAPER_INTERVAL_S = env_int("ROCPATH_REAPER_INTERVAL_S", 60, minimum=1)
# GPUs are leased per host (jobs/gpus.py): the name leases are held under (default: the
# hostname; give workers that share GPUs across containers one name), and which of the
# host's GPUs this worker lends (indices in the probe's list per vendor; default: all).
ROCPATH_GPU_HOST = env_str("ROCPATH_GPU_HOST", "")
ROCPATH_WORKER_GPUS = env_int_list("ROCPATH_WORKER_GPUS")
ROCPATH_STACK_PYTHON = env_str("ROCPATH_STACK_PYTHON", "") or None  # default: this interpreter
# Fork local runners from a warm interpreter (stack/zygote.py) instead of starting one per job.
ROCPATH_LOCAL_ZYGOTE = env_bool("ROCPATH_LOCAL_ZYGOTE", True)

# --- project sources (uploads and git clones) ---------------------------------
ROCPATH_UPLOAD_MAX_BYTES = env_int("ROCPATH_UPLOAD_MAX_BYTES", 512 * 1024**2, minimum=1)
ROCPATH_SOURCE_MAX_BYTES = env_int("ROCPATH_SOURCE_MAX_BYTES", 2 * 1024**3, minimum=1)
ROCPATH_SOURCE_MAX_FILES = env_int("ROCPATH_SOURCE_MAX_FILES", 200_000, minimum=1)
ROCPATH_SOURCE_MAX_RATIO = float(env_int("ROCPATH_SOURCE_MAX_RATIO", 100, minimum=2))
# Local paths (and file:// URLs) that may be cloned; everything else must be remote.
ROCPATH_GIT_LOCAL_ALLOW = env_list("ROCPATH_GIT_LOCAL_ALLOW", [])
ROCPATH_GIT_TIMEOUT_S = env_int("ROCPATH_GIT_TIMEOUT_S", 600, minimum=1)
FILE_UPLOAD_MAX_MEMORY_SIZE = 4 * 1024**2  # larger uploads stream to a temporary file

# --- job output bounds ----------------------------------------------------------
# What the worker reads back from a job (jobs/outputs.py): result.json, its summary and
# the artifacts are size-capped before a byte is read; the out folder as a whole is
# capped on disk while a container runs and when it is copied out.
ROCPATH_RESULT_MAX_BYTES = env_int("ROCPATH_RESULT_MAX_BYTES", 32 * 1024**2, minimum=1024)
ROCPATH_SUMMARY_MAX_BYTES = env_int("ROCPATH_SUMMARY_MAX_BYTES", 1024**2, minimum=1024)
ROCPATH_ARTIFACT_MAX_BYTES = env_int("ROCPATH_ARTIFACT_MAX_BYTES", 2 * 1024**3, minimum=1)
ROCPATH_OUT_MAX_BYTES = env_int("ROCPATH_OUT_MAX_BYTES", 4 * 1024**3, minimum=1024)
ROCPATH_OUT_MAX_FILES = env_int("ROCPATH_OUT_MAX_FILES", 10_000, minimum=1)
# A job's log: one line is cut past ROCPATH_EVENT_LINE_MAX_BYTES (with a note), the whole
# log past ROCPATH_EVENT_BYTES_MAX (one note, the rest dropped; progress still counts).
ROCPATH_EVENT_LINE_MAX_BYTES = env_int("ROCPATH_EVENT_LINE_MAX_BYTES", 64 * 1024, minimum=1024)
ROCPATH_EVENT_BYTES_MAX = env_int("ROCPATH_EVENT_BYTES_MAX", 16 * 1024**2, minimum=64 * 1024)
# The engine keeps a container's output in its log driver too: capped, so a chatty job
# cannot fill /var/lib/docker (json-file, two files of half this size).
ROCPATH_DOCKER_LOG_MAX_MB = env_int("ROCPATH_DOCKER_LOG_MAX_MB", 16, minimum=2)

# --- celery -------------------------------------------------------------------
BROKER_DIR = VAR_DIR / "broker"
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", "filesystem://localhost/")
if CELERY_BROKER_URL.startswith("filesystem://"):
    for sub in ("queue", "processed", "control"):
        (BROKER_DIR / sub).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(BROKER_DIR / "queue"),
        "data_folder_out": str(BROKER_DIR / "queue"),
        "processed_folder": str(BROKER_DIR / "processed"),
        "store_processed": False,
        "control_folder": str(BROKER_DIR / "control"),
        "polling_interval": 0.05,
    }
else:
    # A job may run for hours; the message must not be redelivered while it does.
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "visibility_timeout": ROCPATH_JOB_TIMEOUT_MAX_S + 3600,
    }
CELERY_TASK_IGNORE_RESULT = True  # results live in the database, not in a result backend
CELERY_RESULT_BACKEND = env_str("CELERY_RESULT_BACKEND", "") or None  # only bench/ sets one
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_DEFAULT_QUEUE = env_str("ROCPATH_QUEUE", "rocpath")
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
# Celery's Django fix-up closes every database connection after every task unless
# told to reuse them; a new PostgreSQL connection per job cost more than the job.
# jobs.signals closes the ones that are broken or past CONN_MAX_AGE before each task.
CELERY_DB_REUSE_MAX = 1000
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")
CELERY_BEAT_SCHEDULE = {
    "reap-stuck-jobs": {
        "task": "jobs.reap_stuck_jobs",
        "schedule": float(ROCPATH_REAPER_INTERVAL_S),
    },
}

# --- API ----------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_RENDERER_CLASSES": [
        "rest_framework.renderers.JSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
}
SPECTACULAR_SETTINGS = {
    "TITLE": "rocpath API",
    "DESCRIPTION": "Submit and follow ROCm adoption jobs; read their measurements.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}
