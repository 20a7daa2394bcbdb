"""The data a GEMM is fed: drawn in its own precision, as the inputs parameter says, and
recorded with every measurement."""

import importlib.util
import json
import subprocess
import sys

import pytest
from blas_helpers import fast_params
from stack_helpers import REPO_ROOT

from stack.blas.cases import GemmCase
from stack.blas.gemm_numpy import make_operands
from stack.kinds import ParamsError, get_kind, validate_params
from stack.runtime import build_result

np = pytest.importorskip("numpy")
needs_torch = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None, reason="torch is not installed"
)
LOW_29_BITS = (1 << 29) - 1  # what a float32 cast up to float64 leaves zero


def low_bits_used(values) -> float:
    bits = np.ascontiguousarray(values, dtype=np.float64).view(np.uint64)
    return float(np.mean((bits & np.uint64(LOW_29_BITS)) != 0))


def test_fp64_operands_use_every_bit_of_their_mantissa():
    a, b = make_operands(np, GemmCase("fp64", 64, 64, 64), seed=1)
    assert a.dtype == np.float64
    assert low_bits_used(a) > 0.99 and low_bits_used(b) > 0.99


def test_fp32_operands_are_float32_normals():
    a, _ = make_operands(np, GemmCase("fp32", 256, 256, 256), seed=1)
    assert a.dtype == np.float32
    assert abs(float(a.mean())) < 0.02 and 0.97 < float(a.std()) < 1.03


@pytest.mark.parametrize(
    ("inputs", "check"),
    [
        ("zeros", lambda a: not a.any()),
        ("small-int", lambda a: set(np.unique(a)) <= set(range(-4, 5)) and len(np.unique(a)) == 9),
        ("uniform", lambda a: a.min() >= -1 and a.max() < 1 and 0.55 < a.std() < 0.6),
    ],
)
def test_each_distribution_draws_what_it_says(inputs, check):
    a, _ = make_operands(np, GemmCase("fp64", 128, 128, 128), seed=2, inputs=inputs)
    assert check(a)


def test_an_unknown_distribution_is_refused_at_submit():
    with pytest.raises(ParamsError) as refused:
        validate_params("blas-bench", {"inputs": "ones"})
    assert "inputs" in refused.value.errors


def test_the_distribution_is_part_of_every_measurement_and_the_summary(ctx):
    params = fast_params(
        backends=["numpy"], families=["gemm"], precisions=["fp64"], sizes=[32], inputs="small-int"
    )
    result = get_kind("blas-bench").load_runner()(params, ctx)
    build_result("blas-bench", result, "2026-12-01T00:00:00Z", "2026-12-01T00:00:01Z", ctx.out)
    assert result.measurements
    assert {m.case["inputs"] for m in result.measurements} == {"small-int"}
    assert result.summary["method"]["inputs"].startswith("small-int: integers -4..4")


@needs_torch
@pytest.mark.process
def test_torch_operands_are_drawn_in_their_own_precision(tmp_path):
    """Run in a child process: the stack tests keep torch out of the test process."""
    script = f"""
import json, sys
sys.path.insert(0, {str(REPO_ROOT)!r})
import torch
from stack.blas.cases import GemmCase
from stack.blas.devices import Device
from stack.blas.gemm_torch import make_operands
cpu = Device(kind="cpu")
gen = torch.Generator().manual_seed(3)
out = {{}}
a = make_operands(torch, cpu, GemmCase("fp64", 64, 64, 64), "N", "N", gen).a
bits = a.contiguous().view(torch.int64) & ((1 << 29) - 1)
out["fp64_low_bits_used"] = float((bits != 0).double().mean())
out["fp64_dtype"] = str(a.dtype)
z = make_operands(torch, cpu, GemmCase("bf16", 32, 32, 32), "N", "N", gen, "zeros").a
out["bf16_zeros"] = bool((z == 0).all()) and str(z.dtype) == "torch.bfloat16"
i = make_operands(torch, cpu, GemmCase("int8", 64, 64, 64), "N", "N", gen, "small-int").a
out["int8_small"] = sorted(set(i.flatten().tolist()))
print(json.dumps(out))
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=True
    )
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["fp64_dtype"] == "torch.float64" and got["fp64_low_bits_used"] > 0.99
    assert got["bf16_zeros"]
    assert got["int8_small"] == list(range(-4, 5))


def test_the_report_says_what_data_was_fed_and_that_it_matters(ctx):
    from stack.blas.report import render

    params = fast_params(backends=["numpy"], families=["gemm"], precisions=["fp32"], sizes=[32])
    result = get_kind("blas-bench").load_runner()(params, ctx)
    text = render({"status": result.status, "error": result.error, "summary": result.summary})
    assert "GEMM inputs: normal: standard normal" in text
    assert "Throughput depends on the data" in text
