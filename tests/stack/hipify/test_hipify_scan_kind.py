"""The hipify-scan kind: findings per file, totals, the cache, and what the job hands back."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hipify_helpers import SAMPLE_CU, SAMPLE_GL_H, needs_hipify_perl
from stack_helpers import Captured

from stack.contract import validate_result
from stack.hipify.scan import collect_files, scan_tree
from stack.kinds import validate_params
from stack.runtime import RunContext, build_result


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def _run(kind_params: dict, work: Path, out: Path, cache_dir: Path | None = None):
    from stack.kinds.hipify_scan import run

    params = validate_params("hipify-scan", kind_params)
    out.mkdir(exist_ok=True)
    ctx = RunContext(out=out, emit=Captured().emitter, work=work, cache_dir=cache_dir)
    result = run(params, ctx)
    document = build_result(
        "hipify-scan", result, "2026-01-01T00:00:00.000000Z", "2026-01-01T00:00:01.000000Z", out
    )
    validate_result(document)
    return result, document


def test_files_are_selected_by_extension_and_globs_and_links_are_never_followed(tmp_path):
    _tree(
        tmp_path,
        {
            "a.cu": "",
            "inc/b.cuh": "",
            "inc/c.HPP": "",
            "third_party/d.cu": "",
            "docs/readme.md": "",
            "tests/t.cpp": "",
            ".git/x.cu": "",
        },
    )
    (tmp_path / "link.cu").symlink_to("/etc/hostname")
    assert collect_files(tmp_path) == [
        "a.cu",
        "inc/b.cuh",
        "inc/c.HPP",
        "tests/t.cpp",
        "third_party/d.cu",
    ]
    assert collect_files(tmp_path, exclude=["third_party", "*.cpp"]) == [
        "a.cu",
        "inc/b.cuh",
        "inc/c.HPP",
    ]
    assert collect_files(tmp_path, include=["inc/**"]) == ["inc/b.cuh", "inc/c.HPP"]
    assert collect_files(tmp_path, include=["**/*.cu"]) == ["a.cu", "third_party/d.cu"]


@needs_hipify_perl
@pytest.mark.process
def test_a_scan_job_reports_findings_totals_effort_and_artifacts(tmp_path):
    _tree(
        tmp_path / "work/src",
        {"app/sample.cu": SAMPLE_CU, "app/gl_buffers.h": SAMPLE_GL_H, "README.txt": "x"},
    )
    result, document = _run({}, tmp_path / "work", tmp_path / "out")
    assert document["status"] == "succeeded"
    totals = result.summary["totals"]
    assert totals["files"] == 2
    assert totals["converted_refs"] == 19 + 4  # what hipify-perl printed for the two files
    assert totals["identity_refs"] == 3 + 2  # texture x3; GLuint, GLenum
    assert result.summary["identity_mappings"] == {"GLenum": 1, "GLuint": 1, "texture": 3}
    kinds = result.summary["warnings_by_kind"]
    assert kinds["removed"]["total"] == 4
    assert (kinds["removed"]["comment"], kinds["removed"]["code"]) == (1, 1)
    assert (kinds["removed"]["string"], kinds["removed"]["identifier"]) == (1, 1)
    effort = result.summary["effort"]
    assert effort["inputs"]["removed_refs"] == 1 and effort["hours"] > 0
    assert "formula" in effort
    # CUBLAS_OP_N x2, cublasCreate, cublasHandle_t, cublasSgemm, and the cublas_v2.h include
    assert result.summary["families"]["cuBLAS"]["converted_refs"] == 6
    metrics = {(m.metric, m.case.get("scope")): m for m in result.measurements}
    assert (
        metrics[("unsupported", "all")].value == 2
        and metrics[("unsupported", "all")].better == "lower"
    )
    assert metrics[("files", None)].value == 2
    findings = json.loads((tmp_path / "out/hipify/findings.json").read_text())
    assert findings["schema"] == "rocpath.hipify-findings/1"
    sample = next(f for f in findings["files"] if f["path"] == "app/sample.cu")
    texture_comment = next(w for w in sample["warnings"] if w["line"] == 5)
    assert texture_comment == {
        "line": 5,
        "column": 7,
        "identifier": "texture",
        "kind": "removed",
        "since": "CUDA 12.0",
        "context": "comment",
        "family": "CUDA RT API",
    }
    assert "# HIPIFY porting assessment" in (tmp_path / "out/hipify/report.md").read_text()
    table = json.loads((tmp_path / "out/hipify/files.json").read_text())
    assert table["schema"] == "rocpath.hipify-files/1"
    assert table["files"] == [
        {
            k: v
            for k, v in f.items()
            if k not in ("sha256", "device_code", "refs", "warnings", "hazard_findings")
        }
        for f in findings["files"]
    ]


@needs_hipify_perl
@pytest.mark.process
def test_both_engines_give_the_same_findings_json_for_a_tree(tmp_path):
    _tree(tmp_path / "src", {"sample.cu": SAMPLE_CU, "gl.h": SAMPLE_GL_H})
    fast = scan_tree(tmp_path / "src", engine="fast")
    tool = scan_tree(tmp_path / "src", engine="hipify-perl")
    strip = ("device_function_refs",)
    for a, b in zip(fast.records, tool.records, strict=True):
        assert {k: v for k, v in a.items() if k not in strip} == {
            k: v for k, v in b.items() if k not in strip
        }


@needs_hipify_perl
@pytest.mark.process
def test_a_tree_scanned_twice_with_one_file_changed_re_examines_only_that_file(tmp_path):
    files = {f"k{i}.cu": SAMPLE_CU.replace("scale", f"scale{i}") for i in range(6)}
    files["copy.cu"] = files["k0.cu"]
    src = _tree(tmp_path / "work/src", files)
    cache = tmp_path / "cache"  # as the server gives it (ROCPATH_CACHE_DIR, read by the CLI)
    first, _ = _run({}, tmp_path / "work", tmp_path / "out1", cache)
    assert first.summary["incremental"]["examined"] == 6  # copy.cu has k0.cu's content
    assert first.summary["incremental"]["duplicates"] == 1
    (src / "k3.cu").write_text(SAMPLE_CU + "cudaDeviceReset();\n")
    second, _ = _run({}, tmp_path / "work", tmp_path / "out2", cache)
    assert second.summary["incremental"]["examined"] == 1
    assert second.summary["incremental"]["cached"] == 6
    assert second.summary["incremental"]["totals"] == "updated"
    assert second.summary["totals"]["cuda_refs"] == first.summary["totals"]["cuda_refs"] + 1


@needs_hipify_perl
@pytest.mark.process
def test_a_re_scan_updates_the_previous_totals_to_what_a_scan_from_scratch_gives(tmp_path):
    files = {f"d{i % 3}/k{i}.cu": SAMPLE_CU.replace("scale", f"scale{i}") for i in range(12)}
    src = _tree(tmp_path / "src", files)
    cache = str(tmp_path / "cache")
    assert scan_tree(src, cache_dir=cache).totals_from == "summed"
    # d0/k0, k3, k6 and k9 list the places of the removed "texture" (3 each): take two
    # out, so that the update must list the next users' places
    (src / "d0/k0.cu").unlink()
    (src / "d0/k3.cu").write_text(SAMPLE_CU.replace("texture", "picture"))
    (src / "d2/added.cu").write_text(SAMPLE_CU + "cudaThreadSynchronize();\n")
    again = scan_tree(src, cache_dir=cache)
    assert (again.totals_from, again.examined) == ("updated", 2)
    texture = next(a for a in again.summary["top_apis"] if a["identifier"] == "texture")
    assert {p["path"] for p in texture["locations"]} == {
        "d0/k6.cu",
        "d0/k9.cu",
        "d1/k1.cu",
        "d1/k10.cu",
    }
    scratch = scan_tree(src)
    assert again.summary == scratch.summary
    assert again.rows() == scratch.rows()
    assert (
        json.loads(again.findings_json())["files"] == json.loads(scratch.findings_json())["files"]
    )
    unchanged = scan_tree(src, cache_dir=cache)
    assert (unchanged.totals_from, unchanged.summary) == ("unchanged", scratch.summary)


@needs_hipify_perl
@pytest.mark.process
def test_a_damaged_totals_state_is_summed_again_not_trusted(tmp_path):
    import sqlite3

    src = _tree(tmp_path / "src", {"a.cu": SAMPLE_CU, "gl.h": SAMPLE_GL_H})
    cache = tmp_path / "cache"
    first = scan_tree(src, cache_dir=cache)
    with sqlite3.connect(next(cache.glob("*.sqlite3"))) as db:
        db.execute("UPDATE scans SET state = x'00'")
    (src / "b.cu").write_text(SAMPLE_CU)
    again = scan_tree(src, cache_dir=cache)
    assert (again.totals_from, again.examined) == ("summed", 0)
    assert again.summary["totals"]["files"] == first.summary["totals"]["files"] + 1
    assert again.summary == scan_tree(src).summary


@needs_hipify_perl
@pytest.mark.process
def test_edits_do_not_grow_a_projects_cache_without_bound(tmp_path, monkeypatch):
    import sqlite3

    from stack.hipify import scan
    from stack.hipify.cache import FindingsCache

    monkeypatch.setattr(scan, "PRUNE_FACTOR", 1)
    monkeypatch.setattr(scan, "PRUNE_SLACK", 0)
    src = _tree(tmp_path / "src", {f"k{i}.cu": SAMPLE_CU + f"// {i}\n" for i in range(3)})
    cache = tmp_path / "cache"
    scan_tree(src, cache_dir=cache, include=["k0.cu"])  # another selection: its state stays
    named_by_it = (src / "k0.cu").read_text()
    for edit in range(4):
        (src / "k0.cu").write_text(SAMPLE_CU + f"// edit {edit}\n")
        result = scan_tree(src, cache_dir=cache)
    assert result.summary == scan_tree(src).summary
    with sqlite3.connect(next(cache.glob("*.sqlite3"))) as db:
        db.execute("INSERT INTO findings VALUES ('an-old-engine', 'x', '{}', x'00')")
    (src / "k1.cu").write_text(SAMPLE_CU + "// edited\n")
    scan_tree(src, cache_dir=cache)
    key = scan.engine_key("fast", result.tables)
    with FindingsCache(cache, key) as kept:
        # the 3 files of the tree, and the k0.cu the other selection's state names
        assert kept.count() == 4
        assert kept.records([scan.hashlib.sha256(named_by_it.encode()).hexdigest()])
    with sqlite3.connect(next(cache.glob("*.sqlite3"))) as db:
        assert db.execute("SELECT count(*) FROM findings WHERE engine != ?", (key,)).fetchone() == (
            0,
        )


@needs_hipify_perl
@pytest.mark.process
def test_an_aggregate_another_scan_pruned_meanwhile_is_derived_from_the_record(
    tmp_path, monkeypatch
):
    from stack.hipify.cache import FindingsCache

    src = _tree(tmp_path / "src", {f"k{i}.cu": SAMPLE_CU + f"// {i}\n" for i in range(4)})
    cache = tmp_path / "cache"
    scan_tree(src, cache_dir=cache)
    (src / "k2.cu").write_text(SAMPLE_CU + "cudaDeviceReset();\n")
    monkeypatch.setattr(FindingsCache, "aggregates", lambda self, shas: {})
    again = scan_tree(src, cache_dir=cache)
    assert (again.totals_from, again.examined, again.cached) == ("summed", 1, 3)
    assert again.summary == scan_tree(src).summary


def test_without_hipify_perl_the_job_errors_naming_the_tool_and_where_to_get_it(
    tmp_path, monkeypatch
):
    _tree(tmp_path / "work/src", {"a.cu": SAMPLE_CU})
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setenv("ROCM_PATH", str(tmp_path / "no-rocm"))
    _, document = _run({}, tmp_path / "work", tmp_path / "out")
    assert document["status"] == "errored"
    assert "hipify-perl not found" in document["error"]
    assert "trixie" in document["error"]


def test_a_job_without_a_source_tree_errors_and_a_path_may_not_leave_it(tmp_path):
    (tmp_path / "work").mkdir()
    _, document = _run({}, tmp_path / "work", tmp_path / "out")
    assert document["status"] == "errored" and "no source tree" in document["error"]
    with pytest.raises(Exception, match="path"):
        validate_params("hipify-scan", {"path": "../etc"})


def test_params_have_documented_defaults():
    params = validate_params("hipify-scan", {})
    assert params == {
        "include": [],
        "exclude": [],
        "path": "",
        "engine": "fast",
        "jobs": 0,
        "vendored": [],
        "not_vendored": [],
        "hazards_off": [],
    }


def test_a_file_name_that_is_not_utf8_is_skipped_and_named_in_the_summary(tmp_path):
    (tmp_path / "ok.cu").write_text("")
    (tmp_path / os.fsdecode(b"bad\xff.cu")).write_text("")
    skipped: list[str] = []
    assert collect_files(tmp_path, skipped=skipped) == ["ok.cu"]
    assert skipped == ["bad\ufffd.cu"]
