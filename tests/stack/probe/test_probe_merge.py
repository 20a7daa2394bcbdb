"""What several tools said about the GPUs, merged into one record per GPU (stack.probe)."""

from stack_helpers import fixture_text

from stack import probe
from stack.parsers import amdsmi, rocminfo, rocmsmi


def test_merge_prefers_amd_smi_and_fills_gaps_from_rocminfo():
    reports = {
        "amd-smi": probe.ToolReport("amd-smi", present=True),
        "rocminfo": probe.ToolReport("rocminfo", present=True),
    }
    reports["amd-smi"].gpus = amdsmi.parse_static(
        fixture_text("amd-smi-static-mi300x-bare-list.json")
    )
    reports["rocminfo"].gpus = rocminfo.parse_gpus(fixture_text("rocminfo-mi300x-8gpu.txt"))
    merged = probe.merge_gpus(reports)
    assert len(merged) == 8
    assert merged[0]["source"] == "amd-smi"
    assert merged[0]["uuid"] == "GPU-8e1a3c5d7f902b46"
    assert reports["amd-smi"].gpus[0]["uuid"] is None  # the tool's own record is untouched


def test_merge_does_not_mix_sources_that_disagree_on_the_gpus():
    reports = {
        "rocm-smi": probe.ToolReport("rocm-smi", present=True),
        "rocminfo": probe.ToolReport("rocminfo", present=True),
    }
    reports["rocm-smi"].gpus = rocmsmi.parse_json(fixture_text("rocm-smi-mi210-rocm5.json"))["gpus"]
    reports["rocminfo"].gpus = rocminfo.parse_gpus(fixture_text("rocminfo-mi300x-8gpu.txt"))
    merged = probe.merge_gpus(reports)
    assert len(merged) == 1
    assert merged[0]["compute_units"] is None


def test_describe_gpus_counts_identical_models():
    gpus = [
        {"model": "AMD Instinct MI300X", "arch": "gfx942"},
        {"model": "AMD Instinct MI300X", "arch": "gfx942"},
        {"model": "Radeon PRO W7900", "arch": None},
    ]
    assert probe.describe_gpus(gpus) == [
        "2x AMD Instinct MI300X (gfx942)",
        "1x Radeon PRO W7900",
    ]
