"""The ratios people quote, next to what this hardware measured.

"BF16 is twice as fast as FP32 and takes half the memory", "INT8 is four
times FP32", "FP8 doubles BF16": rules of thumb from bit widths. What a team
gets depends on the chip (tensor cores make BF16 far more than 2x FP32 on
an H100; FP32 matrix cores make it only 8x on an MI300X) and on the library,
so the job shows, for the largest square GEMM measured in both precisions
(the fastest transpose layout of each, as a user would pick): the quoted
ratio, the ratio of the vendor's peaks, and the measured one. Memory ratios
use the peak memory allocated during one call where the device reports it
(GPU), else the operand bytes; INT8 and FP8 keep a 32-bit / 16-bit output,
which is why their memory ratio is not the bit-width ratio.

A speed ratio is only as good as the two timings behind it: where either case
was flagged high-CV (its samples spread more than ``cv_warn``), the check says
"too noisy to conclude" and names the cases, instead of "better / worse than
quoted" (a 17x "better than quoted" from two noisy cases says nothing). Memory
ratios are not timed, so noise leaves them alone.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from stack.blas.results import OK, CaseResult

# (id, text, numerator precision, denominator precision, kind, quoted ratio)
CLAIMS: tuple[tuple[str, str, str, str, str, float], ...] = (
    ("bf16_vs_fp32_speed", "BF16 is about 2x as fast as FP32", "bf16", "fp32", "speed", 2.0),
    ("bf16_vs_fp32_memory", "BF16 needs half the memory of FP32", "bf16", "fp32", "memory", 0.5),
    ("int8_vs_fp32_speed", "INT8 is about 4x as fast as FP32", "int8", "fp32", "speed", 4.0),
    (
        "int8_vs_fp32_memory",
        "INT8 needs a quarter of the memory of FP32",
        "int8",
        "fp32",
        "memory",
        0.25,
    ),
    ("fp8_vs_bf16_speed", "FP8 is about 2x as fast as BF16", "fp8", "bf16", "speed", 2.0),
    ("fp8_vs_bf16_memory", "FP8 needs half the memory of BF16", "fp8", "bf16", "memory", 0.5),
)


TOO_NOISY = "too noisy to conclude"
_KINDS = {claim_id: (top, bottom, kind) for claim_id, _, top, bottom, kind, _ in CLAIMS}


def _verdict(measured: float, quoted: float, kind: str) -> str:
    ratio = measured / quoted
    if kind == "memory":
        # smaller is better for memory: "holds" when within 10 %, else better/worse
        if ratio <= 1.1 and ratio >= 0.9:
            return "holds"
        return "better than quoted" if ratio < 0.9 else "worse than quoted"
    if 0.9 <= ratio <= 1.1:
        return "holds"
    return "better than quoted" if ratio > 1.1 else "worse than quoted"


def _square_results(results: list[CaseResult], backend: str) -> dict[str, dict[int, CaseResult]]:
    table: dict[str, dict[int, CaseResult]] = {}
    for r in results:
        c = r.case
        if r.family != "gemm" or r.backend != backend or r.status != OK or not r.measured:
            continue
        if not (c["m"] == c["n"] == c["k"]) or c["batch"] != 1:
            continue
        sizes = table.setdefault(str(c["precision"]), {})
        size = int(c["m"])
        best = sizes.get(size)
        # several transposes of one size: the fastest layout is what a user would pick
        if best is None or (r.median_rate() or 0) > (best.median_rate() or 0):
            sizes[size] = r
    return table


def claims_check(
    results: list[CaseResult], peaks_by_backend: dict[str, dict[str, float | None]]
) -> list[dict[str, Any]]:
    """One row per claim and backend: quoted, vendor-peak and measured ratios, and a verdict."""
    rows: list[dict[str, Any]] = []
    for backend in sorted({r.backend for r in results if r.family == "gemm"}):
        table = _square_results(results, backend)
        peaks = peaks_by_backend.get(backend) or {}
        for claim_id, text, top, bottom, kind, quoted in CLAIMS:
            row: dict[str, Any] = {
                "claim": claim_id,
                "text": text,
                "backend": backend,
                "quoted": quoted,
                "vendor_peak_ratio": None,
                "measured": None,
                "size": None,
                "verdict": None,
                "why_missing": None,
            }
            if kind == "speed" and peaks.get(top) and peaks.get(bottom):
                row["vendor_peak_ratio"] = round(peaks[top] / peaks[bottom], 3)  # type: ignore[operator]
            common = sorted(set(table.get(top, {})) & set(table.get(bottom, {})))
            if not common:
                missing = [p for p in (top, bottom) if not table.get(p)]
                row["why_missing"] = (
                    f"no square {' / '.join(p.upper() for p in missing)} GEMM measured on {backend}"
                    if missing
                    else "no size measured in both precisions"
                )
                rows.append(row)
                continue
            size = common[-1]
            a, b = table[top][size], table[bottom][size]
            row["size"] = size
            row["layouts"] = {
                top: f"{a.case['transa']}{a.case['transb']}",
                bottom: f"{b.case['transa']}{b.case['transb']}",
            }
            if kind == "speed":
                ra, rb = a.median_rate(), b.median_rate()
                measured = ra / rb if ra and rb else None
            else:
                ma = a.peak_memory_bytes or a.footprint_bytes
                mb = b.peak_memory_bytes or b.footprint_bytes
                measured = ma / mb if ma and mb else None
                row["memory_source"] = (
                    "peak allocated during one call"
                    if a.peak_memory_bytes and b.peak_memory_bytes
                    else "operand bytes (A, B and C)"
                )
            if measured is not None:
                row["measured"] = round(measured, 3)
                row["verdict"] = _verdict(measured, quoted, kind)
            rows.append(row)
    return rows


def _case_key(row: dict[str, Any]) -> tuple[str, str, int, str] | None:
    try:
        if not (int(row["m"]) == int(row["n"]) == int(row["k"])) or int(row.get("batch", 1)) != 1:
            return None
        layout = f"{row.get('transa', '')}{row.get('transb', '')}"
        return str(row["backend"]), str(row["precision"]), int(row["m"]), layout
    except (KeyError, TypeError, ValueError):
        return None


def judge_noise(
    claim_rows: list[dict[str, Any]], gemm_rows: Iterable[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The claims again, a speed verdict replaced by TOO_NOISY where a case behind it is
    flagged high-CV in the GEMM summary table (rows as records.summary_row makes them).

    Works on stored summaries, so a job's page judges jobs stored before this check too;
    a claim without its layouts (older summaries) is judged on every layout of its size.
    """
    flagged: dict[tuple[str, str, int], list[tuple[str, float | None]]] = {}
    for row in gemm_rows:
        key = _case_key(row) if isinstance(row, dict) else None
        if key is not None and row.get("high_cv"):
            flagged.setdefault(key[:3], []).append((key[3], row.get("cv_pct")))
    judged = []
    for claim in claim_rows:
        claim = dict(claim)
        top, bottom, kind = _KINDS.get(claim.get("claim", ""), (None, None, None))
        if top is None:  # an older summary without ids: the precisions from its text
            words = str(claim.get("text", "")).lower().split()
            speed = [(t, b) for _, text, t, b, k, _ in CLAIMS if k == "speed" and
                     text.lower().split() == words]  # fmt: skip
            top, bottom, kind = (*speed[0], "speed") if speed else (None, None, None)
        if claim.get("verdict"):
            claim["noise_checked"] = True
        if kind == "speed" and claim.get("verdict") and claim.get("size"):
            layouts = claim.get("layouts") or {}
            noisy = [
                f"{precision.upper()} {claim['size']} {layout}: CV {cv} %"
                for precision in (top, bottom)
                for layout, cv in flagged.get((claim.get("backend"), precision, claim["size"]), [])
                if layout == layouts.get(precision, layout)
            ]
            if noisy:
                claim["verdict"] = TOO_NOISY
                claim["noisy"] = noisy
        judged.append(claim)
    return judged
