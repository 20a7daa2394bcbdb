"""What the compare page draws and how it names a case.

A GEMM case carries ten parameters (backend, precision, m, n, k, batch, transa, transb,
cold_cache, inputs) and most of them are the same in every case of a comparison; a
label listing all of them was a line and a half of text per bar (issue 39). A case is
named here by what differs between the cases shown ("bf16 4096³ NT"), and what they all
share is said once (ShortLabels.common), above the table and under each chart.

A chart shows each job's change from the baseline, in per cent, with its 95 % interval
as a whisker: the same ratio and bootstrap interval the table prints (results.compare),
so the chart and the table never disagree. With hundreds of cases a chart shows the
CHART_CASES that changed most and says how many that is of how many; the table has the
rest.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.utils.safestring import SafeString

from portal.charts import Interval, bar_chart
from portal.units import rate_unit
from results.compare import Comparison, Row, case_label

CHART_CASES = 20  # cases per chart: the most changed; more bars than this are not read
CHART_GROUPS = 12  # charts on one compare page (one per benchmark, metric and unit)
CHARTS_OPEN = 4  # charts shown open; the others are one click away, folded
ROWS_PER_PAGE = 50  # table rows a page: 200 made a 20,000 px page

_SIZE = ("m", "n", "k")
_LAYOUT = ("transa", "transb")
_BARE = ("precision", "backend", "op")  # values that name themselves: "bf16", "hipblaslt"


@dataclass(frozen=True)
class ShortLabels:
    """One label per case, made of what differs, and the parameters every case shares."""

    labels: list[str]
    common: str


def _describe(case: Mapping[str, Any], keys: set[str]) -> str:
    """``keys`` of one case in a short line: bare names, a size as 4096³ or 4096x4096x1024,
    a layout as NT, anything else as key=value (results.compare.case_label)."""
    parts = [str(case[key]) for key in _BARE if key in keys and key in case]
    rest = {k: case[k] for k in keys if k in case and k not in _BARE}
    if set(_SIZE) <= rest.keys():
        m, n, k = (rest.pop(key) for key in _SIZE)
        parts.append(f"{m}³" if m == n == k else f"{m}x{n}x{k}")
    if set(_LAYOUT) <= rest.keys():
        parts.append(f"{rest.pop('transa')}{rest.pop('transb')}")
    if rest:
        parts.append(case_label(rest))
    return " ".join(parts)


def short_labels(cases: Sequence[Any]) -> ShortLabels:
    """Each case named by the parameters that differ between ``cases``; the others once.

    A size or a layout is one thing to a reader: if any of m, n, k differs, all three go
    into the labels ("4096x4096x1024", not "k=1024" beside a common "m=4096 n=4096").
    A lone case is named in full.
    """
    if not cases or not all(isinstance(c, Mapping) for c in cases):
        return ShortLabels([case_label(c) for c in cases], "")
    keys = {key for case in cases for key in case}
    first = cases[0]
    varying = {
        key
        for key in keys
        if len(cases) == 1 or any(key not in c or c[key] != first.get(key) for c in cases)
    }
    for together in (_SIZE, _LAYOUT):
        if varying & set(together):
            varying |= set(together)
    common = keys - varying
    return ShortLabels(
        [_describe(case, varying) or "—" for case in cases], _describe(first, common)
    )


def _change(row: Row) -> float:
    """How far the row's most changed job moved from the baseline (|log ratio|); -1 when
    no job has a ratio, so rows without one come last."""
    ratios = [c.ratio.value for c in row.cells if c and c.ratio and c.ratio.value]
    return max((abs(math.log(r)) for r in ratios if r > 0), default=-1.0)


def _percent(ratio: float) -> float:
    return (ratio - 1.0) * 100.0


def _text(value: float, interval: Interval | None) -> str:
    """A bar's hover text: "+5.0 % [+3.1, +7.0]" (no bounds without samples)."""
    bounds = f" [{interval[0]:+.1f}, {interval[1]:+.1f}]" if interval else ""
    return f"{value:+.1f} %{bounds}"


def compare_charts(comparison: Comparison) -> list[dict[str, Any]]:
    """One chart per (benchmark, metric, unit): each job's change from the baseline.

    The title names the unit the table shows the values in (portal.units.rate_unit: a
    CPU's 0.0006 TFLOP/s is 600 MFLOP/s); the bars are per cent, so need none.

    The CHART_CASES cases that changed most (in any job) are drawn, most changed first;
    each dict carries the chart, how many cases it shows of how many, and what every
    case shown shares. None for a comparison of one job: there is nothing to compare.
    """
    base = comparison.baseline
    others = [(i, c) for i, c in enumerate(comparison.columns) if not c.is_baseline]
    if base is None or not others:
        return []
    charts = []
    for (benchmark, metric, unit), rows in comparison.groups()[:CHART_GROUPS]:
        ranked = sorted((r for r in rows if _change(r) >= 0), key=_change, reverse=True)
        if not ranked:
            continue  # no case of this group has a ratio to draw
        shown = ranked[:CHART_CASES]
        named = short_labels([row.case for row in shown])
        series: dict[str, list[float | None]] = {}
        intervals: dict[str, list[Interval | None]] = {}
        for i, column in others:
            ratios = [row.cells[i].ratio if row.cells[i] else None for row in shown]
            series[column.label] = [
                _percent(r.value) if r and r.value is not None else None for r in ratios
            ]
            intervals[column.label] = [
                (_percent(r.low), _percent(r.high))
                if r and r.value is not None and r.low is not None and r.high is not None
                else None
                for r in ratios
            ]
        better = rows[0].better
        _, unit = rate_unit(unit, (c.value for row in rows for c in row.cells if c))
        svg: SafeString = bar_chart(
            f"{benchmark} · {metric} ({unit or 'no unit'})",
            named.labels,
            series,
            y_title=f"% change from #{base.job.pk} ({better} is better)",
            intervals=intervals,
            value_text=_text,
        )
        charts.append({"svg": svg, "shown": len(shown), "total": len(rows), "common": named.common})
    return charts
