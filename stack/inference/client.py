"""A streaming client for OpenAI-compatible completion servers, on asyncio streams alone.

Why our own: guidellm and ``vllm bench serve`` are the well-kept clients, and their JSON is
read by parsers.py where an operator runs them, but neither can run in a job image
without its own stack (vllm bench serve needs vLLM itself; guidellm pulls a tokenizer
from a hub). This client is plain asyncio (the job's run path is stdlib-only): HTTP/1.1
with keep-alive, chunked transfer, server-sent events, one connection per request in
flight. Its metrics are vLLM's (metrics.py); bench/inference_client.py measures what it
adds to a request (docs/benchmarks.md).

A token's arrival is the time the bytes holding its event were read, as in vLLM's client
(it stamps each chunk aiohttp yields).

Where it differs from vLLM's client, and why:
- an event whose ``text`` is empty is no token (vLLM counts any event with ``choices``):
  transformers serve ends its stream with an empty-text event carrying the usage, which
  vLLM would time as a last token; a request's start is taken once it has its
  connection (vLLM's includes the pool's wait and a new connection's connect);
- a stream needs no ``[DONE]`` (transformers serve sends none; vLLM needs none either);
- every request has a time limit (``timeout_s``, vLLM: 6 h per request), and
  ``run_load``'s is the whole load's: no request runs past it, none starts after it;
- the arrivals' gaps are not rescaled to sum to n / rate (vLLM rescales them), and the
  first request goes at once (vLLM's waits one gap).
Server-sent events may end their lines in CRLF, LF or CR (sse-starlette sends CRLF).
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

from stack.inference.metrics import RequestRecord

MAX_HEADER_BYTES = 64 * 1024
# A request's time limit when none is given: the inference-bench kind's default case limit.
REQUEST_TIMEOUT_S = 1800.0


class ClientError(Exception):
    """The server answered something that is not a completion stream."""


@dataclass(frozen=True)
class Target:
    """Where requests go: a server on this host, its model name and completion path."""

    host: str
    port: int
    model: str
    path: str = "/v1/completions"


class _Connection:
    """One keep-alive HTTP/1.1 connection."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.usable = True

    def close(self) -> None:
        self.usable = False
        self.writer.close()


class Pool:
    """Idle connections to one server, reused newest first."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.idle: list[_Connection] = []

    async def get(self) -> _Connection:
        while self.idle:
            conn = self.idle.pop()
            if conn.usable and not conn.reader.at_eof():
                return conn
            conn.close()
        reader, writer = await asyncio.open_connection(
            self.target.host, self.target.port, limit=MAX_HEADER_BYTES
        )
        return _Connection(reader, writer)

    def put(self, conn: _Connection) -> None:
        if conn.usable:
            self.idle.append(conn)
        else:
            conn.close()  # a connection that cannot be reused is closed, not dropped

    def close(self) -> None:
        for conn in self.idle:
            conn.close()
        self.idle.clear()


async def _read_head(reader: asyncio.StreamReader) -> tuple[int, dict[str, str]]:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[1].isdigit():
        raise ClientError(f"not an HTTP response: {lines[0][:120]!r}")
    headers = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if sep:
            headers[name.strip().lower()] = value.strip()
    return int(parts[1]), headers


async def _body_chunks(
    reader: asyncio.StreamReader, headers: dict[str, str]
) -> AsyncIterator[bytes]:
    """The body as it arrives: chunked, sized, or to the connection's end."""
    if "chunked" in headers.get("transfer-encoding", "").lower():
        while True:
            size_line = await reader.readuntil(b"\r\n")
            size = int(size_line.split(b";", 1)[0].strip() or b"0", 16)
            if size == 0:  # the last chunk: trailer fields, if any, up to an empty line
                while await reader.readuntil(b"\r\n") != b"\r\n":
                    pass
                return
            data = await reader.readexactly(size + 2)
            yield data[:-2]
    elif "content-length" in headers:
        left = int(headers["content-length"])
        while left > 0:
            data = await reader.read(min(left, 65536))
            if not data:
                raise ClientError("the server closed the connection mid-body")
            left -= len(data)
            yield data
    else:
        while data := await reader.read(65536):
            yield data


def _event_payloads(buffer: bytearray) -> list[str]:
    """Take whole server-sent events out of the buffer; their ``data:`` payloads.

    Lines may end in CRLF, LF or CR (the SSE spec allows each): made LF here. A CR last in
    the buffer waits for the next read, being maybe half of a CRLF split across two.
    """
    if b"\r" in buffer:
        held = buffer.endswith(b"\r")
        text = bytes(buffer[:-1] if held else buffer)
        buffer[:] = text.replace(b"\r\n", b"\n").replace(b"\r", b"\n") + (b"\r" if held else b"")
    payloads = []
    while True:
        cut = buffer.find(b"\n\n")
        if cut < 0:
            return payloads
        event = bytes(buffer[: cut + 2])
        del buffer[: cut + 2]
        data = [
            line[5:].lstrip()
            for line in event.decode("utf-8", "replace").split("\n")
            if line.startswith("data:")
        ]
        if data:
            payloads.append("\n".join(data))


def _apply(payload: str, record: RequestRecord, now: float) -> bool:
    """One event onto the record; True at the stream's end ([DONE])."""
    if payload.strip() == "[DONE]":
        return True
    try:
        message = json.loads(payload)
    except ValueError:
        raise ClientError(f"an event that is not JSON: {payload[:120]!r}") from None
    if not isinstance(message, dict):
        raise ClientError(f"an event that is not an object: {payload[:120]!r}")
    if message.get("error"):
        record.error = str(message["error"])[:500]
        return True
    choices = message.get("choices") or []
    if choices and isinstance(choices[0], dict):
        text = choices[0].get("text")
        if text is None:
            text = (choices[0].get("delta") or {}).get("content")
        if text:
            record.token_times.append(now)
    usage = message.get("usage")
    if isinstance(usage, dict):
        if isinstance(usage.get("completion_tokens"), int):
            record.output_len = usage["completion_tokens"]
        if isinstance(usage.get("prompt_tokens"), int):
            record.input_len = usage["prompt_tokens"]
    return False


async def send(
    pool: Pool,
    prompt: str | list[int],
    input_len: int,
    max_tokens: int,
    extra: dict[str, Any] | None = None,
    timeout_s: float | None = REQUEST_TIMEOUT_S,
) -> RequestRecord:
    """One streamed completion; its record says when each token came, or what went wrong.

    A request with no complete answer within ``timeout_s`` (None: no limit) fails saying
    so, its connection closed: a server that never answers cannot hang the load.
    """
    record = RequestRecord(start=time.perf_counter(), input_len=input_len)
    try:
        await asyncio.wait_for(_exchange(pool, prompt, max_tokens, extra, record), timeout_s)
    except TimeoutError:
        record.error = f"no complete answer within {timeout_s:g} s"
    return record


def request_bytes(
    target: Target,
    prompt: str | list[int],
    max_tokens: int,
    extra: dict[str, Any] | None = None,
) -> bytes:
    """One streamed completion request as it goes on the wire (the overhead bench's bare
    reader writes these same bytes)."""
    body = json.dumps(
        {
            "model": target.model,
            "prompt": prompt,
            "max_tokens": max_tokens,
            "stream": True,
            **(extra or {}),
        }
    ).encode()
    head = (
        f"POST {target.path} HTTP/1.1\r\nHost: {target.host}:{target.port}\r\n"
        "Content-Type: application/json\r\nAccept: text/event-stream\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    return head + body


async def _exchange(
    pool: Pool,
    prompt: str | list[int],
    max_tokens: int,
    extra: dict[str, Any] | None,
    record: RequestRecord,
) -> None:
    payload = request_bytes(pool.target, prompt, max_tokens, extra)
    conn = None
    try:
        conn = await pool.get()
        record.start = time.perf_counter()
        conn.writer.write(payload)
        status, headers = await _read_head(conn.reader)
        if headers.get("connection", "").lower() == "close":
            conn.usable = False
        if status != 200:
            text = b"".join([c async for c in _body_chunks(conn.reader, headers)])
            record.error = f"HTTP {status}: {text.decode('utf-8', 'replace')[:300]}"
            return
        buffer = bytearray()
        async for chunk in _body_chunks(conn.reader, headers):
            now = time.perf_counter()
            buffer += chunk
            for payload in _event_payloads(buffer):
                _apply(payload, record, now)
        if not record.token_times and record.error is None:
            record.error = "the stream ended with no token"
    except (
        OSError,
        asyncio.IncompleteReadError,
        asyncio.LimitOverrunError,
        ValueError,
        ClientError,
    ) as exc:
        record.error = f"{type(exc).__name__}: {exc}"[:500]
        if conn is not None:
            conn.close()
    except BaseException:  # cancelled (a time limit): the answer is half read
        if conn is not None:
            conn.close()
        raise
    finally:
        if conn is not None:
            pool.put(conn)


def arrival_offsets(n: int, rate: float, seed: int, burstiness: float = 1.0) -> list[float]:
    """When each request is sent, seconds from the start: all at once for rate 0 (inf), else
    gaps from a gamma distribution of mean 1/rate (burstiness 1: Poisson), as vLLM does."""
    if rate <= 0:
        return [0.0] * n
    rng = random.Random(seed + 2)  # noqa: S311 - reproducible arrivals, not secrets
    t, offsets = 0.0, []
    for _ in range(n):
        offsets.append(t)
        t += rng.gammavariate(burstiness, 1.0 / (rate * burstiness))
    return offsets


def raise_fd_limit(connections: int) -> None:
    """Let this process hold ``connections`` sockets beside what it has open: its soft
    limit of open files raised toward the hard one (a soft limit of 1024 is common, and
    each request in flight holds a socket)."""
    try:
        import resource
    except ImportError:  # not on Unix
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = connections + 256
    if soft != resource.RLIM_INFINITY and soft < want:
        new = want if hard == resource.RLIM_INFINITY else min(want, hard)
        if new > soft:
            resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))


async def run_load(
    target: Target,
    prompts: Sequence[str | list[int]],
    input_lens: Sequence[int],
    max_tokens: Sequence[int],
    *,
    concurrency: int,
    rate: float = 0.0,
    seed: int = 0,
    extra: dict[str, Any] | None = None,
    timeout_s: float | None = REQUEST_TIMEOUT_S,
) -> tuple[list[RequestRecord], float]:
    """Send every prompt, at most ``concurrency`` in flight; the records and the duration
    from the first send to the last token.

    ``timeout_s`` (None: none) bounds the whole load: a request still unanswered then
    fails saying so, and one not yet sent then is not sent (it fails too).
    """
    raise_fd_limit(min(max(1, concurrency), len(prompts)))
    pool = Pool(target)
    gate = asyncio.Semaphore(max(1, concurrency))
    offsets = arrival_offsets(len(prompts), rate, seed)
    began = time.perf_counter()
    deadline = None if timeout_s is None else began + timeout_s

    def unsent(i: int) -> RequestRecord:
        error = f"not sent: the load's {timeout_s:g} s were over"
        return RequestRecord(start=time.perf_counter(), input_len=input_lens[i], error=error)

    async def one(i: int) -> RequestRecord:
        if deadline is not None and began + offsets[i] >= deadline:
            return unsent(i)
        wait = began + offsets[i] - time.perf_counter()
        if wait > 0:
            await asyncio.sleep(wait)
        async with gate:
            left = None if deadline is None else deadline - time.perf_counter()
            if left is not None and left <= 0:
                return unsent(i)
            return await send(pool, prompts[i], input_lens[i], max_tokens[i], extra, left)

    try:
        records = await asyncio.gather(*(one(i) for i in range(len(prompts))))
    finally:
        pool.close()
    ended = max((r.token_times[-1] for r in records if r.token_times), default=time.perf_counter())
    return list(records), ended - began
