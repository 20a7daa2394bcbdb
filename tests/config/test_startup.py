"""Every process pays for what django.setup() imports: the web server, each worker, the
control worker, beat, every manage.py call and every test subprocess. The numerical and
plotting libraries cost about a second and a half of it, so they are imported where they
are used (results.detect, results.stats, portal.charts), never at app load."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HEAVY = ("numpy", "scipy", "ruptures", "pygal", "torch", "pandas", "matplotlib")

# What a worker, beat and the web server load past django.setup(): the URL
# configuration (every view) and Celery's task modules.
LOADED = """
import json, os, sys
import django
django.setup()
after_setup = sorted(m for m in {heavy} if m in sys.modules)
from django.urls import get_resolver
get_resolver().url_patterns
from config.celery import app
app.loader.import_default_modules()
after_all = sorted(m for m in {heavy} if m in sys.modules)
print(json.dumps([after_setup, after_all]))
"""


@pytest.mark.process
def test_django_setup_views_and_tasks_import_no_numerical_or_plotting_library() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", LOADED.format(heavy=HEAVY)],
        cwd=REPO,
        env=dict(os.environ, DJANGO_SETTINGS_MODULE="config.settings.test"),
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    after_setup, after_all = json.loads(proc.stdout.strip().splitlines()[-1])
    assert after_setup == [], f"django.setup() imported {after_setup}"
    assert after_all == [], f"the URL configuration or the task modules imported {after_all}"


def test_a_verdict_and_a_chart_still_load_their_libraries_when_first_used() -> None:
    from portal.charts import xy_chart
    from results.detect import compare_samples

    decision = compare_samples([1.0, 1.01, 0.99, 1.0] * 5, [1.2, 1.21, 1.19, 1.2] * 5)
    assert decision.verdict == "improved"
    svg = xy_chart("t", {"a": [(1, 2), (2, 3)]}, x_title="x", y_title="y")
    assert svg.startswith("<svg") and "<script" not in svg
