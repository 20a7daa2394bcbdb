"""The claims check, the Markdown report and the cross-check comparison, on made-up results."""

import json

import pytest

from stack.blas import claims, crosscheck, report
from stack.blas.results import CaseResult
from stack.blas.stats import Timing


def gemm(precision, size, seconds, trans="NN", peak_memory=None, backend="torch"):
    result = CaseResult(
        family="gemm",
        backend=backend,
        case={
            "backend": backend,
            "precision": precision,
            "m": size,
            "n": size,
            "k": size,
            "batch": 1,
            "transa": trans[0],
            "transb": trans[1],
        },
        timing=Timing([seconds] * 3, 1, 3, "cv", 0.0, 1.0),
        work=2.0 * size**3,
        rate_unit="TOPS" if precision == "int8" else "TFLOP/s",
        footprint_bytes={"fp32": 12, "bf16": 6, "fp8": 4, "int8": 6}[precision] * size * size,
        peak_memory_bytes=peak_memory,
    )
    return result


H200 = {"fp32": 66.9, "bf16": 989.4, "fp8": 1978.9, "int8": 1978.9}


def test_claims_from_measured_ratios():
    results = [
        gemm("fp32", 4096, 2.0),
        gemm("fp32", 8192, 16.0),
        gemm("bf16", 8192, 1.6),
        gemm("fp8", 8192, 0.9, trans="NT"),
        gemm("int8", 8192, 8.0),  # the slow layout...
        gemm("int8", 8192, 1.0, trans="NT"),  # ...and the fast one: the claim uses this
    ]
    rows = {row["claim"]: row for row in claims.claims_check(results, {"torch": H200})}
    speed = rows["bf16_vs_fp32_speed"]
    assert speed["measured"] == pytest.approx(10.0) and speed["size"] == 8192
    assert speed["vendor_peak_ratio"] == pytest.approx(989.4 / 66.9, rel=1e-3)
    assert speed["verdict"] == "better than quoted"
    assert rows["int8_vs_fp32_speed"]["measured"] == pytest.approx(16.0)
    assert rows["int8_vs_fp32_speed"]["layouts"] == {"int8": "NT", "fp32": "NN"}
    assert rows["fp8_vs_bf16_speed"]["measured"] == pytest.approx(1.6 / 0.9, rel=1e-3)
    assert rows["bf16_vs_fp32_memory"]["measured"] == 0.5
    assert rows["bf16_vs_fp32_memory"]["verdict"] == "holds"
    assert rows["int8_vs_fp32_memory"]["verdict"] == "worse than quoted"  # int32 output
    assert rows["int8_vs_fp32_memory"]["memory_source"] == "operand bytes (A, B and C)"


def test_claims_say_why_they_cannot_be_checked():
    rows = claims.claims_check([gemm("fp32", 64, 1.0, backend="numpy")], {})
    fp8 = next(r for r in rows if r["claim"] == "fp8_vs_bf16_speed")
    assert fp8["measured"] is None and "FP8" in fp8["why_missing"] and "BF16" in fp8["why_missing"]


def test_report_renders_a_real_result(tmp_path, capsys):
    data = {
        "status": "succeeded",
        "error": None,
        "summary": {
            "backends": {
                "torch": {
                    "device": {"name": "NVIDIA H200", "arch": "sm_90"},
                    "library": "cuBLAS",
                    "timing_method": "events",
                    "telemetry": {"source": "nvidia-smi", "samples": 5},
                }
            },
            "tables": {
                "gemm": [
                    {
                        "backend": "torch",
                        "precision": "bf16",
                        "m": 8192,
                        "n": 8192,
                        "k": 8192,
                        "batch": 1,
                        "transa": "N",
                        "transb": "N",
                        "status": "ok",
                        "median_ms": 1.6,
                        "rate": 687.2,
                        "unit": "TFLOP/s",
                        "pct_of_peak": 69.5,
                        "cv_pct": 1.9,
                        "samples": 300,
                        "check": {"passed": True, "error": 1e-4},
                        "telemetry": {
                            "sm_clock_mhz": {"min": 1440, "max": 1575},
                            "power_w": {"median": 692},
                            "throttle_reasons": ["sw_power_cap"],
                        },
                    }
                ]
            },
            "unsupported": [
                {
                    "backend": "torch",
                    "family": "gemm",
                    "precision": "tf32",
                    "op": None,
                    "reason": "no",
                }
            ],
            "claims": [],
            "flags": {"throttled": ["x: sw_power_cap"]},
        },
    }
    text = report.render(data)
    assert "| torch | bf16 | 8192x8192x8192 NN | 1.600 | 687.2 TFLOP/s | 69.5 |" in text
    assert "1440-1575" in text and "sw_power_cap" in text and "tf32: no" in text
    path = tmp_path / "r.json"
    path.write_text(json.dumps(data))
    assert report.main([str(path)]) == 0
    assert capsys.readouterr().out == text


def test_crosscheck_comparison_of_interleaved_rounds(tmp_path):
    cases = crosscheck._cases(8192, 1024, ["bf16"])
    (tmp_path / "cases.json").write_text(json.dumps(cases))
    for r, ms in enumerate([1.60, 1.62]):
        run_dir = tmp_path / f"runner-{r}"
        run_dir.mkdir()
        case = {"precision": "bf16", "m": 8192, "n": 8192, "k": 8192}
        doc = {
            "status": "succeeded",
            "measurements": [
                {
                    "benchmark": "gemm",
                    "metric": "time",
                    "case": case,
                    "value": ms,
                    "samples": [ms] * 4,
                },
                {
                    "benchmark": "bandwidth",
                    "metric": "time",
                    "case": {"op": "copy", "array_mib": 1024.0},
                    "value": 0.5,
                    "samples": [0.5],
                },
            ],
            "summary": {"tables": {}},
        }
        (run_dir / "result.json").write_text(json.dumps(doc))
        ref = {
            "results": [
                {
                    "key": "gemm bf16 8192x8192x8192",
                    "do_bench_ms": 1.63,
                    "torch_benchmark_ms": 1.70,
                },
                {"key": "bandwidth copy 1024 MiB", "do_bench_ms": 0.5},
            ]
        }
        (tmp_path / f"reference-{r}.json").write_text(json.dumps(ref))
    runner_rounds, reference_rounds = crosscheck.load_rounds(tmp_path)
    result = crosscheck.compare(tmp_path, cases, runner_rounds, reference_rounds)
    bf16 = result["cases"][0]
    assert bf16["runner"]["median_ms"] == pytest.approx(1.61)
    assert bf16["gap_pct_vs_do_bench"] == pytest.approx((1.63 / 1.61 - 1) * 100, abs=0.01)
    assert bf16["within_3pct"] is False  # torch.utils.benchmark is 5.6 % away
    copy = result["cases"][1]
    assert copy["within_3pct"] and copy["runner"]["rate"] == pytest.approx(
        2 * 2**28 * 4 / 0.5e-3 / 1e9
    )


def _rows(results):
    from stack.blas.records import summary_row

    return [summary_row(r, 0.02) for r in results]


def test_a_speed_claim_on_a_high_cv_case_is_too_noisy_to_conclude():
    noisy = gemm("bf16", 8192, 1.6)
    noisy.timing = Timing([1.6, 2.4, 1.5, 1.9], 1, 3, "budget", 0.0, 1.0)  # CV ~ 20 %
    results = [gemm("fp32", 8192, 16.0), noisy]
    rows = claims.judge_noise(claims.claims_check(results, {"torch": H200}), _rows(results))
    by_id = {row["claim"]: row for row in rows}
    speed = by_id["bf16_vs_fp32_speed"]
    assert speed["verdict"] == claims.TOO_NOISY and speed["measured"] is not None
    assert len(speed["noisy"]) == 1 and speed["noisy"][0].startswith("BF16 8192 NN: CV ")
    # memory is not timed: the noise of the timing leaves its verdict alone
    assert by_id["bf16_vs_fp32_memory"]["verdict"] == "holds"


def test_steady_cases_keep_their_verdict_and_another_layouts_noise_does_not_count():
    shaky = gemm("bf16", 8192, 1.6, trans="TT")
    shaky.timing = Timing([3.0, 4.4, 2.9], 1, 3, "budget", 0.0, 1.0)  # slow and noisy
    results = [gemm("fp32", 8192, 16.0), gemm("bf16", 8192, 1.6), shaky]
    rows = claims.judge_noise(claims.claims_check(results, {"torch": H200}), _rows(results))
    speed = next(r for r in rows if r["claim"] == "bf16_vs_fp32_speed")
    assert speed["layouts"]["bf16"] == "NN"  # the fastest layout, which was steady
    assert speed["verdict"] == "better than quoted" and "noisy" not in speed
