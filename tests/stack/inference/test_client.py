"""The streaming client against a server that writes each token at a known time."""

import asyncio

import pytest

from bench.streaming_server import StreamingServer
from stack.inference.client import Target, arrival_offsets, run_load

# A server on 127.0.0.1 in the test's own loop: the process tier (tests/tiers.py).
pytestmark = pytest.mark.process


def load(server_kwargs, n=8, concurrency=4, max_tokens=5, rate=0.0):
    async def go():
        server = StreamingServer(**server_kwargs)
        await server.start()
        try:
            target = Target("127.0.0.1", server.port, "m")
            prompts = [[16 + i] * (i + 1) for i in range(n)]
            return await run_load(
                target,
                prompts,
                [len(p) for p in prompts],
                [max_tokens] * n,
                concurrency=concurrency,
                rate=rate,
            ), server.served
        finally:
            await server.stop()

    return asyncio.run(go())


def test_the_client_times_tokens_as_the_server_writes_them():
    (records, duration), served = load({"ttft_s": 0.05, "gap_s": 0.02})
    assert served == 8 and all(r.ok for r in records)
    for r in records:
        assert r.tokens_out == 5  # the usage event's count
        assert r.ttft() == pytest.approx(0.05, abs=0.02)
        assert all(gap == pytest.approx(0.02, abs=0.015) for gap in r.itls())
    # 8 requests, 4 at a time, each ~0.13 s: two waves
    assert 0.2 < duration < 0.6


def test_the_usage_event_gives_the_prompt_tokens_the_server_counted():
    (records, _), _ = load({})
    assert [r.input_len for r in records] == list(range(1, 9))


def test_a_refused_request_is_a_failed_record_saying_the_status():
    (records, _), _ = load({"fail_status": 503}, n=2)
    assert all(not r.ok and r.error.startswith("HTTP 503") for r in records)


def test_an_unreachable_server_fails_each_request_and_loses_none():
    async def go():
        target = Target("127.0.0.1", 9, "m")  # the discard port: nothing listens
        return await run_load(target, [[1, 2]], [2], [4], concurrency=1)

    records, _ = asyncio.run(go())
    assert len(records) == 1 and "Error" in records[0].error


def test_a_request_rate_spaces_arrivals_as_a_poisson_process_of_that_rate():
    offsets = arrival_offsets(2000, rate=50.0, seed=0)
    assert offsets[0] == 0.0 and offsets == sorted(offsets)
    assert offsets[-1] / 1999 == pytest.approx(1 / 50.0, rel=0.1)
    assert arrival_offsets(3, rate=0, seed=0) == [0.0, 0.0, 0.0]
