"""The latency and throughput definitions, held to vLLM's formulas on hand-computed streams."""

import pytest

from stack.inference.metrics import RequestRecord, distribution, percentile, summarize


def stream(start, times, input_len=10, output_len=None, error=None):
    return RequestRecord(
        start=start,
        input_len=input_len,
        token_times=list(times),
        output_len=output_len,
        error=error,
    )


def test_one_request_has_vllms_ttft_tpot_itl_and_e2el():
    # sent at 1.0 s; tokens at 1.25, 1.30, 1.40, 1.45 s
    record = stream(1.0, [1.25, 1.30, 1.40, 1.45])
    assert record.ttft() == pytest.approx(0.25)
    assert record.e2el() == pytest.approx(0.45)
    # TPOT leaves the first token out: (0.45 - 0.25) / (4 - 1)
    assert record.tpot() == pytest.approx(0.2 / 3)
    assert record.itls() == pytest.approx([0.05, 0.10, 0.05])


def test_a_chunk_of_several_tokens_is_one_itl_gap_but_counts_every_token_in_tpot():
    # 3 arrivals, the server's usage says 5 tokens: TPOT divides by 4, ITL has 2 gaps
    record = stream(0.0, [0.1, 0.2, 0.5], output_len=5)
    assert record.tpot() == pytest.approx(0.4 / 4)
    assert len(record.itls()) == 2


def test_a_one_token_answer_has_no_tpot():
    assert stream(0.0, [0.3]).tpot() is None


def test_percentiles_interpolate_linearly_as_numpy_does():
    values = [1.0, 2.0, 3.0, 4.0, 10.0]
    assert percentile(values, 50) == 3.0
    assert percentile(values, 90) == pytest.approx(4.0 + 0.6 * 6.0)  # rank 3.6
    assert percentile(values, 99) == pytest.approx(4.0 + 0.96 * 6.0)
    assert distribution([]) == {"mean": None, "p50": None, "p90": None, "p99": None}


def test_a_run_summary_counts_only_completed_requests_and_divides_by_the_wall_time():
    records = [
        stream(0.0, [0.1, 0.2], input_len=100),
        stream(0.0, [0.2, 0.4, 0.6], input_len=50),
        stream(0.0, [], input_len=70, error="HTTP 500"),
    ]
    stats = summarize(records, duration_s=2.0)
    assert stats["completed"] == 2 and stats["failed"] == 1
    assert stats["input_tokens"] == 150 and stats["output_tokens"] == 5
    assert stats["request_throughput"] == pytest.approx(1.0)
    assert stats["output_throughput"] == pytest.approx(2.5)
    assert stats["total_token_throughput"] == pytest.approx(77.5)
    assert stats["ttft_ms"]["mean"] == pytest.approx(150.0)
    assert stats["tpot_ms"]["p50"] == pytest.approx(150.0)  # 100 ms and 200 ms
    assert stats["itl_ms"]["p50"] == pytest.approx(200.0)  # gaps 100, 200, 200
    assert stats["e2el_ms"]["p99"] == pytest.approx(200 + 0.99 * 400)


def test_goodput_counts_the_requests_that_kept_every_bound_set_per_second():
    from stack.inference.metrics import Slo, goodput

    records = [
        stream(0.0, [0.1, 0.2, 0.3]),  # TTFT 100 ms, TPOT 100 ms: good
        stream(0.0, [0.5, 0.6, 0.7]),  # TTFT 500 ms: breaks the TTFT bound
        stream(0.0, [0.1, 0.4, 0.7]),  # TPOT 300 ms: breaks the TPOT bound
        stream(0.0, [0.2]),  # one token: no TPOT, keeps the TPOT bound (vLLM: TPOT 0)
        stream(0.0, [], error="HTTP 500"),  # failed: never good
    ]
    slo = Slo(ttft_ms=250, tpot_ms=150)
    result = goodput(records, duration_s=2.0, slo=slo)
    assert result["good"] == 2 and result["request_goodput"] == pytest.approx(1.0)
    assert result["share"] == pytest.approx(0.4)
    assert result["slo"] == {"ttft_ms": 250, "tpot_ms": 150}
    assert goodput(records, 2.0, Slo(e2el_ms=300))["good"] == 2  # 300 and 200 ms E2EL
    assert not Slo() and Slo(tpot_ms=1)
