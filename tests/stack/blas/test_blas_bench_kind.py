"""The blas-bench kind, run for real on the CPU (numpy and torch), and against fake ROCm tools."""

import importlib.util
import json
import os
import subprocess
import sys

import pytest
from blas_helpers import fast_params
from stack_helpers import REPO_ROOT, event_lines, make_tool, run_stack

from stack.contract import parse_event, validate_result
from stack.kinds import KINDS, ParamsError, get_kind, validate_params
from stack.runtime import build_result
from tests.waits import LONG_JOB_S

np = pytest.importorskip("numpy")
# torch runs only in child processes (`python -m stack run ...`): other stack
# tests assert that the test process itself never imported it.
needs_torch = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None, reason="torch is not installed"
)

SMALL = {"sizes": [32, 48], "shapes": [{"m": 40, "n": 24, "k": 16, "batch": 3, "transa": "T"}]}


def run_job(ctx, **params):
    result = get_kind("blas-bench").load_runner()(fast_params(**params), ctx)
    document = build_result(
        "blas-bench", result, "2026-11-30T00:00:00.000000Z", "2026-11-30T00:00:01.000000Z", ctx.out
    )
    validate_result(document)
    return result, document


def run_cli(tmp_path, **params):
    """Run a job through `python -m stack run` (a child process); exit status and result.json."""
    path = tmp_path / "params.json"
    path.write_text(json.dumps(fast_params(**params)))
    out = tmp_path / "cli-out"
    proc = run_stack(
        ["run", "blas-bench", "--params", str(path), "--out", str(out)], timeout=LONG_JOB_S
    )
    document = json.loads((out / "result.json").read_text())
    validate_result(document)
    return proc, document


def measurements(document, benchmark=None, metric=None, **case):
    return [
        m
        for m in document["measurements"]
        if (benchmark is None or m["benchmark"] == benchmark)
        and (metric is None or m["metric"] == metric)
        and all(m["case"].get(k) == v for k, v in case.items())
    ]


def test_the_kind_is_registered_with_defaults_for_every_field():
    kind = KINDS["blas-bench"]
    assert kind.runner == "stack.kinds.blas_bench:run"
    defaults = validate_params("blas-bench", {})
    assert defaults["backends"] == ["torch"] and defaults["families"] == ["gemm", "bandwidth"]
    assert defaults["precisions"] == ["fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8"]
    with pytest.raises(ParamsError) as caught:
        validate_params("blas-bench", {"precisions": ["fp4"], "shapes": [{"m": 1}], "bogus": 1})
    assert set(caught.value.errors) == {"precisions.0", "shapes.0", "bogus"}


def test_numpy_backend_measures_checks_and_reports(ctx):
    result, doc = run_job(
        ctx,
        backends=["numpy"],
        families=["gemm", "bandwidth", "fft", "solver"],
        bandwidth_mib=[2],
        fft_shapes=[[1024], [32, 32]],
        solver_sizes=[48],
        **SMALL,
    )
    assert result.status == "succeeded", result.error
    gemm = measurements(doc, "gemm", "throughput", precision="fp64", m=48)
    assert len(gemm) == 1 and gemm[0]["unit"] == "TFLOP/s" and gemm[0]["better"] == "higher"
    assert 1e-6 < gemm[0]["value"] < 50  # a CPU, plausibly
    times = measurements(doc, "gemm", "time", precision="fp32", m=48)[0]
    assert len(times["samples"]) >= 3 and times["unit"] == "ms"
    assert min(times["samples"]) <= times["value"] <= max(times["samples"])
    batched = measurements(doc, "gemm", "time", precision="fp32", batch=3)[0]
    assert batched["case"]["transa"] == "T"
    errors = measurements(doc, "gemm", "error")
    assert errors and all(m["value"] <= 1e-2 for m in errors)
    footprint = measurements(doc, "gemm", "memory_footprint", precision="fp32", m=48)[0]
    assert footprint["value"] == 3 * 48 * 48 * 4
    copy = measurements(doc, "bandwidth", "bandwidth", op="copy")[0]
    assert copy["unit"] == "GB/s" and copy["value"] > 0.01
    assert measurements(doc, "fft", "effective_bandwidth")
    assert {m["case"]["op"] for m in measurements(doc, "solver", "time")} >= {"cholesky", "qr"}
    unsupported = {(u["precision"], u["family"]) for u in doc["summary"]["unsupported"]}
    assert {("tf32", "gemm"), ("bf16", "gemm"), ("fp8", "gemm"), ("int8", "gemm")} <= unsupported
    reasons = {u["precision"]: u["reason"] for u in doc["summary"]["unsupported"]}
    assert "bfloat16" in reasons["bf16"] and "int32" in reasons["int8"]
    method = doc["summary"]["backends"]["numpy"]["timing_method"]
    assert "perf_counter" in method
    assert doc["summary"]["method"]["statistic"].startswith("median")


@needs_torch
@pytest.mark.process
def test_torch_cpu_backend_runs_every_precision_it_can(tmp_path):
    proc, doc = run_cli(tmp_path, backends=["torch"], device="cpu", families=["gemm"], **SMALL)
    assert proc.returncode == 0 and doc["status"] == "succeeded", doc["error"]
    measured = {m["case"]["precision"] for m in measurements(doc, "gemm", "throughput")}
    assert {"fp64", "fp32", "fp16", "bf16", "fp8", "int8"} <= measured
    int8 = measurements(doc, "gemm", "throughput", precision="int8", m=48)[0]
    assert int8["unit"] == "TOPS"
    fp8 = measurements(doc, "gemm", "time", precision="fp8", m=48)[0]
    assert (fp8["case"]["transa"], fp8["case"]["transb"]) == ("N", "T")  # what _scaled_mm runs
    reasons = {(u["precision"], u["reason"]) for u in doc["summary"]["unsupported"]}
    assert any(p == "tf32" and "CPU" in r for p, r in reasons)
    assert any(p == "fp8" and "2-D" in r for p, r in reasons)  # the batched shape
    assert doc["summary"]["backends"]["torch"]["device"]["device"] == "cpu"
    assert [c["claim"] for c in doc["summary"]["claims"]][:2] == [
        "bf16_vs_fp32_speed",
        "bf16_vs_fp32_memory",
    ]
    memory = next(c for c in doc["summary"]["claims"] if c["claim"] == "bf16_vs_fp32_memory")
    assert memory["measured"] == 0.5 and memory["verdict"] == "holds"


@pytest.mark.parametrize("backend", ["numpy", pytest.param("torch", marks=needs_torch)])
@pytest.mark.process
def test_a_deliberately_wrong_result_fails_the_job(tmp_path, backend):
    proc, doc = run_cli(
        tmp_path,
        backends=[backend],
        device="cpu",
        families=["gemm", "bandwidth"],
        precisions=["fp32", "fp64", "bf16", "int8"],
        sizes=[32],
        bandwidth_mib=[1],
        corrupt_output=True,
    )
    assert proc.returncode == 1 and doc["status"] == "failed"
    assert "failed the correctness check" in doc["error"]
    rows = doc["summary"]["tables"]["gemm"] + doc["summary"]["tables"]["bandwidth"]
    assert rows and all(r["status"] == "failed_check" for r in rows)
    assert all(not r["check"]["passed"] for r in rows)
    assert all(any("corrupt_output" in note for note in r["notes"]) for r in rows)
    assert len(doc["summary"]["flags"]["failed_checks"]) == len(rows)


def test_a_numpy_case_that_raises_is_an_error_of_that_case_only(ctx, monkeypatch):
    from stack.blas import gemm_numpy

    make_operands = gemm_numpy.make_operands

    def broken_at_48(np, case, seed, inputs):
        if case.m == 48:
            raise ValueError("no operands today")
        return make_operands(np, case, seed, inputs)

    monkeypatch.setattr(gemm_numpy, "make_operands", broken_at_48)
    result, doc = run_job(
        ctx, backends=["numpy"], families=["gemm"], precisions=["fp32"], sizes=[32, 48]
    )
    assert result.status == "failed" and "1 case(s) raised errors" in result.error
    rows = {row["m"]: row for row in doc["summary"]["tables"]["gemm"]}
    assert rows[32]["status"] == "ok"
    assert rows[48]["status"] == "error" and rows[48]["reason"] == "ValueError: no operands today"


def test_failures_that_mean_out_of_memory_are_skips():
    from stack.blas.bench import is_oom

    class OutOfMemoryError(RuntimeError):  # torch.cuda's, by name
        pass

    assert is_oom(MemoryError())
    assert is_oom(RuntimeError("HIP out of memory. Tried to allocate 2.00 GiB"))
    assert is_oom(OutOfMemoryError("allocation failed"))
    assert not is_oom(ValueError("shapes do not match"))


def test_a_job_that_plans_nothing_says_so(ctx):
    _result, doc = run_job(ctx, backends=["numpy"], families=["gemm"], sizes=[])
    assert doc["summary"]["cases"]["planned"] == 0


def test_the_same_job_without_corruption_passes(ctx):
    result, _ = run_job(ctx, backends=["numpy"], families=["gemm"], precisions=["fp32"], sizes=[32])
    assert result.status == "succeeded"


@pytest.mark.process
def test_the_fingerprint_comes_from_the_probe(ctx, bare_env, use_env):
    use_env(bare_env)
    _result, doc = run_job(
        ctx,
        backends=["numpy"],
        families=["gemm"],
        precisions=["fp64"],
        sizes=[16],
        environment=True,
    )
    env = doc["environment"]
    assert env["host"]["cpu_cores"] == os.cpu_count()
    assert env["tools"]["nvidia-smi"]["present"] is False
    assert env["gpus"] == []


FAKE_ROCBLAS = r"""
args = sys.argv[1:]
def opt(name, default=None):
    return args[args.index(name) + 1] if name in args else default
m, n, k = int(opt("-m")), int(opt("-n")), int(opt("-k"))
batch = int(opt("--batch_count", "1"))
us = 2 * m * n * k * batch / 50e6  # a steady 50 TFLOP/s
print("Query device success: there are 1 devices")
print("-" * 79)
print("Device ID 0 : AMD Instinct MI300X gfx942:sramecc+:xnack-")
print("with 206.1 GB memory, max. SCLK 2100 MHz, max. MCLK 1300 MHz, compute capability 9.4")
print("-" * 79)
head = "transA,transB,M,N,K,alpha,lda,beta,ldb,ldc,cold_iters,hot_iters,rocblas-Gflops,us"
gflops = 2 * m * n * k * batch / us / 1e3
vals = f"{opt('--transposeA')},{opt('--transposeB')},{m},{n},{k},1,{m},0,{k},{m}, 2, 10"
vals += f", {gflops}, {us}"
if opt("-v") == "1":
    head += ",CPU-Gflops,CPU-us,norm_error_1"
    vals += ",1.0,123.0,1.5e-07"
print(head)
print(vals)
"""

FAKE_HIPBLASLT = r"""
args = sys.argv[1:]
def opt(name, default=None):
    return args[args.index(name) + 1] if name in args else default
m, n, k = int(opt("-m")), int(opt("-n")), int(opt("-k"))
us = 2 * m * n * k / 500e6  # 500 TFLOP/s
head = ("[0]:transA,transB,grouped_gemm,batch_count,m,n,k,alpha,lda,stride_a,beta,ldb,stride_b,"
        "ldc,stride_c,ldd,stride_d,a_type,b_type,c_type,d_type,compute_type,scaleA,scaleB,scaleC,"
        "scaleD,amaxD,activation_type,bias_vector,bias_type,hipblaslt-Gflops,hipblaslt-GB/s,us")
vals = (f"    {opt('--transA')},{opt('--transB')},0,1,{m},{n},{k},1,{m},0,0,{k},0,{m},0,{m},0,"
        "bf16_r,bf16_r,bf16_r,bf16_r,f32_r,0,0,0,0,0,none,0,non-supported type,"
        f"{2*m*n*k/us/1e3},1.0,{us}")
if "-v" in args:
    head += ",CPU-Gflops,CPU-us,norm_error,atol,rtol"
    vals += ",1.0,99.0,0.002,1e-05,1e-05"
print(head)
print(vals)
"""


@pytest.fixture
def tool_path(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("ROCM_PATH", str(tmp_path / "no-rocm"))
    return bin_dir


@pytest.mark.process
def test_rocblas_bench_backend_builds_runs_and_parses(ctx, tool_path):
    make_tool(tool_path, "rocblas-bench", FAKE_ROCBLAS)
    result, doc = run_job(
        ctx,
        backends=["rocblas-bench"],
        families=["gemm", "fft"],
        precisions=["fp32", "bf16", "fp8"],
        sizes=[4096],
        tool_repeats=3,
    )
    assert result.status == "succeeded", result.error
    rate = measurements(doc, "gemm", "throughput", precision="bf16")[0]
    assert rate["value"] == pytest.approx(50.0, rel=1e-3) and len(rate["samples"]) == 3
    error = measurements(doc, "gemm", "error", precision="fp32")[0]
    assert error["value"] == pytest.approx(1.5e-7)
    reasons = {u["precision"]: u["reason"] for u in doc["summary"]["unsupported"]}
    assert "hipblaslt-bench" in reasons["fp8"]
    assert "fft" not in doc["summary"]["tables"]  # the tools measure GEMM only
    paths = [a.path if hasattr(a, "path") else a["path"] for a in result.artifacts]
    assert any(p.startswith("blas-bench/rocblas-bench/") for p in paths)
    method = doc["summary"]["backends"]["rocblas-bench"]["timing_method"]
    assert "hot calls" in method


@pytest.mark.process
def test_hipblaslt_bench_backend(ctx, tool_path):
    make_tool(tool_path, "hipblaslt-bench", FAKE_HIPBLASLT)
    result, doc = run_job(
        ctx,
        backends=["hipblaslt-bench"],
        families=["gemm"],
        precisions=["bf16", "fp8"],
        sizes=[2048],
        tool_repeats=2,
    )
    assert result.status == "succeeded", result.error
    assert measurements(doc, "gemm", "throughput", precision="fp8")[0]["value"] == pytest.approx(
        500, rel=1e-3
    )


def test_a_missing_tool_is_reported_and_the_job_fails(ctx, tool_path):
    result, doc = run_job(ctx, backends=["rocblas-bench"], families=["gemm"], sizes=[64])
    assert result.status == "failed"
    reason = doc["summary"]["backends_unavailable"]["rocblas-bench"]
    assert "not found" in reason and "librocblas0-bench" in reason


def test_a_missing_hipblaslt_bench_says_where_to_get_it(ctx, tool_path):
    _result, doc = run_job(ctx, backends=["hipblaslt-bench"], families=["gemm"], sizes=[64])
    reason = doc["summary"]["backends_unavailable"]["hipblaslt-bench"]
    # ROCm's bin folder follows ROCM_PATH, as stack.tools.which does
    assert str(tool_path.parent / "no-rocm" / "bin") in reason
    assert "/opt/rocm/bin/hipblaslt-bench" in reason


FAKE_AMD_SMI = r"""
import json
print(json.dumps([{"gpu": 0, "power": {"socket_power": {"value": 700, "unit": "W"}},
                   "clock": {"gfx_0": {"clk": {"value": 2100, "unit": "MHz"}}},
                   "temperature": {"hotspot": {"value": 60, "unit": "C"}}}]))
"""


@pytest.mark.process
def test_two_backends_on_one_gpu_share_one_telemetry_sampler(ctx, tool_path):
    make_tool(tool_path, "rocblas-bench", FAKE_ROCBLAS)
    make_tool(tool_path, "hipblaslt-bench", FAKE_HIPBLASLT)
    make_tool(tool_path, "amd-smi", FAKE_AMD_SMI)
    result, doc = run_job(
        ctx,
        backends=["rocblas-bench", "hipblaslt-bench"],
        families=["gemm"],
        precisions=["bf16"],
        sizes=[64],
        tool_repeats=2,
        telemetry=True,
    )
    assert result.status == "succeeded", result.error
    paths = [a.path if hasattr(a, "path") else a["path"] for a in result.artifacts]
    assert paths.count("blas-bench/telemetry-amd-smi.csv") == 1
    backends = doc["summary"]["backends"]
    rocblas, hipblaslt = (
        backends["rocblas-bench"]["telemetry"],
        backends["hipblaslt-bench"]["telemetry"],
    )
    assert rocblas["source"] == "amd-smi" and rocblas["samples"] >= 1 and rocblas == hipblaslt


@pytest.mark.process
def test_a_failing_tool_is_an_error_of_the_case(ctx, tool_path):
    make_tool(
        tool_path,
        "rocblas-bench",
        'print("Query device error: cannot get device count")\nsys.exit(255)',
    )
    result, doc = run_job(
        ctx, backends=["rocblas-bench"], families=["gemm"], precisions=["fp32"], sizes=[64]
    )
    assert result.status == "failed"
    assert "exit status 255" in doc["summary"]["flags"]["errors"][0]


@pytest.mark.process
def test_through_the_command_line(tmp_path):
    params = tmp_path / "params.json"
    params.write_text(
        json.dumps(
            {
                **fast_params(),
                "backends": ["numpy"],
                "families": ["gemm"],
                "precisions": ["fp32"],
                "sizes": [16],
            }
        )
    )
    out = tmp_path / "out"
    proc = run_stack(["run", "blas-bench", "--params", str(params), "--out", str(out)])
    assert proc.returncode == 0, proc.stderr
    events = event_lines(proc.stdout)
    for line in proc.stdout.splitlines():
        parse_event(line)
    assert any(e["event"] == "metric" and e["unit"] == "TFLOP/s" for e in events)
    assert events[-1]["event"] == "progress" and events[-1]["pct"] == 100
    validate_result(json.loads((out / "result.json").read_text()))


@pytest.mark.process
def test_runner_modules_import_nothing_heavy():
    code = (
        "import sys, importlib, pkgutil, stack.blas\n"
        "import stack.kinds.blas_bench\n"
        "for info in pkgutil.walk_packages(stack.blas.__path__, 'stack.blas.'):\n"
        "    importlib.import_module(info.name)\n"
        "print(sorted(m for m in ('numpy', 'torch', 'django', 'jsonschema') if m in sys.modules))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=True,
        env=dict(os.environ, PYTHONPATH=str(REPO_ROOT)),
    )
    assert proc.stdout.strip() == "[]"
