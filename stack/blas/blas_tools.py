"""rocblas-bench and hipblaslt-bench: their command lines and their CSV output.

Both tools print a CSV header line and a value line per measured problem,
after a preamble (device table, commit hashes, INFO lines). The shapes seen
across versions, read from the tools' sources (ROCm/rocBLAS
clients/include/argument_model.hpp, ROCm/hipBLASLt clients/include/
argument_model.hpp and hipblaslt_arguments.hpp, by release tag):

rocblas-bench
  - ROCm <= 6.1 (Debian trixie's 5.5.1 too):
    ``transA,transB,M,N,K,alpha,lda,beta,ldb,ldc,rocblas-Gflops,us``;
    perf values are written after ", " (comma and space).
  - ROCm 6.2: ``lowest-avg-freq,lowest-median-freq,avg-MCLK,median-MCLK``
    (or ``avg-freq_<i>``/``median-freq_<i>`` per XCD) before the rates when
    ROCBLAS_BENCH_FREQ(_ALL) is set.
  - ROCm 6.3+: ``cold_iters,hot_iters`` before ``rocblas-Gflops``.
  - gemm_ex adds ``ldd,batch_count``; the strided-batched functions add
    ``stride_a``..``stride_d`` and ``batch_count``; ``-v 1`` appends
    ``CPU-Gflops,CPU-us,norm_error_1``; ``--log_function_name`` puts
    ``function`` first, ``--log_datatype`` adds ``a_type``..``compute_type``.
  - Timing: host clock around ``-i`` hot calls after ``-j`` cold calls, with a
    stream synchronisation; ``us`` is the mean per call, ``rocblas-Gflops``
    counts every batch.

hipblaslt-bench
  - ROCm 6.0: header prefixed ``[0]`` (no colon), and every leading
    dimension and stride is mislabelled ``k`` (``m,n,k,alpha,k,k,beta,k,...``):
    the first ``k`` is the real one; ends ``...,d_type,compute_type,
    activation_type,bias_vector,hipblaslt-Gflops,us``.
  - ROCm 6.1-6.2: real names (``lda,stride_a,...``), prefix ``[0]``, an
    optional ``rotating_buffer`` column.
  - ROCm 6.3+ / 7.x: prefix ``[0]:``, adds ``a_type,b_type,c_type,d_type,
    compute_type,scaleA,scaleB,scaleC,scaleD,amaxD,activation_type,
    bias_vector,bias_type``, then ``hipblaslt-Gflops,hipblaslt-GB/s,us``;
    ``-v`` appends ``CPU-Gflops,CPU-us,norm_error,atol,rtol`` ("failed" in
    atol/rtol when the allclose check failed); ``--print_kernel_info`` adds
    ``--Solution index/name``, ``--kernel name`` lines; several solutions are
    numbered ``[0]:``, ``[1]:``... and followed by ``Winner:`` and the best
    one's lines again.
  - The value line is indented by four spaces. Grouped GEMMs print
    ``(v1,v2)`` inside a field, so fields are split on commas outside
    parentheses.
"""

from __future__ import annotations

import re
from typing import Any

from stack.blas.cases import GemmCase
from stack.parsers import ParseError
from stack.tools import rocm_bin_dir

ROCBLAS = "rocblas-bench"
HIPBLASLT = "hipblaslt-bench"
TOOLS = (ROCBLAS, HIPBLASLT)

# Debian's librocblas0-bench puts rocblas-bench here, off PATH.
_DEBIAN_ROCBLAS_DIR = "/usr/libexec/rocm/librocblas0-bench"


def search_dirs(tool: str) -> tuple[str, ...]:
    """Where to look for the tool after PATH.

    ROCm's bin folder is asked for at each call, because it follows
    $ROCM_PATH as stack.tools.which and the telemetry samplers do.
    """
    rocm_bin = rocm_bin_dir()
    return (_DEBIAN_ROCBLAS_DIR, rocm_bin) if tool == ROCBLAS else (rocm_bin,)


# Relative Frobenius-norm error the tools' -v check may show, per precision.
NORM_TOLERANCE = {
    "fp64": 1e-10,
    "fp32": 1e-4,
    "tf32": 1e-2,
    "fp16": 1e-2,
    "bf16": 5e-2,
    "fp8": 1e-1,
    "int8": 0.0,
}

_PREFIX = re.compile(r"^\s*\[(\d+)\]:?")
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_/\-]*$")


def split_fields(line: str) -> list[str]:
    """Comma-separated fields, stripped, keeping "(a,b)" groups whole."""
    fields, depth, current = [], 0, []
    for char in line:
        if char == "(":
            depth += 1
        elif char == ")":
            depth = max(0, depth - 1)
        if char == "," and depth == 0:
            fields.append("".join(current).strip())
            current = []
        else:
            current.append(char)
    fields.append("".join(current).strip())
    return fields


def _value(text: str) -> Any:
    try:
        number = float(text)
    except ValueError:
        return text
    return int(number) if re.fullmatch(r"[+-]?\d+", text) else number


def _is_header(fields: list[str]) -> bool:
    return (
        len(fields) >= 3
        and "us" in fields
        and all(_NAME.match(f) for f in fields)
        and any(f.endswith("-Gflops") for f in fields)
    )


def parse_csv_blocks(text: str) -> list[dict[str, Any]]:
    """Every (header, values) pair the tool printed, as dicts (first duplicate name wins).

    Each dict also has ``_index`` (hipBLASLt's ``[i]``, else the block number),
    ``_winner`` (it followed a ``Winner:`` line) and ``_extra`` (the
    ``--Solution`` lines after it).
    """
    lines = text.splitlines()
    rows: list[dict[str, Any]] = []
    winner_next = False
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.strip().startswith("Winner:"):
            winner_next = True
            i += 1
            continue
        prefix = _PREFIX.match(line)
        body = line[prefix.end() :] if prefix else line
        names = split_fields(body.strip())
        if not _is_header(names):
            if line.strip().startswith("--") and rows:
                key, _, value = line.strip().lstrip("-").partition(":")
                rows[-1]["_extra"][key.strip()] = value.strip()
            i += 1
            continue
        j = i + 1
        while j < len(lines) and not lines[j].strip():
            j += 1
        if j >= len(lines):
            break
        values = split_fields(lines[j].strip())
        if len(values) != len(names):
            i = j
            continue
        row: dict[str, Any] = {}
        for name, value in zip(names, values, strict=True):
            row.setdefault(name, _value(value))
        row["_index"] = int(prefix.group(1)) if prefix else len(rows)
        row["_winner"] = winner_next
        row["_extra"] = {}
        winner_next = False
        rows.append(row)
        i = j + 1
    return rows


def _number(row: dict[str, Any], *names: str) -> float | None:
    for name in names:
        value = row.get(name)
        if isinstance(value, int | float):
            return float(value)
    return None


def normalize(row: dict[str, Any], tool: str) -> dict[str, Any]:
    """The fields rocpath uses, under one spelling for both tools and every version."""
    prefix = "rocblas" if tool == ROCBLAS else "hipblaslt"
    error = _number(row, "norm_error", "norm_error_1")
    allclose_failed = any(row.get(name) == "failed" for name in ("atol", "rtol"))
    freq = _number(row, "lowest-median-freq", "lowest-avg-freq")
    return {
        "function": row.get("function"),
        "transA": row.get("transA"),
        "transB": row.get("transB"),
        "m": _number(row, "M", "m"),
        "n": _number(row, "N", "n"),
        "k": _number(row, "K", "k"),
        "batch_count": _number(row, "batch_count") or 1.0,
        "gflops": _number(row, f"{prefix}-Gflops"),
        "gbps": _number(row, f"{prefix}-GB/s"),
        "us": _number(row, "us"),
        "hot_iters": _number(row, "hot_iters"),
        "cold_iters": _number(row, "cold_iters"),
        "norm_error": error,
        "allclose_failed": allclose_failed,
        "sclk_mhz": freq,
        "mclk_mhz": _number(row, "median-MCLK", "avg-MCLK"),
        "solution_index": row["_extra"].get("Solution index"),
        "kernel_name": row["_extra"].get("kernel name"),
        "winner": row["_winner"],
    }


def parse_output(text: str, tool: str) -> dict[str, Any]:
    """The result of one tool run: the winner (or only) row, normalised.

    Raises ParseError when no CSV block with a time is found (the tool failed,
    or this is not its output).
    """
    rows = parse_csv_blocks(text)
    if not rows:
        raise ParseError(f"no {tool} result line (CSV header with '-Gflops' and 'us') found")
    winners = [r for r in rows if r["_winner"]]
    chosen = (
        winners[-1]
        if winners
        else rows[-1]
        if len(rows) == 1
        else min(rows, key=lambda r: _number(r, "us") or float("inf"))
    )
    result = normalize(chosen, tool)
    if result["us"] is None:
        raise ParseError(f"{tool} printed no time ('us' column)")
    result["solutions_tried"] = len([r for r in rows if not r["_winner"]])
    return result


# --------------------------------------------------------------------------
# Command lines
# --------------------------------------------------------------------------

_ROCBLAS_TYPES: dict[str, tuple[str, list[str]]] = {
    "fp64": ("gemm", ["-r", "f64_r"]),
    "fp32": ("gemm", ["-r", "f32_r"]),
    "tf32": ("gemm_ex", ["-r", "f32_r", "--compute_type", "f32_r", "--math_mode", "1"]),
    "fp16": ("gemm_ex", ["-r", "f16_r", "--compute_type", "f32_r"]),
    "bf16": ("gemm_ex", ["-r", "bf16_r", "--compute_type", "f32_r"]),
    "int8": (
        "gemm_ex",
        [
            "--a_type", "i8_r", "--b_type", "i8_r", "--c_type", "i32_r",
            "--d_type", "i32_r", "--compute_type", "i32_r",
        ],
    ),
}  # fmt: skip

_HIPBLASLT_TYPES: dict[str, list[str]] = {
    "fp64": ["-r", "f64_r", "--compute_type", "f64_r"],
    "fp32": ["-r", "f32_r", "--compute_type", "f32_r"],
    "tf32": ["-r", "f32_r", "--compute_type", "xf32_r"],
    "fp16": ["-r", "f16_r", "--compute_type", "f32_r"],
    "bf16": ["-r", "bf16_r", "--compute_type", "f32_r"],
    "fp8": [
        "--a_type", "f8_r", "--b_type", "f8_r", "--c_type", "bf16_r",
        "--d_type", "bf16_r", "--compute_type", "f32_r",
    ],
    "int8": [
        "--a_type", "i8_r", "--b_type", "i8_r", "--c_type", "i32_r",
        "--d_type", "i32_r", "--compute_type", "i32_r",
    ],
}  # fmt: skip


def unsupported(tool: str, precision: str, arch: str | None) -> str | None:
    """Why the tool cannot run a precision on this architecture (None if it should)."""
    arch = (arch or "").split(":", 1)[0]
    if tool == ROCBLAS and precision == "fp8":
        return (
            "rocblas-bench's gemm_ex has no FP8 types (FP8 GEMM is hipBLASLt's); "
            "use hipblaslt-bench"
        )
    if precision == "tf32" and arch and not arch.startswith("gfx94"):
        return f"XF32 (TF32) matrix math exists only on gfx942; this GPU is {arch}"
    if precision == "fp8" and arch and not arch.startswith(("gfx94", "gfx95", "gfx12")):
        return f"{arch} has no FP8 matrix instructions"
    return None


def rocblas_argv(
    case: GemmCase,
    *,
    iters: int,
    cold_iters: int,
    device: int,
    verify: bool,
    flush_bytes: int | None,
) -> list[str]:
    """rocblas-bench arguments for a case (column-major BLAS semantics)."""
    function, types = _ROCBLAS_TYPES[case.precision]
    if case.batch > 1:
        function = "gemm_strided_batched_ex" if function == "gemm_ex" else "gemm_strided_batched"
    lda = case.m if case.transa == "N" else case.k
    ldb = case.k if case.transb == "N" else case.n
    argv = [
        ROCBLAS, "-f", function, *types,
        "--transposeA", case.transa, "--transposeB", case.transb,
        "-m", str(case.m), "-n", str(case.n), "-k", str(case.k),
        "--lda", str(lda), "--ldb", str(ldb), "--ldc", str(case.m),
        "--alpha", "1", "--beta", "0",
        "-i", str(iters), "-j", str(cold_iters), "--device", str(device),
    ]  # fmt: skip
    if function.endswith("_ex"):
        argv += ["--ldd", str(case.m)]
    if case.batch > 1:
        argv += ["--batch_count", str(case.batch)]
    if verify:
        argv += ["-v", "1"]
    if flush_bytes:
        argv += ["--flush_memory_size", str(int(flush_bytes))]
    return argv


def hipblaslt_argv(
    case: GemmCase,
    *,
    iters: int,
    cold_iters: int,
    device: int,
    verify: bool,
    flush_bytes: int | None,
) -> list[str]:
    """hipblaslt-bench arguments for a case (column-major BLAS semantics)."""
    argv = [
        HIPBLASLT, *_HIPBLASLT_TYPES[case.precision],
        "--transA", case.transa, "--transB", case.transb,
        "-m", str(case.m), "-n", str(case.n), "-k", str(case.k),
        "--alpha", "1", "--beta", "0", "--batch_count", str(case.batch),
        "-i", str(iters), "-j", str(cold_iters), "--device", str(device),
    ]  # fmt: skip
    if verify:
        argv.append("-v")
    if flush_bytes:
        argv += ["--rotating", str(max(1, int(flush_bytes) // (1024 * 1024)))]
    return argv


def build_argv(tool: str, case: GemmCase, **options: Any) -> list[str]:
    """The command line for either tool."""
    if tool == ROCBLAS:
        return rocblas_argv(case, **options)
    if tool == HIPBLASLT:
        return hipblaslt_argv(case, **options)
    raise ValueError(f"unknown tool {tool!r}")


def timing_method(tool: str) -> str:
    """How the tool times (for the summary)."""
    return (
        f"{tool}'s own timer: host clock around -i hot calls after -j cold calls, with a "
        "stream synchronisation, divided by the hot calls; the job runs the tool "
        "tool_repeats times and reports the median of those per-run means"
    )


def check_from_tool(row: dict[str, Any], precision: str) -> tuple[bool, float, float, str]:
    """(passed, error, tolerance, detail) from a -v run's norm_error / atol / rtol."""
    tolerance = NORM_TOLERANCE[precision]
    error = row.get("norm_error")
    if row.get("allclose_failed"):
        return False, float(error or 0.0), tolerance, "the tool's allclose check reported 'failed'"
    if error is None:
        return False, 0.0, tolerance, "the tool printed no norm_error column for -v"
    passed = error <= tolerance
    detail = "" if passed else f"relative norm error {error:.3g} > {tolerance:.3g}"
    return passed, float(error), tolerance, detail
