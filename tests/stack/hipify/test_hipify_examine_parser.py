"""hipify-perl's -examine output is read in both wordings, from saved real output."""

from __future__ import annotations

from hipify_helpers import FIXTURES

from stack.hipify.examine import parse_examine_output, parse_warning_line

DEBIAN = (FIXTURES / "hipify-perl-6.0.2-examine.txt").read_text(encoding="latin-1")
HIP63 = (FIXTURES / "hipify-perl-6.3.0-examine.txt").read_text(encoding="latin-1")
FILES = ["sample.cu", "gl.h", "pos.cu"]


def test_every_warning_line_the_debian_tool_printed_is_parsed_and_counted_per_file():
    out = parse_examine_output(DEBIAN, FILES)
    printed = [line for line in DEBIAN.split("\n") if line.startswith("  warning: ")]
    assert sum(len(f.warnings) for f in out.files.values()) == len(printed) == 23
    for f in out.files.values():
        assert f.warnings_count == len(f.warnings)
    assert out.unparsed == []


def test_debian_statistics_blocks_give_counts_lines_and_refs_by_name():
    sample = parse_examine_output(DEBIAN, FILES).files["sample.cu"]
    assert (sample.converted_refs, sample.loc, sample.warnings_count) == (19, 28, 9)
    assert ("cublasSgemm", "hipblasSgemm", 1) in sample.refs
    assert ("cuda_runtime.h", "hip/hip_runtime.h", 1) in sample.refs
    assert ("texture", "texture", 3) in sample.refs


def test_debian_warnings_carry_kind_identifier_line_and_version():
    files = parse_examine_output(DEBIAN, FILES).files
    got = {(w["line"], w["identifier"], w["kind"], w["since"]) for w in files["sample.cu"].warnings}
    assert (6, "texture", "removed", "CUDA 12.0") in got
    assert (18, "cudaThreadSynchronize", "deprecated", "CUDA 10.0") in got
    assert (23, "cudaGraphExecNodeSetParams", "unsupported", None) in got
    assert (10, "umin", "unsupported_device_function", None) in got
    assert (27, "cudaSomethingNew", "unconverted", None) in got


def test_hip_6_3_wording_parses_to_the_same_records():
    old = parse_examine_output(DEBIAN, FILES).files
    new = parse_examine_output(HIP63, FILES)
    assert new.unparsed == ["HIP version 6.3.0"]
    for name in FILES:
        assert new.files[name].warnings_count == len(new.files[name].warnings)
    got = {(w["line"], w["identifier"], w["kind"]) for w in new.files["sample.cu"].warnings}
    # 6.3 calls cudaGraphExecNodeSetParams experimental; everything else agrees with 6.0
    assert (23, "cudaGraphExecNodeSetParams", "experimental") in got
    assert {(w["line"], w["identifier"], w["kind"]) for w in old["pos.cu"].warnings} <= {
        (w["line"], w["identifier"], w["kind"]) for w in new.files["pos.cu"].warnings
    }


def test_the_global_block_is_not_mistaken_for_a_file():
    out = parse_examine_output(DEBIAN, FILES)
    assert "GLOBAL" not in out.files
    assert out.global_stats["converted_refs"] == 28
    assert out.global_stats["warnings_count"] == 23


def test_a_path_holding_colons_and_a_source_line_holding_a_carriage_return_are_read_whole():
    known = {"dir:1: odd/x.cu"}
    w = parse_warning_line('  warning: dir:1: odd/x.cu:7: unsupported identifier "cuFoo"', known)
    assert (w["file"], w["line"], w["identifier"]) == ("dir:1: odd/x.cu", 7, "cuFoo")
    w = parse_warning_line("  warning: a.cu:#3 : int x = cudaBar(1);\r")
    assert (w["identifier"], w["kind"], w["source"]) == (
        "cudaBar",
        "unconverted",
        "int x = cudaBar(1);\r",
    )
    w = parse_warning_line("  a.cu:4: warning: unsupported ROCm HIP identifier: cuFoo")
    assert (w["file"], w["line"], w["kind"]) == ("a.cu", 4, "unsupported")
