"""Host files (/etc/os-release, /proc/cpuinfo, /proc/meminfo) and the shared parser helpers."""

import pytest

from stack.parsers import ParseError, clean, extract_json, gpu_entry, size_to_bytes, to_int
from stack.parsers.host import parse_cpu_model, parse_meminfo_total, parse_os_release

DEBIAN_OS_RELEASE = """\
PRETTY_NAME="Debian GNU/Linux 13 (trixie)"
NAME="Debian GNU/Linux"
VERSION_ID="13"
VERSION="13 (trixie)"
ID=debian
HOME_URL="https://www.debian.org/"
"""

X86_CPUINFO = """\
processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 17
model name\t: AMD EPYC 9654 96-Core Processor
stepping\t: 1

processor\t: 1
model name\t: AMD EPYC 9654 96-Core Processor
"""

ARM_CPUINFO = """\
processor\t: 0
BogoMIPS\t: 2000.00
CPU implementer\t: 0x41
CPU part\t: 0xd4f

Hardware\t: NVIDIA Grace
"""


def test_os_release_pretty_name_loses_its_quotes():
    assert parse_os_release(DEBIAN_OS_RELEASE)["PRETTY_NAME"] == "Debian GNU/Linux 13 (trixie)"
    assert parse_os_release(DEBIAN_OS_RELEASE)["ID"] == "debian"


def test_cpu_model_is_the_model_name_not_the_model_number():
    assert parse_cpu_model(X86_CPUINFO) == "AMD EPYC 9654 96-Core Processor"


def test_cpu_model_on_arm_falls_back_to_hardware():
    assert parse_cpu_model(ARM_CPUINFO) == "NVIDIA Grace"


def test_cpu_model_is_none_when_cpuinfo_says_nothing_useful():
    assert parse_cpu_model("processor\t: 0\n") is None


def test_meminfo_total_is_in_bytes():
    text = "MemTotal:       1584957048 kB\nMemFree:        1500000000 kB\n"
    assert parse_meminfo_total(text) == 1584957048 * 1024
    assert parse_meminfo_total("") is None


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (196592, 196592),
        ({"value": 196592, "unit": "MB"}, 196592 * 1024**2),
        ("196592 MB", 196592 * 1024**2),
        ("201310208(0xbffc000) KB", 201310208 * 1024),
        ("64GB", 64 * 1024**3),
        ("N/A", None),
        ({"value": "N/A", "unit": "MB"}, None),
        ("12 parsecs", None),
        (None, None),
    ],
)
def test_size_to_bytes_reads_every_way_tools_print_a_size(value, expected):
    assert size_to_bytes(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [(304, 304), ("304", 304), ("64(0x40)", 64), ("0x74a1", 0x74A1), ("N/A", None), (True, None)],
)
def test_to_int_takes_the_leading_integer(value, expected):
    assert to_int(value) == expected


@pytest.mark.parametrize("value", ["N/A", "[N/A]", "[Not Supported]", "", "  ", None, "unknown"])
def test_clean_turns_no_value_spellings_into_none(value):
    assert clean(value) is None


def test_extract_json_skips_warning_lines_and_trailing_text():
    assert extract_json('WARNING: no render group\n[{"gpu": 0}]\ndone\n') == [{"gpu": 0}]


def test_extract_json_without_json_raises_parse_error():
    with pytest.raises(ParseError):
        extract_json("rocm-smi: command failed [but not JSON]")


def test_gpu_entry_has_every_schema_field_and_refuses_unknown_ones():
    entry = gpu_entry(index=0, vendor="amd", model="X", source="t")
    assert list(entry) == [
        "index",
        "vendor",
        "model",
        "arch",
        "memory_bytes",
        "compute_units",
        "driver",
        "uuid",
        "source",
    ]
    with pytest.raises(TypeError):
        gpu_entry(index=0, colour="red")
