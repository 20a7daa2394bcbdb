import re
from datetime import UTC, datetime, timedelta

from portal.charts import time_chart, xy_chart


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
