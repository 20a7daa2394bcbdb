"""blas-bench on the job page: GEMM charts, the claims check and what was not measured."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from django.utils.safestring import SafeString

from jobs.models import Job, Measurement
from portal.charts import xy_chart
from portal.kinds.base import Presenter
from stack.blas.gemm import FAMILY as GEMM
from stack.kinds.blas_bench import KIND


def _size(case: dict) -> float | None:
    """A GEMM's size as one number: N for square shapes, the cube root of M*N*K otherwise."""
    try:
        m, n, k = (float(case[key]) for key in ("m", "n", "k"))
    except (KeyError, TypeError, ValueError):
        return None
    return m if m == n == k else round((m * n * k) ** (1 / 3), 1)


def gemm_charts(measurements: Iterable[Measurement]) -> list[SafeString]:
    """TFLOP/s (TOPS for int8) and % of peak against size, one line per backend and precision."""
    rate: dict[str, list[tuple[float, float]]] = defaultdict(list)
    peak: dict[str, list[tuple[float, float]]] = defaultdict(list)
    unit = "TFLOP/s"
    for m in measurements:
        if m.benchmark != GEMM or (size := _size(m.case)) is None:
            continue
        label = f"{m.case.get('backend', '?')} {m.case.get('precision', '?')}"
        if m.case.get("batch", 1) not in (1, None):
            label += f" x{m.case['batch']}"
        if m.metric == "throughput":
            rate[label].append((size, m.value))
            unit = m.unit if m.unit else unit
        elif m.metric == "pct_of_peak":
            peak[label].append((size, m.value))
    charts = []
    if rate:
        charts.append(
            xy_chart("GEMM throughput", rate, x_title="size (N, or ∛(M·N·K))", y_title=unit)
        )
    if peak:
        charts.append(
            xy_chart(
                "GEMM, % of the device's vendor peak for the precision",
                peak,
                x_title="size (N, or ∛(M·N·K))",
                y_title="% of peak",
            )
        )
    return charts


class BlasBenchPresenter(Presenter):
    partial = "portal/kinds/blas_bench.html"

    def charts(self, job: Job) -> list[SafeString]:
        return gemm_charts(job.measurements.filter(benchmark=GEMM))


PRESENTER = BlasBenchPresenter(KIND)
