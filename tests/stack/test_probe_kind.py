"""The probe kind against fake tools on PATH: the real subprocess path, not only the parsers."""

import os
import sys

import pytest
from stack_helpers import fixture_text, make_tool, tool_printing

from stack.contract import validate_environment
from stack.kinds import get_kind, validate_params
from stack.parsers import nvidiasmi
from stack.runtime import RunContext
from stack.tools import which

TOOL_NAMES = ["amd-smi", "rocm-smi", "rocminfo", "nvidia-smi", "nvcc", "torch"]


def run_probe(ctx: RunContext, **params):
    result = get_kind("probe").load_runner()(validate_params("probe", params), ctx)
    validate_environment(result.environment)
    return result


@pytest.fixture
def bin_dir(bare_env, use_env, tmp_path):
    use_env(bare_env)
    return tmp_path / "bin"


def fake_nvidia_smi(bin_dir):
    return tool_printing(
        bin_dir,
        "nvidia-smi",
        {nvidiasmi.QUERY_ARGS[0]: "nvidia-smi-h200-query.txt"},
        default="nvidia-smi-h200-plain.txt",
    )


def fake_amd_tools(bin_dir):
    tool_printing(
        bin_dir,
        "amd-smi",
        {
            "static": "amd-smi-static-mi300x-gpu-data.json",
            "list": "amd-smi-list-mi300x.json",
            "version": "amd-smi-version-7.0.txt",
        },
    )
    tool_printing(
        bin_dir,
        "rocm-smi",
        {"--version": "rocm-smi-version.txt", "--json": "rocm-smi-mi300x.json"},
    )
    tool_printing(bin_dir, "rocminfo", {}, default="rocminfo-mi300x-8gpu.txt")


def test_probe_reports_every_tool_absent_on_a_bare_machine_and_succeeds(bin_dir, ctx):
    result = run_probe(ctx, torch=False)  # PyTorch may be installed beside the tests
    assert result.status == "succeeded"
    tools = result.environment["tools"]
    assert list(tools) == TOOL_NAMES
    for name in TOOL_NAMES[:-1]:
        assert tools[name] == {"present": False, "path": None, "version": None, "error": None}
    assert result.environment["gpus"] == []
    assert result.summary["gpu_count"] == 0
    assert result.summary["tools_absent"][:5] == TOOL_NAMES[:5]
    assert result.artifacts == []


@pytest.mark.process
def test_probe_on_this_machine_reports_the_tools_that_are_really_installed(ctx):
    result = run_probe(ctx, torch=False)
    assert result.status == "succeeded"
    tools = result.environment["tools"]
    for name in ("amd-smi", "rocm-smi", "rocminfo", "nvidia-smi"):
        assert tools[name]["present"] == (which(name) is not None), name
    host = result.environment["host"]
    assert host["cpu_cores"] == os.cpu_count()
    assert host["python"] == "{}.{}.{}".format(*sys.version_info[:3])
    assert host["memory_bytes"] and host["memory_bytes"] > 0


@pytest.mark.process
def test_a_fake_nvidia_smi_on_path_lists_eight_h200(bin_dir, ctx):
    fake_nvidia_smi(bin_dir)
    result = run_probe(ctx, torch=False)
    env = result.environment
    assert len(env["gpus"]) == 8
    assert {g["source"] for g in env["gpus"]} == {"nvidia-smi"}
    assert env["gpus"][0]["model"] == "NVIDIA H200"
    assert env["gpus"][0]["arch"] == "sm_90"
    assert env["tools"]["nvidia-smi"] == {
        "present": True,
        "path": str(bin_dir / "nvidia-smi"),
        "version": "580.159.04",
        "error": None,
    }
    assert env["software"]["cuda_version"] == "13.0"
    assert env["software"]["gpu_driver_version"] == "580.159.04"
    assert result.summary["gpus"] == ["8x NVIDIA H200 (sm_90)"]
    raw = (ctx.out / "probe" / "nvidia-smi.txt").read_text()
    assert "--query-gpu=" in raw and "CUDA Version: 13.0" in raw
    assert [a.path for a in result.artifacts] == ["probe/nvidia-smi.txt"]


@pytest.mark.process
def test_a_hanging_tool_is_reported_timed_out_and_the_probe_still_succeeds(bin_dir, ctx):
    make_tool(bin_dir, "rocminfo", "time.sleep(30)")
    result = run_probe(ctx, tool_timeout_s=0.5)
    assert result.status == "succeeded"
    status = result.environment["tools"]["rocminfo"]
    assert status["present"] is True
    assert status["error"].startswith("timed out after 0.5 s")
    assert "rocminfo" in result.summary["tool_errors"]
    assert "timed out" in (ctx.out / "probe" / "rocminfo.txt").read_text()


@pytest.mark.process
def test_nvidia_smi_without_a_driver_is_present_with_its_error(bin_dir, ctx):
    message = fixture_text("nvidia-smi-no-driver.txt")
    make_tool(bin_dir, "nvidia-smi", f"sys.stdout.write({message!r}); sys.exit(9)")
    result = run_probe(ctx)
    status = result.environment["tools"]["nvidia-smi"]
    assert status["present"] is True
    assert status["error"].startswith("exit status 9: NVIDIA-SMI has failed")
    assert result.environment["gpus"] == []


@pytest.mark.process
def test_amd_tools_together_give_one_record_per_gpu_from_amd_smi(bin_dir, ctx):
    fake_amd_tools(bin_dir)
    result = run_probe(ctx)
    env = result.environment
    assert len(env["gpus"]) == 8
    first = env["gpus"][0]
    assert first["source"] == "amd-smi"
    assert first["uuid"] == "2cff74a1-0000-1000-801a-3c5d7f902b46"  # from amd-smi list
    assert first["compute_units"] == 304
    assert env["software"]["rocm_version"] == "7.0.0"
    assert env["software"]["gpu_driver_version"] == "6.14.14"
    assert env["software"]["libraries"]["hsa-runtime"] == "1.14"
    for name in ("amd-smi", "rocm-smi", "rocminfo"):
        assert env["tools"][name]["present"] and env["tools"][name]["error"] is None
        assert (ctx.out / "probe" / f"{name}.txt").is_file()
    assert result.summary["gpus"] == ["8x AMD Instinct MI300X (gfx942)"]


@pytest.mark.process
def test_rocm_smi_is_used_when_amd_smi_is_absent_and_rocminfo_fills_compute_units(bin_dir, ctx):
    tool_printing(bin_dir, "rocm-smi", {"--json": "rocm-smi-mi300x.json"})
    tool_printing(bin_dir, "rocminfo", {}, default="rocminfo-mi300x-8gpu.txt")
    gpus = run_probe(ctx).environment["gpus"]
    assert {g["source"] for g in gpus} == {"rocm-smi"}
    assert {g["compute_units"] for g in gpus} == {304}


@pytest.mark.process
def test_rocm_version_comes_from_the_install_info_file(bin_dir, ctx, tmp_path, monkeypatch):
    rocm = tmp_path / "rocm"
    (rocm / ".info").mkdir(parents=True)
    (rocm / ".info" / "version").write_text("6.3.1-48\n")
    monkeypatch.setenv("ROCM_PATH", str(rocm))
    assert run_probe(ctx).environment["software"]["rocm_version"] == "6.3.1-48"


FAKE_ROCM_TORCH = """
__version__ = "2.5.1+rocm6.2"
class version:
    hip = "6.2.41133-dd7f95766"
    cuda = None
class _Props:
    name = "AMD Instinct MI300X"
    total_memory = 205822885888
    multi_processor_count = 304
    gcnArchName = "gfx942:sramecc+:xnack-"
    major, minor = 9, 4
class cuda:
    device_count = staticmethod(lambda: 8)
    get_device_properties = staticmethod(lambda i: _Props())
class backends:
    class cudnn:
        is_available = staticmethod(lambda: True)
        version = staticmethod(lambda: 3002000)
"""


def install_fake_torch(tmp_path, monkeypatch, source):
    site = tmp_path / "site"
    (site / "torch").mkdir(parents=True)
    (site / "torch" / "__init__.py").write_text(source)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("PYTHONPATH", str(site))
    return site


@pytest.mark.process
def test_torch_is_asked_in_a_subprocess_and_used_when_no_tool_saw_the_gpus(
    bin_dir, ctx, tmp_path, monkeypatch
):
    install_fake_torch(tmp_path, monkeypatch, FAKE_ROCM_TORCH)
    imported_before = "torch" in sys.modules  # another test in this worker may have
    result = run_probe(ctx)
    env = result.environment
    # The probe imports no torch here: the fake's version below reaches only a subprocess,
    # whose PYTHONPATH holds it; and this process gained no torch module.
    assert imported_before or "torch" not in sys.modules
    assert env["tools"]["torch"]["present"] is True
    assert env["tools"]["torch"]["version"] == "2.5.1+rocm6.2"
    assert env["software"]["torch_backend"] == "rocm"
    assert env["software"]["rocm_version"] == "6.2.41133-dd7f95766"
    assert env["software"]["libraries"]["miopen"] == "3002000"
    assert len(env["gpus"]) == 8
    assert env["gpus"][0]["source"] == "torch"
    assert env["gpus"][0]["arch"] == "gfx942"


@pytest.mark.process
def test_torch_gpus_are_not_listed_twice_when_a_tool_saw_them(bin_dir, ctx, tmp_path, monkeypatch):
    install_fake_torch(tmp_path, monkeypatch, FAKE_ROCM_TORCH)
    tool_printing(bin_dir, "rocminfo", {}, default="rocminfo-mi300x-8gpu.txt")
    gpus = run_probe(ctx).environment["gpus"]
    assert len(gpus) == 8
    assert {g["source"] for g in gpus} == {"rocminfo"}


@pytest.mark.parametrize(
    ("source", "error"),
    [
        ("raise ImportError('libamdhip64.so: cannot open shared object file')", "ImportError"),
        ("import os; os.abort()", "killed by SIGABRT"),
    ],
)
@pytest.mark.process
def test_a_broken_torch_install_is_reported_without_breaking_the_probe(
    bin_dir, ctx, tmp_path, monkeypatch, source, error
):
    install_fake_torch(tmp_path, monkeypatch, source)
    result = run_probe(ctx)
    assert result.status == "succeeded"
    status = result.environment["tools"]["torch"]
    assert status["present"] is True
    assert error in status["error"]


def test_torch_false_leaves_torch_unasked(bin_dir, ctx, tmp_path, monkeypatch):
    install_fake_torch(tmp_path, monkeypatch, FAKE_ROCM_TORCH)
    status = run_probe(ctx, torch=False).environment["tools"]["torch"]
    assert status["present"] is True
    assert "not asked" in status["error"]
