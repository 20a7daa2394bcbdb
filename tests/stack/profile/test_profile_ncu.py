"""Nsight Compute's CSV read into kernels (fixture in the documented column layout)."""

import pytest
from profile_helpers import profile_fixture

from stack.profile import ncu
from stack.profile.normalise import top_kernels

GEMM = "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"


def test_each_launch_is_one_call_with_its_duration_in_ns_whatever_the_unit():
    launches = ncu.parse_csv(profile_fixture("ncu-h200-gemm.csv"))
    assert [k.name == GEMM for k in launches] == [True, True, False, True]
    assert [k.total_ns for k in launches] == pytest.approx([178560, 180320, 7200, 179200])
    assert all(k.calls == 1 for k in launches)


def test_each_launch_carries_the_four_counters():
    first = ncu.parse_csv(profile_fixture("ncu-h200-gemm.csv"))[0]
    assert first.sm_throughput_pct == pytest.approx(88.41)
    assert first.dram_throughput_pct == pytest.approx(18.52)
    assert first.l2_hit_pct == pytest.approx(71.33)
    assert first.occupancy_pct == pytest.approx(11.92)


def test_launches_of_one_kernel_sum_and_their_counters_average_weighted_by_time():
    (gemm, fill), total = top_kernels(ncu.parse_csv(profile_fixture("ncu-h200-gemm.csv")), 10)
    assert gemm.name == GEMM and gemm.calls == 3
    assert gemm.total_ns == pytest.approx(538080)
    assert gemm.durations_ns == pytest.approx([178560, 180320, 179200])
    weights = (178560, 180320, 179200)
    expected = sum(v * w for v, w in zip((88.41, 88.02, 88.33), weights, strict=True)) / sum(
        weights
    )
    assert gemm.sm_throughput_pct == pytest.approx(expected)
    assert fill.calls == 1 and fill.dram_throughput_pct == pytest.approx(91.07)
    assert total == pytest.approx(545280)
    assert gemm.share_pct == pytest.approx(100 * 538080 / 545280)


def test_the_table_is_found_after_the_workloads_output_and_ncus_own_lines():
    table = ncu.csv_table(profile_fixture("ncu-h200-gemm.csv"))
    assert table.startswith('"ID","Process ID"')
    assert "==PROF==" not in table and "the workload printed" not in table


def test_output_without_a_table_says_so():
    with pytest.raises(ncu.NcuOutputError, match="no CSV table"):
        ncu.parse_csv("==PROF== ERROR: ERR_NVGPUCTRPERM - no permission\n")


def test_a_value_with_a_thousands_separator_and_an_empty_one_are_read():
    header = profile_fixture("ncu-h200-gemm.csv").splitlines()[5]
    row = '"0","1","p","h","k","1","7","(1, 1, 1)","(1, 1, 1)","0","9.0","s","{m}","{u}","{v}"'
    text = "\n".join(
        [
            header,
            row.format(m="gpu__time_duration.sum", u="nsecond", v="1,234,567"),
            row.format(m="lts__t_sector_hit_rate.pct", u="%", v="n/a"),
        ]
    )
    (kernel,) = ncu.parse_csv(text)
    assert kernel.total_ns == 1234567
    assert kernel.l2_hit_pct is None


def test_the_command_asks_for_the_documented_metrics_with_clocks_left_alone():
    argv = ncu.command(
        "/usr/local/cuda/bin/ncu", ["python3", "w.py"], max_kernels=50, from_start=False
    )
    assert argv[:4] == ["/usr/local/cuda/bin/ncu", "--clock-control", "none", "--csv"]
    metrics = argv[argv.index("--metrics") + 1].split(",")
    assert set(metrics) == {
        "sm__throughput.avg.pct_of_peak_sustained_elapsed",
        "dram__throughput.avg.pct_of_peak_sustained_elapsed",
        "lts__t_sector_hit_rate.pct",
        "gpu__time_duration.sum",
        "sm__warps_active.avg.pct_of_peak_sustained_active",
    }
    assert argv[argv.index("--launch-count") + 1] == "50"
    assert argv[argv.index("--profile-from-start") + 1] == "off"
    assert argv[-2:] == ["python3", "w.py"]


def test_a_script_is_profiled_from_its_start():
    argv = ncu.command("ncu", ["python3", "s.py"], max_kernels=5, from_start=True)
    assert "--profile-from-start" not in argv


def test_a_csv_ncu_printed_on_the_h200_reads_with_its_thousands_separators():
    """Four launches cut from what ncu 2025.3.1 printed for a bf16 4096³ matmul on the lent
    H200 (docs/results/profile-h200/): durations such as "176,320" ns carry commas."""
    launches = ncu.parse_csv(profile_fixture("ncu-h200-bf16-4096-measured.csv"))
    assert [k.name for k in launches] == [GEMM] * 4
    assert launches[0].total_ns == pytest.approx(176320)
    assert launches[0].sm_throughput_pct == pytest.approx(90.45)
    assert launches[0].dram_throughput_pct == pytest.approx(20.82)
    assert launches[0].l2_hit_pct == pytest.approx(75.32)
    assert launches[0].occupancy_pct == pytest.approx(14.64)
