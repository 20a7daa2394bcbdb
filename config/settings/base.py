"""Settings for every mode, read from the environment (see docs/configuration.md).

The defaults need zero set-up: a SQLite file and a filesystem broker under
``var/``, so ``make run`` works on a bare machine. Production sets
``DJANGO_SETTINGS_MODULE=config.settings.production``, which refuses to start
without the values that must not be guessed.

Over 400 lines: one module, by section, so that every setting and the check of its value
are found in one place (healthchecks' hc/settings.py is the model), and later caps can be
derived from earlier ones (the host's cores and memory).
"""

from __future__ import annotations

import hashlib
import ipaddress
import os
import re
import secrets
import shlex
from datetime import timedelta
from pathlib import Path

import dj_database_url
from csp.constants import NONCE, NONE, SELF
from django.core.exceptions import ImproperlyConfigured

from config.embedded_broker import filesystem_options
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
    "config.staticfiles.StaticFiles",  # django.contrib.staticfiles without source maps
    "rest_framework",
    "rest_framework.authtoken",
    "axes",
    "csp",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "teams",
    "jobs",
    "results",
    "roadmap",
    "portal",
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
    "csp.middleware.CSPMiddleware",
    # Last, as django-axes asks: it turns a refused sign-in into the lockout page.
    "axes.middleware.AxesMiddleware",
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
else:
    # A connection kept for CONN_MAX_AGE is checked before a request or task reuses it: the
    # first request after a PostgreSQL restart gets a new one instead of a 500.
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
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
    "staticfiles": {"BACKEND": "config.staticfiles.StaticStorage"},
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
ROCPATH_EXECUTOR = env_choice("ROCPATH_EXECUTOR", "auto", ("auto", "local", "docker", "slurm"))
ROCPATH_IMAGE = env_str("ROCPATH_IMAGE", "rocpath/debian:latest")
# inference-bench's model registry on this worker: <root>/<name>/ (or models.json's paths),
# handed to a job read-only as WORK/model (stack/inference/registry.py). Empty: none.
ROCPATH_MODEL_ROOT = env_str("ROCPATH_MODEL_ROOT", "")
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

# --- slurm executor (jobs/executors/slurm.py, docs/fleet.md "Slurm") ------------------
# The partition jobs are submitted to ("": the cluster's default partition).
ROCPATH_SLURM_PARTITION = env_str("ROCPATH_SLURM_PARTITION", "")
# How the runner runs on the node: "" the plain environment (in the local executor's
# bubblewrap sandbox where it starts), "apptainer" (apptainer exec --containall) or "enroot"
# (srun --container-image, pyxis). ROCPATH_SLURM_IMAGE: the image for either (a .sif file,
# docker://…); default: the job's image (docker://<image> for apptainer).
ROCPATH_SLURM_CONTAINER = env_choice("ROCPATH_SLURM_CONTAINER", "", ("", "apptainer", "enroot"))
ROCPATH_SLURM_IMAGE = env_str("ROCPATH_SLURM_IMAGE", "")
# What a job gets when it asks nothing (--mem in MiB, --cpus-per-task), and this worker's
# caps (0: none but the partition's, which sbatch enforces itself).
ROCPATH_SLURM_MEMORY_MB = env_int("ROCPATH_SLURM_MEMORY_MB", 512, minimum=16)
ROCPATH_SLURM_CPUS = env_int("ROCPATH_SLURM_CPUS", 1, minimum=1)
ROCPATH_SLURM_MAX_MEMORY_MB = env_int("ROCPATH_SLURM_MAX_MEMORY_MB", 0, minimum=0)
ROCPATH_SLURM_MAX_CPUS = env_int("ROCPATH_SLURM_MAX_CPUS", 0, minimum=0)
# The partition's GPUs as "vendor:model:arch:memory_mib" (Slurm's Gres says only how many):
# e.g. "amd:AMD Instinct MI300X:gfx942:196608" or "nvidia:NVIDIA H200:sm_90:143771".
ROCPATH_SLURM_GPU = env_str("ROCPATH_SLURM_GPU", "")
if ROCPATH_SLURM_GPU and not re.fullmatch(r"(amd|nvidia):[^:]+:[^:]+:\d+", ROCPATH_SLURM_GPU):
    raise ImproperlyConfigured(
        f"ROCPATH_SLURM_GPU={ROCPATH_SLURM_GPU!r}: use vendor:model:arch:memory_mib, vendor "
        "amd or nvidia (e.g. amd:AMD Instinct MI300X:gfx942:196608)"
    )
# How often a running Slurm job's state is polled (its output files are read between).
ROCPATH_SLURM_POLL_S = env_int("ROCPATH_SLURM_POLL_MS", 250, minimum=20) / 1000
# How long the controller may not answer while a job runs before the worker gives it up
# (the job is then queued again: ExecutorError, permanent=False).
ROCPATH_SLURM_UNREACHABLE_S = env_int("ROCPATH_SLURM_UNREACHABLE_S", 120, minimum=1)
# The poll slows down as a job runs: never more often than every ROCPATH_SLURM_POLL_MS,
# nor more than 1/20 of its running time, nor less often than ROCPATH_SLURM_POLL_MAX_MS,
# so that a short job's end is seen at once and a worker of many long jobs asks the
# controller little.
ROCPATH_SLURM_POLL_MAX_S = env_int("ROCPATH_SLURM_POLL_MAX_MS", 5000, minimum=20) / 1000
# After scancel (a cancel, a timeout) the job is given this long to end before it is
# given up as lost (Slurm's KillWait, 30 s by default, plus the node's epilog).
ROCPATH_SLURM_STOP_GRACE_S = env_int("ROCPATH_SLURM_STOP_GRACE_S", 120, minimum=1)
# More sbatch options, as a shell would split them (e.g. "--account=gpu --qos=normal").
ROCPATH_SLURM_SBATCH_ARGS = shlex.split(env_str("ROCPATH_SLURM_SBATCH_ARGS", "") or "")
ROCPATH_JOB_TIMEOUT_MAX_S = env_int("ROCPATH_JOB_TIMEOUT_MAX_S", 6 * 3600, minimum=1)
ROCPATH_HEARTBEAT_S = env_int("ROCPATH_HEARTBEAT_S", 5, minimum=1)
ROCPATH_RUNNING_GRACE_S = env_int("ROCPATH_RUNNING_GRACE_S", 120, minimum=1)
ROCPATH_QUEUED_GRACE_S = env_int("ROCPATH_QUEUED_GRACE_S", 24 * 3600, minimum=1)
# The fleet (jobs.fleet): each worker announces itself every ROCPATH_WORKER_BEAT_S and is
# shown gone, and no longer routed to, once not seen for ROCPATH_WORKER_GONE_S.
ROCPATH_WORKER_BEAT_S = env_int("ROCPATH_WORKER_BEAT_S", 15, minimum=1)
ROCPATH_WORKER_GONE_S = env_int("ROCPATH_WORKER_GONE_S", 60, minimum=2)
# --- fleet: a worker's inventory (jobs.fleet) ---
# What this worker's host has, when not probed: inline JSON or a path to a JSON file, an
# inventory ({"gpus": [{"vendor", "model", "arch", "memory_bytes"}], "cpus", "memory_mb"})
# or a probe's result.json. Read at worker start (a malformed one stops the worker); the
# leases and the GPU passthrough then see these GPUs too (docs/fleet.md).
ROCPATH_WORKER_INVENTORY = env_str("ROCPATH_WORKER_INVENTORY", "")
# --- end fleet ---
# Phase 4's gate: days in a row a project's scheduled jobs must all have succeeded.
ROCPATH_GATE_GREEN_DAYS = env_int("ROCPATH_GATE_GREEN_DAYS", 7, minimum=1, maximum=365)
ROCPATH_REAPER_INTERVAL_S = env_int("ROCPATH_REAPER_INTERVAL_S", 60, minimum=1)
# GPUs are leased per host (jobs/leases.py): the name leases are held under (default: the
# hostname; give workers that share GPUs across containers one name), and which of the
# host's GPUs this worker lends (indices in the probe's list per vendor; default: all).
ROCPATH_GPU_HOST = env_str("ROCPATH_GPU_HOST", "")
ROCPATH_WORKER_GPUS = env_int_list("ROCPATH_WORKER_GPUS")
ROCPATH_STACK_PYTHON = env_str("ROCPATH_STACK_PYTHON", "") or None  # default: this interpreter
# Fork local runners from a warm interpreter (stack/zygote.py) instead of starting one per job.
ROCPATH_LOCAL_ZYGOTE = env_bool("ROCPATH_LOCAL_ZYGOTE", True)

# --- local sandbox ------------------------------------------------------------
# Local jobs run in a bubblewrap sandbox (jobs/executors/local.py): only the stack code, the
# interpreter, the tools, the job's inputs (read-only) and its out folder (writable), as an
# unprivileged uid, without network. auto: whenever bwrap is there and passes its self-test;
# off: never. Where no sandbox starts, kinds that read a team's code refuse to run locally
# unless ROCPATH_LOCAL_UNSANDBOXED is set (the operator then trusts every team's code).
ROCPATH_LOCAL_SANDBOX = env_choice("ROCPATH_LOCAL_SANDBOX", "auto", ("auto", "off"))
ROCPATH_LOCAL_UNSANDBOXED = env_bool("ROCPATH_LOCAL_UNSANDBOXED", False)
ROCPATH_BWRAP = env_str("ROCPATH_BWRAP", "bwrap") or "bwrap"
# How a sandboxed job starts: "zygote", forked from a warm interpreter that builds the job's
# namespaces, mounts and uid itself (stack/sandbox.py) from the same mount plan; "bwrap",
# a fresh interpreter per job under bwrap and setpriv. Both give the same sandbox.
ROCPATH_LOCAL_SANDBOX_RUNNER = env_choice(
    "ROCPATH_LOCAL_SANDBOX_RUNNER", "zygote", ("zygote", "bwrap")
)
# Sandboxed runners take a uid (and a gid of the same number) from this range, one per
# project cache (else per job): uids no account has, so their file access is nobody's.
ROCPATH_SANDBOX_UID = env_int("ROCPATH_SANDBOX_UID", 2_000_000_000, minimum=1000, maximum=2**31 - 2)
ROCPATH_SANDBOX_UIDS = env_int(
    "ROCPATH_SANDBOX_UIDS", 100_000, minimum=1, maximum=2**31 - 1 - ROCPATH_SANDBOX_UID
)
# What one job may take, whichever executor runs it; job parameters above them are refused.
ROCPATH_JOB_MAX_MEMORY_MB = env_int(
    "ROCPATH_JOB_MAX_MEMORY_MB", HOST_MEMORY_MB, minimum=64, maximum=HOST_MEMORY_MB
)
_PID_MAX = (
    int(Path("/proc/sys/kernel/pid_max").read_text())
    if os.path.exists("/proc/sys/kernel/pid_max")
    else 32768
)
ROCPATH_JOB_MAX_PROCESSES = env_int("ROCPATH_JOB_MAX_PROCESSES", 8192, minimum=16, maximum=_PID_MAX)
ROCPATH_JOB_MAX_FILE_MB = env_int("ROCPATH_JOB_MAX_FILE_MB", 1024, minimum=1)
# A sandboxed job's limits: processes of its uid (RLIMIT_NPROC), address space (RLIMIT_AS, not
# for GPU jobs: GPU runtimes map far more than they use) and its private /tmp (a tmpfs).
ROCPATH_LOCAL_PIDS = env_int(
    "ROCPATH_LOCAL_PIDS", 512, minimum=16, maximum=ROCPATH_JOB_MAX_PROCESSES
)
# What all of a local job's processes may hold together (a memory cgroup, stack/cgroup.py):
# below the host's by default, so that one job cannot take the worker down with it.
ROCPATH_LOCAL_MEMORY_MB = env_int(
    "ROCPATH_LOCAL_MEMORY_MB",
    max(64, min(ROCPATH_JOB_MAX_MEMORY_MB, HOST_MEMORY_MB * 3 // 4)),
    minimum=64,
    maximum=ROCPATH_JOB_MAX_MEMORY_MB,
)
# Where local jobs' memory cgroups go: "auto" (cgroup v2's root, or v1's memory controller
# under the worker's own group; needs root), "off" (RLIMIT_AS per process only), or a
# folder in a cgroup file system delegated to the worker. Without one the job log says so.
ROCPATH_JOB_CGROUP = env_str("ROCPATH_JOB_CGROUP", "auto")
ROCPATH_LOCAL_TMP_MB = env_int(
    "ROCPATH_LOCAL_TMP_MB", 1024, minimum=16, maximum=ROCPATH_JOB_MAX_MEMORY_MB
)

# --- project sources (uploads and git clones) ---------------------------------
ROCPATH_UPLOAD_MAX_BYTES = env_int("ROCPATH_UPLOAD_MAX_BYTES", 512 * 1024**2, minimum=1)
# How many members of an upload the web request reads (a 400 at once for what they
# break); past them it accepts the upload as pending and the worker reads the rest,
# failing the source with the reason. About a second of one web thread on 2 cores.
ROCPATH_UPLOAD_SURVEY_MEMBERS = env_int("ROCPATH_UPLOAD_SURVEY_MEMBERS", 10_000, minimum=1)
# How many uploads one user may have checked in web requests at once (on one web host):
# each holds a web thread while it is received and surveyed; past it a 429.
ROCPATH_UPLOADS_PER_USER = env_int("ROCPATH_UPLOADS_PER_USER", 2, minimum=1)
ROCPATH_SOURCE_MAX_BYTES = env_int("ROCPATH_SOURCE_MAX_BYTES", 2 * 1024**3, minimum=1)
ROCPATH_SOURCE_MAX_FILES = env_int("ROCPATH_SOURCE_MAX_FILES", 200_000, minimum=1)
ROCPATH_SOURCE_MAX_RATIO = float(env_int("ROCPATH_SOURCE_MAX_RATIO", 100, minimum=2))
# What all of one team's sources together may hold (sources that failed hold nothing).
ROCPATH_TEAM_SOURCE_MAX_BYTES = env_int("ROCPATH_TEAM_SOURCE_MAX_BYTES", 20 * 1024**3, minimum=1)
ROCPATH_TEAM_SOURCE_MAX_FILES = env_int("ROCPATH_TEAM_SOURCE_MAX_FILES", 1_000_000, minimum=1)
ROCPATH_TEAM_SOURCES_MAX = env_int("ROCPATH_TEAM_SOURCES_MAX", 200, minimum=1)
# Staging (.upload-*, .extract-*, .clone*) older than this, and sources still pending
# after it, were left by a killed process: the reaper removes them. Above the source
# tasks' time limits (extraction 3600 s, a clone ROCPATH_GIT_TIMEOUT_S + 600), so no
# running task loses its folder.
ROCPATH_SOURCE_STAGING_GRACE_S = env_int("ROCPATH_SOURCE_STAGING_GRACE_S", 7200, minimum=3700)
ROCPATH_SOURCE_REAPER_INTERVAL_S = env_int("ROCPATH_SOURCE_REAPER_INTERVAL_S", 600, minimum=1)
# Git intake (teams/gitintake.py). Local paths and file:// URLs a team may clone, per
# team: "team-a=/srv/git/a:/srv/git/shared,team-b=/srv/git/b".
ROCPATH_GIT_LOCAL_ALLOW = {
    team: [path for path in paths.split(":") if path]
    for team, paths in env_map("ROCPATH_GIT_LOCAL_ALLOW").items()
}
ROCPATH_GIT_ALLOW_HTTP = env_bool("ROCPATH_GIT_ALLOW_HTTP", False)  # plain http:// clones
# Host names or networks (CIDR) that may be cloned from although they resolve to
# loopback, private, link-local or other non-global addresses (an internal forge).
ROCPATH_GIT_HOST_ALLOW = env_list("ROCPATH_GIT_HOST_ALLOW", [])
# ssh:// and git@ URLs only for the teams given a key here: "team-a=/etc/rocpath/a.key";
# hosts are checked against this known_hosts file (without one, ssh is refused).
ROCPATH_GIT_SSH_KEYS = env_map("ROCPATH_GIT_SSH_KEYS")
ROCPATH_GIT_SSH_KNOWN_HOSTS = env_str("ROCPATH_GIT_SSH_KNOWN_HOSTS", "")
ROCPATH_GIT_TIMEOUT_S = env_int("ROCPATH_GIT_TIMEOUT_S", 600, minimum=1)
if ROCPATH_SOURCE_STAGING_GRACE_S <= ROCPATH_GIT_TIMEOUT_S + 600:
    raise ImproperlyConfigured(
        "ROCPATH_SOURCE_STAGING_GRACE_S must exceed ROCPATH_GIT_TIMEOUT_S + 600: the reaper "
        "would take a clone's folder while it runs"
    )
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

# --- reliability: storage and deployment ---------------------------------------
# A worker refuses to start when ARTIFACT_ROOT is not writable or has less room than this
# (jobs/storage.py): it would fail every job it took.
ROCPATH_MIN_FREE_MB = env_int("ROCPATH_MIN_FREE_MB", 512, minimum=0)
# Who owns a job container on a shared Docker engine: containers carry it as a label and in
# their name, and every sweep lists only its own. By default a hash of the database (engine,
# host, port, name: no password) and the artifact root, stable across restarts and different
# for two rocpaths on one machine; set it when two hosts of one deployment differ in either.
ROCPATH_DEPLOYMENT = env_str(
    "ROCPATH_DEPLOYMENT",
    hashlib.sha256(
        "\n".join(
            str(DATABASES["default"].get(key) or "") for key in ("ENGINE", "HOST", "PORT", "NAME")
        ).encode()
        + f"\n{ARTIFACT_ROOT}".encode()
    ).hexdigest()[:12],
)
if not re.fullmatch(r"[a-zA-Z0-9][a-zA-Z0-9_.-]{0,39}", ROCPATH_DEPLOYMENT):
    raise ImproperlyConfigured(
        f"ROCPATH_DEPLOYMENT={ROCPATH_DEPLOYMENT!r}: at most 40 letters, digits, '_', '.' or "
        "'-', starting with a letter or digit (it is part of container names)"
    )

# --- celery -------------------------------------------------------------------
BROKER_DIR = VAR_DIR / "broker"
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", "filesystem://localhost/")
if CELERY_BROKER_URL.startswith("filesystem://"):
    # kombu's filesystem transport with atomic publish and claim (config/embedded_broker.py): its
    # own loses and corrupts messages when several processes share the folder.
    CELERY_BROKER_TRANSPORT = "config.embedded_broker:Transport"
    CELERY_BROKER_TRANSPORT_OPTIONS = filesystem_options(BROKER_DIR)
else:
    # A job may run for hours; the message must not be redelivered while it does.
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "visibility_timeout": ROCPATH_JOB_TIMEOUT_MAX_S + 3600,
    }
    if CELERY_BROKER_URL.startswith("redis://"):
        # kombu's Redis transport with its crash on a lost broker turned into a connection
        # error (config/broker.py), so a worker outlives a Redis restart. rediss:// keeps
        # the stock one.
        CELERY_BROKER_TRANSPORT = "config.broker:Transport"
CELERY_TASK_IGNORE_RESULT = True  # results live in the database, not in a result backend
CELERY_RESULT_BACKEND = env_str("CELERY_RESULT_BACKEND", "") or None  # only bench/ sets one
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_DEFAULT_QUEUE = env_str("ROCPATH_QUEUE", "rocpath")
# The queues a job may name in hardware.queue besides the default (jobs/routing.py): for
# every team "gpu-mi300x:gpu-mi250", for one team "team-a=trusted:gpu-big"; comma-separated,
# both forms mixed. Unset: only the default queue.
ROCPATH_JOB_QUEUES: dict[str, list[str]] = {}
for _item in env_list("ROCPATH_JOB_QUEUES", []):
    _team, _sep, _names = _item.rpartition("=")
    _queues = [name for name in _names.split(":") if name]
    if (
        (_sep and not _team.strip())
        or not _queues
        or not all(re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}", name) for name in _queues)
    ):
        raise ImproperlyConfigured(
            f"ROCPATH_JOB_QUEUES: {_item!r} is not of the form [team=]queue[:queue...] "
            "(queue names: letters, digits, - and _, at most 64 characters)"
        )
    ROCPATH_JOB_QUEUES.setdefault(_team.strip() or "*", []).extend(_queues)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
# Celery's Django fix-up closes every database connection after every task unless
# told to reuse them; a new PostgreSQL connection per job cost more than the job.
# jobs.signals closes the ones that are broken or past CONN_MAX_AGE before each task.
CELERY_DB_REUSE_MAX = 1000
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")

# --- reliability: dispatch and recovery ---------------------------------------
# The database says what must run; the broker only carries the news (docs/reliability.md).
# A submission while the broker is down waits this long at most for it (then the job is
# kept pending and the dispatcher queues it when the broker is back).
CELERY_TASK_PUBLISH_RETRY_POLICY = {
    "max_retries": 2,
    "interval_start": 0,
    "interval_step": 0.2,
    "interval_max": 0.5,
}
# The reaper and the dispatcher run on their own queue, served by a process that never runs
# jobs (`celery -A config worker -Q <this> -c 1`), so a full job queue cannot delay them.
ROCPATH_CONTROL_QUEUE = (
    env_str("ROCPATH_CONTROL_QUEUE", "") or f"{CELERY_TASK_DEFAULT_QUEUE}-control"
)
# Every ROCPATH_DISPATCH_INTERVAL_S the dispatcher queues the jobs left pending (the broker
# was down) and sends again those queued before Redis last started, or for
# ROCPATH_REDISPATCH_AFTER_S, with no worker's claim and no message of theirs in the broker
# (it lost them: a restart without persistence).
# Above the longest retry pause (60 s), whose message a worker holds until it is due.
ROCPATH_DISPATCH_INTERVAL_S = env_int("ROCPATH_DISPATCH_INTERVAL_S", 10, minimum=1)
ROCPATH_REDISPATCH_AFTER_S = env_int("ROCPATH_REDISPATCH_AFTER_S", 120, minimum=61)
# /healthz answers 503 once no control-queue task has started for this long (the control
# worker or beat is down: nothing dispatches, nothing reaps). The dispatcher starts one every
# ROCPATH_DISPATCH_INTERVAL_S, so three missed intervals, and never under 30 s (a start).
ROCPATH_CONTROL_STALE_S = env_int(
    "ROCPATH_CONTROL_STALE_S", max(30, 3 * ROCPATH_DISPATCH_INTERVAL_S), minimum=10
)
if ROCPATH_CONTROL_STALE_S <= ROCPATH_DISPATCH_INTERVAL_S:
    raise ImproperlyConfigured(
        f"ROCPATH_CONTROL_STALE_S={ROCPATH_CONTROL_STALE_S} is not above "
        f"ROCPATH_DISPATCH_INTERVAL_S={ROCPATH_DISPATCH_INTERVAL_S}: /healthz would call "
        "the control worker down between two dispatches"
    )
# Every ROCPATH_SCHEDULE_INTERVAL_S the beat fires the schedules that are due (a job may
# start that much after its cron time); one due longer ago than ROCPATH_SCHEDULE_LATE_S
# counts as stopped (nothing fires it: docs/schedules.md).
ROCPATH_SCHEDULE_INTERVAL_S = env_int("ROCPATH_SCHEDULE_INTERVAL_S", 15, minimum=1)
ROCPATH_SCHEDULE_LATE_S = env_int("ROCPATH_SCHEDULE_LATE_S", 300, minimum=60)
# Caps on what schedules make (docs/security.md): at most ROCPATH_SCHEDULES_PER_TEAM_MAX
# enabled schedules a team, none firing more often than every ROCPATH_SCHEDULE_MIN_PERIOD_S;
# their fires count against the submit rate (ROCPATH_THROTTLE_SUBMIT), per team and per owner.
ROCPATH_SCHEDULES_PER_TEAM_MAX = env_int("ROCPATH_SCHEDULES_PER_TEAM_MAX", 20, minimum=1)
ROCPATH_SCHEDULE_MIN_PERIOD_S = env_int("ROCPATH_SCHEDULE_MIN_PERIOD_S", 300, minimum=60)
# Alert deliveries (webhooks, e-mail) on a queue of their own, served by a worker of many
# threads that runs nothing else (`celery -A config worker -Q <this> -P threads -c 8`): a
# receiver that answers slowly holds one of its threads, never the control queue's slot.
ROCPATH_ALERT_QUEUE = env_str("ROCPATH_ALERT_QUEUE", "") or f"{CELERY_TASK_DEFAULT_QUEUE}-alerts"
if ROCPATH_ALERT_QUEUE in {ROCPATH_CONTROL_QUEUE, CELERY_TASK_DEFAULT_QUEUE}:
    raise ImproperlyConfigured(
        f"ROCPATH_ALERT_QUEUE={ROCPATH_ALERT_QUEUE!r}: the alerts need a queue of their own, "
        "not the job or the control queue (a slow receiver would hold their slots)"
    )
# Comparisons of a finished job with its baselines (results.compare_job: a bootstrap per
# case, seconds for a full sweep) on a queue of their own, served by a worker that runs
# nothing else (`celery -A config worker -Q <this> -c 1`): forty of them queued after a
# sweep must not hold a scheduled job back, nor the reaper, nor an alert.
ROCPATH_COMPARE_QUEUE = (
    env_str("ROCPATH_COMPARE_QUEUE", "") or f"{CELERY_TASK_DEFAULT_QUEUE}-compare"
)
if ROCPATH_COMPARE_QUEUE in {ROCPATH_CONTROL_QUEUE, ROCPATH_ALERT_QUEUE, CELERY_TASK_DEFAULT_QUEUE}:
    raise ImproperlyConfigured(
        f"ROCPATH_COMPARE_QUEUE={ROCPATH_COMPARE_QUEUE!r}: the comparisons need a queue of "
        "their own, not the job, control or alert queue (a sweep's comparisons would hold "
        "their slots)"
    )
_CONTROL = {"queue": ROCPATH_CONTROL_QUEUE}
# The periodic tasks, each routed to the control queue (beat sends them there too). Each
# message expires after its own interval: those beat sent while the control worker was down
# are discarded on receipt (Celery revokes an expired task) rather than all run back to back
# when it returns; the next firing does the work once. (Beat's and the worker's clocks must
# agree to well under the interval: NTP.)
CELERY_BEAT_SCHEDULE = {
    name: {
        "task": task,
        "schedule": float(interval),
        "options": {**_CONTROL, "expires": float(interval)},
    }
    for name, task, interval in (
        ("reap-stuck-jobs", "jobs.reap_stuck_jobs", ROCPATH_REAPER_INTERVAL_S),
        ("reap-source-staging", "teams.reap_source_staging", ROCPATH_SOURCE_REAPER_INTERVAL_S),
        ("dispatch-jobs", "jobs.dispatch_jobs", ROCPATH_DISPATCH_INTERVAL_S),
        ("fire-schedules", "jobs.fire_schedules", ROCPATH_SCHEDULE_INTERVAL_S),
    )
}
CELERY_TASK_ROUTES = {entry["task"]: _CONTROL for entry in CELERY_BEAT_SCHEDULE.values()}
# --- alerts and metrics (results.alerts, results.metrics; docs/alerts.md, docs/metrics.md) ---
# An enabled schedule whose next run is this far past due has stopped running (beat or its
# control worker is down, or the schedule keeps failing to submit): one alert per stall.
# A job that stores at least this many measurements has the measurements table analysed
# (PostgreSQL's planner statistics) once it commits (jobs.services.ingest).
ROCPATH_ANALYZE_AFTER_ROWS = env_int("ROCPATH_ANALYZE_AFTER_ROWS", 2000, minimum=1)
# Benchmark evidence older than this opens no roadmap gate (roadmap.criteria): a year-old
# run of another driver says little about the GPUs as they are now.
ROCPATH_EVIDENCE_MAX_AGE_DAYS = env_int("ROCPATH_EVIDENCE_MAX_AGE_DAYS", 90, minimum=1)
ROCPATH_SCHEDULE_STALL_S = env_int("ROCPATH_SCHEDULE_STALL_S", 900, minimum=60)
ROCPATH_SCHEDULE_STALL_CHECK_S = env_int("ROCPATH_SCHEDULE_STALL_CHECK_S", 300, minimum=10)
CELERY_BEAT_SCHEDULE["check-stalled-schedules"] = {
    "task": "results.check_stalled_schedules",
    "schedule": float(ROCPATH_SCHEDULE_STALL_CHECK_S),
    "options": {**_CONTROL, "expires": float(ROCPATH_SCHEDULE_STALL_CHECK_S)},
}
CELERY_TASK_ROUTES["results.check_stalled_schedules"] = _CONTROL
CELERY_TASK_ROUTES["results.deliver_alert"] = {"queue": ROCPATH_ALERT_QUEUE}
CELERY_TASK_ROUTES["results.compare_job"] = {"queue": ROCPATH_COMPARE_QUEUE}
# A webhook or e-mail that fails for a passing reason is tried again after BASE, 2 BASE,
# 4 BASE … s (at most MAX_S between tries), ROCPATH_ALERT_MAX_ATTEMPTS tries in all.
ROCPATH_ALERT_MAX_ATTEMPTS = env_int("ROCPATH_ALERT_MAX_ATTEMPTS", 6, minimum=1, maximum=20)
ROCPATH_ALERT_RETRY_BASE_S = env_int("ROCPATH_ALERT_RETRY_BASE_S", 30, minimum=1)
ROCPATH_ALERT_RETRY_MAX_S = env_int("ROCPATH_ALERT_RETRY_MAX_S", 3600, minimum=1)
ROCPATH_ALERT_TIMEOUT_S = env_int("ROCPATH_ALERT_TIMEOUT_S", 10, minimum=1, maximum=120)
# The whole of one try (connect, send, the answer): a receiver that drips bytes inside
# ROCPATH_ALERT_TIMEOUT_S is cut here, well below the delivery task's hard time limit.
ROCPATH_ALERT_TRY_DEADLINE_S = env_int("ROCPATH_ALERT_TRY_DEADLINE_S", 20, minimum=1, maximum=50)
# Test alerts one project may send from its alerts page, per hour.
ROCPATH_ALERT_TESTS_PER_HOUR = env_int("ROCPATH_ALERT_TESTS_PER_HOUR", 4, minimum=1)
# Webhook hosts (names or networks) that may be called although they resolve to loopback,
# private or other non-global addresses: an operator's receiver on an internal host.
ROCPATH_WEBHOOK_HOST_ALLOW = env_list("ROCPATH_WEBHOOK_HOST_ALLOW", [])
# /metrics: off (404) unless one of these is set; with both, a scrape needs both.
ROCPATH_METRICS_TOKEN = env_str("ROCPATH_METRICS_TOKEN", "") or ""
ROCPATH_METRICS_ALLOW = env_list("ROCPATH_METRICS_ALLOW", [])
for _network in ROCPATH_METRICS_ALLOW:
    try:
        ipaddress.ip_network(_network, strict=False)
    except ValueError as _exc:
        raise ImproperlyConfigured(
            f"ROCPATH_METRICS_ALLOW: {_network!r} is not an address or network ({_exc})"
        ) from None
# A worker counts as seen when one of its jobs beat (or started) this recently.
ROCPATH_METRICS_WORKER_WINDOW_S = env_int("ROCPATH_METRICS_WORKER_WINDOW_S", 300, minimum=10)

# --- e-mail (Django's mail backend; alerts are sent through it) -----------------
EMAIL_BACKEND = env_str("EMAIL_BACKEND", "django.core.mail.backends.smtp.EmailBackend")
EMAIL_HOST = env_str("EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("EMAIL_PORT", 25, minimum=1, maximum=65535)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER", "") or ""
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD", "") or ""
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
EMAIL_USE_SSL = env_bool("EMAIL_USE_SSL", False)
EMAIL_TIMEOUT = env_int("EMAIL_TIMEOUT", 10, minimum=1)
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "rocpath@localhost")
if EMAIL_USE_TLS and EMAIL_USE_SSL:
    raise ImproperlyConfigured("EMAIL_USE_TLS and EMAIL_USE_SSL: set one of them, not both")
# A task that loses its database (a restart, a dropped connection) is tried again after
# 2, 4, 8 ... s, at most this many times, instead of leaving its job queued or running.
ROCPATH_DB_RETRIES = env_int("ROCPATH_DB_RETRIES", 8, minimum=0)

# --- API ----------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "jobs.api.authentication.ExpiringTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # Rates: the security section below (ROCPATH_THROTTLE_*); jobs/api/throttles.py says why
    # each scope exists.
    "DEFAULT_THROTTLE_CLASSES": [
        "jobs.api.throttles.AnonThrottle",
        "jobs.api.throttles.UserThrottle",
        "jobs.api.throttles.AddressThrottle",
        "jobs.api.throttles.SubmitThrottle",
    ],
    # JSON bodies are bounded in size and depth (ROCPATH_JSON_MAX_*): a deep one is a 400.
    "DEFAULT_PARSER_CLASSES": [
        "teams.api.parsers.BoundedJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    # Error bodies are bounded too: a validation message never echoes a huge input back.
    "EXCEPTION_HANDLER": "jobs.api.errors.bounded_exception_handler",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    # JSON only: the browsable API's pages need inline styles the CSP refuses, and
    # /api/docs/ is the interactive view of the API.
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
}
SPECTACULAR_SETTINGS = {
    "TITLE": "rocpath API",
    "DESCRIPTION": "Submit and follow ROCm adoption jobs; read their measurements.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
}
# The fleet pages (issue 16): a job's list row and its detail (with ``waiting``) share the
# job statuses; one named enum, not a hashed name for the collision (drf-spectacular W001).
SPECTACULAR_SETTINGS["ENUM_NAME_OVERRIDES"] = {"JobStatusEnum": "jobs.choices.JobStatus"}

# --- security: auth and hardening ---------------------------------------------
# Sign-in lockout (django-axes): after ROCPATH_LOGIN_FAILURE_LIMIT wrong passwords for one
# username from one address, that pair is refused for ROCPATH_LOGIN_COOLOFF_MINUTES (each
# further try restarts the wait). The session sign-in and the admin's both go through
# django.contrib.auth.authenticate, which the axes backend guards. Admins unlock early by
# deleting the row under Axes > Access attempts, or `manage.py axes_reset_username NAME`.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env_int("ROCPATH_LOGIN_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("ROCPATH_LOGIN_COOLOFF_MINUTES", 15, minimum=1))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
# The client address the lockout and the API throttles count by: the connection's, unless
# ROCPATH_PROXY_COUNT reverse proxies in front are trusted to append to X-Forwarded-For.
ROCPATH_PROXY_COUNT = env_int("ROCPATH_PROXY_COUNT", 0, minimum=0)
AXES_CLIENT_IP_CALLABLE = "jobs.api.throttles.client_address"
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_RESET_ON_SUCCESS = True

# API tokens expire this many days after they were made; rotating makes a new one.
ROCPATH_TOKEN_TTL_DAYS = env_int("ROCPATH_TOKEN_TTL_DAYS", 30, minimum=1)

_RATE = re.compile(r"[1-9][0-9]*/(s|sec|second|m|min|minute|h|hour|d|day)")


def _rate(name: str, default: str) -> str:
    """A DRF throttle rate, checked at start-up rather than at the first request."""
    value = (env_str(name, default) or "").strip()
    if not _RATE.fullmatch(value):
        raise ImproperlyConfigured(f"{name}={value!r} is not a rate like 120/minute")
    return value


REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"] = {
    "anon": _rate("ROCPATH_THROTTLE_ANON", "30/minute"),
    "user": _rate("ROCPATH_THROTTLE_USER", "240/minute"),
    "address": _rate("ROCPATH_THROTTLE_ADDRESS", "600/minute"),
    "submit": _rate("ROCPATH_THROTTLE_SUBMIT", "30/minute"),
}
# Throttle history lives in the cache: this process's memory by default (each web worker
# counts on its own), Redis when CACHE_URL names one (shared by every web worker and host).
CACHE_URL = env_str("CACHE_URL", "") or ""
if not CACHE_URL:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
elif CACHE_URL.startswith(("redis://", "rediss://", "unix://")):
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": CACHE_URL,
        }
    }
else:
    raise ImproperlyConfigured(f"CACHE_URL={CACHE_URL!r}: only redis:// URLs are supported")
# Comparison intervals and history change points (results.compare): one entry per job pair
# of a comparison (a 4,000-case pair is one ~140 KB value, read in one round trip), kept a
# week. With CACHE_URL they live in that Redis, shared by every web worker and host. On the
# embedded defaults a file cache under ROCPATH_VAR_DIR, shared by the web server's worker
# processes (a process's own memory was cold for the other worker, and held Django's
# default 300 entries: a 4,000-case comparison, one entry a case, was never warm).
# docs/results.md ("Cost") says why one entry a pair.
ROCPATH_RESULTS_CACHE_ENTRIES = env_int("ROCPATH_RESULTS_CACHE_ENTRIES", 20000, minimum=100)
if CACHE_URL:
    CACHES["results"] = {**CACHES["default"], "KEY_PREFIX": "results", "TIMEOUT": 7 * 24 * 3600}
else:
    CACHES["results"] = {
        "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
        "LOCATION": str(VAR_DIR / "cache" / "results"),
        "TIMEOUT": 7 * 24 * 3600,
        "OPTIONS": {"MAX_ENTRIES": ROCPATH_RESULTS_CACHE_ENTRIES},
    }

# JSON bodies of the API and the JSON fields of the forms: larger or deeper is a 400.
ROCPATH_JSON_MAX_BYTES = env_int("ROCPATH_JSON_MAX_BYTES", 1024**2, minimum=1024)
ROCPATH_JSON_MAX_DEPTH = env_int("ROCPATH_JSON_MAX_DEPTH", 32, minimum=2, maximum=200)

# Content-Security-Policy (django-csp): scripts and styles from our own static files only.
# Inline <style> is allowed only with the response's nonce: the pygal charts (portal/charts.py)
# and the downloaded porting report carry one; nothing a user wrote can.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF, NONCE],
        "img-src": [SELF, "data:"],
        "object-src": [NONE],
        "base-uri": [SELF],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    }
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {
        "django.db.backends": {"level": "WARNING"},
        # django-axes says its version at every start of every process (each manage.py,
        # each make run line): noise on a newcomer's terminal; its lockouts are warnings.
        "axes.apps": {"level": "WARNING"},
    },
}
