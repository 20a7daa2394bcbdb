"""The PyTorch profiler's output, taken from a real profile on the CPU, read into kernels.

The profile is taken in a child process: torch imported into the test process would
hide other tests' checks that a runner never imports it where it need not.
"""

import importlib.util
import json
import subprocess
import sys

import pytest
from stack_helpers import REPO_ROOT

from stack.profile import torch_profiler
from stack.profile.normalise import top_kernels
from tests.waits import LONG_JOB_S

if importlib.util.find_spec("torch") is None:
    pytest.skip("PyTorch is not installed", allow_module_level=True)

PROFILE = """
import json, sys, torch
from stack.profile.torch_profiler import key_average_rows
a, b = torch.randn(64, 64), torch.randn(64, 64)
with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
    for _ in range(3):
        torch.matmul(a, b)
prof.export_chrome_trace(sys.argv[1] + "/trace.json")
with open(sys.argv[1] + "/rows.json", "w") as f:
    json.dump(key_average_rows(prof.key_averages()), f)
"""


@pytest.fixture(scope="module")
def profiled(tmp_path_factory):
    folder = tmp_path_factory.mktemp("trace")
    subprocess.run(
        [sys.executable, "-c", PROFILE, str(folder)], cwd=REPO_ROOT, check=True, timeout=LONG_JOB_S
    )
    rows = json.loads((folder / "rows.json").read_text())
    return rows, json.loads((folder / "trace.json").read_text())


@pytest.mark.slow
@pytest.mark.process
def test_key_averages_become_plain_rows_with_times_in_microseconds(profiled):
    rows, _ = profiled
    mm = next(r for r in rows if r["key"] == "aten::mm")
    assert mm["count"] == 3
    assert mm["self_cpu_time_total_us"] > 0
    assert all(isinstance(v, str | int | float) for r in rows for v in r.values())


@pytest.mark.process
def test_on_the_cpu_the_profile_is_the_operators_self_time(profiled):
    rows, _ = profiled
    kernels, total = top_kernels(torch_profiler.parse_key_averages(rows), 10)
    names = [k.name for k in kernels]
    assert "aten::mm" in names
    mm = kernels[names.index("aten::mm")]
    assert mm.calls == 3
    assert mm.total_ns == pytest.approx(
        next(r for r in rows if r["key"] == "aten::mm")["self_cpu_time_total_us"] * 1000
    )
    assert sum(k.share_pct for k in kernels) == pytest.approx(
        100 * sum(k.total_ns for k in kernels) / total
    )


@pytest.mark.process
def test_the_chrome_trace_has_the_operators_as_complete_events(profiled):
    _, document = profiled
    ops = torch_profiler.parse_chrome_trace(document, torch_profiler.OPERATOR_CATEGORY)
    assert sum(1 for k in ops if k.name == "aten::mm") == 3
    assert torch_profiler.parse_chrome_trace(document) == []  # no GPU kernels on the CPU


def test_gpu_kernels_are_read_from_kernel_events_in_microseconds():
    document = {
        "traceEvents": [
            {"ph": "X", "cat": "kernel", "name": "nvjet_gemm", "ts": 10.0, "dur": 178.5},
            {"ph": "X", "cat": "kernel", "name": "nvjet_gemm", "ts": 200.0, "dur": 180.5},
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 9.0, "dur": 4.0},
            {"ph": "M", "name": "process_name", "args": {"name": "python"}},
        ]
    }
    (gemm,), _ = top_kernels(torch_profiler.parse_chrome_trace(document), 5)
    assert (gemm.calls, gemm.total_ns, gemm.durations_ns) == (2, 359000, [178500, 180500])


@pytest.mark.process
def test_a_trace_too_large_keeps_its_metadata_and_its_latest_events(profiled):
    _, document = profiled
    size = len(json.dumps(document))
    trimmed, cut = torch_profiler.trim_trace(document, size // 2)
    assert cut > 0
    assert len(json.dumps(trimmed)) <= size // 2
    events = torch_profiler.trace_events(trimmed)
    meta = [e for e in torch_profiler.trace_events(document) if e.get("ph") == "M"]
    assert all(e in events for e in meta)
    latest = max(
        e.get("ts", 0) for e in torch_profiler.trace_events(document) if e.get("ph") != "M"
    )
    assert any(e.get("ts") == latest for e in events)
    assert trimmed["schemaVersion"] == document["schemaVersion"]


@pytest.mark.process
def test_a_trace_within_the_limit_is_kept_whole(profiled):
    _, document = profiled
    assert torch_profiler.trim_trace(document, 10**9) == (document, 0)
