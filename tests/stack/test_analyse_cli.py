"""``python -m stack diff`` and ``shapes``: what the device scripts and a user at a terminal
run on a profile's result, with nothing but the stack (no Django, no numpy)."""

import json

import pytest
from stack_helpers import REPO_ROOT, run_stack

pytestmark = pytest.mark.process

H200 = REPO_ROOT / "docs/results/profile-h200"
FIXTURES = REPO_ROOT / "tests/stack/tune/fixtures"


def test_diff_of_two_h200_profiles_prints_the_kernels_and_the_regression_sentence():
    proc = run_stack(
        [
            "diff",
            str(H200 / "transformer-bf16/result.json"),
            str(H200 / "transformer-bf16/result.json"),
            "--profiler",
            "ncu",
        ]
    )
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout)
    assert found["profiler"] == "ncu" and len(found["kernels"]) == 5
    assert found["regression"] is None


def test_shapes_of_a_tunableop_file_print_the_replay_params():
    proc = run_stack(["shapes", str(FIXTURES / "tunableop_untuned0.csv")])
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout)
    assert len(found["shapes"]) == 6
    assert {p["precisions"][0] for p in found["replay"]["params"]} == {"bf16", "fp8", "fp32"}


def test_a_file_neither_reads_is_a_usage_error_naming_it():
    proc = run_stack(["shapes", str(REPO_ROOT / "README.md")])
    assert proc.returncode == 2 and "README.md: not a format read here" in proc.stderr
    proc = run_stack(["diff", str(REPO_ROOT / "README.md")])
    assert proc.returncode == 2 and "diff needs 2 file(s)" in proc.stderr
