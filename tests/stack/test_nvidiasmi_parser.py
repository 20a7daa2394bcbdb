"""nvidia-smi's GPU query and banner (an 8x H200 HGX), and nvcc's version."""

import pytest
from stack_helpers import fixture_text

from stack.parsers import ParseError, nvcc, nvidiasmi


def test_nvidia_smi_query_gives_eight_h200_with_sm_90():
    gpus = nvidiasmi.parse_query_gpu(fixture_text("nvidia-smi-h200-query.txt"))
    assert len(gpus) == 8
    assert gpus[0] == {
        "index": 0,
        "vendor": "nvidia",
        "model": "NVIDIA H200",
        "arch": "sm_90",
        "memory_bytes": 143771 * 1024**2,
        "compute_units": None,
        "driver": "580.159.04",
        "uuid": "GPU-5f3c2a1e-8b7d-4c6e-9a0f-1d2e3b4c5a69",
        "source": "nvidia-smi",
    }


@pytest.mark.parametrize(
    ("cap", "arch"),
    [
        ("9.0", "sm_90"),
        ("8.0", "sm_80"),
        ("8.6", "sm_86"),
        ("10.0", "sm_100"),
        ("12.0", "sm_120"),
        ("[N/A]", None),
        ("", None),
        (None, None),
    ],
)
def test_nvidia_compute_capability_becomes_an_sm_arch(cap, arch):
    assert nvidiasmi.compute_cap_to_arch(cap) == arch


def test_nvidia_smi_query_with_header_and_units_parses_too():
    gpus = nvidiasmi.parse_query_gpu(fixture_text("nvidia-smi-h200-query-header.txt"))
    assert [g["memory_bytes"] for g in gpus] == [143771 * 1024**2] * 2


def test_nvidia_smi_legacy_query_without_compute_cap_has_no_arch():
    text = "0, Tesla V100-SXM2-32GB, GPU-0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d, 32768, 470.82.01\n"
    (gpu,) = nvidiasmi.parse_query_gpu(text, nvidiasmi.LEGACY_FIELDS)
    assert gpu["arch"] is None
    assert gpu["model"] == "Tesla V100-SXM2-32GB"


def test_nvidia_smi_error_text_is_not_taken_for_a_gpu():
    with pytest.raises(ParseError):
        nvidiasmi.parse_query_gpu(fixture_text("nvidia-smi-no-driver.txt"))


def test_nvidia_smi_banner_gives_driver_and_cuda_versions():
    assert nvidiasmi.parse_banner(fixture_text("nvidia-smi-h200-plain.txt")) == {
        "smi_version": "580.159.04",
        "driver_version": "580.159.04",
        "cuda_version": "13.0",
    }


def test_nvidia_smi_version_command_gives_the_same_versions():
    assert nvidiasmi.parse_banner(fixture_text("nvidia-smi-version.txt")) == {
        "smi_version": "580.159.04",
        "driver_version": "580.159.04",
        "cuda_version": "13.0",
    }


def test_nvidia_smi_failure_message_has_no_versions():
    banner = nvidiasmi.parse_banner(fixture_text("nvidia-smi-no-driver.txt"))
    assert banner == {"smi_version": None, "driver_version": None, "cuda_version": None}


@pytest.mark.parametrize(
    ("fixture", "release", "version"),
    [("nvcc-version-12.4.txt", "12.4", "12.4.131"), ("nvcc-version-13.0.txt", "13.0", "13.0.88")],
)
def test_nvcc_version_gives_release_and_full_version(fixture, release, version):
    assert nvcc.parse_version(fixture_text(fixture)) == {"release": release, "version": version}
