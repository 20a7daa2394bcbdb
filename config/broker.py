"""The Redis transport, with kombu 5.7's crash on a lost broker turned into a connection error.

When Redis goes away while a worker holds an unacknowledged message (acks_late: every
running job), Celery's consumer first ``collect()``s the broken connection, which drops the
transport's client, and then ``close()``s it: closing the channel restores the unacked
messages, which builds a new Redis client from the client just dropped, and kombu raises
``AttributeError: 'NoneType' object has no attribute 'hostname'`` from ``_connparams``.
That is not one of the transport's connection errors, so the consumer calls it
unrecoverable and the worker stops consuming for good (issue 11, item 1; kombu and Celery
5.7.0, the newest releases, both do it).

Raised as a Redis ``ConnectionError`` instead, the close ignores it like any other error of
a dead broker, and the consumer reconnects when Redis is back. Nothing is lost by not
restoring there: the message is still in Redis' unacked set (or gone with Redis), and the
job's row, not the message, says what must run (jobs.services.dispatch).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from kombu.transport import redis as kombu_redis
from redis.exceptions import ConnectionError as RedisConnectionError


class Channel(kombu_redis.Channel):
    def _connparams(self, asynchronous: bool = False) -> dict[str, Any]:
        if self.connection is None or self.connection.client is None:
            raise RedisConnectionError("the broker connection was closed (Redis went away)")
        return super()._connparams(asynchronous=asynchronous)


class Transport(kombu_redis.Transport):
    Channel = Channel


def task_ids_in_broker(queues: set[str]) -> set[str] | None:
    """The ids of the tasks whose messages the broker holds for these queues, waiting or
    delivered to a worker and not yet acknowledged; None where the transport cannot say.

    Only Redis loses messages when it restarts without persistence, and only Redis is
    asked: the embedded transports keep theirs in files or a database.
    """
    import json

    from config.celery import app

    with app.connection_for_read() as connection:
        channel = connection.default_channel
        if not isinstance(channel, kombu_redis.Channel):
            return None
        client = channel.client
        ids: set[str] = set()
        raw: list[bytes] = []
        for queue in queues:
            for priority in channel.priority_steps:
                raw.extend(client.lrange(channel._q_for_pri(queue, priority), 0, -1))
        for payload in raw:
            ids.add(_task_id(json.loads(payload)))
        return ids | _delivered(channel)


def broker_started_at() -> datetime | None:
    """When the broker's server last started, on this process's clock (Redis: its
    ``uptime_in_seconds``, rounded down, so the latest it can have been); None where the
    transport cannot say. A message sent before then is gone unless the server kept it
    on disk; one sent in the second after it is still held, and so not sent again."""
    from config.celery import app

    with app.connection_for_read() as connection:
        channel = connection.default_channel
        if not isinstance(channel, kombu_redis.Channel):
            return None
        try:
            uptime = int(channel.client.info("server")["uptime_in_seconds"])
        except Exception:  # INFO refused (an ACL, a hosted Redis): the 120-s rule alone
            return None
    return datetime.now(UTC) - timedelta(seconds=uptime)


def delivered_task_ids() -> set[str] | None:
    """The ids of the tasks Redis delivered to a worker and holds unacknowledged (running,
    prefetched, or waiting out a countdown there); None where the transport cannot say."""
    from config.celery import app

    with app.connection_for_read() as connection:
        channel = connection.default_channel
        if not isinstance(channel, kombu_redis.Channel):
            return None
        return _delivered(channel)


def _delivered(channel: kombu_redis.Channel) -> set[str]:
    import json

    return {
        _task_id(json.loads(payload)[0]) for payload in channel.client.hvals(channel.unacked_key)
    }


def _task_id(message: dict) -> str:
    return str((message.get("headers") or {}).get("id") or "")
