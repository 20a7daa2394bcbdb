"""The zero-set-up mode of `make run`: SQLite file + filesystem broker, all in subprocesses."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.manage_helpers import manage
from tests.workers import Worker

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture
def embedded_env(tmp_path: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"DATABASE_URL", "CELERY_BROKER_URL", "SECRET_KEY", "ROCPATH_QUEUE"}
        and not k.startswith("ROCPATH_")
    }
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "config.settings.base",
            "ROCPATH_VAR_DIR": str(tmp_path / "var"),
            "ROCPATH_HEARTBEAT_S": "1",
            "ROCPATH_EXECUTOR": "local",
            "PYTHONUNBUFFERED": "1",
        }
    )
    return env


def test_the_cli_runs_jobs_on_sqlite_and_the_embedded_broker(embedded_env, tmp_path):
    assert manage(embedded_env, "migrate", "--no-input").returncode == 0
    login = manage(embedded_env, "bootstrap_demo")
    assert login.returncode == 0 and login.stdout.startswith("login: demo / ")
    assert (tmp_path / "var" / "rocpath.sqlite3").exists()

    worker = Worker(env=embedded_env, name="embedded@%h", queue="rocpath", log=tmp_path / "w.log")
    worker.log.touch()
    worker.start()
    try:
        probe = manage(embedded_env, "submit", "probe", "--user", "demo", "--wait")
        assert probe.returncode == 0, probe.stderr
        assert probe.stdout.strip().isdigit()
        assert "succeeded" in probe.stderr

        failing = manage(
            embedded_env,
            "submit",
            "noop",
            "--user",
            "demo",
            "--wait",
            "--params",
            '{"exit_status": "failed"}',
        )
        assert failing.returncode == 1 and "failed" in failing.stderr

        bad = manage(embedded_env, "submit", "noop", "--user", "demo", "--params", '{"x": 1}')
        assert bad.returncode != 0 and "params" in bad.stderr
    finally:
        worker.stop()
    assert (tmp_path / "var" / "broker" / "queue").is_dir()
