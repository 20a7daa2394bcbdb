"""amd-smi's JSON in both shapes (bare list, {"gpu_data": [...]}) and its version line."""

import contextlib

import pytest
from stack_helpers import fixture_text

from stack.parsers import ParseError, amdsmi

MIB = 1024**2


def test_amd_smi_static_bare_list_gives_eight_mi300x():
    gpus = amdsmi.parse_static(fixture_text("amd-smi-static-mi300x-bare-list.json"))
    assert len(gpus) == 8
    first = gpus[0]
    assert first == {
        "index": 0,
        "vendor": "amd",
        "model": "AMD Instinct MI300X",
        "arch": "gfx942",
        "memory_bytes": 196592 * MIB,
        "compute_units": 304,
        "driver": "6.8.5",
        "uuid": None,
        "source": "amd-smi",
    }


def test_amd_smi_static_gpu_data_shape_gives_the_same_gpus():
    bare = amdsmi.parse_static(fixture_text("amd-smi-static-mi300x-bare-list.json"))
    wrapped = amdsmi.parse_static(fixture_text("amd-smi-static-mi300x-gpu-data.json"))
    assert len(wrapped) == 8
    for a, b in zip(bare, wrapped, strict=True):
        assert {**a, "driver": None} == {**b, "driver": None}
    assert wrapped[0]["driver"] == "6.12.12"


def test_amd_smi_vram_size_as_a_string_is_read_as_mib():
    (gpu,) = amdsmi.parse_static(fixture_text("amd-smi-static-mi210-size-string.json"))
    assert gpu["memory_bytes"] == 65520 * MIB
    assert gpu["arch"] == "gfx90a"
    assert gpu["compute_units"] == 104
    assert gpu["model"] == "AMD Instinct MI210"


def test_amd_smi_json_after_a_warning_line_still_parses():
    text = (
        "WARNING: User is missing the following required groups: render, video. "
        "Please add user to these groups.\n" + fixture_text("amd-smi-static-mi300x-gpu-data.json")
    )
    assert len(amdsmi.parse_static(text)) == 8


def test_amd_smi_market_name_that_is_a_device_id_falls_back_to_the_board_name():
    text = fixture_text("amd-smi-static-mi300x-bare-list.json").replace(
        '"market_name": "AMD Instinct MI300X"', '"market_name": "0x74a1"'
    )
    assert amdsmi.parse_static(text)[0]["model"] == "AMD Instinct MI300X OAM"


def test_amd_smi_na_fields_become_none():
    text = fixture_text("amd-smi-static-mi210-size-string.json").replace(
        '"num_compute_units": 104', '"num_compute_units": "N/A"'
    )
    assert amdsmi.parse_static(text)[0]["compute_units"] is None


def test_amd_smi_list_gives_uuids_by_gpu_index():
    ids = amdsmi.parse_list(fixture_text("amd-smi-list-mi300x.json"))
    assert sorted(ids) == list(range(8))
    assert ids[0] == {"uuid": "2cff74a1-0000-1000-801a-3c5d7f902b46", "bdf": "0000:0c:00.0"}


@pytest.mark.parametrize(
    ("fixture", "expected"),
    [
        (
            "amd-smi-version-6.2.txt",
            {"tool": "24.6.3+9578815", "library": "24.6.3.0", "rocm": "6.2.2", "amdgpu": None},
        ),
        (
            "amd-smi-version-7.0.txt",
            {"tool": "26.0.0+37d158ab", "library": "26.0.0", "rocm": "7.0.0", "amdgpu": "6.14.14"},
        ),
    ],
)
def test_amd_smi_version_line_is_split_into_its_parts(fixture, expected):
    assert amdsmi.parse_version(fixture_text(fixture)) == expected


def test_amd_smi_version_json_form_is_read_too():
    text = (
        '[{"tool": "AMDSMI Tool", "version": "24.6.3+9578815", '
        '"amdsmi_library_version": "24.6.3.0", "rocm_version": "6.2.2"}]'
    )
    assert amdsmi.parse_version(text) == {
        "tool": "24.6.3+9578815",
        "library": "24.6.3.0",
        "rocm": "6.2.2",
        "amdgpu": None,
    }


@pytest.mark.parametrize(
    "text", ["", "AMD SMI could not initialise: no GPU found", '{"error": "no gpus"}', "42"]
)
def test_amd_smi_output_without_gpu_objects_raises_parse_error_or_is_empty(text):
    with contextlib.suppress(ParseError):
        assert amdsmi.parse_static(text) == []


def test_amd_smi_metric_gives_the_first_gpu_s_clocks_power_temperature_and_throttling():
    text = (
        '[{"gpu": 0, "power": {"socket_power": {"value": 712, "unit": "W"}, '
        '"throttle_status": "THROTTLED"}, "clock": {"gfx_0": {"clk": {"value": 1893}}, '
        '"mem_0": {"clk": {"value": 1300}}}, "temperature": {"hotspot": {"value": 78}}}]'
    )
    assert amdsmi.parse_metric(text) == {
        "sm_clock_mhz": 1893.0,
        "mem_clock_mhz": 1300.0,
        "power_w": 712.0,
        "temperature_c": 78.0,
        "throttled": True,
    }
    assert amdsmi.parse_metric("ERROR: no GPU") is None
