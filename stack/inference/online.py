"""Online cases: an OpenAI-compatible streaming server this job starts on 127.0.0.1
(``transformers serve --continuous-batching``), loaded by client.py.

The server is a child process of the job, so it lives in the job's sandbox or container
and dies with it; it listens on the loopback only. Ready means its /health answers and a
first completion streams (a model loads on first use): waited for as states, with the
server's own exit and a time limit as the other ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stack.inference.client import Pool, Target, run_load, send

HOST = "127.0.0.1"


class ServerError(RuntimeError):
    """The server would not start or answer; the message holds its last words."""


@dataclass(frozen=True)
class ServerSettings:
    """How the server runs the model (the engine's settings, as its CLI takes them)."""

    device: str
    dtype: str
    attn: str
    block_size: int
    num_blocks: int
    max_batch_tokens: int
    start_timeout_s: float
    cuda_graphs: bool = False


def free_port() -> int:
    """A port nothing listens on now (the OS's pick, on the loopback)."""
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def transformers_serve_argv(folder: Path, port: int, settings: ServerSettings) -> list[str]:
    """``transformers serve`` for one model with continuous batching, as this job runs it."""
    argv = [
        sys.executable,
        "-m",
        "transformers.cli.transformers",
        "serve",
        str(folder),
        "--continuous-batching",
        "--device",
        settings.device,
        "--dtype",
        settings.dtype,
        "--attn-implementation",
        settings.attn.removeprefix("paged|"),  # the server pages it itself (--continuous-batching)
        "--host",
        HOST,
        "--port",
        str(port),
        "--cb-block-size",
        str(settings.block_size),
        "--log-level",
        "warning",
    ]
    if settings.num_blocks:
        argv += ["--cb-num-blocks", str(settings.num_blocks)]
    if settings.cuda_graphs:
        argv.append("--cb-use-cuda-graph")
    if settings.max_batch_tokens:
        argv += ["--cb-max-batch-tokens", str(settings.max_batch_tokens)]
    return argv


def _health(port: int) -> bool:
    try:
        with socket.create_connection((HOST, port), timeout=2) as sock:
            sock.sendall(
                f"GET /health HTTP/1.1\r\nHost: {HOST}\r\nConnection: close\r\n\r\n".encode()
            )
            return sock.recv(64).startswith(b"HTTP/1.1 200")
    except OSError:
        return False


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


@contextlib.contextmanager
def serving(folder: Path, settings: ServerSettings, log_path: Path) -> Iterator[Target]:
    """The server up and answering for the block's length; stopped (then killed) after."""
    port = free_port()
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "DISABLE_VERSION_CHECK": "1",
    }
    argv = transformers_serve_argv(folder, port, settings)
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env
        )
    try:
        deadline = time.monotonic() + settings.start_timeout_s
        while not _health(port):
            if proc.poll() is not None:
                raise ServerError(f"the server exited ({proc.returncode}):\n{_tail(log_path)}")
            if time.monotonic() > deadline:
                waited = f"{settings.start_timeout_s:.0f} s"
                raise ServerError(f"the server did not answer in {waited}:\n{_tail(log_path)}")
            time.sleep(0.2)
        target = Target(HOST, port, str(folder))
        first = asyncio.run(_one(target, deadline))
        if not first.ok:
            raise ServerError(
                f"the server's first completion failed: {first.error}\n{_tail(log_path)}"
            )
        yield target
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


async def _one(target: Target, deadline: float) -> Any:
    pool = Pool(target)
    try:
        return await asyncio.wait_for(
            send(pool, "t16 t17 t18 t19", 4, 2), timeout=max(1.0, deadline - time.monotonic())
        )
    finally:
        pool.close()


def run_case(
    target: Target,
    prompts: list[str],
    input_lens: list[int],
    max_tokens: list[int],
    *,
    concurrency: int,
    rate: float,
    seed: int,
    timeout_s: float,
) -> tuple[list[Any], float]:
    """One load against the server, held to the case's limit: the records and the duration."""
    return asyncio.run(
        run_load(
            target,
            prompts,
            input_lens,
            max_tokens,
            concurrency=concurrency,
            rate=rate,
            seed=seed,
            timeout_s=timeout_s,
        )
    )
