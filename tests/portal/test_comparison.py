"""The compare page's case labels and whiskers (portal.comparison, portal.charts.bar_chart)."""

from __future__ import annotations

import re

import pytest

from portal.charts import bar_chart
from portal.comparison import short_labels

GEMM = {
    "backend": "hipblaslt",
    "precision": "bf16",
    "m": 4096,
    "n": 4096,
    "k": 4096,
    "batch": 1,
    "transa": "N",
    "transb": "N",
    "cold_cache": False,
    "inputs": "random",
}


def test_a_case_is_named_by_what_differs_and_what_every_case_shares_is_said_once():
    named = short_labels([GEMM, {**GEMM, "precision": "fp16", "k": 1024, "transb": "T"}])

    assert named.labels == ["bf16 4096³ NN", "fp16 4096x4096x1024 NT"]
    assert named.common == "hipblaslt batch=1 cold_cache=False inputs=random"
    assert all("{" not in label and "backend" not in label for label in named.labels)


def test_a_parameter_only_some_cases_have_is_named_where_it_is():
    named = short_labels([GEMM, {**GEMM, "batch": 32}, {**GEMM, "op": "gemm_ex"}])
    assert named.labels == ["batch=1", "batch=32", "gemm_ex batch=1"]
    assert "hipblaslt" in named.common and "batch" not in named.common


def test_a_lone_case_is_named_in_full():
    assert short_labels([{"m": 64, "precision": "fp32"}]).labels == ["fp32 m=64"]


def bars_and_whiskers(svg: str) -> tuple[list[tuple[str, float]], list[tuple[float, float]]]:
    """(title, height) of each bar and (top, bottom) of each whisker, in pixels."""
    bars = [
        (title, float(height))
        for title, height in re.findall(
            r'<g class="bar"><title>(.*?)</title><rect [^>]*height="([\d.]+)"', svg
        )
    ]
    whiskers = []
    for d in re.findall(r'<g class="ci"><path d="([^"]+)"', svg):
        ys = [float(y) for y in re.findall(r"[\d.]+ ([\d.]+)", d)]
        whiskers.append((min(ys), max(ys)))
    return bars, whiskers


def test_each_bar_with_an_interval_has_a_whisker_spanning_it_and_a_bar_without_has_none():
    svg = bar_chart(
        "gemm",
        ["bf16 4096³", "fp16 4096³"],
        {"#2 MI300X": [5.0, 2.0]},
        y_title="% change",
        intervals={"#2 MI300X": [(3.0, 7.0), None]},
        value_text=lambda v, i: f"{v:+.1f} %" + (f" [{i[0]:+.1f}, {i[1]:+.1f}]" if i else ""),
    )
    bars, whiskers = bars_and_whiskers(svg)

    assert [title for title, _ in bars] == ["bf16 4096³: +5.0 % [+3.0, +7.0]", "fp16 4096³: +2.0 %"]
    assert len(whiskers) == 1  # none for the bar whose value had no samples
    (top, bottom), (_, height) = whiskers[0], bars[0]
    # pixels per per-cent from the bar (0 to 5 %): the whisker spans 3 % to 7 %, 4 units.
    assert bottom - top == pytest.approx(height * 4 / 5, abs=0.3)


def test_the_axis_reaches_the_top_of_the_highest_whisker():
    svg = bar_chart("g", ["a"], {"s": [5.0]}, y_title="%", intervals={"s": [(3.0, 9.0)]})
    _, [(top, _)] = bars_and_whiskers(svg)
    assert top >= 0  # inside the plot, not cut off above it
