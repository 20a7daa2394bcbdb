"""The profile kind end to end on the CPU, through ``python -m stack run profile`` as the
worker runs it: the PyTorch profiler's profile, the trace kept, the vendors' profilers
said to be unavailable and why, and a script of the source tree held inside it."""

import importlib.util
import json

import pytest
from stack_helpers import run_stack

from stack.contract import parse_event, validate_result
from tests.waits import LONG_JOB_S

pytestmark = pytest.mark.process

if importlib.util.find_spec("torch") is None:  # not imported here: other tests check it is not
    pytest.skip("PyTorch is not installed", allow_module_level=True)

SMALL_GEMM = {"m": 64, "n": 64, "k": 64, "dtype": "fp32", "iterations": 3, "warmup": 1}


def profile(tmp_path, env, params, work=None):
    (tmp_path / "params.json").write_text(json.dumps({"environment": False, **params}))
    out = tmp_path / "out"
    args = ["run", "profile", "--params", str(tmp_path / "params.json"), "--out", str(out)]
    if work is not None:
        args += ["--work", str(work)]
    proc = run_stack(args, env=env, timeout=LONG_JOB_S)
    document = json.loads((out / "result.json").read_text())
    validate_result(document)
    return proc, document, out


def measured(document, metric, **case):
    return [
        m
        for m in document["measurements"]
        if m["metric"] == metric and all(m["case"].get(k) == v for k, v in case.items())
    ]


def test_a_gemm_on_the_cpu_is_profiled_by_the_pytorch_profiler(tmp_path, bare_env):
    proc, document, _ = profile(tmp_path, bare_env, {"workload": "gemm", **SMALL_GEMM})
    assert proc.returncode == 0, proc.stderr
    assert document["status"] == "succeeded"
    summary = document["summary"]
    assert summary["ran"] == ["torch"]
    assert summary["profilers"]["torch"]["level"] == "operator"
    assert summary["top_kernels"]["torch"][0]["name"] == "aten::mm"
    (mm,) = measured(document, "kernel_time", profiler="torch", kernel="aten::mm")
    assert mm["unit"] == "ns" and mm["value"] > 0
    expected = {"workload": "gemm", "m": 64, "dtype": "fp32", "iterations": 3, "level": "operator"}
    assert expected.items() <= mm["case"].items()
    (step,) = measured(document, "step_time")
    assert len(step["samples"]) == 3
    progress = [e["pct"] for e in map(parse_event, proc.stdout.splitlines()) if "pct" in e]
    assert progress == sorted(progress) and progress[-1] == 100


def test_the_trace_is_kept_as_a_chrome_trace_and_the_profile_beside_it(tmp_path, bare_env):
    _, document, out = profile(tmp_path, bare_env, {"workload": "gemm", **SMALL_GEMM})
    paths = {a["path"]: a for a in document["artifacts"]}
    assert "perfetto" in paths["profile/trace.json"]["description"].lower()
    trace = json.loads((out / "profile/trace.json").read_text())
    assert any(e.get("name") == "aten::mm" and e.get("ph") == "X" for e in trace["traceEvents"])
    saved = json.loads((out / "profile/profile.json").read_text())
    assert saved["top_kernels"] == document["summary"]["top_kernels"]


def test_ncu_and_rocprofv3_are_said_to_be_unavailable_and_why(tmp_path, bare_env):
    _, document, _ = profile(tmp_path, bare_env, {"workload": "gemm", **SMALL_GEMM})
    assert document["summary"]["unavailable"] == {
        "ncu": "no GPU: the workload ran on the CPU",
        "rocprofv3": "no GPU: the workload ran on the CPU",
    }


def test_when_no_asked_profiler_can_run_the_job_fails_saying_why(tmp_path, bare_env):
    proc, document, _ = profile(
        tmp_path, bare_env, {"workload": "gemm", "profilers": ["ncu"], **SMALL_GEMM}
    )
    assert proc.returncode == 1
    assert document["status"] == "failed"
    assert document["error"] == "no profiler could run: ncu: no GPU: the workload ran on the CPU"
    assert measured(document, "step_time")  # the workload still ran, and was timed


def test_a_transformer_block_is_profiled_operator_by_operator(tmp_path, bare_env):
    params = {
        "workload": "transformer",
        "batch": 2,
        "seq_len": 16,
        "d_model": 32,
        "heads": 4,
        "dtype": "fp32",
        "iterations": 2,
        "warmup": 1,
        "trace_max_bytes": 65536,
    }
    proc, document, out = profile(tmp_path, bare_env, params)
    assert proc.returncode == 0, proc.stderr
    names = {k["name"] for k in document["summary"]["top_kernels"]["torch"]}
    assert {"aten::addmm", "aten::layer_norm"} & names
    assert document["measurements"][0]["case"]["d_model"] == 32
    assert (out / "profile/trace.json").stat().st_size <= 65536


def test_the_gemm_shapes_of_a_transformer_block_are_listed_as_blas_calls(tmp_path, bare_env):
    params = {
        "workload": "transformer",
        "batch": 2,
        "seq_len": 16,
        "d_model": 32,
        "heads": 4,
        "dtype": "fp32",
        "iterations": 2,
        "warmup": 1,
    }
    _, document, _ = profile(tmp_path, bare_env, params)
    shapes = {
        (s["m"], s["n"], s["k"], s["transa"], s["transb"]): s["calls"]
        for s in document["summary"]["gemm_shapes"]
    }
    # the Linear layers of 32 tokens x 32 wide: QKV (96), output (32), MLP up (128), down
    assert shapes[(96, 32, 32, "T", "N")] == 2
    assert shapes[(32, 32, 32, "T", "N")] == 2
    assert shapes[(128, 32, 32, "T", "N")] == 2
    assert shapes[(32, 32, 128, "T", "N")] == 2
    _, without, _ = profile(tmp_path, bare_env, {**params, "record_shapes": False})
    assert without["summary"]["gemm_shapes"] is None


def test_heads_that_do_not_divide_the_width_are_refused(tmp_path, bare_env):
    params = {"workload": "transformer", "d_model": 30, "heads": 4}
    proc, document, _ = profile(tmp_path, bare_env, params)
    assert proc.returncode == 3
    assert document["error"] == "heads: 4 does not divide d_model 30"


def write_source(work, files):
    for name, text in files.items():
        path = work / "src" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_a_script_of_the_source_tree_runs_once_with_its_arguments(tmp_path, bare_env):
    work = tmp_path / "work"
    write_source(
        work,
        {
            "bench/helper.py": "SIZE = 32\n",
            "bench/run.py": (
                "import sys, torch\nfrom helper import SIZE\n"
                "assert sys.argv[1:] == ['--twice'], sys.argv\n"
                "a = torch.ones(SIZE, SIZE)\nfor _ in range(2):\n    torch.mm(a, a)\n"
            ),
        },
    )
    params = {"workload": "script", "script": "bench/run.py", "script_args": ["--twice"]}
    proc, document, _ = profile(tmp_path, bare_env, params, work=work)
    assert proc.returncode == 0, proc.stderr
    (mm,) = measured(document, "kernel_calls", kernel="aten::mm")
    assert mm["value"] == 2
    assert mm["case"]["script"] == "bench/run.py" and mm["case"]["args"] == "--twice"


def test_a_script_that_raises_fails_the_job_naming_the_error(tmp_path, bare_env):
    work = tmp_path / "work"
    write_source(work, {"boom.py": "raise RuntimeError('out of memory, says the script')\n"})
    proc, document, _ = profile(
        tmp_path, bare_env, {"workload": "script", "script": "boom.py"}, work
    )
    assert proc.returncode == 1
    assert document["error"] == (
        "the workload failed: RuntimeError: out of memory, says the script"
    )


def test_a_script_exiting_non_zero_fails_the_job(tmp_path, bare_env):
    work = tmp_path / "work"
    write_source(work, {"exit.py": "import sys\nsys.exit(4)\n"})
    _, document, _ = profile(tmp_path, bare_env, {"workload": "script", "script": "exit.py"}, work)
    assert document["status"] == "failed"
    assert "the script exited with status 4" in document["error"]


@pytest.mark.parametrize(
    ("script", "said"),
    [
        ("../outside.py", "leaves the source tree"),
        ("/etc/hostname", "leaves the source tree"),
        ("link.py", "leaves the source tree"),
        ("notes.txt", "is not a .py file"),
        ("missing.py", "is not a file of the source tree"),
        ("", "the script workload needs a .py file"),
    ],
)
def test_a_script_outside_the_source_tree_or_not_python_is_refused(
    tmp_path, bare_env, script, said
):
    work = tmp_path / "work"
    write_source(work, {"notes.txt": "hello\n"})
    (work / "outside.py").write_text("print('escaped')\n")
    (work / "src" / "link.py").symlink_to(work / "outside.py")
    proc, document, _ = profile(tmp_path, bare_env, {"workload": "script", "script": script}, work)
    assert proc.returncode == 3
    assert document["status"] == "errored"
    assert document["error"].startswith("script: ") and said in document["error"]


def test_the_environment_fingerprint_is_the_probes(tmp_path, bare_env):
    _, document, _ = profile(
        tmp_path, bare_env, {"workload": "gemm", "environment": True, **SMALL_GEMM}
    )
    assert document["environment"]["host"]["cpu_cores"] >= 1
    assert any(a["path"].startswith("probe/") for a in document["artifacts"])
