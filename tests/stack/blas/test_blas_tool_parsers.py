"""rocblas-bench / hipblaslt-bench: output shapes of several releases, and the command lines."""

import pytest
from blas_helpers import fixture

from stack.blas import blas_tools
from stack.blas.cases import GemmCase
from stack.parsers import ParseError

ROC, HIP = blas_tools.ROCBLAS, blas_tools.HIPBLASLT


def test_rocblas_5_5_plain_gemm():
    row = blas_tools.parse_output(fixture("rocblas-bench-5.5-gemm-f32.txt"), ROC)
    assert (row["transA"], row["transB"]) == ("N", "N")
    assert (row["m"], row["n"], row["k"]) == (4096, 4096, 4096)
    assert row["gflops"] == pytest.approx(45871.2)
    assert row["us"] == pytest.approx(2996.2)
    assert row["hot_iters"] is None and row["norm_error"] is None
    assert row["batch_count"] == 1


def test_rocblas_6_2_frequency_columns_before_the_rates():
    row = blas_tools.parse_output(fixture("rocblas-bench-6.2-gemm_ex-bf16-freq.txt"), ROC)
    assert row["gflops"] == pytest.approx(612345)
    assert row["us"] == pytest.approx(1795.6)
    assert row["sclk_mhz"] == 1890 and row["mclk_mhz"] == 1300
    # the device table's "with 206.1 GB memory, max. SCLK ..." lines are not mistaken for CSV
    assert row["m"] == 8192


def test_rocblas_6_3_iterations_and_verification():
    row = blas_tools.parse_output(fixture("rocblas-bench-6.3-gemm-verify.txt"), ROC)
    assert (row["cold_iters"], row["hot_iters"]) == (2, 10)
    assert row["transB"] == "T"
    assert row["norm_error"] == pytest.approx(1.23e-07)
    passed, error, tol, _ = blas_tools.check_from_tool(row, "fp32")
    assert passed and error == pytest.approx(1.23e-07) and tol == 1e-4


def test_rocblas_strided_batched_with_function_name():
    row = blas_tools.parse_output(
        fixture("rocblas-bench-6.3-strided-batched-function-name.txt"), ROC
    )
    assert row["function"] == "gemm_strided_batched"
    assert row["batch_count"] == 64
    assert row["us"] == pytest.approx(3913.7)


def test_rocblas_without_a_gpu_is_a_parse_error():
    with pytest.raises(ParseError, match="no rocblas-bench result line"):
        blas_tools.parse_output(fixture("rocblas-bench-no-device.txt"), ROC)


def test_hipblaslt_6_0_mislabelled_k_columns_keep_the_real_k():
    row = blas_tools.parse_output(fixture("hipblaslt-bench-6.0-dup-k.txt"), HIP)
    assert (row["m"], row["n"], row["k"]) == (4096, 4096, 4096)  # first "k" wins
    assert row["gflops"] == pytest.approx(512345) and row["us"] == pytest.approx(268.2)
    assert row["gbps"] is None


def test_hipblaslt_6_2_rotating_buffer_column():
    rows = blas_tools.parse_csv_blocks(fixture("hipblaslt-bench-6.2-rotating.txt"))
    assert rows[0]["rotating_buffer"] == 512 and rows[0]["_index"] == 0
    row = blas_tools.parse_output(fixture("hipblaslt-bench-6.2-rotating.txt"), HIP)
    assert row["transA"] == "T" and row["us"] == pytest.approx(275.6)


def test_hipblaslt_7_several_solutions_and_the_winner():
    text = fixture("hipblaslt-bench-7.0-verify-winner.txt")
    rows = blas_tools.parse_csv_blocks(text)
    assert [r["_index"] for r in rows] == [0, 1, 1]
    assert [r["_winner"] for r in rows] == [False, False, True]
    row = blas_tools.parse_output(text, HIP)
    assert row["winner"] and row["solution_index"] == "456"
    assert row["kernel_name"].startswith("Cijk_Alik_Bljk_BBS_BH_MT256x224x64")
    assert row["us"] == pytest.approx(1565.2) and row["gbps"] == pytest.approx(257.3)
    assert row["solutions_tried"] == 2
    assert row["norm_error"] == pytest.approx(0.00123)
    passed, *_ = blas_tools.check_from_tool(row, "bf16")
    assert passed


def test_hipblaslt_allclose_failure_fails_the_check():
    row = blas_tools.parse_output(fixture("hipblaslt-bench-7.0-allclose-failed.txt"), HIP)
    assert row["allclose_failed"]
    passed, _, _, detail = blas_tools.check_from_tool(row, "fp16")
    assert not passed and "failed" in detail


def test_hipblaslt_frequency_columns_and_grouped_gemm_fields():
    row = blas_tools.parse_output(fixture("hipblaslt-bench-7.0-freq-grouped.txt"), HIP)
    assert row["gflops"] == pytest.approx(154321) and row["us"] == pytest.approx(20.9)
    assert row["sclk_mhz"] == 2034
    assert row["m"] is None  # "(1024,2048)": a grouped GEMM has one m per group


def test_split_fields_keeps_parenthesised_groups():
    assert blas_tools.split_fields("N, (1,2),x ,(3,(4,5))") == ["N", "(1,2)", "x", "(3,(4,5))"]


def test_a_missing_verification_column_fails_rather_than_passes():
    row = blas_tools.parse_output(fixture("rocblas-bench-5.5-gemm-f32.txt"), ROC)
    passed, _, _, detail = blas_tools.check_from_tool(row, "fp32")
    assert not passed and "norm_error" in detail


# --------------------------------------------------------------------------
# Command lines
# --------------------------------------------------------------------------

OPTIONS = {"iters": 10, "cold_iters": 2, "device": 3, "verify": True, "flush_bytes": 512 * 2**20}


def _flag(argv, name):
    return argv[argv.index(name) + 1]


@pytest.mark.parametrize(
    ("precision", "function", "types"),
    [
        ("fp64", "gemm", ["-r", "f64_r"]),
        ("fp32", "gemm", ["-r", "f32_r"]),
        ("tf32", "gemm_ex", ["--math_mode", "1"]),
        ("bf16", "gemm_ex", ["-r", "bf16_r", "--compute_type", "f32_r"]),
        ("int8", "gemm_ex", ["--a_type", "i8_r", "--d_type", "i32_r"]),
    ],
)
def test_rocblas_argv(precision, function, types):
    case = GemmCase(precision, 256, 128, 64, 1, "T", "N")
    argv = blas_tools.build_argv(ROC, case, **OPTIONS)
    assert argv[0] == ROC and _flag(argv, "-f") == function
    for name, value in zip(types[::2], types[1::2], strict=True):
        assert _flag(argv, name) == value
    assert (_flag(argv, "-m"), _flag(argv, "-n"), _flag(argv, "-k")) == ("256", "128", "64")
    assert _flag(argv, "--transposeA") == "T" and _flag(argv, "--lda") == "64"
    assert _flag(argv, "--ldb") == "64" and _flag(argv, "--ldc") == "256"
    assert _flag(argv, "-v") == "1" and _flag(argv, "--device") == "3"
    assert _flag(argv, "--flush_memory_size") == str(512 * 2**20)


def test_rocblas_batched_uses_the_strided_batched_functions():
    fp32 = blas_tools.build_argv(ROC, GemmCase("fp32", 64, 64, 64, 8), **OPTIONS)
    bf16 = blas_tools.build_argv(ROC, GemmCase("bf16", 64, 64, 64, 8), **OPTIONS)
    assert _flag(fp32, "-f") == "gemm_strided_batched" and _flag(fp32, "--batch_count") == "8"
    assert _flag(bf16, "-f") == "gemm_strided_batched_ex"


def test_hipblaslt_argv():
    case = GemmCase("fp8", 8192, 8192, 8192, 1, "N", "T")
    argv = blas_tools.build_argv(HIP, case, **{**OPTIONS, "verify": False})
    assert argv[0] == HIP
    assert _flag(argv, "--a_type") == "f8_r" and _flag(argv, "--d_type") == "bf16_r"
    assert _flag(argv, "--transB") == "T" and _flag(argv, "--batch_count") == "1"
    assert _flag(argv, "--rotating") == "512" and "-v" not in argv
    tf32 = blas_tools.build_argv(HIP, GemmCase("tf32", 64, 64, 64), **OPTIONS)
    assert _flag(tf32, "--compute_type") == "xf32_r" and "-v" in tf32


def test_what_the_tools_cannot_do_is_said_per_precision():
    assert "hipblaslt-bench" in blas_tools.unsupported(ROC, "fp8", "gfx942")
    assert blas_tools.unsupported(HIP, "fp8", "gfx942") is None
    assert "gfx90a" in blas_tools.unsupported(HIP, "fp8", "gfx90a")
    assert "gfx942" in blas_tools.unsupported(ROC, "tf32", "gfx950")
    assert blas_tools.unsupported(ROC, "bf16", "gfx90a") is None
