"""blas-bench on the job page: a chart per family and unit, the claims check, what was not
measured."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from django.db.models.fields.json import KeyTransform
from django.http import HttpRequest
from django.utils.safestring import SafeString

from jobs.models import Job
from portal.charts import xy_chart
from portal.kinds.base import Presenter
from portal.units import rate_unit
from stack.blas.claims import judge_noise
from stack.blas.gemm import FAMILY as GEMM
from stack.blas.schema import FAMILIES
from stack.kinds.blas_bench import KIND


def _size(case: dict) -> float | None:
    """A GEMM's size as one number: N for square shapes, the cube root of M*N*K otherwise."""
    try:
        m, n, k = (float(case[key]) for key in ("m", "n", "k"))
    except (KeyError, TypeError, ValueError):
        return None
    return m if m == n == k else round((m * n * k) ** (1 / 3), 1)


def _number(case: dict, key: str) -> float | None:
    try:
        return float(case[key])
    except (KeyError, TypeError, ValueError):
        return None


def _points(case: dict) -> float | None:
    """An FFT's points per transform: the product of its shape ("256x256" is 65,536)."""
    try:
        return float(math.prod(int(d) for d in str(case["shape"]).split("x")))
    except (KeyError, ValueError):
        return None


def _gemm_label(case: dict) -> str:
    label = f"{case.get('backend', '?')} {case.get('precision', '?')}"
    if case.get("batch", 1) not in (1, None):
        label += f" x{case['batch']}"
    return label


@dataclass(frozen=True)
class Family:
    """How one family is drawn: its name, x axis, what makes a line, and which metrics."""

    title: str
    x_title: str
    x: Callable[[dict], float | None]
    series: Callable[[dict], str]
    metrics: tuple[tuple[str, str], ...]  # (metric, what the chart says of it)
    layouts_note: str = ""


FAMILY_CHARTS: dict[str, Family] = {
    GEMM: Family(
        "GEMM",
        "size (N, or ∛(M·N·K))",
        _size,
        _gemm_label,
        (("throughput", "throughput"), ("pct_of_peak", "% of the device's vendor peak")),
        # several transpose layouts of one size: a user would pick the fastest
        layouts_note=", fastest layout of each size",
    ),
    "bandwidth": Family(
        "Memory bandwidth",
        "array size (MiB)",
        lambda c: _number(c, "array_mib"),
        lambda c: f"{c.get('backend', '?')} {c.get('op', '?')}",
        (("bandwidth", "STREAM-style bandwidth"), ("pct_of_peak", "% of the HBM peak")),
    ),
    "fft": Family(
        "FFT",
        "points per transform",
        _points,
        lambda c: (
            f"{c.get('backend', '?')} {c.get('precision', '?')} {c.get('dims', '?')}-D"
            f" batch {c.get('batch', '?')}"
        ),
        (("throughput", "throughput (5 N log2 N)"), ("effective_bandwidth", "effective bandwidth")),
    ),
    "solver": Family(
        "Dense solvers",
        "n (an n-by-n matrix)",
        lambda c: _number(c, "n"),
        lambda c: f"{c.get('backend', '?')} {c.get('op', '?')} {c.get('precision', '?')}",
        (("throughput", "throughput"), ("time", "time per factorisation")),
    ),
}
assert set(FAMILY_CHARTS) == set(FAMILIES), "every blas-bench family has its charts"


def family_charts(rows: Iterable[tuple[str, dict, str, str, float, str]]) -> list[SafeString]:
    """One chart per family, metric and unit, from (benchmark, case, metric, unit, value, better).

    A chart never mixes units: INT8's TOPS get a chart apart from the TFLOP/s of the
    float precisions, and the axis names the unit. Where several cases land on one
    point of a line (GEMM's transpose layouts), the best value is drawn.
    """
    # (family, metric, unit) -> series -> x -> best value
    grouped: dict[tuple[str, str, str], dict[str, dict[float, float]]] = defaultdict(
        lambda: defaultdict(dict)
    )
    for benchmark, case, metric, unit, value, better in rows:
        family = FAMILY_CHARTS.get(benchmark)
        if family is None or not math.isfinite(value):
            continue
        x = family.x(case)
        if x is None:
            continue
        key = (benchmark, metric, unit)
        lower = better == "lower"
        line = grouped[key][family.series(case)]
        if x not in line or (value < line[x] if lower else value > line[x]):
            line[x] = value
    charts = []
    for benchmark, family in FAMILY_CHARTS.items():
        for metric, said in family.metrics:
            for key in sorted(k for k in grouped if k[:2] == (benchmark, metric)):
                lines = sorted(grouped[key].items())
                factor, unit = rate_unit(key[2], (v for _, line in lines for v in line.values()))
                series = {
                    name: [(x, v * factor) for x, v in sorted(line.items())] for name, line in lines
                }
                charts.append(
                    xy_chart(
                        f"{family.title}: {said} ({unit}){family.layouts_note}",
                        series,
                        x_title=family.x_title,
                        y_title=unit,
                        log2_x=True,  # sizes double: 1024, 2048 .. 16384
                    )
                )
    return charts


def chart_metrics() -> set[str]:
    """The metrics the charts read, so the page fetches no other rows."""
    return {metric for family in FAMILY_CHARTS.values() for metric, _ in family.metrics}


class BlasBenchPresenter(Presenter):
    partial = "portal/kinds/blas_bench.html"

    def charts(self, job: Job) -> list[SafeString]:
        # one query, and no samples: a sweep's samples are most of its bytes
        rows = job.measurements.filter(
            benchmark__in=FAMILY_CHARTS, metric__in=chart_metrics()
        ).values_list("benchmark", "case", "metric", "unit", "value", "better")
        return family_charts(rows)

    def context(self, job: Job, request: HttpRequest | None = None) -> dict[str, Any]:
        # Only the parts the partial shows, read from the database: the summary's tables
        # are most of its megabyte. The claims are judged for noise again (judge_noise),
        # so a job stored before that check shows it too; the GEMM table, which that
        # needs, is read only for such a job.
        parts = Job.objects.filter(pk=job.pk).values_list(
            *(KeyTransform(key, "summary") for key in ("claims", "flags", "unsupported"))
        )
        claims, flags, unsupported = parts.get()
        claims = [dict(c) for c in claims or [] if isinstance(c, dict)]
        if any(c.get("verdict") and "noise_checked" not in c for c in claims):
            gemm = Job.objects.filter(pk=job.pk).values_list(
                KeyTransform(GEMM, KeyTransform("tables", "summary")), flat=True
            )
            claims = judge_noise(claims, gemm.get() or [])
        return {
            "claims": claims,
            "flags": flags if isinstance(flags, dict) else {},
            "unsupported": unsupported if isinstance(unsupported, list) else [],
        }


PRESENTER = BlasBenchPresenter(KIND)
