"""What a review of the measurement code found: each test failed before its fix.

The client's cases run against a raw server on 127.0.0.1 that writes scripted bytes, so
the edge a test names (a CRLF event, a trailer, a hung answer) is exactly what it gets.
"""

from __future__ import annotations

import asyncio
import json
import random
import time

import pytest

from stack.inference import offline
from stack.inference.client import Pool, Target, arrival_offsets, run_load, send
from stack.inference.metrics import RequestRecord, summarize
from stack.inference.prompts import Lengths, make_prompts, output_lengths

CLOSE = b"<close the connection>"
HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"


def chunk(data: bytes, ext: bytes = b"") -> bytes:
    return b"%x%s\r\n%s\r\n" % (len(data), ext, data)


def event(text: str, sep: bytes = b"\n") -> bytes:
    payload = json.dumps({"choices": [{"index": 0, "text": text}]}).encode()
    return b"data: " + payload + sep + sep


def usage(n: int, sep: bytes = b"\n") -> bytes:
    payload = json.dumps({"choices": [], "usage": {"completion_tokens": n, "prompt_tokens": 3}})
    return b"data: " + payload.encode() + sep + sep


class Scripted:
    """Answers each request (one per connection's turn) with the next script's bytes:
    a list of byte strings written with a flush between them; None in it means: hang,
    CLOSE: close the connection."""

    def __init__(self, scripts):
        self.scripts = list(scripts)
        self.connections = 0
        self.server = None
        self.port = 0

    async def __aenter__(self):
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc):
        self.server.close()

    async def _handle(self, reader, writer):
        self.connections += 1
        try:
            while self.scripts:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    int(line.split(b":")[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length")
                )
                await reader.readexactly(length)
                for piece in self.scripts.pop(0):
                    if piece is None:
                        await asyncio.sleep(3600)
                    if piece == CLOSE:
                        return
                    writer.write(piece)
                    await writer.drain()
                    await asyncio.sleep(0.01)
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    def target(self):
        return Target("127.0.0.1", self.port, "m")


def run(coro):
    return asyncio.run(coro)


def answered(script: list[bytes], prompt: list[int], max_tokens: int):
    """One request's record, sent to a server that plays ``script``."""

    async def go():
        async with Scripted([script]) as server:
            pool = Pool(server.target())
            try:
                return await send(pool, prompt, len(prompt), max_tokens)
            finally:
                pool.close()

    return run(go())


@pytest.mark.process
def test_events_whose_lines_end_in_crlf_are_read():
    # sse-starlette separates events with CRLF; a client splitting on LF LF saw no event
    crlf = b"\r\n"
    body = event(" a", crlf) + event(" b", crlf) + usage(2, crlf)
    script = [HEAD + b"\r\n", chunk(body[:30]), chunk(body[30:]), b"0\r\n\r\n"]

    record = answered(script, [1, 2, 3], 2)
    assert record.ok, record.error
    assert len(record.token_times) == 2 and record.tokens_out == 2


@pytest.mark.process
def test_a_crlf_split_across_two_reads_ends_its_event_once():
    crlf = b"\r\n"
    first, second = event(" a", crlf), event(" b", crlf)
    cut = len(first) - 3  # ...}\r | \n\r\n
    script = [
        HEAD + b"\r\n",
        chunk(first[:cut]),
        chunk(first[cut:] + second),
        chunk(usage(2, crlf)),
        b"0\r\n\r\n",
    ]

    record = answered(script, [1], 2)
    assert record.ok, record.error
    assert len(record.token_times) == 2


@pytest.mark.process
def test_chunk_extensions_and_an_event_split_across_chunks_are_read():
    body = event(" a") + event(" b")
    script = [
        HEAD + b"\r\n",
        chunk(body[:10], b";name=value"),
        chunk(body[10:], b";x"),
        b"0\r\n\r\n",
    ]

    record = answered(script, [1], 2)
    assert record.ok and len(record.token_times) == 2


@pytest.mark.process
def test_a_trailer_after_the_last_chunk_leaves_the_connection_usable():
    # The trailer's lines were left unread: the next request on the connection read them
    # as its status line ("not an HTTP response").
    answer = [HEAD + b"Trailer: X-Done\r\n\r\n", chunk(event(" a")), b"0\r\nX-Done: 1\r\n\r\n"]

    async def go():
        async with Scripted([answer, list(answer)]) as server:
            pool = Pool(server.target())
            try:
                first = await send(pool, [1], 1, 1)
                second = await send(pool, [1], 1, 1)
            finally:
                pool.close()
            return first, second, server.connections

    first, second, connections = run(go())
    assert first.ok, first.error
    assert second.ok, second.error
    assert connections == 1  # the keep-alive connection was reused


@pytest.mark.process
def test_a_connection_the_server_closes_is_closed_not_dropped_open():
    answer = [HEAD + b"Connection: close\r\n\r\n", chunk(event(" a")), b"0\r\n\r\n"]

    async def go():
        async with Scripted([answer]) as server:
            pool = Pool(server.target())
            got = []
            real_get = pool.get

            async def spy():
                conn = await real_get()
                got.append(conn)
                return conn

            pool.get = spy
            record = await send(pool, [1], 1, 1)
            return record, got[0].writer.is_closing(), pool.idle

    record, closing, idle = run(go())
    assert record.ok
    assert closing, "an unusable connection was left open: a file descriptor leaks per request"
    assert idle == []


@pytest.mark.process
def test_a_server_that_never_answers_fails_the_request_at_its_time_limit():
    async def go():
        async with Scripted([[HEAD + b"\r\n", chunk(event(" a")), None]]) as server:
            pool = Pool(server.target())
            t0 = time.perf_counter()
            try:
                record = await send(pool, [1], 1, 4, timeout_s=0.3)
            finally:
                idle = list(pool.idle)
                pool.close()
            return record, time.perf_counter() - t0, idle

    record, waited, idle = run(go())
    assert waited < 2.0
    assert not record.ok and "0.3 s" in record.error
    assert record.token_times  # the token that came is kept, the request still failed
    assert idle == []  # a half-read connection is never reused


@pytest.mark.process
def test_a_load_against_a_hung_server_ends_at_its_time_limit():
    async def go():
        async with Scripted([[None]] * 4) as server:
            t0 = time.perf_counter()
            records, _ = await run_load(
                server.target(), [[1]] * 4, [1] * 4, [2] * 4, concurrency=1, timeout_s=0.4
            )
            return records, time.perf_counter() - t0

    records, waited = run(go())
    assert waited < 2.0  # not 4 x 0.4 s: the limit is the load's, not each request's
    assert all(not r.ok for r in records) and len(records) == 4
    assert "not sent" in records[-1].error


@pytest.mark.process
def test_a_load_above_the_open_file_limit_raises_the_limit_rather_than_failing():
    resource = pytest.importorskip("resource")
    from bench.streaming_server import StreamingServer

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    n = 160
    if hard != resource.RLIM_INFINITY and hard < 4 * n:
        pytest.skip("the hard limit is too low to test")

    async def go():
        server = StreamingServer(ttft_s=0.3)  # every request in flight at once
        await server.start()
        try:
            return await run_load(
                Target("127.0.0.1", server.port, "m"),
                [[16]] * n,
                [1] * n,
                [2] * n,
                concurrency=n,
            )
        finally:
            await server.stop()

    resource.setrlimit(resource.RLIMIT_NOFILE, (n, hard))  # fewer than the sockets needed
    try:
        records, _ = run(go())
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    failed = [r.error for r in records if not r.ok]
    assert not failed, failed[:2]


@pytest.mark.process
@pytest.mark.parametrize(
    ("answer", "says"),
    [
        # a 200 that is not a stream: no token, said so
        (
            [b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"],
            "no token",
        ),
        # the server closes mid-stream, after a token: failed, not a short success
        ([HEAD + b"\r\n", chunk(event(" a")), b"5\r\nda", CLOSE], "IncompleteReadError"),
        # headers past the client's limit: an error, no hang
        ([b"HTTP/1.1 200 OK\r\nX-Big: " + b"x" * 70000 + b"\r\n\r\n"], "Error"),
    ],
)
def test_answers_that_are_no_complete_stream_fail_and_the_next_request_still_runs(answer, says):
    good = [HEAD + b"\r\n", chunk(event(" a")), b"0\r\n\r\n"]

    async def go():
        async with Scripted([answer, good]) as s:
            pool = Pool(s.target())
            try:
                first = await send(pool, [1], 1, 1, timeout_s=5)
                second = await send(pool, [1], 1, 1, timeout_s=5)
            finally:
                pool.close()
            return first, second

    first, second = run(go())
    assert not first.ok and says in first.error
    assert second.ok, second.error


def test_a_usage_count_of_zero_beside_arrivals_counts_the_arrivals():
    # vLLM takes a falsy count as none; 0 tokens beside 3 arrivals made TPOT vanish and
    # the output throughput 0
    record = RequestRecord(start=0.0, input_len=4, token_times=[0.1, 0.2, 0.3], output_len=0)
    assert record.tokens_out == 3
    assert summarize([record], 1.0)["output_throughput"] == pytest.approx(3.0)


class _RefusingManager:
    """A continuous-batching manager that drops every request (accepts no more)."""

    def add_request(self, ids, **kwargs):
        return None

    def get_result(self, timeout=None):
        time.sleep(min(timeout or 0, 0.05))
        return None

    def is_running(self):
        return True


class _Model:
    def __init__(self, manager):
        self.manager = manager

    def continuous_batching_context_manager(self, **kwargs):
        import contextlib

        return contextlib.nullcontext(self.manager)


def test_a_request_the_engine_drops_fails_at_once_not_at_the_time_limit():
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    t0 = time.perf_counter()
    records, _, _ = offline.run_case(
        _Model(_RefusingManager()),
        [[16, 17]],
        [4],
        concurrency=1,
        block_size=16,
        num_blocks=8,
        max_batch_tokens=0,
        timeout_s=3.0,
        cuda=False,
    )
    assert time.perf_counter() - t0 < 2.0
    assert records[0].error == "the engine refused the request"


def test_seeded_draws_are_the_same_on_every_python():
    """Pinned values: random's algorithms behind these draws (getrandbits-based randrange,
    Kinderman-Monahan normalvariate, gammavariate) are unchanged since Python 3.2, but only
    ``random()`` is promised stable; a Python that changes one fails here, not silently."""
    assert make_prompts(2, Lengths("uniform", 4, low=2, high=5), 1000, seed=3) == PINNED_PROMPTS
    assert output_lengths(4, Lengths("lognormal", 64), seed=3) == PINNED_LOGNORMAL
    assert [round(t, 6) for t in arrival_offsets(4, 10.0, seed=3)] == PINNED_OFFSETS
    assert random.Random(3).random() == pytest.approx(0.23796462709189137)


# Drawn on CPython 3.11.
PINNED_PROMPTS = [[394, 953, 634], [501, 656, 610]]
PINNED_LOGNORMAL = [43, 54, 24, 102]
PINNED_OFFSETS = [0.0, 0.097525, 0.232922, 0.391491]
