"""collectstatic with the production storage: no source maps, no Redoc, and it succeeds."""

import json

import pytest
from django.core.management import call_command

pytestmark = pytest.mark.slow  # compresses every collected file (~10 s)


def test_collectstatic_leaves_out_the_sidecars_maps_and_redoc(settings, tmp_path):
    settings.STATIC_ROOT = tmp_path / "static"
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "config.staticfiles.StaticStorage"},
    }
    call_command("collectstatic", interactive=False, verbosity=0)

    collected = [
        p.relative_to(settings.STATIC_ROOT).as_posix() for p in settings.STATIC_ROOT.rglob("*")
    ]
    assert not [p for p in collected if ".map" in p]
    assert not [p for p in collected if "/redoc/" in p]
    manifest = json.loads((settings.STATIC_ROOT / "staticfiles.json").read_text())["paths"]
    bundle = manifest["drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js"]
    assert (settings.STATIC_ROOT / bundle).exists() and (
        settings.STATIC_ROOT / f"{bundle}.gz"
    ).exists()
    # Swagger UI's stylesheet names its map; the comment is left as it was, not followed.
    css = settings.STATIC_ROOT / manifest["drf_spectacular_sidecar/swagger-ui-dist/swagger-ui.css"]
    assert "sourceMappingURL=swagger-ui.css.map" in css.read_text()
    assert "img/favicon.svg" in manifest
