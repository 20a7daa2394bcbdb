"""The normalised profile: top kernels, their shares, and the measurements they become."""

import pytest

from stack.contract import MEASUREMENT_SCHEMA
from stack.profile.normalise import (
    BENCHMARK,
    KERNEL_NAME_MAX,
    KernelStat,
    finite,
    kernel_measurements,
    short_name,
    step_measurement,
    top_kernels,
)


def test_top_kernels_keeps_the_longest_first_with_shares_of_all_kernels():
    rows = [KernelStat("a", 1, 10.0), KernelStat("b", 2, 60.0), KernelStat("c", 1, 30.0)]
    kernels, total = top_kernels(rows, 2)
    assert [(k.name, k.share_pct) for k in kernels] == [("b", 60.0), ("c", 30.0)]
    assert total == 100.0


def test_ties_are_broken_by_name_so_the_table_is_stable():
    kernels, _ = top_kernels([KernelStat("z", 1, 5.0), KernelStat("y", 1, 5.0)], 5)
    assert [k.name for k in kernels] == ["y", "z"]


def test_a_long_kernel_name_is_shortened_and_stays_distinct():
    one, two = "k" * 500 + "<float>", "k" * 500 + "<half>"
    assert len(short_name(one)) <= KERNEL_NAME_MAX
    assert short_name(one) != short_name(two)
    assert short_name("nvjet") == "nvjet"


def test_a_kernel_becomes_measurements_under_the_profile_benchmark():
    kernel = KernelStat("gemm", 2, 300.0, [100.0, 200.0], share_pct=75.0, l2_hit_pct=70.0)
    found = kernel_measurements([kernel], {"workload": "gemm", "dtype": "bf16"}, "ncu")
    by_metric = {m.metric: m for m in found}
    assert set(by_metric) == {
        "kernel_time",
        "kernel_mean_time",
        "kernel_calls",
        "kernel_share",
        "l2_hit_rate",
    }  # no occupancy, compute or DRAM: this profiler did not give them
    assert by_metric["kernel_mean_time"].value == 150.0
    assert by_metric["kernel_mean_time"].samples == [100.0, 200.0]
    assert (
        by_metric["kernel_time"].better == "lower" and by_metric["l2_hit_rate"].better == "higher"
    )
    case = by_metric["kernel_time"].case
    assert case == {"workload": "gemm", "dtype": "bf16", "profiler": "ncu", "kernel": "gemm"}
    jsonschema = pytest.importorskip("jsonschema")
    for m in found:
        assert m.benchmark == BENCHMARK
        jsonschema.validate(m.to_dict(), MEASUREMENT_SCHEMA)


def test_step_time_is_the_median_step_with_every_step_a_sample():
    step = step_measurement([3.0, 1.0, 2.0, 10.0], {"workload": "gemm"})
    assert (step.metric, step.unit, step.value, step.samples) == (
        "step_time",
        "ms",
        2.5,
        [3.0, 1.0, 2.0, 10.0],
    )
    assert step_measurement([], {}) is None


@pytest.mark.parametrize(
    ("text", "value"),
    [("1,234.5", 1234.5), ("n/a", None), ("", None), ("nan", None), (True, None), (7, 7.0)],
)
def test_numbers_from_profilers_are_read_or_refused(text, value):
    assert finite(text) == value
