"""TunableOp's results file and hipblaslt-bench's tuning runs: read, and (for the tool) built.

TunableOp's file (PyTorch aten/src/ATen/cuda/tunable, ``TuningContext::WriteFile``):
``Validator,KEY,VALUE`` lines — the stack the file was tuned on (PT_VERSION everywhere;
on ROCm ROCM_VERSION, HIPBLASLT_VERSION, ROCBLAS_VERSION, GCN_ARCH_NAME …) — then one line
per tuned op: ``OpSignature,ParamSignature,Solution[,TimeMs]``. PyTorch rejects the whole
file when one validator does not match the running stack, so the validators are what a
registry keys it by. ``Default`` as the solution is PyTorch's untuned path (cuBLAS or
hipBLAS/rocBLAS heuristics); on CUDA builds it is often the only candidate there is.

hipblaslt-bench ``--algo_method all`` times every solution hipBLASLt has for a problem
and prints each, then ``Winner:`` and the fastest again (stack/blas/blas_tools.py reads
that output); the winner's ``--Solution index`` is what a hipBLASLt override file names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from stack.blas.blas_tools import HIPBLASLT, hipblaslt_argv, parse_output
from stack.blas.cases import GemmCase
from stack.tune.shapes import BlasGemm, tunableop_entry

DEFAULT_SOLUTION = "Default"


@dataclass
class TunedEntry:
    """One line of results: which solution TunableOp chose for one op and shape."""

    op: str
    params: str
    solution: str
    time_ms: float | None
    gemm: BlasGemm | None

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready, the shape in its BLAS form."""
        return {
            "op": self.op,
            "params": self.params,
            "solution": self.solution,
            "time_ms": self.time_ms,
            "shape": None if self.gemm is None else self.gemm.label(),
        }


@dataclass
class TunedFile:
    """A TunableOp results file read back."""

    validators: dict[str, str] = field(default_factory=dict)
    entries: list[TunedEntry] = field(default_factory=list)

    @property
    def solutions(self) -> set[str]:
        """Every solution the file chose."""
        return {e.solution for e in self.entries}

    def only_default(self) -> bool:
        """Every entry kept PyTorch's own path: nothing was chosen over it."""
        return bool(self.entries) and self.solutions == {DEFAULT_SOLUTION}


def parse_tunableop_file(text: str) -> TunedFile:
    """Validators and entries of a TunableOp results file (lines it cannot read are skipped,
    as PyTorch skips them)."""
    out = TunedFile()
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if parts[0] == "Validator" and len(parts) >= 3:
            out.validators[parts[1]] = ",".join(parts[2:])
        elif len(parts) >= 3 and parts[0]:
            time_ms = None
            if len(parts) >= 4:
                try:
                    time_ms = float(parts[3])
                except ValueError:
                    time_ms = None
            out.entries.append(
                TunedEntry(parts[0], parts[1], parts[2], time_ms, tunableop_entry(*parts[:2]))
            )
    return out


_FINDING = re.compile(r"finding fastest for (\S+?)\((\S*?)\) out of (\d+) candidates")
_INSTANCE = re.compile(r"instance id=(\d+), (\S+?)\((\S*?)\) (\S+)\s*$")


def candidates_from_log(text: str) -> dict[str, dict[str, Any]]:
    """What TunableOp's verbose log (PYTORCH_TUNABLEOP_VERBOSE=3) says it timed, per GEMM
    ("OP(PARAMS)"): how many candidates, and their names. Lines as torch 2.11 prints them:
    ``finding fastest for GemmTunableOp_BFloat16_NN(nn_4096_…) out of 2 candidates`` and
    ``├──tuning using … instance id=1, GemmTunableOp_BFloat16_NN(nn_4096_…) Default``."""
    found: dict[str, dict[str, Any]] = {}
    for line in text.splitlines():
        if match := _FINDING.search(line):
            key = f"{match.group(1)}({match.group(2)})"
            found.setdefault(key, {"candidates": 0, "names": []})["candidates"] = int(
                match.group(3)
            )
        elif match := _INSTANCE.search(line):
            key = f"{match.group(2)}({match.group(3)})"
            found.setdefault(key, {"candidates": 0, "names": []})["names"].append(match.group(4))
    return found


def single_candidate_note(
    tuned: TunedFile, backend: str, torch_version: str | None, log: str = ""
) -> str | None:
    """What to say plainly when tuning could not have changed anything: on a CUDA build
    every candidate TunableOp has for these GEMMs is PyTorch's own cuBLAS path, 'Default'."""
    if backend != "cuda" or not tuned.only_default():
        return None
    timed = candidates_from_log(log)
    counts = sorted({v["candidates"] for v in timed.values() if v["candidates"]})
    names = sorted({n for v in timed.values() for n in v["names"]})
    if counts and names == [DEFAULT_SOLUTION]:
        per = " or ".join(map(str, counts))
        what = (
            f"timed {per} candidate(s) per GEMM, every one of them 'Default' (PyTorch's own "
            "cuBLAS/cuBLASLt path)"
        )
    else:
        what = "chose 'Default' (PyTorch's own cuBLAS/cuBLASLt path) for every GEMM"
    return (
        f"TunableOp on this CUDA build (torch {torch_version or '?'}) {what}: it had a single "
        "candidate in effect, so the tuned file records no choice, before and after run the "
        "same kernels, and any difference between them is noise. TunableOp chooses among "
        "real alternatives on ROCm (rocBLAS and hipBLASLt solutions)."
    )


def hipblaslt_tune_argv(
    gemm: BlasGemm, *, iters: int, cold_iters: int, device: int, rotating_mb: int = 0
) -> list[str]:
    """hipblaslt-bench timing every solution for one BLAS call (``--algo_method all``),
    with each solution's index and kernel printed so the winner can be named."""
    case = GemmCase(gemm.precision, gemm.m, gemm.n, gemm.k, gemm.batch, gemm.transa, gemm.transb)
    argv = hipblaslt_argv(
        case,
        iters=iters,
        cold_iters=cold_iters,
        device=device,
        verify=False,
        flush_bytes=rotating_mb * 1024 * 1024 if rotating_mb else None,
    )
    return [*argv, "--algo_method", "all", "--print_kernel_info"]


def hipblaslt_winner(text: str) -> dict[str, Any]:
    """The winner of an ``--algo_method all`` run: its solution index, kernel, time and
    how many solutions were timed (ParseError when the tool printed no result)."""
    row = parse_output(text, HIPBLASLT)
    return {
        "solution_index": row.get("solution_index"),
        "kernel_name": row.get("kernel_name"),
        "us": row.get("us"),
        "gflops": row.get("gflops"),
        "solutions_tried": row.get("solutions_tried"),
    }
