"""TunableOp results files and hipblaslt-bench tuning runs, read and built."""

from __future__ import annotations

from pathlib import Path

import pytest
from tune_helpers import tune_fixture

from stack.parsers import ParseError
from stack.tune.files import (
    DEFAULT_SOLUTION,
    candidates_from_log,
    hipblaslt_tune_argv,
    hipblaslt_winner,
    parse_tunableop_file,
    single_candidate_note,
)
from stack.tune.shapes import BlasGemm

BLAS_FIXTURES = Path(__file__).resolve().parents[1] / "blas" / "fixtures"


def test_a_rocm_results_file_gives_its_validators_and_each_chosen_solution():
    tuned = parse_tunableop_file(tune_fixture("tunableop_results0-mi300x.csv"))
    assert tuned.validators["GCN_ARCH_NAME"] == "gfx942:sramecc+:xnack-"
    assert tuned.validators["PT_VERSION"] == "2.6.0+rocm6.3"
    assert len(tuned.entries) == 4
    first = tuned.entries[0]
    assert first.solution == "Gemm_Hipblaslt_1119" and first.time_ms == pytest.approx(0.0341)
    assert first.gemm == BlasGemm("bf16", 3072, 4096, 1024, 1, "T", "N")
    assert not tuned.only_default()


def test_a_cuda_file_of_defaults_only_is_said_plainly_to_have_had_one_candidate():
    text = "\n".join(
        [
            "Validator,PT_VERSION,2.11.0+cu130",
            "GemmTunableOp_BFloat16_TN,tn_3072_4096_1024_ld_1024_1024_3072,Default,0.031",
            "GemmTunableOp_BFloat16_TN,tn_1024_4096_1024_ld_1024_1024_1024,Default,0.012",
        ]
    )
    tuned = parse_tunableop_file(text)
    assert tuned.only_default() and tuned.solutions == {DEFAULT_SOLUTION}
    note = single_candidate_note(tuned, "cuda", "2.11.0+cu130")
    assert "chose 'Default'" in note and "a single candidate in effect" in note
    assert "2.11.0+cu130" in note
    assert single_candidate_note(tuned, "rocm", "2.6.0") is None  # ROCm's Default was chosen
    rocm = parse_tunableop_file(tune_fixture("tunableop_results0-mi300x.csv"))
    assert single_candidate_note(rocm, "cuda", "2.11.0") is None


def test_hipblaslt_bench_is_asked_to_time_every_solution_of_the_blas_call():
    argv = hipblaslt_tune_argv(
        BlasGemm("bf16", 4096, 8192, 4096, 1, "T", "N"), iters=20, cold_iters=5, device=0
    )
    assert argv[:1] == ["hipblaslt-bench"]
    assert argv[argv.index("--algo_method") + 1] == "all" and "--print_kernel_info" in argv
    assert argv[argv.index("--transA") + 1] == "T" and argv[argv.index("-m") + 1] == "4096"
    assert argv[argv.index("-n") + 1] == "8192"


def test_the_winner_of_several_solutions_is_named_with_its_index_and_kernel():
    text = (BLAS_FIXTURES / "hipblaslt-bench-7.0-verify-winner.txt").read_text(encoding="utf-8")
    winner = hipblaslt_winner(text)
    assert winner["solution_index"] == "456"
    assert winner["kernel_name"].startswith("Cijk_Alik_Bljk_BBS_BH_MT256x224x64")
    assert winner["us"] == pytest.approx(1565.2) and winner["solutions_tried"] == 2


def test_output_without_a_result_is_a_parse_error():
    with pytest.raises(ParseError):
        hipblaslt_winner("hipBLASLt version: 1000\nno device\n")


def test_the_gap_to_the_best_is_the_worst_shapes_loss_to_the_default_and_zero_for_a_win():
    from stack.tune.runner import gap_to_best

    timings = [
        {"before": [1.0, 1.0, 1.0], "after": [0.8, 0.8, 0.8]},  # tuned faster: no gap
        {"before": [1.0, 1.0, 1.0], "after": [1.03, 1.03, 1.03]},  # tuned 3 % slower
    ]
    assert gap_to_best(timings) == {"gap_to_best_pct": 3.0}
    assert gap_to_best([])["why_not"] == "nothing was timed before and after"


def test_the_h200s_verbose_log_says_two_candidates_per_gemm_both_named_default():
    log = tune_fixture("tunableop-verbose-h200-torch2.11.log")
    timed = candidates_from_log(log)
    key = "GemmTunableOp_BFloat16_NN(nn_4096_4096_4096_ld_4096_4096_4096)"
    assert timed[key] == {"candidates": 2, "names": ["Default", "Default"]}
    assert len(timed) == 5 and {v["candidates"] for v in timed.values()} == {2}
    tuned = parse_tunableop_file(
        "Validator,PT_VERSION,2.11.0+cu130\n"
        "GemmTunableOp_BFloat16_NN,nn_4096_4096_4096_ld_4096_4096_4096,Default,0.159317\n"
    )
    note = single_candidate_note(tuned, "cuda", "2.11.0+cu130", log)
    assert "timed 2 candidate(s) per GEMM, every one of them 'Default'" in note


def test_without_write_file_the_results_are_written_from_tunableops_own_lists(tmp_path):
    """torch 2.11 has no tunable.write_file (the H200 run failed on it): when TunableOp left
    no file, its validators and results are written in the file's own layout."""
    from types import SimpleNamespace

    from stack.tune.driver import write_results

    tunable = SimpleNamespace(
        get_validators=lambda: (("PT_VERSION", "2.11.0+cu130"),),
        get_results=lambda: (
            ("GemmTunableOp_BFloat16_NN", "nn_4096_4096_4096_ld_4096_4096_4096", "Default", 0.1593),
        ),
    )
    path = tmp_path / "tunableop_results.csv"
    write_results(tunable, path)
    tuned = parse_tunableop_file(path.read_text())
    assert tuned.validators == {"PT_VERSION": "2.11.0+cu130"}
    assert tuned.entries[0].solution == "Default" and tuned.entries[0].gemm.m == 4096
    path.write_text("Validator,PT_VERSION,x\n")  # a file TunableOp wrote itself is kept
    write_results(tunable, path)
    assert path.read_text() == "Validator,PT_VERSION,x\n"
