"""Production settings: refuse to start on values that must be chosen, not defaulted."""

from django.core.exceptions import ImproperlyConfigured

from config.env import env_bool, env_int, env_str
from config.settings.base import *  # noqa: F403

if not env_str("SECRET_KEY"):
    raise ImproperlyConfigured("SECRET_KEY (or SECRET_KEY_FILE) must be set in production")
if DEBUG:  # noqa: F405
    raise ImproperlyConfigured("DEBUG must be off in production")

SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
# Health checks come over plain HTTP from inside the host (containers/compose.yaml).
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31536000, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", True)
SESSION_COOKIE_SECURE = True
CSRF_COOKIE_SECURE = True
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
