"""The vendor peak table: every GPU of REFERENCE.md, found by its names and its architecture."""

import pytest

from stack.blas import peaks

# (how tools name it, row, fp64, fp32, tf32, bf16, fp8, int8, hbm TB/s) from REFERENCE.md
REFERENCE = [
    ("AMD Instinct MI355X", "MI355X", 78.6, 157.3, None, 2500, 5000, 5000, 8.0),
    ("AMD Instinct MI325X", "MI325X", 163.4, 163.4, 653.7, 1307.4, 2614.9, 2614.9, 6.0),
    ("AMD Instinct MI300X", "MI300X", 163.4, 163.4, 653.7, 1307.4, 2614.9, 2614.9, 5.3),
    ("AMD Instinct MI250X", "MI250X", 95.7, 95.7, None, 383, None, 383, 3.2),
    ("NVIDIA H200", "H200", 66.9, 66.9, 494.7, 989.4, 1978.9, 1978.9, 4.8),
    ("NVIDIA H100 80GB HBM3", "H100 SXM", 66.9, 66.9, 494.7, 989.4, 1978.9, 1978.9, 3.35),
    ("NVIDIA A100-SXM4-80GB", "A100 SXM", 19.5, 19.5, 156, 312, None, 624, 2.0),
]


@pytest.mark.parametrize(
    ("name", "row", "fp64", "fp32", "tf32", "bf16", "fp8", "int8", "hbm"), REFERENCE
)
def test_every_reference_gpu_is_found_by_its_marketing_name(
    name, row, fp64, fp32, tf32, bf16, fp8, int8, hbm
):
    match = peaks.lookup(name, None)
    assert (match.gpu, match.matched_by) == (row, "name")
    assert match.peak("fp64") == fp64
    assert match.peak("fp32") == fp32
    assert match.peak("tf32") == tf32
    assert match.peak("bf16") == bf16 == match.peak("fp16")
    assert match.peak("fp8") == fp8
    assert match.peak("int8") == int8
    assert match.hbm_tbps == hbm
    assert "REFERENCE.md" in match.source and "data sheet" in match.source


def test_h200_bf16_dense_peak_is_the_goal_figure():
    assert peaks.lookup("NVIDIA H200", "sm_90").peak("bf16") == 989.4


@pytest.mark.parametrize(
    ("name", "row"),
    [
        ("MI300X", "MI300X"),
        ("AMD Instinct MI300X VF", "MI300X"),
        ("Instinct MI325X", "MI325X"),
        ("NVIDIA H100 SXM5 80GB", "H100 SXM"),
        ("NVIDIA A100-SXM4-40GB", "A100 SXM"),
        ("AMD Instinct MI250X/MI250", "MI250X"),
    ],
)
def test_other_spellings_of_the_same_parts(name, row):
    assert peaks.lookup(name).gpu == row


def test_a100_40gb_keeps_compute_peaks_but_not_the_80gb_bandwidth():
    match = peaks.lookup("NVIDIA A100-SXM4-40GB")
    assert match.peak("bf16") == 312
    assert match.hbm_tbps is None and "40GB" in match.note


@pytest.mark.parametrize(
    "name",
    [
        "NVIDIA H100 PCIe",
        "NVIDIA H100 NVL",
        "NVIDIA H200 NVL",
        "NVIDIA A100-PCIE-40GB",
        "AMD Instinct MI250",
        "AMD Instinct MI350X",
        "AMD Instinct MI300A",
        "NVIDIA GeForce RTX 4090",
    ],
)
def test_a_named_gpu_outside_the_table_gets_no_borrowed_peak(name):
    arch = {"NVIDIA H100 PCIe": "sm_90", "AMD Instinct MI250": "gfx90a"}.get(name)
    match = peaks.lookup(name, arch)
    assert match.gpu is None and match.peaks == {}
    assert "not in the peak table" in match.note


@pytest.mark.parametrize(
    ("arch", "gpu", "bf16", "hbm"),
    [
        ("gfx950", "MI355X", 2500, 8.0),
        ("gfx942:sramecc+:xnack-", "MI325X/MI300X", 1307.4, None),
        ("gfx90a", "MI250X", 383, 3.2),
        ("sm_90", "H200/H100 SXM", 989.4, None),
        ("sm_80", "A100 SXM", 312, 2.0),
    ],
)
def test_lookup_by_architecture_when_no_name_is_known(arch, gpu, bf16, hbm):
    match = peaks.lookup(None, arch)
    assert (match.gpu, match.matched_by) == (gpu, "arch")
    assert match.peak("bf16") == bf16
    assert match.hbm_tbps == hbm  # parts of one arch differ in memory: no guess
    assert "architecture" in match.note


def test_a_generic_name_falls_back_to_the_architecture():
    assert peaks.lookup("AMD GPU", "gfx942").matched_by == "arch"
    assert peaks.lookup("NVIDIA GPU", "sm_90").peak("fp8") == 1978.9


def test_unknown_architecture_and_cpu_have_no_peak():
    assert peaks.lookup(None, "gfx1100").peaks == {}
    assert peaks.lookup(None, None).gpu is None
