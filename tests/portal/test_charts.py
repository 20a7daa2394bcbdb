import re
from datetime import UTC, datetime, timedelta

from portal.charts import Curve, CurvePoint, curve_chart, history_chart, time_chart, xy_chart


def test_an_xy_chart_is_inline_svg_with_every_series_and_no_script():
    svg = xy_chart(
        "GEMM",
        {"bf16": [(1024, 100.0), (8192, 780.0)], "fp32 <x>": [(1024, 20.0)]},
        x_title="N",
        y_title="TFLOP/s",
    )
    assert svg.startswith("<svg") and "bf16" in svg and "TFLOP/s" in svg
    assert "fp32 &lt;x&gt;" in svg  # labels are escaped
    assert "<script" not in svg


def test_a_time_chart_draws_points_over_time():
    start = datetime(2026, 11, 1, tzinfo=UTC)
    svg = time_chart(
        "Burn-down",
        {"unsupported": [(start, 40), (start + timedelta(days=2), 12)]},
        y_title="references",
    )
    assert "unsupported" in svg and "2026-11-03" in svg and "<script" not in svg


def test_a_dots_value_is_its_title_and_positions_keep_a_tenth_of_a_pixel():
    svg = xy_chart("GEMM", {"bf16": [(1024, 100.0), (8192, 780.5)]}, x_title="N", y_title="TFLOP/s")
    assert "<title>8192: 780.5</title><circle" in svg  # shown on hover with no script
    assert '<desc class="x' not in svg and '<desc class="value"' not in svg
    assert not re.search(r'\s(?:cx|cy)="-?\d+\.\d\d', svg)


def _history(n: int) -> list[tuple[datetime, float]]:
    start = datetime(2026, 11, 1, tzinfo=UTC)
    return [(start + timedelta(hours=i), 100.0 + i % 7 if i < n // 2 else 90.0) for i in range(n)]


def test_a_long_history_is_one_line_through_every_run_with_its_change_points_as_dots():
    points = _history(1000)
    mark = points[500]
    svg = history_chart(
        "gemm · <throughput>",
        points,
        [mark],
        y_title="TFLOP/s",
        levels=[(points[0][0], points[499][0], 103.0), (mark[0], points[-1][0], 90.0)],
    )
    # A dot per run was 1,000 circles and 115-220 ms of a series' first view (issue 39).
    assert svg.startswith("<svg") and svg.count("<circle") == 1
    assert "<title>change point, 2026-11-21 20:00: 90</title>" in svg
    value_line = re.search(r'<path d="M([^"]*)" fill="none" stroke="#c8102e"', svg)
    assert value_line and len(value_line[1].split(" L")) == 1000  # every run a vertex
    assert "segment median" in svg and "TFLOP/s" in svg and "<script" not in svg
    assert "gemm · &lt;throughput&gt;" in svg and "<throughput>" not in svg
    assert "2026-11-01 00:00" in svg and len(svg) < 40_000
    # The y axis covers every run: ticks from 90 or below to 106 or above.
    ticks = [float(t) for t in re.findall(r'text-anchor="end"[^>]*>([\d.]+)</text>', svg)]
    assert min(ticks) <= 90 and max(ticks) >= 106


def test_a_short_history_keeps_a_dot_per_run_with_its_value_on_hover():
    points = _history(40)
    svg = history_chart("gemm · throughput", points, [], y_title="TFLOP/s")
    assert svg.count("<circle") == 40 and "<title>2026-11-01 01:00: 101</title>" in svg
    assert "segment median" not in svg  # one segment: its median line would say nothing


def _curve_point(x: float, y: float, **fields) -> CurvePoint:
    return CurvePoint(x, y, fields.pop("x_span", None), fields.pop("y_span", None), **fields)


def test_a_curve_point_has_a_whisker_on_each_axis_that_has_an_interval_and_none_elsewhere():
    svg = curve_chart(
        "Serving <curve>",
        [
            Curve(
                "offline <H200>",
                [
                    _curve_point(
                        40.0, 300.0, x_span=(38.0, 43.0), y_span=(280.0, 320.0), text="c 1"
                    ),
                    _curve_point(25.0, 800.0, y_span=(790.0, 830.0), text="c 8", marked=True),
                    _curve_point(9.0, 810.0, text="c 16", broke=True),
                ],
            )
        ],
        x_title="tokens/s per user",
        y_title="output tokens/s per GPU",
    )
    assert svg.startswith("<svg") and "<script" not in svg and "<style" not in svg
    assert "Serving &lt;curve&gt;" in svg and "offline &lt;H200&gt;" in svg
    drawn = re.findall(r'<g class="curve-point" data-curve="[^"]*" data-slo="(\w*)">(.*?)</g>', svg)
    assert [slo for slo, _ in drawn] == ["", "point", "broke"]
    (_, first), (_, marked), (_, broke) = drawn
    assert "whisker-x" in first and "whisker-y" in first
    assert "whisker-x" not in marked and "whisker-y" in marked and 'class="slo-point"' in marked
    assert "whisker" not in broke and 'fill="#ffffff"' in broke  # hollow: it broke the SLO
    assert "<title>offline &lt;H200&gt;: c 8</title>" in marked
    assert "SLO point" in svg and "breaks the SLO" in svg  # the legend explains both marks
    # both axes from zero up past the highest whisker
    ys = [float(t) for t in re.findall(r'class="y-tick"[^>]*>([\d.]+)<', svg)]
    xs = [float(t) for t in re.findall(r'class="x-tick"[^>]*>([\d.]+)<', svg)]
    assert ys[0] == xs[0] == 0 and ys[-1] >= 830 and xs[-1] >= 43


def test_a_curve_chart_with_no_point_is_empty_rather_than_an_empty_frame():
    assert curve_chart("Serving", [Curve("online", [])], x_title="x", y_title="y") == ""
