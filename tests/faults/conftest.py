"""Fault injection: a private Redis per test, workers that use it, the test database only.

Nothing here touches the machine's shared Redis (6379) or stops its PostgreSQL: each test
starts its own redis-server on a free port of 127.0.0.1 and kills only that.
"""

from __future__ import annotations

import signal
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from config.celery import app
from tests.faults.servers import RedisServer, free_port
from tests.workers import Worker, worker_env


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    folder = tmp_path / "redis"
    folder.mkdir()
    server = RedisServer(port=free_port(), folder=folder)
    server.start()
    yield server
    server.stop(signal.SIGKILL)


def _reset_producers() -> None:
    """Drop the pooled broker connections, so the next send connects to the broker now set."""
    app._pool = None
    app.amqp._producer_pool = None


@pytest.fixture
def private_broker(redis_server: RedisServer, settings) -> Iterator[RedisServer]:
    """This process queues its tasks on the private Redis (web side: submissions, dispatch)."""
    saved = app.conf.broker_write_url, app.conf.broker_read_url
    settings.CELERY_BROKER_URL = redis_server.url
    app.conf.broker_write_url = app.conf.broker_read_url = redis_server.url
    _reset_producers()
    yield redis_server
    app.conf.broker_write_url, app.conf.broker_read_url = saved
    _reset_producers()


def start_worker(
    settings,
    tmp_path: Path,
    broker: RedisServer,
    *,
    name: str,
    queue: str,
    concurrency: int = 2,
    **env: str,
) -> Worker:
    handle = Worker(
        env=worker_env(
            settings,
            ROCPATH_QUEUE=settings.CELERY_TASK_DEFAULT_QUEUE,
            CELERY_BROKER_URL=broker.url,
            ROCPATH_EXECUTOR="local",
            **env,
        ),
        name=f"{name}@%h",
        queue=queue,
        log=tmp_path / f"{name}.log",
        concurrency=concurrency,
    )
    handle.log.touch()
    handle.start()
    return handle


@pytest.fixture
def fault_worker(transactional_db, settings, tmp_path, private_broker) -> Iterator[Worker]:
    """A job worker on a queue of its own, fed by the private Redis."""
    queue = f"fault-{uuid.uuid4().hex[:8]}"
    settings.CELERY_TASK_DEFAULT_QUEUE = queue
    handle = start_worker(settings, tmp_path, private_broker, name=queue, queue=queue)
    yield handle
    handle.stop()
