"""blas-bench's charts: one per family, metric and unit, the unit on the axis."""

import itertools
import json
import re
from pathlib import Path

from portal.kinds.blas_bench import FAMILY_CHARTS, family_charts
from stack.blas.schema import FAMILIES

REPO_ROOT = Path(__file__).resolve().parents[3]


def _row(benchmark, metric, unit, value, better="higher", **case):
    return (benchmark, case, metric, unit, value, better)


def _titles(charts):
    title = re.compile(r'<text[^>]*class="title plot_title"[^>]*>([^<]*)</text>')
    return [title.search(c)[1] for c in charts]


def _y_axis(chart):
    return re.findall(r'class="title" transform="rotate\(-90[^"]*">([^<]*)</text>', chart)


def gemm(precision, n, value, metric="throughput", unit="TFLOP/s", layout="NN"):
    return _row(
        "gemm",
        metric,
        unit,
        value,
        m=n,
        n=n,
        k=n,
        backend="torch",
        precision=precision,
        transa=layout[0],
        transb=layout[1],
    )


def test_every_family_of_blas_bench_has_its_charts():
    assert set(FAMILY_CHARTS) == set(FAMILIES)


def test_int8_tops_are_charted_apart_from_the_tflops_of_the_float_precisions():
    charts = family_charts(
        [
            gemm("bf16", 4096, 600.0),
            gemm("fp32", 4096, 50.0),
            gemm("int8", 4096, 1200.0, unit="TOPS"),
            gemm("bf16", 4096, 60.0, metric="pct_of_peak", unit="%"),
        ]
    )
    titles = _titles(charts)
    assert titles == [
        "GEMM: throughput (TFLOP/s), fastest layout of each size",
        "GEMM: throughput (TOPS), fastest layout of each size",
        "GEMM: % of the device's vendor peak (%), fastest layout of each size",
    ]
    assert [_y_axis(c) for c in charts] == [["TFLOP/s"], ["TOPS"], ["%"]]
    assert "torch bf16" in charts[0] and "torch fp32" in charts[0] and "int8" not in charts[0]
    assert "torch int8" in charts[1] and "bf16" not in charts[1]


def test_bandwidth_fft_and_solvers_each_get_charts_in_their_own_units():
    charts = family_charts(
        [
            _row(
                "bandwidth",
                "bandwidth",
                "GB/s",
                4100.0,
                backend="torch",
                op="triad",
                array_mib=1024,
            ),
            _row(
                "fft",
                "throughput",
                "TFLOP/s",
                12.0,
                backend="torch",
                precision="fp32",
                shape="256x256",
                dims=2,
                batch=16,
            ),
            _row(
                "fft",
                "effective_bandwidth",
                "GB/s",
                2900.0,
                backend="torch",
                precision="fp32",
                shape="256x256",
                dims=2,
                batch=16,
            ),
            _row(
                "solver",
                "time",
                "ms",
                35.0,
                "lower",
                backend="torch",
                op="lu",
                precision="fp64",
                n=4096,
            ),
            _row(
                "solver",
                "cv",
                "%",
                0.4,
                "lower",
                backend="torch",
                op="lu",
                precision="fp64",
                n=4096,
            ),
        ]
    )
    titles = _titles(charts)
    assert titles == [
        "Memory bandwidth: STREAM-style bandwidth (GB/s)",
        "FFT: throughput (5 N log2 N) (TFLOP/s)",
        "FFT: effective bandwidth (GB/s)",
        "Dense solvers: time per factorisation (ms)",
    ]  # the CV is in the table, not charted
    assert [_y_axis(c) for c in charts] == [["GB/s"], ["TFLOP/s"], ["GB/s"], ["ms"]]
    assert "torch triad" in charts[0] and "torch fp32 2-D batch 16" in charts[1]
    assert "65536" in charts[1] or "65,536" in charts[1] or "65 536" in charts[1]


def test_of_several_layouts_of_one_size_the_fastest_is_drawn_and_of_times_the_least():
    (chart,) = family_charts(
        [gemm("bf16", 4096, 500.0, layout="NN"), gemm("bf16", 4096, 640.0, layout="NT")]
    )
    assert "640" in chart and ": 500" not in chart
    (times,) = family_charts(
        [
            _row(
                "solver",
                "time",
                "ms",
                t,
                "lower",
                backend="numpy",
                op="qr",
                precision="fp32",
                n=1024,
            )
            for t in (9.0, 7.5)
        ]
    )
    assert "7.5" in times and "1024: 9" not in times


def test_no_blas_measurements_draw_no_chart():
    assert family_charts([_row("noop", "sleep_s", "s", 0.1, "lower")]) == []


def _axis_labels(chart: str, axis: str) -> list[tuple[float, str]]:
    """(position, text) of an axis's labels: x positions for "x", y positions for "y"."""
    block = chart[chart.index(f'<g class="axis {axis}') :]
    block = block[: block.index('<g class="series')] if axis == "x" else block
    block = block[: block.index('<g class="axis', 10)] if axis == "y" else block
    text = re.compile(r'<text x="([-\d.]+)" y="([-\d.]+)"[^>]*>([^<]*)</text>')
    return [(float(x if axis == "x" else y), label) for x, y, label in text.findall(block)]


def _real_gemm_chart() -> tuple[str, float]:
    """The GEMM throughput chart of a real run (docs/results/blas-bench-h200.json)."""
    document = json.loads((REPO_ROOT / "docs/results/blas-bench-h200.json").read_text())
    rows = [
        (m["benchmark"], m["case"], m["metric"], m["unit"], m["value"], m["better"])
        for m in document["measurements"]
    ]
    top = max(
        m["value"]
        for m in document["measurements"]
        if (m["benchmark"], m["metric"], m["unit"]) == ("gemm", "throughput", "TFLOP/s")
    )
    (chart,) = [c for c in family_charts(rows) if "GEMM: throughput (TFLOP/s)" in c]
    return chart, top


def test_the_gemm_charts_y_ticks_cover_its_highest_point():
    chart, top = _real_gemm_chart()
    ticks = [float(text) for _, text in _axis_labels(chart, "y")]
    assert max(ticks) >= top > sorted(ticks)[-2]


def test_the_gemm_charts_sizes_are_spread_evenly_on_a_log2_axis_each_labelled():
    chart, _ = _real_gemm_chart()
    labels = dict((text, x) for x, text in _axis_labels(chart, "x"))
    assert {"1024", "2048", "4096", "8192"} <= set(labels)
    gaps = [labels["2048"] - labels["1024"], labels["4096"] - labels["2048"]]
    gaps.append(labels["8192"] - labels["4096"])
    assert max(gaps) - min(gaps) < 1  # one doubling, one step: none bunched up


def test_sizes_to_16384_each_get_their_label_and_an_even_step():
    sizes = [1024, 2048, 4096, 8192, 16384]
    (chart, *_) = family_charts([gemm("bf16", n, 100.0 + n / 100) for n in sizes])
    labels = [(text, x) for x, text in _axis_labels(chart, "x")]
    assert [text for text, _ in labels] == [str(n) for n in sizes]
    xs = [x for _, x in labels]
    steps = {round(b - a) for a, b in itertools.pairwise(xs)}
    assert len(steps) == 1
