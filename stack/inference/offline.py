"""Offline cases: the engine's own batch API in this process (transformers' continuous
batching), all requests handed over at once, ``concurrency`` of them in a batch.

Each request's tokens are stamped by the engine (``record_timestamps``) from the moment
it was added, so TTFT here includes the time a request queued behind the batch: the
offline figure is a throughput figure first. The engine's stamps and its requests'
``created_time`` are ``time.perf_counter()`` in this process (the engine runs in a thread
of it), the clock ``began`` is read from, so durations mix no clocks. A token is stamped
when the engine's host loop takes it, after the step that made it. The paged KV cache is
the engine's; its size is read from its tensors and checked against what torch's
allocator saw it take.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from stack.inference.metrics import RequestRecord


@dataclass
class CacheInfo:
    """The engine's paged KV cache: blocks, tokens, bytes (its tensors' and the allocator's)."""

    block_size: int | None = None
    num_blocks: int | None = None
    bytes: int | None = None
    allocator_bytes: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def tokens(self) -> int | None:
        if self.block_size is None or self.num_blocks is None:
            return None
        return self.block_size * self.num_blocks

    def as_dict(self) -> dict[str, Any]:
        return {
            "block_size": self.block_size,
            "num_blocks": self.num_blocks,
            "tokens": self.tokens,
            "bytes": self.bytes,
            "allocator_bytes": self.allocator_bytes,
            **self.extra,
        }


def _cache_of(manager: Any) -> CacheInfo:
    processor = getattr(manager, "batch_processor", None)
    cache = getattr(processor, "cache", None)
    if cache is None:
        return CacheInfo()
    tensors = list(getattr(cache, "key_cache", [])) + list(getattr(cache, "value_cache", []))
    # Each tensor is (token slots, KV heads, head_dim) for one layer's K or V: a slot's
    # bytes summed over them is what one token costs, read from the engine itself. The
    # engine adds two padding blocks to the blocks it hands out; they are in ``bytes``.
    per_token = sum(t[0].numel() * t.element_size() for t in tensors) if tensors else None
    return CacheInfo(
        block_size=getattr(cache, "block_size", None),
        num_blocks=getattr(cache, "num_blocks", None),
        bytes=sum(t.numel() * t.element_size() for t in tensors) if tensors else None,
        extra={
            "max_batch_tokens": getattr(cache, "max_batch_tokens", None),
            "engine_kv_bytes_per_token": per_token,
        },
    )


class BlocksInUse:
    """The most cache blocks the engine held at once, polled from a thread: what the paged
    cache really used, set beside what a contiguous one would reserve
    (runner.paged_vs_contiguous). Polled every ``every_s``; a peak shorter than that can be
    missed, so the figure is a lower bound. None where the engine shows no block count."""

    def __init__(self, manager: Any, every_s: float = 0.005) -> None:
        self._manager = manager
        self._every = every_s
        self._stop = threading.Event()
        self.peak: int | None = None
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self) -> None:
        while not self._stop.is_set():
            processor = getattr(self._manager, "batch_processor", None)
            cache = getattr(processor, "cache", None)
            if hasattr(cache, "get_num_free_blocks"):
                used = cache.num_blocks - cache.get_num_free_blocks()
                self.peak = max(self.peak or 0, used)
            self._stop.wait(self._every)

    def __enter__(self) -> BlocksInUse:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def cb_config(
    concurrency: int,
    block_size: int,
    num_blocks: int,
    max_batch_tokens: int,
    cuda_graphs: bool | None = None,
) -> Any:
    """The engine's settings: ``concurrency`` requests per batch; 0 leaves a size to the
    engine (on a GPU it fills the free memory's share it is allowed); ``cuda_graphs``
    None lets the engine decide."""
    from transformers.generation.configuration_utils import ContinuousBatchingConfig

    return ContinuousBatchingConfig(
        block_size=block_size,
        num_blocks=num_blocks or None,
        max_batch_tokens=max_batch_tokens or None,
        max_requests_per_batch=concurrency,
        use_cuda_graph=cuda_graphs,
    )


def run_case(
    model: Any,
    prompts: list[list[int]],
    max_tokens: list[int],
    *,
    concurrency: int,
    block_size: int,
    num_blocks: int,
    max_batch_tokens: int,
    timeout_s: float,
    cuda: bool,
    cuda_graphs: bool | None = None,
    on_start: Callable[[], None] | None = None,
) -> tuple[list[RequestRecord], float, CacheInfo]:
    """Every prompt through one continuous-batching session; the records, the wall time
    from the first request added to the last token, and the cache it used."""
    import torch
    from transformers import GenerationConfig

    generation = GenerationConfig(do_sample=False, eos_token_id=-1, pad_token_id=0)
    config = cb_config(concurrency, block_size, num_blocks, max_batch_tokens, cuda_graphs)
    before = torch.cuda.memory_allocated() if cuda else None
    with model.continuous_batching_context_manager(
        generation_config=generation,
        continuous_batching_config=config,
        block=True,
        timeout=timeout_s,
        warmup=cuda,
    ) as manager:
        if on_start is not None:
            on_start()  # a mark at the first request: the validation clock, the energy window
        began = time.perf_counter()
        with BlocksInUse(manager) as in_use:
            records = _serve(manager, prompts, max_tokens, began, timeout_s)
        cache = _cache_of(manager)
        cache.extra["peak_blocks_in_use"] = in_use.peak
        if cuda and before is not None:
            cache.allocator_bytes = torch.cuda.memory_allocated() - before
    done = [r.token_times[-1] for r in records.values() if r.token_times]
    duration = (max(done) - began) if done else time.perf_counter() - began
    return list(records.values()), duration, cache


def _serve(
    manager: Any, prompts: list[list[int]], max_tokens: list[int], began: float, timeout_s: float
) -> dict[str, RequestRecord]:
    """Hand every prompt to the engine and collect its answers (or why none came)."""
    records: dict[str, RequestRecord] = {}
    for i, (ids, n) in enumerate(zip(prompts, max_tokens, strict=True)):
        rid = f"r{i}"
        records[rid] = RequestRecord(start=time.perf_counter(), input_len=len(ids))
        added = manager.add_request(ids, request_id=rid, max_new_tokens=n, record_timestamps=True)
        if added is None:  # the engine dropped it (it accepts no more): no answer comes
            records[rid].error = "the engine refused the request"
    left = {rid for rid, r in records.items() if r.error is None}
    deadline, stopped = began + timeout_s, False
    while left and time.perf_counter() < deadline:
        result = manager.get_result(timeout=1)
        if result is None:
            if not manager.is_running():
                stopped = True
                break
            continue
        if not result.is_finished() or result.request_id not in left:
            continue
        left.discard(result.request_id)
        record = records[result.request_id]
        record.start = result.created_time
        record.token_times = list(result.timestamps or [])
        record.output_len = len(result.generated_tokens)
        record.error = result.error
    for rid in left:
        records[rid].error = (
            "the engine stopped before answering"
            if stopped
            else "no answer before the case's time limit"
        )
    return records
