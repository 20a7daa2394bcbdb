"""The GEMM shapes a workload runs, from a trace, rocBLAS / hipBLASLt logs or TunableOp files,
and the blas-bench params that replay them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tune_helpers import tune_fixture

from stack.blas.cases import gemm_cases
from stack.kinds import validate_params
from stack.kinds.blas_bench import KIND as BLAS_BENCH
from stack.tune.shapes import (
    HIPBLASLT_LOG,
    ROCBLAS_LOG,
    TRACE,
    TUNABLEOP,
    BlasGemm,
    ShapesError,
    count_shapes,
    detect,
    gemms_from_text,
    gemms_from_trace,
    replay_params,
    shapes_from_rows,
)

H200_TRACE = (
    Path(__file__).resolve().parents[3] / "docs/results/profile-h200/gemm-bf16-4096/trace.json"
)


def test_rocblas_bench_lines_give_gemms_and_skip_other_functions():
    gemms = gemms_from_text(tune_fixture("rocblas-layer2-bert.log"))
    assert detect(tune_fixture("rocblas-layer2-bert.log")) == ROCBLAS_LOG
    assert len(gemms) == 6  # the axpy line is not a GEMM
    assert gemms[0] == BlasGemm("fp16", 3072, 4096, 1024, 1, "T", "N")
    assert gemms[2] == BlasGemm("fp16", 512, 512, 64, 128, "T", "N")
    assert gemms[3] == BlasGemm("fp32", 1024, 4096, 1024)
    assert gemms[4].precision == "fp16" and gemms[4].transb == "T"  # "-r h"
    assert gemms[5] == BlasGemm("bf16", 67, 512, 2048)


def test_hipblaslt_bench_lines_give_gemms_with_fp8_and_tf32_told_apart():
    text = tune_fixture("hipblaslt-mask32-llama.log")
    assert detect(text) == HIPBLASLT_LOG
    gemms = gemms_from_text(text)
    assert gemms[0] == BlasGemm("bf16", 4096, 8192, 4096, 1, "T", "N")
    assert gemms[3] == BlasGemm("fp8", 10240, 1, 8192, 1, "T", "N")
    assert gemms[4].precision == "tf32"  # f32_r inputs with compute_type xf32_r


def test_tunableop_untuned_lines_give_every_gemm_op_with_its_batch():
    text = tune_fixture("tunableop_untuned0.csv")
    assert detect(text) == TUNABLEOP
    gemms = gemms_from_text(text)
    assert gemms[0] == BlasGemm("bf16", 3072, 4096, 1024, 1, "T", "N")
    assert gemms[2] == BlasGemm("bf16", 4096, 4096, 1024, 1, "T", "N")  # GemmAndBias
    assert gemms[3] == BlasGemm("bf16", 512, 512, 64, 128, "T", "N")
    assert gemms[4].precision == "fp8" and gemms[4].m == 8192
    assert gemms[5] == BlasGemm("fp32", 1024, 1024, 1024)


def test_a_tuned_file_reads_the_same_shapes_past_its_validators():
    gemms = gemms_from_text(tune_fixture("tunableop_results0-mi300x.csv"))
    assert len(gemms) == 4 and gemms[0] == BlasGemm("bf16", 3072, 4096, 1024, 1, "T", "N")


def test_repeated_calls_count_and_the_most_frequent_come_first():
    rows = count_shapes(gemms_from_text(tune_fixture("hipblaslt-mask32-llama.log")))
    assert rows[0]["calls"] == 2 and rows[0]["m"] == 4096 and rows[0]["n"] == 8192
    assert shapes_from_rows(rows)[0] == BlasGemm("bf16", 4096, 8192, 4096, 1, "T", "N")


@pytest.mark.slow
def test_a_real_cpu_trace_with_record_shapes_gives_the_blas_calls_of_linear_and_bmm(tmp_path):
    torch = pytest.importorskip("torch")
    linear = torch.nn.Linear(64, 192)
    x = torch.randn(2, 8, 64)
    q, k = torch.randn(4, 8, 16), torch.randn(4, 16, 8)
    with torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True
    ) as prof:
        linear(x)
        torch.bmm(q, k)
        torch.mm(torch.randn(32, 16).t(), torch.randn(32, 24))
    trace = tmp_path / "trace.json"
    prof.export_chrome_trace(str(trace))
    gemms = gemms_from_text(trace.read_text(encoding="utf-8"))
    assert detect("{") == TRACE
    # Linear: x (16x64) by weight.t() (64x192, stored transposed) -> BLAS TN, m=192 n=16
    assert BlasGemm("fp32", 192, 16, 64, 1, "T", "N") in gemms
    assert BlasGemm("fp32", 8, 8, 16, 4, "N", "N") in gemms  # bmm, batch 4
    # A stored transposed (16x32 view of 32x16): the BLAS call's B is transposed
    assert BlasGemm("fp32", 24, 16, 32, 1, "N", "T") in gemms


def test_the_h200_trace_recorded_without_shapes_has_none_to_give():
    document = json.loads(H200_TRACE.read_text(encoding="utf-8"))
    assert gemms_from_trace(document) == []


def test_replay_is_one_blas_bench_job_per_precision_with_exactly_those_shapes():
    gemms = gemms_from_text(tune_fixture("rocblas-layer2-bert.log"))
    plan = replay_params(gemms, base={"min_reps": 5})
    assert [p["precisions"] for p in plan.params] == [["fp32"], ["fp16"], ["bf16"]]
    fp16 = plan.params[1]
    assert fp16["sizes"] == [] and fp16["families"] == ["gemm"] and fp16["min_reps"] == 5
    # BLAS TN m=3072 n=4096 k=1024 is torch's A (4096x1024) by B stored transposed
    assert {"m": 4096, "n": 3072, "k": 1024, "batch": 1, "transa": "N", "transb": "T"} in (
        fp16["shapes"]
    )
    for params in plan.params:
        cases = gemm_cases(validate_params(BLAS_BENCH.name, params))
        assert len(cases) == len(params["shapes"])


def test_tool_backends_replay_the_blas_form_and_unknown_types_are_skipped_with_a_reason():
    gemms = [BlasGemm("fp16", 3072, 4096, 1024, 1, "T", "N"), BlasGemm("f32_c", 8, 8, 8)]
    plan = replay_params(gemms, backend="rocblas-bench")
    assert plan.params[0]["shapes"] == [
        {"m": 3072, "n": 4096, "k": 1024, "batch": 1, "transa": "T", "transb": "N"}
    ]
    assert plan.skipped[0]["precision"] == "f32_c" and "no 'f32_c'" in plan.skipped[0]["reason"]


def test_text_in_no_known_format_is_refused():
    with pytest.raises(ShapesError, match="not a format read here"):
        gemms_from_text("hello")
