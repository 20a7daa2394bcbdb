"""Tune GEMMs with PyTorch TunableOp in a process of its own, then time them before and after:
``python -m stack.tune.driver SPEC.json``.

A process of its own because TunableOp's state is global to a process (its results, its
file, its settings, read once), and because its verbose log goes to the process's output,
which the runner keeps. TunableOp is driven through ``torch.cuda.tunable`` here, not its
environment variables: PyTorch reads ``PYTORCH_TUNABLEOP_ENABLED=1`` once and then
ignores ``tunable.enable(False)``, and the before/after timing needs to switch it off and
on between rounds. (A later job that only uses a tuned file gets the variables:
stack/tune/registry.py ``tunableop_env``.)

Tuning: each shape's GEMM runs once with tuning on (TunableOp times every candidate, at
most ``max_tuning_duration_ms`` / ``max_tuning_iterations`` each, rotating through
``rotating_buffer_mb`` of inputs), then the results are written. Timing: blas-bench's
method (stack/blas: its operands, its device-event block timer and adaptive loop), per
shape ``rounds`` times off then on, the order swapped every round, so drift in clocks
or temperature falls on both sides alike.

Exit status 0 when it ran (driver.json says what happened, including "TunableOp is inert
here"), 1 when it raised, 2 for a spec it cannot read.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from stack.child import drive
from stack.tune.registry import validator_pairs

RESULTS_FILE = "tunableop_results.csv"


def inert_reason(torch: Any) -> str | None:
    """Why TunableOp cannot tune here, or None when it can."""
    if not torch.cuda.is_available():
        return (
            "TunableOp tunes GPU GEMMs (torch.cuda, on CUDA or ROCm builds) and PyTorch sees "
            f"no GPU here (torch {torch.__version__}): TunableOp is inert on the CPU, so "
            "nothing was tuned and nothing was timed"
        )
    if not hasattr(torch._C, "_cuda_tunableop_get_validators"):
        return f"this PyTorch build ({torch.__version__}) has no TunableOp"
    return None


def write_results(tunable: Any, path: Path) -> None:
    """Have TunableOp's results on disk at ``path``.

    Older PyTorch writes them on ``tunable.write_file()``; torch 2.11 has no such
    function and appends each result to the file as it is found ("realtime append", seen
    on the H200), so there is nothing to do once tuning is over. Where neither left a file,
    its lines are written from ``get_validators()`` and ``get_results()`` in the file's own
    layout (``Validator,KEY,VALUE``; ``Op,Params,Solution,TimeMs``).
    """
    if hasattr(tunable, "write_file"):
        tunable.write_file()
    if path.is_file() and path.stat().st_size > 0:
        return
    lines = [f"Validator,{k},{v}" for k, v in validator_pairs(tunable.get_validators()).items()]
    for row in tunable.get_results():
        op, params, solution, time_ms = row
        lines.append(f"{op},{params},{solution},{time_ms}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _case(torch: Any, shape: dict[str, Any]) -> Any:
    from stack.blas.cases import GemmCase
    from stack.tune.shapes import BlasGemm

    gemm = BlasGemm(
        shape["precision"],
        m=int(shape["m"]),
        n=int(shape["n"]),
        k=int(shape["k"]),
        batch=int(shape.get("batch", 1)),
        transa=str(shape.get("transa", "N")),
        transb=str(shape.get("transb", "N")),
    )
    row = gemm.torch_shape()
    case = GemmCase(
        gemm.precision, row["m"], row["n"], row["k"], row["batch"], row["transa"], row["transb"]
    )
    return gemm, case


def run(spec: dict[str, Any]) -> dict[str, Any]:
    """Tune and time as the spec asks; what driver.json holds."""
    import torch

    report: dict[str, Any] = {"ok": False, "torch_version": torch.__version__}
    reason = inert_reason(torch)
    if reason:
        report.update(ok=True, inert=reason)
        return report

    from torch.cuda import tunable

    from stack.blas import gemm_torch
    from stack.blas.devices import TorchTimer, torch_device
    from stack.blas.stats import LoopSettings, adaptive_loop

    out = Path(spec["out_dir"])
    device = torch_device(torch, "gpu", int(spec.get("gpu_index", 0)))
    torch.cuda.set_device(device.index)
    report["device"] = device.as_dict()
    results_path = out / RESULTS_FILE

    tunable.set_filename(str(results_path), False)
    tunable.enable(True)
    tunable.tuning_enable(True)
    tunable.set_max_tuning_duration(int(spec["max_tuning_duration_ms"]))
    tunable.set_max_tuning_iterations(int(spec["max_tuning_iterations"]))
    if spec.get("rotating_buffer_mb") and hasattr(tunable, "set_rotating_buffer_size"):
        tunable.set_rotating_buffer_size(int(spec["rotating_buffer_mb"]))

    generator = torch.Generator(device=device.label).manual_seed(int(spec.get("seed", 0)))
    prepared = []
    skipped = []
    for shape in spec["shapes"]:
        gemm, case = _case(torch, shape)
        why = gemm_torch.shape_unsupported(case)
        if why:
            skipped.append({"shape": gemm.label(), "reason": why})
            continue
        transa, transb, _ = gemm_torch.effective_layout(case)
        with gemm_torch.matmul_precision(torch, case.precision):
            ops = gemm_torch.make_operands(torch, device, case, transa, transb, generator)
            call = gemm_torch.gemm_call(torch, case.precision, ops)
            call()  # tuning happens here, once per new (op, shape)
            torch.cuda.synchronize(device.index)
        prepared.append((gemm, case, call))
    write_results(tunable, results_path)
    report["tuned_file"] = RESULTS_FILE if results_path.is_file() else None
    report["validators"] = validator_pairs(tunable.get_validators())
    report["skipped"] = skipped
    tunable.tuning_enable(False)

    timings = []
    if spec.get("measure", True):
        settings = LoopSettings.from_params(spec)
        timer = TorchTimer(torch, device)
        for gemm, case, call in prepared:
            sides: dict[str, list[float]] = {"before": [], "after": []}
            with gemm_torch.matmul_precision(torch, case.precision):
                for round_ in range(int(spec.get("rounds", 3))):
                    order = ("before", "after") if round_ % 2 == 0 else ("after", "before")
                    for side in order:
                        tunable.enable(side == "after")
                        timing = adaptive_loop(timer.block(call), settings)
                        sides[side].extend(timing.samples_s)
            timings.append({"shape": gemm.label(), "case": case.label(), **sides})
        tunable.enable(True)
    report["timings"] = timings
    report["shapes"] = [g.label() for g, _, _ in prepared]
    report["ok"] = True
    return report


def main(argv: list[str]) -> int:
    """Read the spec, run, write driver.json (stack.child.drive)."""
    return drive(argv, run, "stack.tune.driver")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
