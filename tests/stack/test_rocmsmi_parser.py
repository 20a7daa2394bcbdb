"""rocm-smi's JSON: current labels (MI300X) and ROCm 5's lower-case ones (MI210)."""

from stack_helpers import fixture_text

from stack.parsers import rocmsmi


def test_rocm_smi_json_gives_eight_mi300x_with_vram_and_unique_id():
    parsed = rocmsmi.parse_json(fixture_text("rocm-smi-mi300x.json"))
    gpus = parsed["gpus"]
    assert len(gpus) == 8
    assert gpus[0] == {
        "index": 0,
        "vendor": "amd",
        "model": "AMD Instinct MI300X",
        "arch": "gfx942",
        "memory_bytes": 206141652992,
        "compute_units": None,
        "driver": "6.8.5",
        "uuid": "0x8e1a3c5d7f902b46",
        "source": "rocm-smi",
    }
    assert parsed["driver_version"] == "6.8.5"


def test_rocm_smi_cards_are_ordered_by_number_not_by_text():
    text = fixture_text("rocm-smi-mi300x.json")
    data = rocmsmi.parse_json(text.replace('"card1"', '"card10"'))
    assert [g["index"] for g in data["gpus"]] == [0, 2, 3, 4, 5, 6, 7, 10]


def test_rocm_smi_from_rocm_5_reads_lower_case_labels_and_has_no_arch():
    (gpu,) = rocmsmi.parse_json(fixture_text("rocm-smi-mi210-rocm5.json"))["gpus"]
    assert gpu["model"] == "Instinct MI210"
    assert gpu["arch"] is None
    assert gpu["memory_bytes"] == 68702699520


def test_rocm_smi_model_skips_a_bare_pci_device_id():
    text = fixture_text("rocm-smi-mi210-rocm5.json").replace("Instinct MI210", "N/A")
    (gpu,) = rocmsmi.parse_json(text)["gpus"]
    assert gpu["model"] == "0x0c34"


def test_rocm_smi_version_gives_tool_and_library():
    versions = rocmsmi.parse_version(fixture_text("rocm-smi-version.txt"))
    assert versions == {"tool": "3.0.0+f7a9d46", "library": "7.3.0"}
