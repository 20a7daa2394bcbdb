"""The embedded broker's transport (config/embedded_broker.py) with several real processes at once.

Writers and readers are separate processes on one broker folder, as web, worker and beat
are under `make run`; nothing is mocked, and each test counts what arrived.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import queue as stdlib_queue
import time
from pathlib import Path

import pytest
from kombu import Connection, Exchange, Queue

from config.embedded_broker import filesystem_options
from tests.waits import JOB_S

TRANSPORT = "config.embedded_broker:Transport"
# Spawned, not forked: a fork of the test process copies whatever locks its other threads
# (earlier tests' clients, loggers) hold at that instant, and a child can hang on one.
SPAWN = multiprocessing.get_context("spawn")


def connect(broker: Path) -> Connection:
    return Connection(
        "filesystem://localhost/",
        transport=TRANSPORT,
        transport_options=filesystem_options(broker, polling_interval=0.01),
    )


def write(broker: Path, writer: int, count: int, go) -> None:
    go.wait()
    with connect(broker) as connection:
        messages = connection.SimpleQueue("stress")
        for n in range(count):
            # Large enough that a write is not one instant: a half-written file shows.
            messages.put({"writer": writer, "n": n, "pad": "x" * 4096})
        messages.close()


def read(broker: Path, out, go, stop) -> None:
    go.wait()
    got, error = [], None
    try:
        with connect(broker) as connection:
            messages = connection.SimpleQueue("stress")
            while not stop.is_set():
                try:
                    message = messages.get(timeout=0.2)
                except stdlib_queue.Empty:
                    continue
                got.append((message.payload["writer"], message.payload["n"]))
                message.ack()
    except Exception as exc:
        error = repr(exc)
    out.put((got, error))


def start(processes: list) -> None:
    for process in processes:
        process.start()


@pytest.mark.process
def test_a_message_file_is_never_seen_before_it_is_whole(tmp_path):
    broker = tmp_path / "broker"
    filesystem_options(broker)
    go = SPAWN.Event()
    writers = [SPAWN.Process(target=write, args=(broker, w, 400, go)) for w in range(4)]
    start(writers)
    go.set()
    folder = broker / "queue"
    seen, partial = 0, []
    deadline = time.monotonic() + JOB_S
    while any(w.is_alive() for w in writers) or seen == 0:
        assert time.monotonic() < deadline, "the writers did not finish"
        for name in os.listdir(folder):
            if not name.endswith(".msg"):
                continue
            try:
                raw = (folder / name).read_bytes()
            except FileNotFoundError:
                continue
            seen += 1
            try:
                json.loads(raw)
            except ValueError:
                partial.append((name, len(raw)))
    for w in writers:
        w.join(JOB_S)
    assert seen > 0
    assert partial == [], f"{len(partial)} message files read before they were written"


@pytest.mark.process
def test_readers_and_writers_in_many_processes_deliver_every_message_once(tmp_path):
    broker = tmp_path / "broker"
    go, stop, out = SPAWN.Event(), SPAWN.Event(), SPAWN.Queue()
    writers = [SPAWN.Process(target=write, args=(broker, w, 500, go)) for w in range(6)]
    readers = [SPAWN.Process(target=read, args=(broker, out, go, stop)) for _ in range(4)]
    start(writers + readers)
    go.set()
    for w in writers:
        w.join(JOB_S)
        assert w.exitcode == 0, "a writer did not finish"
    deadline = time.monotonic() + JOB_S
    while any(n.endswith(".msg") for n in os.listdir(broker / "queue")):
        assert time.monotonic() < deadline, "the readers stopped taking messages"
        time.sleep(0.1)
    stop.set()
    results = [out.get(timeout=JOB_S) for _ in readers]
    for r in readers:
        r.join(JOB_S)
    assert [error for _, error in results if error] == []
    got = [item for items, _ in results for item in items]
    assert len(got) == 6 * 500 and len(set(got)) == 6 * 500
    assert os.listdir(broker / "queue") == [] and os.listdir(broker / "processed") == []


def bind(broker: Path, name: str, go) -> None:
    go.wait()
    with connect(broker) as connection:
        Queue(name, Exchange("shared", type="direct"), routing_key=name)(connection).declare()


@pytest.mark.process
def test_queues_bound_at_once_from_many_processes_all_stay_bound(tmp_path):
    broker = tmp_path / "broker"
    for attempt in range(5):  # a fresh exchange file each time: its creation is the race
        exchange = broker / "control" / "shared.exchange"
        exchange.unlink(missing_ok=True)
        go = SPAWN.Event()
        names = [f"q{attempt}-{n}" for n in range(8)]
        binders = [SPAWN.Process(target=bind, args=(broker, name, go)) for name in names]
        start(binders)
        go.set()
        for b in binders:
            b.join(JOB_S)
        assert [b.exitcode for b in binders] == [0] * len(names)
        bound = {row[2] for row in json.loads(exchange.read_bytes())}
        assert bound == set(names)


@pytest.mark.parametrize("sub", ["queue", "processed", "control"])
def test_the_options_create_the_folders_the_transport_renames_between(tmp_path, sub):
    options = filesystem_options(tmp_path / "b")
    assert (tmp_path / "b" / sub).is_dir()
    assert Path(options["processed_folder"]).parent == Path(options["data_folder_in"]).parent
