"""Hazard rules: what a port trips over that no HIPIFY table lists, found at its line."""

from __future__ import annotations

import pytest
from hipify_helpers import needs_hipify_perl

from stack.hipify.hazards import RULE_NAMES, RULES, detect
from stack.hipify.scan import scan_tree
from stack.hipify.schemas import HIPIFY_SCAN_PARAMS

# One line per idiom, each annotated with the rule it must raise (or none).
REDUCTION = """\
#include <nvml.h>
#include <cudnn.h>
#include <cooperative_groups/memcpy_async.h>
#define WARP_SIZE 32
#define FULL_MASK 0xffffffff
__managed__ int done;
// lane = threadIdx.x & 31 in a comment is not code; asm("x") neither
const char* s = "for (int o = 16; o > 0; o >>= 1) and % 32 in a string";
__global__ void reduce(float* out, const float* in) {
  __shared__ float per_warp[32];
  int lane = threadIdx.x & 31;
  int lane2 = threadIdx.x % 32;
  int warp = threadIdx.x >> 5;
  float v = in[threadIdx.x];
  for (int offset = 16; offset > 0; offset >>= 1)
    v += __shfl_down_sync(0xffffffff, v, offset);
  v += __shfl_xor(v, 16, 32);
#if __CUDA_ARCH__ >= 700
  asm volatile("membar.gl;");
#endif
  cg::memcpy_async(block, dst, src, 64);
  cudaTextureObject_t tex = 0;
  if (lane == 0) per_warp[warp] = v;
}
int main() {
  nvmlInit();
  float* p;
  cudaMallocManaged(&p, 4);
  cudaGraphConditionalHandle handle;
  int fine = (7 & 3) + 64 % 8 + (1 >> 2);
}
"""
EXPECTED = {
    1: {"nvml"},
    2: {"library-rewrite"},
    3: {"cooperative-groups-gap"},
    4: {"warp-size-constant"},
    5: {"full-warp-mask"},
    6: {"managed-memory"},
    10: {"shared-sized-by-32"},
    11: {"warp-lane-mask"},
    12: {"warp-lane-mask"},
    13: {"warp-index-shift"},
    15: {"shuffle-offset-16"},
    16: {"full-warp-mask"},
    17: {"shuffle-offset-16"},
    18: {"cuda-arch-branch"},
    19: {"inline-ptx"},
    21: {"cooperative-groups-gap"},
    22: {"texture-surface-object"},
    26: {"nvml"},
    28: {"managed-memory"},
    29: {"graph-feature-gap"},
}


def test_every_rule_finds_its_idiom_at_its_line_and_nothing_in_comments_or_strings():
    found: dict[int, set[str]] = {}
    for rule, line, _column, _text in detect(REDUCTION.encode()):
        found.setdefault(line, set()).add(rule)
    assert found == EXPECTED
    assert {r for rules in EXPECTED.values() for r in rules} == set(RULE_NAMES)


def test_a_finding_carries_its_column_and_the_line_it_is_on():
    lane = next(h for h in detect(REDUCTION.encode()) if h[0] == "warp-lane-mask")
    assert lane == ["warp-lane-mask", 11, 25, "int lane = threadIdx.x & 31;"]


def test_every_rule_has_a_severity_a_rationale_and_a_switch_in_the_scan_params():
    assert len(set(RULE_NAMES)) == len(RULES)
    for rule in RULES:
        assert rule.severity in ("high", "medium", "low") and len(rule.rationale) > 60
    assert HIPIFY_SCAN_PARAMS["properties"]["hazards_off"]["items"]["enum"] == list(RULE_NAMES)


@pytest.mark.parametrize(
    "code",
    [
        "int x = y & 311;",
        "int x = y % 320;",
        "float f = a % 32.0f;",
        "int h = x >> 50;",
        "for (int i = 16; i < n; ++i) {}",
        "int mask = 0xfffffff;",
        "__shared__ float big[64];",
        "int nvmlish = 1;",
    ],
)
def test_look_alikes_raise_nothing(code):
    assert detect(code.encode()) == []


@needs_hipify_perl
@pytest.mark.process
def test_a_scan_counts_hazards_per_rule_and_a_project_can_switch_rules_off(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "reduce.cu").write_text(REDUCTION)
    hazards = scan_tree(tmp_path, jobs=1).summary["hazards"]
    by_rule = {r["name"]: r for r in hazards["rules"]}
    assert by_rule["warp-lane-mask"]["findings"] == 2
    assert by_rule["warp-lane-mask"]["locations"][0] == {
        "path": "src/reduce.cu",
        "line": 11,
        "text": "int lane = threadIdx.x & 31;",
    }
    total = sum(len(rules) for rules in EXPECTED.values())
    assert hazards["counted"] == total and hazards["switched_off"] == 0

    quiet = scan_tree(tmp_path, jobs=1, hazards_off=["texture-surface-object", "nvml"])
    hazards = quiet.summary["hazards"]
    assert hazards["counted"] == total - 3 and hazards["switched_off"] == 3
    inputs = quiet.summary["effort"]["inputs"]
    assert inputs["hazards_high"] + inputs["hazards_medium"] + inputs["hazards_low"] == total - 3
    # nvml (two findings) is high, texture-surface-object (one) low
    assert quiet.summary["effort"]["left_out"]["hazards_high"][-1]["value"] == 2
    assert quiet.summary["effort"]["left_out"]["hazards_low"][-1]["value"] == 1
    off = {r["name"] for r in hazards["rules"] if not r["enabled"]}
    assert off == {"texture-surface-object", "nvml"}
    # the findings themselves travel with the file's record, every rule
    record = quiet.records[0]
    assert record["hazards"] == total and len(record["hazard_findings"]) == total


@pytest.mark.parametrize(
    ("code", "rule"),
    [
        # shapes of the reduction and scan kernels of public CUDA trees (docs/hipify.md)
        ("cg::thread_block_tile<32> tile32 = cg::tiled_partition<32>(cta);", "warp-size-constant"),
        ("enum { warp_size = 32 };", "warp-size-constant"),
        ("const unsigned int mask = (0xffffffff) >> maskLength;", "full-warp-mask"),
        ("int warp_mask = 0xffffffff>> (31 - lane);", "full-warp-mask"),
        ("for (unsigned int i = 1; i <= 16; i *= 2) {", "shuffle-offset-16"),
        ("unsigned int maskLength = (blockSize & 31);", "warp-lane-mask"),
    ],
)
def test_the_warp_size_idioms_of_reduction_and_scan_kernels_are_found(code, rule):
    assert [h[0] for h in detect(code.encode())] == [rule]
