"""Two profiles compared kernel by kernel, on the real H200 results (docs/results/profile-h200)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from stack.blas.stats import ratio_of_medians
from stack.profile.diff import (
    ADDED,
    FASTER,
    REMOVED,
    SLOWER,
    UNCHANGED,
    DiffError,
    diff_profiles,
    explain_regression,
    load_profile,
    pair_kernels,
    regression_kernel,
)

H200 = Path(__file__).resolve().parents[3] / "docs" / "results" / "profile-h200"
GEMM = "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"
PROJECTION = "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_bias_TNT"


def h200(name: str) -> dict[str, Any]:
    return json.loads((H200 / name / "result.json").read_text(encoding="utf-8"))


def scaled(document: dict[str, Any], factor: float, match: str = "") -> dict[str, Any]:
    """The document with every kernel whose name contains ``match`` ``factor`` times slower:
    its samples, totals and the profilers' totals, as a real regression would show."""
    out = copy.deepcopy(document)
    added: dict[str, float] = {}
    for profiler, table in out["summary"]["top_kernels"].items():
        for row in table:
            if match in row["name"]:
                added[profiler] = added.get(profiler, 0.0) + row["total_ns"] * (factor - 1)
                row["total_ns"] *= factor
                row["mean_ns"] *= factor
    for profiler, extra in added.items():
        out["summary"]["profilers"][profiler]["total_ns"] += extra
    for m in out["measurements"]:
        case = m["case"]
        slower = m["metric"] in ("kernel_time", "kernel_mean_time")
        if slower and "kernel" in case and match in case["kernel"]:
            m["value"] *= factor
            m["samples"] = [s * factor for s in m["samples"]]
    return out


def test_a_profile_reads_back_every_profiler_with_each_calls_samples():
    profile = load_profile(h200("gemm-bf16-4096"))
    assert set(profile.kernels) == {"torch", "ncu"}
    gemm = profile.kernels["ncu"][GEMM]
    assert gemm.calls == 20 and len(gemm.samples) == 20
    assert gemm.counters["compute_throughput"] == pytest.approx(90.3, abs=0.1)
    assert profile.steps == 20


def test_a_kernel_made_14_percent_slower_is_named_with_its_interval():
    base = h200("gemm-bf16-4096")
    diff = diff_profiles(base, scaled(base, 1.14))
    (gemm,) = diff.kernels
    assert gemm.name == GEMM and gemm.verdict == SLOWER and gemm.sure
    assert gemm.change_pct == pytest.approx(14.0, abs=0.01)
    assert gemm.low < 1.14 < gemm.high and gemm.low > 1.1
    assert diff.step_ratio == pytest.approx(1.14, rel=1e-3)
    sentence = explain_regression(diff)
    assert sentence.startswith(f"the regression is in `{GEMM}`, +14.0 % a call; 95 % interval")


def test_the_same_profile_twice_is_unchanged_and_names_no_regression():
    base = h200("transformer-bf16")
    diff = diff_profiles(base, base, profiler="ncu")
    assert len(diff.kernels) == 5
    assert {k.verdict for k in diff.kernels} == {UNCHANGED}
    assert regression_kernel(diff) is None and explain_regression(diff) is None


def test_in_a_transformer_block_the_one_slower_kernel_is_found_among_five():
    base = h200("transformer-bf16")
    diff = diff_profiles(base, scaled(base, 1.3, "Gelu"), profiler="torch")
    worst = regression_kernel(diff)
    assert "GeluCUDAKernelImpl" in worst.name and worst.verdict == SLOWER
    assert worst.change_pct == pytest.approx(30.0, abs=0.01)
    others = [k for k in diff.kernels if k is not worst]
    assert {k.verdict for k in others} == {UNCHANGED}


def test_a_faster_kernel_is_an_improvement_not_a_regression():
    base = h200("transformer-bf16")
    diff = diff_profiles(base, scaled(base, 0.8, PROJECTION), profiler="ncu")
    projection = next(k for k in diff.kernels if k.name == PROJECTION)
    assert projection.verdict == FASTER and projection.sure
    assert regression_kernel(diff) is None
    assert diff.as_dict()["improvement"].startswith(f"the improvement is in `{PROJECTION}`")


def test_a_kernel_that_changed_its_name_pairs_with_the_most_similar_one():
    base = h200("gemm-bf16-4096")
    renamed = json.loads(json.dumps(base).replace(GEMM, GEMM.replace("_h_", "_f16_")))
    diff = diff_profiles(base, scaled(renamed, 1.2))
    (gemm,) = diff.kernels
    assert gemm.matched == "similar" and gemm.baseline_name == GEMM
    assert gemm.verdict == SLOWER
    assert f"(was `{GEMM}`)" in explain_regression(diff)


def test_unrelated_kernels_are_added_and_removed_and_a_new_one_is_the_regression():
    pairs = pair_kernels(["gemm_a", "layer_norm"], ["gemm_a", "softmax_kernel_xyz"])
    assert ("gemm_a", "gemm_a", "name") in pairs
    assert ("layer_norm", None, REMOVED) in pairs and (None, "softmax_kernel_xyz", ADDED) in pairs
    gemm = h200("gemm-bf16-4096")
    transformer = h200("transformer-bf16")
    diff = diff_profiles(gemm, transformer, profiler="ncu")
    assert regression_kernel(diff).verdict in (ADDED, SLOWER)


def test_without_samples_a_change_is_reported_but_never_called_sure():
    base = h200("gemm-bf16-4096")
    no_samples = {"summary": base["summary"]}
    diff = diff_profiles(no_samples, {"summary": scaled(base, 1.5)["summary"]})
    (gemm,) = diff.kernels
    assert gemm.verdict == SLOWER and not gemm.sure and gemm.low is None
    assert regression_kernel(diff) is None


def test_profiles_without_a_profiler_in_common_or_kernels_are_refused():
    base = h200("gemm-bf16-4096")
    with pytest.raises(DiffError, match="not in both profiles"):
        diff_profiles(base, base, profiler="rocprofv3")
    with pytest.raises(DiffError, match="not a profile"):
        load_profile({"summary": {}, "measurements": []})


def test_the_plain_python_interval_brackets_the_ratio_and_is_seeded():
    base = [100.0 + i % 7 for i in range(40)]
    current = [114.0 + i % 5 for i in range(40)]
    r = ratio_of_medians(base, current)
    assert r.low < r.value < r.high
    assert r == ratio_of_medians(base, current)
    assert ratio_of_medians([2.0], [3.0]).low is None
    assert ratio_of_medians([], [1.0]).value is None


def test_a_kernel_serving_several_shapes_is_compared_by_its_time_a_step():
    base = h200("transformer-bf16")
    diff = diff_profiles(base, scaled(base, 1.05, PROJECTION), profiler="torch")
    projection = next(k for k in diff.kernels if k.name == PROJECTION)
    assert projection.basis == "step" and projection.current_calls == 40
    assert projection.verdict == SLOWER and projection.sure  # 5 %, sure over 10 steps
    assert projection.high < 1.07
    gelu = next(k for k in diff.kernels if "Gelu" in k.name)
    assert gelu.basis == "call"  # one call a step
