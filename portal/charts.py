"""Charts drawn on the server as SVG with pygal: no JavaScript, nothing from a CDN.

Pages embed the SVG inline, so a chart works on an air-gapped cluster and in a
downloaded HTML report alike. The SVG's own <style> passes the page's CSP only with the
response's nonce: templates show a chart as ``{{ chart|with_nonce:request.csp_nonce }}``
(portal/templatetags/charts.py).
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import math
import re
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.core.cache import cache
from django.utils.safestring import SafeString, mark_safe

if TYPE_CHECKING:
    import pygal.graph.graph

    from jobs.models import Job
    from portal.kinds.base import Presenter


@functools.cache
def _pygal() -> Any:
    """pygal, imported on the first chart drawn rather than when the portal app loads:
    most processes that load the app (workers, beat, manage.py) never draw one."""
    import pygal

    return pygal


@functools.cache
def _common() -> dict[str, Any]:
    """The options every chart shares (the style needs pygal, hence a function)."""
    from pygal.style import Style

    style = Style(
        background="transparent",
        plot_background="#ffffff",
        foreground="#1d2330",
        foreground_strong="#1d2330",
        foreground_subtle="#e2e5ea",
        colors=("#c8102e", "#2b6cb0", "#1f8a4c", "#b7791f", "#6b46c1", "#0f766e", "#6b7385"),
        font_family="system-ui, sans-serif",
        label_font_size=11,
        major_label_font_size=11,
        legend_font_size=12,
        title_font_size=14,
    )
    return {
        "style": style,
        "js": [],  # pygal's default loads its tooltip script from a CDN
        "disable_xml_declaration": True,
        "width": 760,
        "height": 340,
        "explicit_size": False,
        "legend_at_bottom": True,
        "show_minor_x_labels": True,
    }


CHART_CACHE_S = 24 * 3600
_SCRIPT = re.compile(r"<script\b.*?</script>", re.S)
# pygal hides its tooltip with a style attribute, which the CSP refuses; rocpath.css hides it.
_TOOLTIP_STYLE = ' style="opacity: 0"'
# pygal's tooltips are drawn by its script (never loaded): each dot carries its value and
# the tooltip's position as <desc> elements. The value becomes the dot's <title>, which
# browsers show on hover without any script; the positions go.
_DOT = re.compile(
    r'<circle ([^>]*)/><desc class="value">(.*?)</desc>'
    r'<desc class="x[^"]*">[^<]*</desc><desc class="y[^"]*">[^<]*</desc>',
    re.S,
)
# Positions come with 15 digits; a tenth of a pixel is as much as a screen shows.
_GEOMETRY = re.compile(r'(\s(?:cx|cy|x|y|d|transform|width|height)=")([^"]*)"')
_LONG_DECIMAL = re.compile(r"(\d\.\d)\d+")


# A bar's value and label likewise become its <title>.
_BAR = re.compile(
    r'<rect ([^>]*)/><desc class="value">(.*?)</desc>'
    r'<desc class="x[^"]*">[^<]*</desc><desc class="y[^"]*">[^<]*</desc>'
    r'<desc class="x_label">(.*?)</desc>',
    re.S,
)


def _compact(svg: str) -> str:
    svg = _DOT.sub(r"<title>\2</title><circle \1/>", svg)
    svg = _BAR.sub(r"<title>\3: \2</title><rect \1/>", svg)
    return _GEOMETRY.sub(lambda m: m[1] + _LONG_DECIMAL.sub(r"\1", m[2]) + '"', svg)


def _render(chart: pygal.graph.graph.Graph) -> SafeString:
    # pygal still writes an inline config <script> for its tooltips; a static chart
    # needs none, and pages then need no script-src exception for charts. What the
    # script would have read is dropped too (_compact): a chart of 500 dots shrinks by half.
    svg = _SCRIPT.sub("", chart.render(is_unicode=True)).replace(_TOOLTIP_STYLE, "")
    return mark_safe(_compact(svg))  # noqa: S308 - pygal escapes the labels and values it draws


def _remembered(parts: object, draw: Callable[[], SafeString]) -> SafeString:
    """A chart drawn once per content: pygal takes ~10 ms per 100 points, and a
    permalink is reopened with the same numbers. The key is what the chart draws."""
    key = "portal:chart:" + hashlib.sha256(repr(parts).encode()).hexdigest()
    if (svg := cache.get(key)) is not None:
        return mark_safe(svg)  # noqa: S308 - pygal's output, stored as it was drawn
    svg = draw()
    cache.set(key, str(svg), CHART_CACHE_S)
    return svg


def nice_ticks(low: float, high: float, most: int = 6) -> list[float]:
    """Round ticks from at or below ``low`` to at or above ``high``.

    pygal picks its y ticks inside the data's range, so the highest point of a chart sat
    above the last labelled tick (issue 36); ticks that cover the data, on steps of 1, 2,
    2.5 or 5 times a power of ten, are read at a glance.
    """
    low, high = min(low, 0.0), max(high, 0.0)
    if high == low:
        high = low + 1.0
    raw = (high - low) / max(most - 1, 1)
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    first, last = math.floor(low / step + 1e-9), math.ceil(high / step - 1e-9)
    return [round(i * step, 12) for i in range(first, last + 1)]


def _size_label(log2_value: float) -> str:
    """A log2 axis's position as the size it stands for: 13 -> "8192", -1 -> "0.5"."""
    size = 2**log2_value
    if size >= 10 or abs(size - round(size)) < 1e-6 * size:
        return str(round(size))
    return f"{size:.3g}"


MAX_X_LABELS = 16  # every size labelled up to this many; beyond, one label per power of two


def xy_chart(
    title: str,
    series: dict[str, Sequence[tuple[float, float]]],
    *,
    x_title: str,
    y_title: str,
    log2_x: bool = False,
) -> SafeString:
    """Lines of (x, y) points, one per series: e.g. TFLOP/s against matrix size.

    ``log2_x``: sizes that double (1024 .. 16384) on a log2 axis, each labelled with the
    size itself; on a linear one the small sizes bunch up at the left. The y axis's ticks
    always cover the highest and lowest point.
    """
    points = {
        name: sorted((float(x), float(y)) for x, y in values if not log2_x or float(x) > 0)
        for name, values in series.items()
    }
    ys = [y for values in points.values() for _, y in values]
    options: dict[str, Any] = {}
    if ys:
        ticks = nice_ticks(min(ys), max(ys))
        options.update(range=(ticks[0], ticks[-1]), y_labels=ticks)
    if log2_x:
        points = {name: [(math.log2(x), y) for x, y in values] for name, values in points.items()}
        xs = sorted({x for values in points.values() for x, _ in values})
        if len(xs) > MAX_X_LABELS and xs:
            xs = list(range(math.floor(xs[0]), math.ceil(xs[-1]) + 1))
        options.update(x_labels=xs, x_value_formatter=_size_label)
    chart = _pygal().XY(
        title=title,
        x_title=x_title,
        y_title=y_title,
        dots_size=3,
        logarithmic=False,
        **options,
        **_common(),
    )
    for name, values in points.items():
        chart.add(name, values)
    return _render(chart)


def time_chart(
    title: str, series: dict[str, Iterable[tuple[datetime, float]]], *, y_title: str
) -> SafeString:
    """Values over time, one line per series: e.g. unsupported references across scans."""
    chart = _pygal().DateTimeLine(
        title=title,
        y_title=y_title,
        x_label_rotation=20,
        x_value_formatter=lambda d: d.strftime("%Y-%m-%d %H:%M"),
        dots_size=4,
        **_common(),
    )
    for name, points in series.items():
        chart.add(name, sorted(points))
    return _render(chart)


CACHE_S = 7 * 24 * 3600


@functools.cache
def _code_version(presenter_type: type) -> str:
    """The charts' code as a hash: a changed presenter or chart style misses the cache."""
    digest = hashlib.sha256(Path(__file__).read_bytes())
    digest.update(Path(inspect.getfile(presenter_type)).read_bytes())
    return digest.hexdigest()[:16]


def job_charts(job: Job, presenter: Presenter) -> list[SafeString]:
    """The job page's charts; those of an ended job drawn once, then served from the cache.

    pygal takes 30-90 ms a chart and a sweep draws about ten; an ended job's measurements
    never change (they are written once, as it ends), so the key is the job, when it
    ended and the code that drew them.
    """
    if not job.is_terminal or job.finished_at is None:
        return presenter.charts(job)
    key = ":".join(
        ("portal-charts", _code_version(type(presenter)), str(job.pk), job.finished_at.isoformat())
    )
    cached = cache.get(key)
    if cached is not None:
        return [mark_safe(svg) for svg in cached]  # noqa: S308 - drawn by _render, as below
    charts = presenter.charts(job)
    cache.set(key, [str(svg) for svg in charts], CACHE_S)
    return charts


Interval = tuple[float, float]


def _bar(value: float | None, interval: Interval | None, text: str) -> dict[str, Any] | None:
    """One bar as pygal takes it: its value, its hover text and, with an interval, its
    whisker (pygal draws ``ci`` as a vertical line with caps at both bounds)."""
    if value is None:
        return None
    bar: dict[str, Any] = {"value": float(value), "formatter": lambda _v: text}
    if interval is not None:
        bar["ci"] = {"low": float(interval[0]), "high": float(interval[1])}
    return bar


def bar_chart(
    title: str,
    labels: Sequence[str],
    series: dict[str, Sequence[float | None]],
    *,
    y_title: str,
    intervals: dict[str, Sequence[Interval | None]] | None = None,
    value_text: Callable[[float, Interval | None], str] | None = None,
) -> SafeString:
    """Grouped bars: one group per label (a case), one bar per series (a job) in each.

    ``intervals``: per series, each bar's 95 % interval, drawn as a whisker; None draws
    none (a value with no spread has no interval, and a zero-width whisker would claim
    a certainty it lacks). The y axis covers every bar and every whisker.
    ``value_text``: what hovering a bar says (e.g. "+5.0 % [+3.1, +7.0]").
    """
    text = value_text or (lambda v, _i: f"{v:.4g}")
    spans = {
        name: list((intervals or {}).get(name) or [None] * len(values))
        for name, values in series.items()
    }
    bars = {
        name: [
            (v, i, "" if v is None else text(v, i))
            for v, i in zip(values, spans[name], strict=True)
        ]
        for name, values in series.items()
    }

    def draw() -> SafeString:
        ys = [
            y
            for drawn in bars.values()
            for v, i, _ in drawn
            if v is not None
            for y in (v, *(i or ()))
        ]
        ticks = nice_ticks(min(ys), max(ys)) if ys else []
        chart = _pygal().Bar(
            title=title,
            y_title=y_title,
            x_label_rotation=30,
            truncate_label=40,
            **({"range": (ticks[0], ticks[-1]), "y_labels": ticks} if ticks else {}),
            **_common(),
        )
        chart.x_labels = list(labels)
        for name, drawn in bars.items():
            chart.add(name, [_bar(v, i, t) for v, i, t in drawn])
        return _render(chart)

    return _remembered(("bar", title, list(labels), list(bars.items()), y_title), draw)


def history_chart(
    title: str,
    points: Sequence[tuple[datetime, float]],
    marks: Sequence[tuple[datetime, float]],
    *,
    y_title: str,
) -> SafeString:
    """One case's values over time, with the first run of each new segment marked."""

    def draw() -> SafeString:
        chart = _pygal().DateTimeLine(
            title=title,
            y_title=y_title,
            x_label_rotation=20,
            x_value_formatter=lambda d: d.strftime("%Y-%m-%d %H:%M"),
            dots_size=2,
            **_common(),
        )
        chart.add("value", list(points))
        if marks:
            chart.add("change point", list(marks), stroke=False, dots_size=7)
        return _render(chart)

    return _remembered(("history", title, list(points), list(marks), y_title), draw)
