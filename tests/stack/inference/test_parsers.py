"""The parsers of vllm bench serve and guidellm results, checked on fixtures of each tool.

Numbers are checked against the fixture's own values (read from the file, or
hand-checked), and the per-request samples are checked to recompute the summary the
tool itself wrote. fixtures/README.md says where each fixture's shape comes from.
"""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path
from typing import Any

import pytest

from stack.inference.parsers import (
    ParseError,
    parse_file,
    parse_guidellm,
    parse_vllm_bench_serve,
)
from stack.parsers import ParseError as StackParseError

FIXTURES = Path(__file__).parent / "fixtures"
DETAILED = FIXTURES / "vllm-bench-serve-detailed.json"
DEFAULT = FIXTURES / "vllm-bench-serve-default.json"
LEGACY = FIXTURES / "vllm-benchmark-serving-legacy.json"
GUIDELLM = FIXTURES / "guidellm-0.8.1-concurrent-1-4.json"


def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def numpy_percentile(values: list[float], q: float) -> float:
    """numpy.percentile's default (linear interpolation), which vLLM uses."""
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def write(tmp_path: Path, doc: Any, name: str = "result.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


# ---------------------------------------------------------------- vLLM, --save-detailed


def test_a_detailed_vllm_result_gives_the_files_own_totals_and_case() -> None:
    (record,) = parse_file(DETAILED)
    assert record["tool"] == "vllm-bench-serve"
    assert record["tool_version"] is None  # vLLM writes no version into the file
    assert record["case"] == {
        "model": "meta-llama/Llama-3.1-8B-Instruct",
        "concurrency": 4,
        "request_rate": None,  # the file says "inf": every request at once
        "input_len_mean": pytest.approx(7702 / 15),
        "output_len_mean": pytest.approx(475 / 15),
    }
    stats = record["stats"]
    assert (stats["completed"], stats["failed"]) == (15, 1)
    assert stats["duration_s"] == 1.8734215
    assert (stats["input_tokens"], stats["output_tokens"]) == (7702, 475)
    # Hand check: 15 requests in 1.8734215 s, (7702 + 475) tokens in the same time.
    assert stats["request_throughput"] == pytest.approx(15 / 1.8734215)
    assert stats["output_throughput"] == pytest.approx(475 / 1.8734215)
    assert stats["total_token_throughput"] == pytest.approx(8177 / 1.8734215)


def test_a_detailed_vllm_result_reports_the_percentiles_it_was_asked_for() -> None:
    doc = load(DETAILED)
    (record,) = parse_file(DETAILED)
    for metric in ("ttft", "tpot", "itl", "e2el"):
        assert record["stats"][f"{metric}_ms"] == {
            "mean": doc[f"mean_{metric}_ms"],
            "p50": doc[f"p50_{metric}_ms"],
            "p90": doc[f"p90_{metric}_ms"],
            "p99": doc[f"p99_{metric}_ms"],
        }
    assert record["stats"]["ttft_ms"]["p90"] == pytest.approx(102.803)


def test_detailed_samples_leave_out_the_failed_request_and_recompute_the_summary() -> None:
    doc = load(DETAILED)
    (record,) = parse_file(DETAILED)
    samples = record["samples"]
    assert doc["errors"][11] != "" and doc["ttfts"][11] == 0.0
    assert len(samples["ttft_ms"]) == len(samples["e2el_ms"]) == 15
    assert samples["ttft_ms"][0] == pytest.approx(doc["ttfts"][0] * 1000)
    # One gap per token after the first, over the 15 successful requests.
    assert len(samples["itl_ms"]) == 475 - 15
    for metric in ("ttft", "tpot", "itl", "e2el"):
        values = samples[f"{metric}_ms"]
        assert statistics.fmean(values) == pytest.approx(doc[f"mean_{metric}_ms"], rel=1e-9)
        assert statistics.median(values) == pytest.approx(doc[f"median_{metric}_ms"], rel=1e-9)
        assert statistics.pstdev(values) == pytest.approx(doc[f"std_{metric}_ms"], rel=1e-6)
        for q in (90, 99):
            assert numpy_percentile(values, q) == pytest.approx(doc[f"p{q}_{metric}_ms"])


def test_tpot_samples_follow_vllms_definition_request_by_request() -> None:
    doc = load(DETAILED)
    (record,) = parse_file(DETAILED)
    latency, ttft, out_len = doc["latencies"][0], doc["ttfts"][0], doc["output_lens"][0]
    assert record["samples"]["tpot_ms"][0] == pytest.approx((latency - ttft) / (out_len - 1) * 1000)


# ---------------------------------------------------------------- vLLM, default save


def test_a_default_vllm_result_has_no_e2el_summary_and_only_p99() -> None:
    (record,) = parse_file(DEFAULT)
    stats = record["stats"]
    assert record["case"]["request_rate"] == 2.0
    assert record["case"]["concurrency"] is None
    assert stats["ttft_ms"]["p99"] == pytest.approx(107.84952)
    assert stats["ttft_ms"]["p50"] == pytest.approx(89.0905)  # the file's median
    assert stats["ttft_ms"]["p90"] is None  # not asked for: None, never estimated
    # e2el is not in the default --percentile-metrics (ttft,tpot,itl).
    assert stats["e2el_ms"] == {"mean": None, "p50": None, "p90": None, "p99": None}


def test_a_default_vllm_result_keeps_only_latencies_as_samples() -> None:
    doc = load(DEFAULT)
    (record,) = parse_file(DEFAULT)
    assert record["samples"]["ttft_ms"] == record["samples"]["itl_ms"] == []
    assert record["samples"]["e2el_ms"] == pytest.approx([v * 1000 for v in doc["latencies"]])


def test_latencies_alone_give_no_samples_when_some_request_failed() -> None:
    doc = load(DEFAULT)
    doc["failed"] = 1  # then nothing says which latency belongs to the failure
    assert parse_vllm_bench_serve(doc)["samples"]["e2el_ms"] == []


# ---------------------------------------------------------------- vLLM, benchmark_serving.py


def test_a_legacy_benchmark_serving_result_is_read_without_a_failed_key() -> None:
    doc = load(LEGACY)
    assert "failed" not in doc and "request_goodput:" in doc
    (record,) = parse_file(LEGACY)
    assert record["case"]["model"] == "facebook/opt-125m"
    assert (record["stats"]["completed"], record["stats"]["failed"]) == (8, 0)
    assert record["stats"]["output_tokens"] == sum(doc["output_lens"]) == 206


def test_legacy_samples_rebuild_latency_from_ttft_and_gaps_and_match_the_means() -> None:
    doc = load(LEGACY)
    (record,) = parse_file(LEGACY)
    samples = record["samples"]
    assert samples["e2el_ms"][0] == pytest.approx((doc["ttfts"][0] + sum(doc["itls"][0])) * 1000)
    for metric in ("ttft", "tpot", "itl"):
        assert statistics.fmean(samples[f"{metric}_ms"]) == pytest.approx(
            doc[f"mean_{metric}_ms"], rel=1e-9
        )
        assert numpy_percentile(samples[f"{metric}_ms"], 99) == pytest.approx(
            doc[f"p99_{metric}_ms"]
        )


def test_legacy_failures_are_counted_from_the_per_request_lists() -> None:
    doc = load(LEGACY)
    for key, value in (
        ("input_lens", 0),
        ("output_lens", 0),
        ("ttfts", 0.0),
        ("itls", []),
        ("generated_texts", ""),
        ("errors", "Bad Gateway"),
    ):
        doc[key].append(value)
    record = parse_vllm_bench_serve(doc)
    assert (record["stats"]["completed"], record["stats"]["failed"]) == (8, 1)
    assert len(record["samples"]["ttft_ms"]) == 8


def test_an_appended_vllm_file_gives_one_record_per_line(tmp_path: Path) -> None:
    # --append-result writes each run's JSON on its own line.
    path = tmp_path / "appended.json"
    path.write_text(DEFAULT.read_text() + "\n" + LEGACY.read_text())
    records = parse_file(path)
    assert [r["case"]["model"] for r in records] == [
        "Qwen/Qwen2.5-0.5B-Instruct",
        "facebook/opt-125m",
    ]


# ---------------------------------------------------------------- guidellm


def test_a_guidellm_report_gives_one_record_per_benchmark() -> None:
    records = parse_file(GUIDELLM)
    assert [r["tool"] for r in records] == ["guidellm", "guidellm"]
    assert [r["tool_version"] for r in records] == ["0.8.1", "0.8.1"]
    assert [r["case"]["concurrency"] for r in records] == [1, 4]
    assert {r["case"]["model"] for r in records} == {"fake/tiny-model"}
    assert [r["case"]["request_rate"] for r in records] == [None, None]


def test_guidellm_totals_and_throughputs_come_from_the_successful_requests() -> None:
    doc = load(GUIDELLM)
    first = doc["benchmarks"][0]
    (record, _) = parse_guidellm(doc)
    stats = record["stats"]
    assert (stats["completed"], stats["failed"]) == (10, 2)  # the server failed every 7th
    assert stats["duration_s"] == first["duration"]
    assert (stats["input_tokens"], stats["output_tokens"]) == (290, 170)
    assert record["case"]["input_len_mean"] == pytest.approx(29.0)
    # guidellm's rate means are count / measured duration: vLLM's throughputs.
    assert stats["request_throughput"] == pytest.approx(10 / first["duration"])
    assert stats["output_throughput"] == pytest.approx(170 / first["duration"])
    assert stats["total_token_throughput"] == pytest.approx((290 + 170) / first["duration"])


def test_guidellm_latencies_are_in_milliseconds_with_their_percentiles() -> None:
    doc = load(GUIDELLM)
    metrics = doc["benchmarks"][1]["metrics"]
    record = parse_guidellm(doc)[1]
    ttft = metrics["time_to_first_token_ms"]["successful"]
    assert record["stats"]["ttft_ms"] == {
        "mean": ttft["mean"],
        "p50": ttft["percentiles"]["p50"],
        "p90": ttft["percentiles"]["p90"],
        "p99": ttft["percentiles"]["p99"],
    }
    latency = metrics["request_latency"]["successful"]  # seconds in the file
    assert record["stats"]["e2el_ms"]["mean"] == pytest.approx(latency["mean"] * 1000)
    assert record["stats"]["e2el_ms"]["p99"] == pytest.approx(latency["percentiles"]["p99"] * 1000)
    # guidellm's per-request inter_token_latency_ms is vLLM's TPOT; it has no gap-level ITL.
    itl = metrics["inter_token_latency_ms"]["successful"]
    assert record["stats"]["tpot_ms"]["mean"] == itl["mean"]
    assert record["stats"]["itl_ms"] == {"mean": None, "p50": None, "p90": None, "p99": None}


def test_guidellm_samples_recompute_the_reports_ttft_and_latency() -> None:
    doc = load(GUIDELLM)
    for bench, record in zip(doc["benchmarks"], parse_guidellm(doc), strict=True):
        samples = record["samples"]
        n = bench["metrics"]["request_totals"]["successful"]
        assert len(samples["ttft_ms"]) == len(samples["e2el_ms"]) == n
        assert samples["itl_ms"] == []  # no per-gap timestamps are kept
        for metric in ("ttft_ms", "e2el_ms"):
            summary = record["stats"][metric]
            assert statistics.fmean(samples[metric]) == pytest.approx(summary["mean"], rel=1e-9)
            # guidellm's percentiles are sample values (nearest rank), not interpolations.
            assert sorted(samples[metric])[math.ceil(n / 2) - 1] == pytest.approx(summary["p50"])


def test_guidellm_tpot_samples_agree_with_its_own_per_request_figures() -> None:
    doc = load(GUIDELLM)
    bench = doc["benchmarks"][0]
    record = parse_guidellm(doc)[0]
    requests = bench["requests"]["successful"]
    tpots = record["samples"]["tpot_ms"]
    for tpot, request in zip(tpots, requests, strict=True):
        # Latency runs to the response's end, a hair after the last token guidellm uses.
        assert request["inter_token_latency_ms"] <= tpot < request["inter_token_latency_ms"] + 0.2
    weights = [r["output_tokens"] - 1 for r in requests]
    weighted = sum(t * w for t, w in zip(tpots, weights, strict=True)) / sum(weights)
    assert weighted == pytest.approx(record["stats"]["tpot_ms"]["mean"], rel=0.03)


# ---------------------------------------------------------------- refusals


def test_a_document_of_neither_tool_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, {"results": [{"throughput": 12.5}], "version": 3})
    neither = r"document 0 is neither a vllm bench serve result \(keys such as duration.*"
    with pytest.raises(ParseError, match=neither + "nor a guidellm report"):
        parse_file(path)


def test_a_json_array_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ParseError, match="is a list, not an object"):
        parse_file(write(tmp_path, [1, 2, 3]))


def test_a_truncated_file_is_refused_as_invalid_json(tmp_path: Path) -> None:
    path = tmp_path / "cut.json"
    path.write_text(DETAILED.read_text()[:700])
    with pytest.raises(ParseError, match="not valid JSON"):
        parse_file(path)


@pytest.mark.parametrize("key", ["total_output_tokens", "duration", "request_throughput"])
def test_a_vllm_result_missing_a_required_key_is_refused_naming_it(
    tmp_path: Path, key: str
) -> None:
    doc = load(DETAILED)
    del doc[key]
    with pytest.raises(ParseError, match=f"^{key}: missing"):
        parse_file(write(tmp_path, doc))


def test_a_count_written_as_a_string_is_refused_naming_the_key() -> None:
    doc = load(DETAILED)
    doc["completed"] = "15"
    with pytest.raises(ParseError, match=r"^completed: expected a number"):
        parse_vllm_bench_serve(doc)


def test_a_non_finite_number_is_refused_naming_the_key(tmp_path: Path) -> None:
    doc = load(DETAILED)
    doc["mean_ttft_ms"] = float("nan")
    path = write(tmp_path, doc)
    assert "NaN" in path.read_text()  # Python's json writes it, and reads it back
    with pytest.raises(ParseError, match=r"^mean_ttft_ms: expected a finite number"):
        parse_file(path)


def test_per_request_lists_of_different_lengths_are_refused() -> None:
    doc = load(DETAILED)
    doc["output_lens"] = doc["output_lens"][:-1]
    with pytest.raises(ParseError, match=r"^output_lens: has 15 entries, ttfts has 16"):
        parse_vllm_bench_serve(doc)


def test_a_completed_count_the_requests_contradict_is_refused() -> None:
    doc = load(DETAILED)
    doc["completed"] = 16
    with pytest.raises(ParseError, match="completed says 16"):
        parse_vllm_bench_serve(doc)


def test_a_guidellm_benchmark_missing_a_metric_is_refused_naming_its_path(
    tmp_path: Path,
) -> None:
    doc = load(GUIDELLM)
    del doc["benchmarks"][1]["metrics"]["time_to_first_token_ms"]
    with pytest.raises(
        ParseError, match=r"^benchmarks\[1\]\.metrics\.time_to_first_token_ms: missing"
    ):
        parse_file(write(tmp_path, doc))


def test_a_guidellm_report_without_benchmarks_is_refused() -> None:
    doc = load(GUIDELLM)
    doc["benchmarks"] = []
    with pytest.raises(ParseError, match=r"^benchmarks: empty"):
        parse_guidellm(doc)


def test_the_error_is_the_stack_parsers_error_and_a_value_error() -> None:
    assert issubclass(ParseError, StackParseError)
    assert issubclass(ParseError, ValueError)
