"""The correctness check catches a wrong element and passes honest results (numpy and torch)."""

import importlib.util
import json
import os
import subprocess
import sys

import pytest
from stack_helpers import REPO_ROOT

np = pytest.importorskip("numpy")

from stack.blas import check  # noqa: E402
from stack.blas.precisions import get  # noqa: E402
from tests.waits import LONG_JOB_S  # noqa: E402

# torch is only ever imported in child processes: other stack tests assert that
# the test process itself never imported it.
needs_torch = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None, reason="torch is not installed"
)


def _operands(k=96, m=80, n=72, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((m, k)), rng.standard_normal((k, n))


@pytest.mark.parametrize("precision", ["fp64", "fp32", "fp16"])
def test_numpy_results_pass_and_a_corrupted_one_fails(precision):
    a, b = _operands()
    dtype = {"fp64": np.float64, "fp32": np.float32, "fp16": np.float16}[precision]
    a, b = a.astype(dtype), b.astype(dtype)
    tol = get(precision).tolerance(a.shape[1])
    good = check.gemm_check_numpy(np, a @ b, a, b, tol, full=True)
    assert good.passed and good.error <= tol and good.mode == "full"
    bad_out = a @ b
    where = check.corrupt_numpy(np, bad_out)
    bad = check.gemm_check_numpy(np, bad_out, a, b, tol, full=True)
    assert not bad.passed and bad.error > tol and "element" in where


def test_fp64_reference_is_not_the_tested_gemm_itself():
    a, b = _operands(k=300)
    result = check.gemm_check_numpy(np, a @ b, a, b, get("fp64").tolerance(300), full=True)
    assert result.passed and result.error > 0  # a split-k reference differs in rounding


def test_sampled_check_finds_a_corrupted_element_through_the_largest_rows():
    a, b = _operands(m=400)
    out = a @ b
    assert check.gemm_check_numpy(np, out, a, b, 1e-9, full=False).passed
    check.corrupt_numpy(np, out, seed=3)
    result = check.gemm_check_numpy(np, out, a, b, 1e-9, full=False)
    assert result.mode.startswith("rows:") and not result.passed


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
def test_sampled_check_of_a_batch_sees_the_damage_the_full_check_sees(dtype):
    rng = np.random.default_rng(5)
    a = rng.standard_normal((3, 300, 40)).astype(dtype)
    b = rng.standard_normal((3, 40, 24)).astype(dtype)
    out = np.matmul(a, b)
    check.corrupt_numpy(np, out, seed=2)
    full = check.gemm_check_numpy(np, out, a, b, 1e-9, full=True)
    sampled = check.gemm_check_numpy(np, out, a, b, 1e-9, full=False)
    # the damaged row holds the largest value, so the sample has it and the worst error
    assert sampled.mode == "rows:64" and sampled.error == full.error and not sampled.passed


def test_nan_always_fails():
    a, b = _operands()
    out = a @ b
    out[3, 4] = np.nan
    result = check.gemm_check_numpy(np, out, a, b, 1.0, full=False)
    assert not result.passed and result.nonfinite == 1


TORCH_CHECKS = r"""
import json, numpy as np, torch
from stack.blas import check
from stack.blas.precisions import get
out = {}
for precision, dtype in (("fp32", "float32"), ("bf16", "bfloat16"), ("fp64", "float64")):
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(64, 48, generator=gen).to(getattr(torch, dtype))
    b = torch.randn(32, 48, generator=gen).to(getattr(torch, dtype)).t()  # a transposed view
    tol = get(precision).tolerance(48)
    c = a @ b
    good = check.gemm_check_torch(torch, c, a, b, tol, full=True)
    check.corrupt_torch(torch, c)
    bad = check.gemm_check_torch(torch, c, a, b, tol, full=True)
    sampled = check.gemm_check_torch(torch, c, a, b, tol, full=False)
    out[precision] = [good.passed, good.error, bad.passed, bad.detail, sampled.passed, sampled.mode]
gen = torch.Generator().manual_seed(2)
a = torch.randn(100, 48, generator=gen).to(torch.float8_e4m3fn)
b = torch.randn(32, 48, generator=gen).to(torch.float8_e4m3fn).t()
c = (a.float() @ b.float()).to(torch.bfloat16)
tol = get("fp8").tolerance(48)
sampled = check.gemm_check_torch(torch, c, a, b, tol, full=False)
check.corrupt_torch(torch, c)
damaged = check.gemm_check_torch(torch, c, a, b, tol, full=False)
out["fp8"] = [sampled.passed, sampled.mode, damaged.passed]
gen = torch.Generator().manual_seed(1)
a = torch.randint(-128, 128, (32, 64), dtype=torch.int8, generator=gen)
b = torch.randint(-128, 128, (64, 40), dtype=torch.int8, generator=gen)
c = torch._int_mm(a, b)
exact = check.gemm_check_torch(torch, c, a, b, 0.0, full=True).passed
c[1, 2] += 1
out["int8"] = [exact, check.gemm_check_torch(torch, c, a, b, 0.0, full=False).passed]
x = torch.randn(1000, dtype=torch.complex64)
ref = torch.fft.fft(x.to(torch.complex128))
got = torch.fft.fft(x)
ok = check.relative_check_torch(torch, got, ref, 1e-4).passed
got[10] += 100
out["fft"] = [ok, check.relative_check_torch(torch, got, ref, 1e-4).passed]
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def torch_checks():
    proc = subprocess.run(
        [sys.executable, "-c", TORCH_CHECKS],
        cwd=REPO_ROOT,
        env=dict(os.environ, PYTHONPATH=str(REPO_ROOT)),
        capture_output=True,
        text=True,
        timeout=LONG_JOB_S,
        check=True,
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


@needs_torch
@pytest.mark.parametrize("precision", ["fp32", "bf16", "fp64"])
@pytest.mark.process
def test_torch_results_pass_and_a_corrupted_one_fails(torch_checks, precision):
    good, error, bad, detail, sampled, mode = torch_checks[precision]
    assert good and error <= get(precision).tolerance(48)
    assert not bad and "tolerance" in detail
    assert not sampled and mode.startswith("rows:")


@needs_torch
@pytest.mark.process
def test_torch_sampled_check_of_fp8_operands(torch_checks):
    assert torch_checks["fp8"] == [True, "rows:64", False]


@needs_torch
@pytest.mark.process
def test_torch_int8_must_be_exact(torch_checks):
    assert torch_checks["int8"] == [True, False]


@needs_torch
@pytest.mark.process
def test_torch_relative_check(torch_checks):
    assert torch_checks["fft"] == [True, False]


def test_relative_check_numpy():
    y = np.arange(10.0)
    good = check.relative_check_numpy(np, y.copy(), y, 0.0)
    assert good.passed and good.mode == "full"
    z = y.copy()
    z[3] += 1
    bad = check.relative_check_numpy(np, z, y, 0.0, "roundtrip")
    assert not bad.passed and bad.mode == "roundtrip" and "rms" in bad.detail
