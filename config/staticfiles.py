"""Static files: what `collectstatic` copies and how the manifest storage rewrites it.

drf-spectacular's sidecar ships Swagger UI and Redoc with their source maps: 6 MB of
`.map` files and a Redoc bundle we never serve (/api/redoc/ redirects to Swagger UI).
Compressing them was most of `make run`'s first start (issue 36), so they are not
collected. The manifest storage would then refuse the bundles, whose `sourceMappingURL`
comments name the maps it can no longer find; it leaves those comments as they are (a
browser fetches a map only when its developer tools are open, and gets a 404).
"""

from __future__ import annotations

from django.contrib.staticfiles.apps import StaticFilesConfig
from whitenoise.storage import CompressedManifestStaticFilesStorage

NOT_COLLECTED = ["*.map", "drf_spectacular_sidecar/redoc/*"]


class StaticFiles(StaticFilesConfig):
    """django.contrib.staticfiles, leaving out what no page of ours loads."""

    ignore_patterns = [*StaticFilesConfig.ignore_patterns, *NOT_COLLECTED]


def _without_source_maps(patterns: tuple) -> tuple:
    return tuple(
        (glob, tuple(rule for rule in rules if "sourceMappingURL" not in str(rule)))
        for glob, rules in patterns
    )


class StaticStorage(CompressedManifestStaticFilesStorage):
    """Whitenoise's hashed, compressed storage, not following source-map comments."""

    patterns = _without_source_maps(CompressedManifestStaticFilesStorage.patterns)
