"""hipify-convert's tarball and diff; compile-check's diagnostics, per file and per target."""

from __future__ import annotations

import io
import json
import os
import sys
import tarfile
from pathlib import Path

import pytest
from hipify_helpers import FIXTURES, SAMPLE_CU, needs_hipcc, needs_hipify_perl
from stack_helpers import Captured

from stack.contract import validate_result
from stack.hipify.convert import extract_tar_safely, tar_tree
from stack.hipify.diagnostics import parse_clang_diagnostics
from stack.kinds import validate_params
from stack.kinds.compile_check import hipcc_argv
from stack.runtime import RunContext, build_result

# gfx90a: known to bookworm's hipcc (clang 15) and trixie's (clang 17) alike.
TARGET = "gfx90a"


def _run(kind: str, params: dict, work: Path, out: Path):
    import importlib

    module = importlib.import_module(f"stack.kinds.{kind.replace('-', '_')}")
    out.mkdir(exist_ok=True)
    ctx = RunContext(out=out, emit=Captured().emitter, work=work)
    result = module.run(validate_params(kind, params), ctx)
    document = build_result(
        kind, result, "2026-01-01T00:00:00.000000Z", "2026-01-01T00:00:01.000000Z", out
    )
    validate_result(document)
    return result, document


def test_clang_diagnostics_become_file_line_column_severity_message_and_target():
    text = (FIXTURES / "hipcc-5.2-gfx90a-two-errors.txt").read_text()
    parsed = parse_clang_diagnostics(text)
    assert [
        (d["file"], d["line"], d["column"], d["severity"], d["message"])
        for d in parsed["diagnostics"]
    ] == [
        ("./inc.h", 1, 36, "error", "expected ';' after return statement"),
        ("planted.hip", 5, 10, "error", "use of undeclared identifier 'undefined_thing'"),
    ]
    first = parsed["diagnostics"][0]
    assert first["included_from"] == ["planted.hip:2"]
    assert first["snippet"][0] == "static int helper(int a) { return a }"
    assert {d["target"] for d in parsed["diagnostics"]} == {"gfx90a"}
    assert parsed["counts"]["error"] == 2 and parsed["other"] == []


def test_warnings_with_flags_and_driver_errors_without_a_location_are_parsed():
    warnings = parse_clang_diagnostics((FIXTURES / "hipcc-5.2-gfx90a-warnings.txt").read_text())
    assert [
        (d["line"], d["severity"], d["flag"], d["target"]) for d in warnings["diagnostics"]
    ] == [
        (3, "warning", "-Wunused-variable", "gfx90a"),
        (3, "warning", "-Wunused-variable", "host"),
    ]
    driver = parse_clang_diagnostics((FIXTURES / "hipcc-5.2-unknown-target.txt").read_text())
    (d,) = driver["diagnostics"]
    assert (d["file"], d["severity"], d["tool"]) == (None, "error", "clang")
    assert d["message"].startswith("invalid target ID 'gfx942'")


def test_paths_under_the_tree_are_reported_relative_to_it():
    text = "/tmp/t/hipified/src/a.hip:3:1: error: boom\n/usr/include/x.h:1:2: warning: w\n"
    files = [d["file"] for d in parse_clang_diagnostics(text, "/tmp/t/hipified")["diagnostics"]]
    assert files == ["src/a.hip", "/usr/include/x.h"]


def test_cuda_named_sources_are_compiled_as_hip_for_the_target():
    argv = hipcc_argv("hipcc", "/t/a.cu", "gfx942", "/o/a.o", ["/t"], ["-O2"])
    assert argv == [
        "hipcc",
        "--offload-arch=gfx942",
        "-c",
        "-I",
        "/t",
        "-O2",
        "-x",
        "hip",
        "/t/a.cu",
        "-o",
        "/o/a.o",
    ]
    assert "-x" not in hipcc_argv("hipcc", "/t/a.hip", "gfx942", "/o/a.o", [], [])


def test_a_hipified_tarball_with_links_or_escaping_paths_is_refused(tmp_path):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        info = tarfile.TarInfo("hipified/../../evil.cu")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    (tmp_path / "bad.tar.gz").write_bytes(buffer.getvalue())
    with pytest.raises(ValueError, match="leaves"):
        extract_tar_safely(tmp_path / "bad.tar.gz", tmp_path / "x")
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        info = tarfile.TarInfo("hipified/link.cu")
        info.type = tarfile.SYMTYPE
        info.linkname = "/etc/passwd"
        tar.addfile(info)
    (tmp_path / "link.tar.gz").write_bytes(buffer.getvalue())
    with pytest.raises(ValueError, match="not a regular file"):
        extract_tar_safely(tmp_path / "link.tar.gz", tmp_path / "y")
    # where x/hipified/../../evil.cu would have landed
    assert not (tmp_path / "evil.cu").exists()


def test_the_tarball_is_reproducible(tmp_path):
    (tmp_path / "t/d").mkdir(parents=True)
    source = tmp_path / "t/d/a.hip"
    source.write_text("int a;\n")
    first = tar_tree(tmp_path / "t")
    # neither the file's time nor its mode may reach the archive
    os.utime(source, (1, 1))
    source.chmod(0o600)
    assert tar_tree(tmp_path / "t") == first


@needs_hipify_perl
@pytest.mark.process
def test_convert_gives_the_hipified_tree_and_a_diff_and_survives_hostile_file_names(tmp_path):
    src = tmp_path / "work/src"
    (src / "k").mkdir(parents=True)
    (src / "k/sample.cu").write_text(SAMPLE_CU)
    hostile = "odd name $(touch PWNED).cu"
    (src / hostile).write_text("cudaFree(p);\n")
    (src / "CMakeLists.txt").write_text("project(x)\n")
    result, document = _run("hipify-convert", {}, tmp_path / "work", tmp_path / "out")
    assert document["status"] == "succeeded", document["error"]
    assert result.summary["files_changed"] == 2
    with tarfile.open(tmp_path / "out/hipified.tar.gz") as tar:
        names = tar.getnames()
        converted = tar.extractfile("hipified/k/sample.cu").read().decode()
        assert tar.extractfile(f"hipified/{hostile}").read() == b"hipFree(p);\n"
    assert sorted(names) == sorted(
        ["hipified/CMakeLists.txt", "hipified/k/sample.cu", f"hipified/{hostile}"]
    )
    assert "hipMalloc(&d_x" in converted and "cudaMalloc" not in converted
    diff = (tmp_path / "out/hipify.diff").read_text()
    assert "\n-  cudaMalloc(&d_x, n * sizeof(float));\n" in diff
    assert "\n+  hipMalloc(&d_x, n * sizeof(float));\n" in diff
    assert diff.startswith("diff --git a/k/sample.cu b/k/sample.cu\n--- a/k/sample.cu\n")
    assert not list(tmp_path.rglob("PWNED")) and not Path("PWNED").exists()


@needs_hipify_perl
@pytest.mark.process
def test_convert_does_not_need_tables_this_reader_can_extract(tmp_path, monkeypatch):
    from stack.hipify import tables

    def unreadable(*args, **kwargs):
        raise tables.TablesError("a layout this reader does not know")

    monkeypatch.setattr(tables, "load_tables", unreadable)
    (tmp_path / "work/src").mkdir(parents=True)
    (tmp_path / "work/src/a.cu").write_text("cudaFree(p);\n")
    result, document = _run("hipify-convert", {}, tmp_path / "work", tmp_path / "out")
    assert document["status"] == "succeeded", document["error"]
    script = tables.find_hipify_perl()
    assert result.summary["tool"] == {"script": script, "sha256": tables.file_sha256(script)}


@needs_hipify_perl
@needs_hipcc
@pytest.mark.process
def test_compile_check_reports_a_planted_compile_error_at_its_line(tmp_path):
    src = tmp_path / "work/src"
    src.mkdir(parents=True)
    (src / "good.cu").write_text(
        "#include <cuda_runtime.h>\n__global__ void ok(float* x) { x[threadIdx.x] = 1.0f; }\n"
    )
    (src / "bad.hip").write_text(
        "#include <hip/hip_runtime.h>\n\n__global__ void k(int* x) {\n  x[0] = planted_error;\n}\n"
    )
    result, document = _run(
        "compile-check", {"targets": [TARGET]}, tmp_path / "work", tmp_path / "out"
    )
    assert document["status"] == "failed"
    assert result.summary["per_target"][TARGET]["passed"] == 1
    assert result.summary["failed_files"] == ["bad.hip"]
    (error,) = result.summary["first_errors"]
    assert (error["file"], error["line"], error["column"], error["severity"]) == (
        "bad.hip",
        4,
        10,
        "error",
    )
    assert "planted_error" in error["message"]
    report = json.loads((tmp_path / "out/compile/diagnostics.json").read_text())
    assert {f["path"]: f["targets"][TARGET] for f in report["files"]} == {
        "bad.hip": "fail",
        "good.cu": "pass",
    }
    metrics = {(m.metric, m.case["target"]): m.value for m in result.measurements}
    assert metrics[("files_failed", TARGET)] == 1


def test_compile_check_without_hipcc_errors_naming_the_tool(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setenv("ROCM_PATH", str(tmp_path / "no-rocm"))
    (tmp_path / "work/src").mkdir(parents=True)
    _, document = _run("compile-check", {}, tmp_path / "work", tmp_path / "out")
    assert document["status"] == "errored"
    assert document["error"].startswith("hipcc not found")


def test_an_include_dir_may_not_leave_the_tree_even_after_a_newline():
    for bad in ("../x", "/usr/include", "inc/../..", "x\n../../etc"):
        with pytest.raises(Exception, match="include_dirs"):
            validate_params("compile-check", {"include_dirs": [bad]})
    assert validate_params("compile-check", {"include_dirs": ["inc"]})["include_dirs"] == ["inc"]


def test_files_the_tool_failed_on_keep_their_original_text_in_the_tree(tmp_path, monkeypatch):
    from stack.hipify import convert

    src = tmp_path / "src"
    src.mkdir()
    (src / "a.cu").write_text("cudaFree(p);\n")
    (src / "b.cu").write_text("int b;\n")
    # a batch exiting non-zero: none of its files is trusted, whatever it left behind
    monkeypatch.setattr(convert, "_run_inplace", lambda *args: (2, "error: boom\n"))
    conversion = convert.hipify_tree(
        src, tmp_path / "dest", ["a.cu", "b.cu"], script=sys.executable
    )
    assert (conversion.failures, conversion.changed) == (["a.cu", "b.cu"], [])
    assert (tmp_path / "dest/a.cu").read_text() == "cudaFree(p);\n"
    assert not (tmp_path / "dest" / convert.STAGING).exists()


def test_compile_check_says_which_files_it_compiles_untranslated(tmp_path, monkeypatch):
    from stack.hipify import convert
    from stack.kinds.compile_check import _prepare_tree

    (tmp_path / "work/src").mkdir(parents=True)
    (tmp_path / "work/src/a.cu").write_text("cudaFree(p);\n")

    def failing(src, dest, files, **kwargs):
        convert.copy_tree(src, dest)
        return convert.ConvertRun([], 1, "", list(files))

    monkeypatch.setattr(convert, "hipify_tree", failing)
    captured = Captured()
    ctx = RunContext(out=tmp_path / "out", emit=captured.emitter, work=tmp_path / "work")
    tree, _origin = _prepare_tree({}, ctx, tmp_path)
    assert (tree / "a.cu").is_file()
    (warning,) = [e for e in captured.events if e.get("level") == "warning"]
    assert "a.cu" in warning["message"] and "untranslated" in warning["message"]
