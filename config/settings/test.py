"""Test settings: the real PostgreSQL and Redis of the machine unless told otherwise.

Integration tests need the services named in the issue; unit tests share the
same database so there is only one configuration to keep green.
"""

import hashlib
import os

os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/rocpath")
os.environ.setdefault("CELERY_BROKER_URL", "redis://127.0.0.1:6379/15")
os.environ.setdefault("SECRET_KEY", "test-only-not-secret")
# Jobs run locally unless a test asks for the docker executor (tests/containers).
os.environ.setdefault("ROCPATH_EXECUTOR", "local")
# One deployment per suite, and per pytest-xdist worker of a suite run in parallel: its
# job containers are its own on a shared engine, and the workers a test starts (which
# inherit this environment) sweep the same ones as the test, never the other xdist
# worker's.
os.environ.setdefault(
    "ROCPATH_DEPLOYMENT",
    "test-"
    + hashlib.sha256(
        f"{os.environ.get('ROCPATH_TEST_DB', 'test_rocpath')}\n{__file__}\n"
        f"{os.environ.get('PYTEST_XDIST_WORKER', '')}".encode()
    ).hexdigest()[:10],
)

from config.settings.base import *  # noqa: F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
STORAGES["staticfiles"] = {  # noqa: F405
    "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
}
WHITENOISE_AUTOREFRESH = True
# The live server serves static files from the apps' folders through WhiteNoise: pytest-
# django's own static handler looks for the string "django.contrib.staticfiles" in
# INSTALLED_APPS, which config.staticfiles.StaticFiles replaces (a clean clone has no
# collected files, and every page's CSS and htmx were a 404 in the browser tests).
WHITENOISE_USE_FINDERS = True
# Tests make hundreds of API calls a minute from one address: only tests/security lowers these.
REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"] = dict.fromkeys(  # noqa: F405
    REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"],  # noqa: F405
    "1000000/minute",
)
# Suites make dozens of schedules in one team (tests/security lowers this too).
ROCPATH_SCHEDULES_PER_TEAM_MAX = 1000

# Two suites on one machine (a developer's beside CI's, two clones) each need their own
# test database: by default its name carries a hash of this checkout's path, so a suite in
# another clone never creates, flushes or drops this one's.
DATABASES["default"].setdefault("TEST", {})["NAME"] = os.environ.get(  # noqa: F405
    "ROCPATH_TEST_DB", "test_rocpath_" + hashlib.sha256(__file__.encode()).hexdigest()[:8]
)
# On the embedded defaults' database (DATABASE_URL=sqlite:///…: scripts/test.sh --sqlite)
# the test database is in memory unless named: each xdist worker is a process of its own.
if DATABASES["default"]["ENGINE"].endswith("sqlite3") and "ROCPATH_TEST_DB" not in os.environ:  # noqa: F405
    DATABASES["default"]["TEST"]["NAME"] = None  # noqa: F405
# The comparison cache in each test process's memory (not the embedded defaults' file cache
# under var/, which a later run would find warm): tests/results/test_compare_cache.py
# measures the file and Redis caches themselves.
CACHES["results"] = {  # noqa: F405
    "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
    "LOCATION": "results",
    "OPTIONS": {"MAX_ENTRIES": ROCPATH_RESULTS_CACHE_ENTRIES},  # noqa: F405
}
