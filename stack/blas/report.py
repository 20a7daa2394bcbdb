"""Print a blas-bench result.json as Markdown tables: ``python -m stack.blas.report FILE``.

For terminals and for docs/blas-bench.md: the same numbers the job page shows
(rate, % of peak, CV, check, clocks), one table per family, then the
unsupported precisions, the claims check and the flags.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def _fmt(value: Any, digits: int = 1) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _shape(family: str, row: dict[str, Any]) -> str:
    if family == "gemm":
        batch = f" x{row['batch']}" if row.get("batch", 1) != 1 else ""
        return f"{row['m']}x{row['n']}x{row['k']} {row['transa']}{row['transb']}{batch}"
    if family == "bandwidth":
        return f"{row['op']} {row['array_mib']:g} MiB"
    if family == "fft":
        return f"{row['shape']} (batch {row['batch']})"
    return f"{row['op']} n={row['n']}"


def render(data: dict[str, Any]) -> str:
    """Markdown for one result document."""
    out: list[str] = []
    summary = data.get("summary", {})
    out.append(f"status: {data.get('status')}  error: {data.get('error')}")
    for backend, info in summary.get("backends", {}).items():
        device = info.get("device", {})
        out.append(
            f"- {backend}: {device.get('name')} ({device.get('arch')}), {info.get('library')}; "
            f"timing: {info.get('timing_method')}; telemetry: "
            f"{info.get('telemetry', {}).get('source')} ({info.get('telemetry', {}).get('samples')}"
            " samples)"
        )
    if inputs := summary.get("method", {}).get("inputs"):
        out.append(
            f"- GEMM inputs: {inputs}. Throughput depends on the data: on an H200, zeros and "
            "small integers ran 7-19 % faster than normals in FP64, FP16, BF16 and FP8 "
            "(docs/blas-bench.md, Inputs); compare only runs fed the same inputs."
        )
    for family, rows in summary.get("tables", {}).items():
        out.append("")
        out.append(f"### {family}")
        out.append("")
        out.append(
            "| backend | precision | case | median ms | rate | % peak | CV % | samples | check "
            "| SM MHz (min-max) | W (median) | throttle |"
        )
        out.append("|---|---|---|---|---|---|---|---|---|---|---|---|")
        for row in rows:
            tel = row.get("telemetry") or {}
            clock = tel.get("sm_clock_mhz") or {}
            power = tel.get("power_w") or {}
            check = row.get("check") or {}
            check_text = (
                "-"
                if not check
                else ("ok " if check.get("passed") else "FAIL ") + f"{check.get('error', 0):.1e}"
            )
            rate = row.get("rate")
            out.append(
                "| "
                + " | ".join(
                    [
                        str(row.get("backend")),
                        str(row.get("precision", "")),
                        _shape(family, row),
                        _fmt(row.get("median_ms"), 3),
                        f"{_fmt(rate, 1)} {row.get('unit', '')}"
                        if rate is not None
                        else row["status"],
                        _fmt(row.get("pct_of_peak"), 1),
                        _fmt(row.get("cv_pct"), 2),
                        _fmt(row.get("samples")),
                        check_text,
                        f"{_fmt(clock.get('min'), 0)}-{_fmt(clock.get('max'), 0)}"
                        if clock
                        else "-",
                        _fmt(power.get("median"), 0),
                        ",".join(tel.get("throttle_reasons") or []) or "-",
                    ]
                )
                + " |"
            )
    if summary.get("unsupported"):
        out.append("")
        out.append("### unsupported")
        for row in summary["unsupported"]:
            what = row.get("precision") or ""
            if row.get("op"):
                what = f"{row['op']} {what}"
            out.append(f"- {row['backend']} {row['family']} {what}: {row['reason']}")
    if summary.get("claims"):
        out.append("")
        out.append("### claims")
        out.append("")
        out.append("| claim | backend | quoted | vendor peaks | measured | size | verdict |")
        out.append("|---|---|---|---|---|---|---|")
        for row in summary["claims"]:
            out.append(
                f"| {row['text']} | {row['backend']} | {row['quoted']} | "
                f"{_fmt(row['vendor_peak_ratio'], 2)} | {_fmt(row['measured'], 2)} | "
                f"{_fmt(row['size'])} | {row['verdict'] or row.get('why_missing')} |"
            )
    flags = summary.get("flags") or {}
    if any(flags.values()):
        out.append("")
        out.append("### flags")
        for name, items in flags.items():
            for item in items:
                out.append(f"- {name}: {item}")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Print each result file given on the command line."""
    args = sys.argv[1:] if argv is None else argv
    if not args:
        sys.stderr.write("usage: python -m stack.blas.report RESULT.json [...]\n")
        return 2
    for name in args:
        sys.stdout.write(render(json.loads(Path(name).read_text(encoding="utf-8"))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
