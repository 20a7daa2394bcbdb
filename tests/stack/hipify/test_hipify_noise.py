"""Noise apart, never hidden: vendored code, API groups, look-alike identifiers, the estimate."""

from __future__ import annotations

import pytest
from hipify_helpers import needs_hipify_perl

from stack.hipify.noise import api_groups, vendored_reason
from stack.hipify.scan import glob_to_regex, scan_tree


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("Common/GL/glew.h", "Khronos header folder (GL/)"),
        ("third_party/fmt/format.h", "third-party folder (third_party/)"),
        ("src/External/lib.cu", "third-party folder (External/)"),
        ("vendor/x.h", "third-party folder (vendor/)"),
        ("include/glext.h", "known bundled header (glext.h"),
        ("inc/freeglut_std.h", "known bundled header (freeglut*.h"),
        ("util/stb_image.h", "known bundled header (stb_*.h"),
        ("Common/dynlink_cuda.h", "bundled copy of CUDA's own headers"),
        ("src/kernel.cu", None),
        ("src/gl/render.cu", None),  # "gl", not the Khronos "GL" folder
        ("src/externalities.cu", None),
    ],
)
def test_vendored_code_is_known_by_its_folder_or_its_header_name(path, why):
    reason = vendored_reason(path)
    assert (reason is None) if why is None else (why in reason)


def test_the_projects_own_lists_add_vendored_code_and_take_it_back():
    add, take = [glob_to_regex("libs/**")], [glob_to_regex("third_party/ours/**")]
    assert "vendored list" in vendored_reason("libs/a/b.cu", add, take)
    assert vendored_reason("third_party/ours/k.cu", add, take) is None
    assert vendored_reason("third_party/theirs/k.cu", add, take) is not None


def test_typedef_twins_and_the_constants_of_one_enum_are_one_api_group():
    groups = api_groups(
        [
            "CUctx_flags",
            "CUctx_flags_enum",
            "CUstream_st",
            "CU_TARGET_COMPUTE_20",
            "CU_TARGET_COMPUTE_21",
            "CU_CUBEMAP_FACE_POSITIVE_X",
            "CU_CUBEMAP_FACE_NEGATIVE_Z",
            "CU_LONELY_CONSTANT",
            "cudaGraphExecNodeSetParams",
        ]
    )
    assert groups == {
        "CUctx_flags": "CUctx_flags",
        "CUctx_flags_enum": "CUctx_flags",
        "CUstream_st": "CUstream",
        "CU_TARGET_COMPUTE_20": "CU_TARGET_COMPUTE_*",
        "CU_TARGET_COMPUTE_21": "CU_TARGET_COMPUTE_*",
        "CU_CUBEMAP_FACE_POSITIVE_X": "CU_CUBEMAP_FACE_*",
        "CU_CUBEMAP_FACE_NEGATIVE_Z": "CU_CUBEMAP_FACE_*",
        "CU_LONELY_CONSTANT": "CU_LONELY_CONSTANT",
        "cudaGraphExecNodeSetParams": "cudaGraphExecNodeSetParams",
    }


# The project's own code: one API HIP lacks through a typedef twin, enum constants, and
# its own helper whose name starts like a CUDA one.
OWN_H = """\
#include <cuda.h>
typedef enum CUctx_flags_enum { A } CUctx_flags;
int t = CU_TARGET_COMPUTE_20 + CU_TARGET_COMPUTE_21 + CU_TARGET_COMPUTE_30;
void f() { cudaCheckError(); cudaGraphExecNodeSetParams(0, 0, 0); }
__global__ void k(float* x) { x[threadIdx.x] = 0; }
"""
# A bundled header: an OpenGL parameter named texture, the same API HIP lacks.
GLEXT_H = """\
void glBindTexture(unsigned target, unsigned texture);
void g() { cudaGraphExecNodeSetParams(0, 0, 0); }
"""


@needs_hipify_perl
@pytest.mark.process
def test_the_estimate_counts_the_projects_code_and_says_what_it_left_out_and_why(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "own.h").write_text(OWN_H)
    (tmp_path / "Common" / "GL").mkdir(parents=True)
    (tmp_path / "Common" / "GL" / "glext.h").write_text(GLEXT_H)
    result = scan_tree(tmp_path, jobs=1)
    s = result.summary
    # hipify-perl's own view is untouched: every file counts in the totals
    assert s["totals"]["files"] == 2
    assert s["vendored"]["files"] == 1
    assert s["vendored"]["paths"] == {"Common/GL/glext.h": "in a Khronos header folder (GL/)"}
    assert {r["path"]: r["vendored"] for r in result.rows()} == {
        "Common/GL/glext.h": "in a Khronos header folder (GL/)",
        "src/own.h": None,
    }
    groups = {g["api"]: g for g in s["api_groups"]}
    assert set(groups["CUctx_flags"]["members"]) == {"CUctx_flags", "CUctx_flags_enum"}
    assert groups["CU_TARGET_COMPUTE_*"]["in_code"] == 3
    graph = groups["cudaGraphExecNodeSetParams"]
    assert (graph["in_code"], graph["vendored_in_code"]) == (1, 1)
    assert [loc["path"] for loc in graph["locations"]] == ["src/own.h"]
    assert groups["texture"]["in_code"] == 0 and groups["texture"]["vendored_in_code"] == 1

    effort, everything = s["effort"], s["effort_everything"]
    assert effort["inputs"]["unsupported_apis"] == 3  # CUctx_flags, CU_TARGET_COMPUTE_*, graph
    # texture (only vendored) and CU_TARGET_COMPUTE_21 (removed and unsupported: its
    # group's decision) were removed APIs of their own before
    assert effort["inputs"]["removed_apis"] == 0 and everything["inputs"]["removed_apis"] >= 2
    assert everything["inputs"]["unsupported_apis"] > 3
    assert effort["hours"] < everything["hours"]
    why = {term: [p["why"] for p in parts] for term, parts in effort["left_out"].items()}
    assert any("vendored" in w for w in why["removed_apis"])
    assert any("folded into the API group" in w for w in why["unsupported_apis"])
    assert any("own identifiers" in w for w in why["unconverted_refs"])
    split = s["unconverted_split"]
    assert split["project_identifier"]["top"] == {"cudaCheckError": 1}
    assert effort["inputs"]["unconverted_refs"] == split["cuda_name"]["refs"]


@needs_hipify_perl
@pytest.mark.process
def test_a_project_takes_a_folder_back_from_the_vendored_code(tmp_path):
    (tmp_path / "external").mkdir()
    (tmp_path / "external" / "own.h").write_text(OWN_H)
    assert scan_tree(tmp_path, jobs=1).summary["vendored"]["files"] == 1
    mine = scan_tree(tmp_path, jobs=1, not_vendored=["external/**"]).summary
    assert mine["vendored"]["files"] == 0 and mine["effort"]["inputs"]["unsupported_apis"] == 3
