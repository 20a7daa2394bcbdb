"""The fast engine's findings equal the real hipify-perl's own warning pass, file by file."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest
from hipify_helpers import SAMPLE_CU, SAMPLE_GL_H, SAMPLE_POS, needs_hipify_perl

from stack.hipify.corpus import generate_corpus
from stack.hipify.examine import examined_view, run_examine, tool_view
from stack.hipify.fast import examine
from stack.hipify.tables import load_tables

pytestmark = needs_hipify_perl


@pytest.fixture(scope="module")
def tables():
    return load_tables()


def _compare(root: Path, files: list[str], tables) -> list[str]:
    run = run_examine(files, str(root))
    assert run.output.unparsed == []
    mismatches = []
    for rel in files:
        fast = tool_view(examine((root / rel).read_bytes(), tables))
        tool = examined_view(run.output.files[rel])
        if fast != tool:
            mismatches.append(f"{rel}: fast {fast} != tool {tool}")
    return mismatches


@pytest.mark.process
def test_the_sample_sources_give_the_tools_counts_warnings_and_refs(tmp_path, tables):
    files = {"sample.cu": SAMPLE_CU, "gl/buffers.h": SAMPLE_GL_H, "pos.cu": SAMPLE_POS}
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    assert _compare(tmp_path, list(files), tables) == []


@pytest.mark.process
def test_pos_carry_over_hides_an_identifier_inside_the_one_found_just_before(tables):
    found = examine(b"nvrtcGetNVVMSize(prog, &size);\n", tables)["warnings"]
    kinds = {(w[2], w[3]) for w in found}
    # The unsupported list tries nvrtcGetNVVMSize then nvrtcGetNVVM: the second search
    # starts after the first hit, so hipify-perl never reports the shorter name there.
    assert ("nvrtcGetNVVMSize", "unsupported") in kinds
    assert ("nvrtcGetNVVM", "unsupported") not in kinds


@pytest.mark.process
def test_a_namespaced_device_function_call_is_not_a_warning(tables):
    found = examine(b"__global__ void k() { int v = std::umin(a, b); }\n", tables)["warnings"]
    assert found == []
    found = examine(b"__global__ void k() { int v = umin(a, b); }\n", tables)["warnings"]
    assert [(w[2], w[3]) for w in found] == [("umin", "unsupported_device_function")]


@pytest.mark.process
def test_generated_trees_match_the_tool_file_by_file(tmp_path, tables):
    # Property-style: trees drawn from the installed tool's own tables and many code
    # shapes (CRLF, non-ASCII bytes, several identifiers per line, multi-line rewrites).
    files = []
    for seed in (11, 12, 13):
        root = tmp_path / f"seed{seed}"
        files += [
            f"seed{seed}/{p}" for p in generate_corpus(root, tables, files=8, lines=220, seed=seed)
        ]
    assert _compare(tmp_path, files, tables) == []


@pytest.mark.process
def test_a_batch_the_tool_dies_in_is_an_error_not_files_without_findings(tmp_path):
    from stack.tools import ToolError

    (tmp_path / "a.cu").write_text(SAMPLE_CU)
    # the tool stops at the file it cannot open: the files after it go unexamined
    with pytest.raises(ToolError, match=r"exited with status \d+ .*missing\.cu"):
        run_examine(["a.cu", "missing.cu", "z.cu"], str(tmp_path), jobs=1)


@pytest.mark.process
def test_quiet_mode_gives_the_tools_conversion_counts_without_warnings(tmp_path, tables):
    (tmp_path / "a.cu").write_text(SAMPLE_CU)
    run = run_examine(["a.cu"], str(tmp_path), quiet_warnings=True)
    tool = run.output.files["a.cu"]
    fast = examine(SAMPLE_CU.encode(), tables, warnings=False)
    assert (fast["converted_refs"], fast["loc"], fast["warnings"]) == (
        tool.converted_refs,
        tool.loc,
        [],
    )
    assert tool.warnings == []


@pytest.mark.process
def test_the_engine_reads_bytes_as_perl_does(tables):
    data = "// caf\u00e9 texture\r\ncudaMalloc(&p, n);\r\n".encode() + b"\xff cudaFree(p);\n"
    found = examine(data, tables)
    assert found["loc"] == 3
    assert [r[:2] for r in found["refs"]] == [
        ["cudaFree", "hipFree"],
        ["cudaMalloc", "hipMalloc"],
        ["texture", "texture"],  # an identity mapping, even in a comment: hipify counts it
    ]
    assert [(w[0], w[2], w[5]) for w in found["warnings"]] == [(1, "texture", "comment")]


@pytest.mark.process
def test_tables_come_from_the_cache_file_the_second_time(tmp_path, monkeypatch):
    first = load_tables(cache_dir=tmp_path)
    cached = list(tmp_path.glob("hipify-tables-*.marshal"))
    assert len(cached) == 1
    from stack.hipify import tables as tables_module

    def no_extraction(*args, **kwargs):
        raise AssertionError("the tables were extracted again instead of read from the cache")

    monkeypatch.setattr(tables_module, "extract_tables", no_extraction)
    tables_module._MEMO.clear()
    again = load_tables(cache_dir=tmp_path)
    assert again.to_json() == first.to_json()
    assert os.path.getsize(cached[0]) > 100_000


@pytest.mark.process
def test_the_include_lookbehind_is_what_perl_built_including_its_nul(tables):
    include = next(s for s in tables.substs if s.cuda == "cuda_runtime.h")
    # "\\$%" in the script's string interpolates Perl's $% (0): the class holds \0, not $ or %.
    assert include.pattern.startswith("(?<![")
    assert "\\0" in include.pattern
    assert "\\$" not in include.pattern


@pytest.mark.process
def test_lines_dense_with_hash_table_identifiers_match_the_tool_run_with_a_fixed_seed(
    tmp_path, tables
):
    # The order of %deprecated_funcs / %removed_funcs decides what hipify-perl reports on
    # such lines (pos() carry-over); left random it changes from run to run.
    rng = random.Random(3)
    pools = {
        kind: sorted({c.name for c in tables.checks if c.kind == kind})
        for kind in ("deprecated", "removed", "experimental")
    }
    lines = [
        " ".join(f"{n}();" for n in rng.sample(pools[kind], min(25, len(pools[kind]))))
        for kind in ("deprecated", "removed", "experimental", "deprecated")
    ]
    (tmp_path / "dense.cu").write_text("\n".join(lines) + "\n")
    assert _compare(tmp_path, ["dense.cu"], tables) == []
