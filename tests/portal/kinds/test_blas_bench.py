"""blas-bench's charts: one per family, metric and unit, the unit on the axis."""

import re

from portal.kinds.blas_bench import FAMILY_CHARTS, family_charts
from stack.blas.schema import FAMILIES


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
