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
from dataclasses import dataclass
from datetime import datetime
from html import escape
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


# The series colours of every chart, pygal's and the plain SVG ones alike.
_PALETTE = ("#c8102e", "#2b6cb0", "#1f8a4c", "#b7791f", "#6b46c1", "#0f766e", "#6b7385")


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
        colors=_PALETTE,
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


def nice_ticks(low: float, high: float, most: int = 6, *, zero: bool = True) -> list[float]:
    """Round ticks from at or below ``low`` to at or above ``high``.

    pygal picks its y ticks inside the data's range, so the highest point of a chart sat
    above the last labelled tick (issue 36); ticks that cover the data, on steps of 1, 2,
    2.5 or 5 times a power of ten, are read at a glance.
    """
    if zero:  # a bar or a rate is read against zero
        low, high = min(low, 0.0), max(high, 0.0)
        if high == low:
            high = low + 1.0
    elif high <= low:  # one value: a little room either side
        low, high = low - max(abs(low) * 0.05, 0.5), high + max(abs(high) * 0.05, 0.5)
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


# A history was a pygal DateTimeLine with a dot per run: 1,000 runs took 115-220 ms of
# a series' first view (issue 39; without the dots pygal still takes ~30 ms, each added
# series padded to 1,000 values). Its chart is drawn here instead, as plain SVG in
# pygal's colours and fonts (~5 ms): one line through every run, each segment's median
# as a flat line, a dot per change point whose value shows on hover, and up to
# HISTORY_DOTS_UP_TO runs a dot per run as well. Every run's value stays on the page
# (the runs table, paged) and in its CSV and JSON.
HISTORY_DOTS_UP_TO = 100
_W, _H = 760, 340
_LEFT, _RIGHT, _TOP, _BOTTOM = 70, 115, 40, 262  # the plot area, in the viewBox's units
_INK, _GRID, _FONT = "#1d2330", "#e2e5ea", "system-ui, sans-serif"
_VALUE, _LEVEL, _MARK = "#c8102e", "#2b6cb0", "#1f8a4c"  # _common()'s first three colours


def _num(value: float) -> str:
    return f"{value:.6g}"


def _history_svg(
    title: str,
    points: Sequence[tuple[datetime, float]],
    marks: Sequence[tuple[datetime, float]],
    levels: Sequence[tuple[datetime, datetime, float]],
    y_title: str,
) -> str:
    times = [at.timestamp() for at, _ in points]
    t0, t1 = min(times), max(times)
    span_t = (t1 - t0) or 1.0
    ys = [v for _, v in points] + [v for *_, v in levels]
    ticks = nice_ticks(min(ys), max(ys), zero=False)  # a history is read for its changes
    y0, y1 = ticks[0], ticks[-1]
    span_y = (y1 - y0) or 1.0
    width, height = _W - _RIGHT - _LEFT, _BOTTOM - _TOP

    def x(at: datetime | float) -> str:
        t = at if isinstance(at, float) else at.timestamp()
        return f"{_LEFT + (t - t0) / span_t * width:.1f}"

    def y(value: float) -> str:
        return f"{_BOTTOM - (value - y0) / span_y * height:.1f}"

    def label(at: datetime) -> str:
        return at.strftime("%Y-%m-%d %H:%M")

    text = f'font-family="{_FONT}" fill="{_INK}"'
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="history-chart" viewBox="0 0 {_W} {_H}"'
        f' role="img" aria-label="{escape(title)}"><title>{escape(title)}</title>',
        f'<rect x="{_LEFT}" y="{_TOP}" width="{width}" height="{height}" fill="#ffffff"/>',
        f'<text x="{_W / 2}" y="22" text-anchor="middle" font-size="14" {text}>'
        f"{escape(title)}</text>",
        f'<text transform="translate(16 {(_TOP + _BOTTOM) / 2}) rotate(-90)" text-anchor="middle"'
        f' font-size="12" {text}>{escape(y_title)}</text>',
    ]
    for tick in ticks:
        out.append(
            f'<line x1="{_LEFT}" x2="{_W - _RIGHT}" y1="{y(tick)}" y2="{y(tick)}"'
            f' stroke="{_GRID}"/><text x="{_LEFT - 6}" y="{y(tick)}" dy="4" text-anchor="end"'
            f' font-size="11" {text}>{_num(tick)}</text>'
        )
    n_labels = 1 if t1 == t0 else 6
    for i in range(n_labels):
        t = t0 + (t1 - t0) * i / max(n_labels - 1, 1)
        at = datetime.fromtimestamp(t, tz=points[0][0].tzinfo)
        out.append(
            f'<text transform="translate({x(t)} {_BOTTOM + 14}) rotate(20)" font-size="11"'
            f" {text}>{label(at)}</text>"
        )
    out.append(
        f'<path d="M{" L".join(f"{x(t)} {y(v)}" for t, (_, v) in zip(times, points, strict=True))}"'
        f' fill="none" stroke="{_VALUE}" stroke-width="1" stroke-linejoin="round"/>'
    )
    if levels:
        d = " ".join(f"M{x(a)} {y(v)} L{x(b)} {y(v)}" for a, b, v in levels)
        out.append(f'<path d="{d}" fill="none" stroke="{_LEVEL}" stroke-width="2.5"/>')
    if len(points) <= HISTORY_DOTS_UP_TO:
        out.extend(
            f"<g><title>{label(at)}: {_num(v)}</title>"
            f'<circle cx="{x(at)}" cy="{y(v)}" r="2.5" fill="{_VALUE}"/></g>'
            for at, v in points
        )
    out.extend(
        f"<g><title>change point, {label(at)}: {_num(v)}</title>"
        f'<circle cx="{x(at)}" cy="{y(v)}" r="6" fill="{_MARK}" fill-opacity="0.85"/></g>'
        for at, v in marks
    )
    legend = [("value", _VALUE)]
    legend += [("segment median", _LEVEL)] if levels else []
    legend += [("change point", _MARK)] if marks else []
    for i, (name, colour) in enumerate(legend):
        left = _LEFT + i * 180
        out.append(
            f'<rect x="{left}" y="{_H - 24}" width="12" height="12" fill="{colour}"/>'
            f'<text x="{left + 18}" y="{_H - 14}" font-size="12" {text}>{name}</text>'
        )
    out.append("</svg>")
    return "".join(out)


def history_chart(
    title: str,
    points: Sequence[tuple[datetime, float]],
    marks: Sequence[tuple[datetime, float]],
    *,
    y_title: str,
    levels: Sequence[tuple[datetime, datetime, float]] = (),
) -> SafeString:
    """One case's values over time, with the first run of each new segment marked.

    ``levels``: each segment's first and last run's time and its median, drawn as a
    flat line (only when there is more than one segment). Up to HISTORY_DOTS_UP_TO runs
    each run is a dot whose value shows on hover; beyond, the runs are one line with a
    vertex per run, and the change points dots.
    """
    steps = list(levels) if len(levels) > 1 else []
    if not points:
        return mark_safe("")
    return mark_safe(_history_svg(title, points, marks, steps, y_title))  # noqa: S308 - escaped above


# A serving curve (issue 41): throughput per GPU against tokens per second per user, as
# InferenceX draws it, a line per curve through its points in the order of their load.
# pygal's XY draws a whisker only up and down (``ci``); a point of this curve has an
# interval on both axes, so it is drawn here as plain SVG, in pygal's colours and fonts,
# like the history chart. A point that breaks the SLO is hollow; the SLO point is ringed.
_LEGEND_PER_ROW = 3


@dataclass(frozen=True)
class CurvePoint:
    """One step of a curve: its position, each axis's 95 % interval (None: none known,
    so no whisker is drawn on that axis), what hovering it says, and how it stands with
    the SLO (``marked``: the SLO point; ``broke``: it failed the SLO)."""

    x: float
    y: float
    x_span: Interval | None
    y_span: Interval | None
    text: str
    marked: bool = False
    broke: bool = False


@dataclass(frozen=True)
class Curve:
    """One line of a curve chart: its legend name, its colour (an index into the
    palette, so two curves of one environment share it) and whether it is dashed."""

    name: str
    points: Sequence[CurvePoint]
    colour: int = 0
    dashed: bool = False


def _curve_svg(title: str, curves: Sequence[Curve], x_title: str, y_title: str) -> str:
    points = [p for curve in curves for p in curve.points]
    xs = [v for p in points for v in (p.x, *(p.x_span or ()))]
    ys = [v for p in points for v in (p.y, *(p.y_span or ()))]
    x_ticks, y_ticks = nice_ticks(min(xs), max(xs)), nice_ticks(min(ys), max(ys))
    x0, x1, y0, y1 = x_ticks[0], x_ticks[-1], y_ticks[0], y_ticks[-1]
    left, right, top, bottom = 80, 730, 40, 290
    entries = [(c.name, _PALETTE[c.colour % len(_PALETTE)], c.dashed) for c in curves]
    marks = [("SLO point", "ring")] if any(p.marked for p in points) else []
    marks += [("breaks the SLO", "hollow")] if any(p.broke for p in points) else []
    rows = math.ceil((len(entries) + len(marks)) / _LEGEND_PER_ROW)
    height = bottom + 48 + 20 * rows

    def x(value: float) -> str:
        return f"{left + (value - x0) / ((x1 - x0) or 1.0) * (right - left):.1f}"

    def y(value: float) -> str:
        return f"{bottom - (value - y0) / ((y1 - y0) or 1.0) * (bottom - top):.1f}"

    text = f'font-family="{_FONT}" fill="{_INK}"'
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="curve-chart" viewBox="0 0 {_W} {height}"'
        f' role="img" aria-label="{escape(title)}"><title>{escape(title)}</title>',
        f'<rect x="{left}" y="{top}" width="{right - left}" height="{bottom - top}"'
        ' fill="#ffffff"/>',
        f'<text class="curve-title" x="{_W / 2}" y="22" text-anchor="middle" font-size="14"'
        f" {text}>{escape(title)}</text>",
        f'<text transform="translate(16 {(top + bottom) / 2}) rotate(-90)" text-anchor="middle"'
        f' font-size="12" {text}>{escape(y_title)}</text>',
        f'<text x="{(left + right) / 2}" y="{bottom + 34}" text-anchor="middle" font-size="12"'
        f" {text}>{escape(x_title)}</text>",
    ]
    for tick in y_ticks:
        out.append(
            f'<line x1="{left}" x2="{right}" y1="{y(tick)}" y2="{y(tick)}" stroke="{_GRID}"/>'
            f'<text class="y-tick" x="{left - 6}" y="{y(tick)}" dy="4" text-anchor="end"'
            f' font-size="11" {text}>{_num(tick)}</text>'
        )
    for tick in x_ticks:
        out.append(
            f'<line x1="{x(tick)}" x2="{x(tick)}" y1="{top}" y2="{bottom}" stroke="{_GRID}"/>'
            f'<text class="x-tick" x="{x(tick)}" y="{bottom + 16}" text-anchor="middle"'
            f' font-size="11" {text}>{_num(tick)}</text>'
        )
    for curve, (name, colour, dashed) in zip(curves, entries, strict=True):
        dash = ' stroke-dasharray="6 4"' if dashed else ""
        if len(curve.points) > 1:
            line = " L".join(f"{x(p.x)} {y(p.y)}" for p in curve.points)
            out.append(
                f'<path d="M{line}" fill="none" stroke="{colour}" stroke-width="1.5"{dash}/>'
            )
        for p in curve.points:
            whiskers = ""
            if p.x_span:
                whiskers += (
                    f'<path class="whisker-x" d="M{x(p.x_span[0])} {y(p.y)} L{x(p.x_span[1])}'
                    f' {y(p.y)}" stroke="{colour}"/>'
                )
            if p.y_span:
                whiskers += (
                    f'<path class="whisker-y" d="M{x(p.x)} {y(p.y_span[0])} L{x(p.x)}'
                    f' {y(p.y_span[1])}" stroke="{colour}"/>'
                )
            fill = "#ffffff" if p.broke else colour
            ring = (
                f'<circle class="slo-point" cx="{x(p.x)}" cy="{y(p.y)}" r="8" fill="none"'
                f' stroke="{_INK}" stroke-width="2"/>'
                if p.marked
                else ""
            )
            out.append(
                f'<g class="curve-point" data-curve="{escape(name)}"'
                f' data-slo="{"point" if p.marked else "broke" if p.broke else ""}">'
                f"<title>{escape(name)}: {escape(p.text)}</title>{whiskers}"
                f'<circle cx="{x(p.x)}" cy="{y(p.y)}" r="4" fill="{fill}" stroke="{colour}"'
                f' stroke-width="1.5"/>{ring}</g>'
            )
    legend = [(name, "line", colour, dashed) for name, colour, dashed in entries]
    legend += [(name, shape, _INK, False) for name, shape in marks]
    for i, (name, shape, colour, dashed) in enumerate(legend):
        lx = left + (i % _LEGEND_PER_ROW) * 220
        ly = bottom + 56 + (i // _LEGEND_PER_ROW) * 20
        if shape == "line":
            dash = ' stroke-dasharray="6 4"' if dashed else ""
            key = (
                f'<path d="M{lx} {ly - 4} L{lx + 22} {ly - 4}" stroke="{colour}"'
                f' stroke-width="2"{dash}/>'
            )
        elif shape == "ring":
            key = (
                f'<circle cx="{lx + 11}" cy="{ly - 4}" r="7" fill="none" stroke="{_INK}"'
                ' stroke-width="2"/>'
            )
        else:
            key = f'<circle cx="{lx + 11}" cy="{ly - 4}" r="4" fill="#ffffff" stroke="{_INK}"/>'
        out.append(
            f'<g class="legend">{key}<text x="{lx + 28}" y="{ly}" font-size="12" {text}>'
            f"{escape(name)}</text></g>"
        )
    out.append("</svg>")
    return "".join(out)


def curve_chart(title: str, curves: Sequence[Curve], *, x_title: str, y_title: str) -> SafeString:
    """Curves of points with intervals on both axes: throughput per GPU against tokens
    per second per user, one curve per mode (and per environment on the compare page).

    Both axes start at zero: the curve's shape (how much per-user speed each step of
    throughput costs) is read against it. Whiskers span each point's 95 % interval on
    the axes that have one. Empty (no SVG) when no curve has a point.
    """
    drawn = [c for c in curves if c.points]
    if not drawn:
        return mark_safe("")
    return mark_safe(_curve_svg(title, drawn, x_title, y_title))  # noqa: S308 - escaped above
