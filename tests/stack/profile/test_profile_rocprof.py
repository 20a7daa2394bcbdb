"""rocprofv3's CSV files read into kernels (fixtures written from its documented format;
rocprofv3 itself was not run: no AMD GPU here)."""

import shutil

import pytest
from profile_helpers import FIXTURES, profile_fixture

from stack.profile import rocprof
from stack.profile.normalise import top_kernels

TENSILE = (
    "Cijk_Alik_Bljk_BBS_BH_MT256x256x64_MI16x16x16x1_SN_1LDSB1_GRVW8_SU32_SUS256_WG32x8x1_WGM8"
)


def test_kernel_stats_give_each_kernels_calls_and_total():
    rows = rocprof.parse_kernel_stats(profile_fixture("rocprofv3-mi300x_kernel_stats.csv"))
    assert [(r.name[:12], r.calls, r.total_ns) for r in rows] == [
        (TENSILE[:12], 20, 3452160),
        ("void at::nat", 2, 9120),
        ("__amd_rocclr", 5, 124800),
    ]
    assert rows[0].mean_ns == pytest.approx(172608)


def test_the_kernel_trace_gives_each_dispatch_its_end_minus_start():
    rows = rocprof.parse_kernel_trace(profile_fixture("rocprofv3-mi300x_kernel_trace.csv"))
    assert [r.total_ns for r in rows] == [24000, 172000, 174000]
    (gemm, _fill), _ = top_kernels(rows, 5)
    assert gemm.name == TENSILE and gemm.calls == 2 and gemm.durations_ns == [172000, 174000]
    assert gemm.share_pct == pytest.approx(100 * 346000 / 370000)
    assert gemm.occupancy_pct is None  # a trace has no counters


def test_legacy_rocprof_stats_with_five_columns_read_the_same():
    text = '"Name","Calls","TotalDurationNs","AverageNs","Percentage"\n"k",4,400,100,100.0\n'
    (row,) = rocprof.parse_kernel_stats(text)
    assert (row.name, row.calls, row.total_ns) == ("k", 4, 400)


def test_outputs_are_found_in_the_host_and_pid_folders_rocprofv3_makes(tmp_path):
    nested = tmp_path / "vm-host" / "40211"
    nested.mkdir(parents=True)
    for name in ("rocprofv3-mi300x_kernel_stats.csv", "rocprofv3-mi300x_kernel_trace.csv"):
        shutil.copy(FIXTURES / name, nested / name.replace("rocprofv3-mi300x", "profile"))
    rows, files = rocprof.read_outputs(tmp_path)
    assert set(files) == {"stats", "trace"}
    assert len(rows) == 3 and all(r.durations_ns for r in rows)  # the trace, preferred


def test_the_statistics_are_used_when_there_is_no_trace(tmp_path):
    shutil.copy(FIXTURES / "rocprofv3-mi300x_kernel_stats.csv", tmp_path / "p_kernel_stats.csv")
    rows, files = rocprof.read_outputs(tmp_path)
    assert list(files) == ["stats"] and sum(r.calls for r in rows) == 27


def test_the_command_traces_kernels_with_statistics_in_csv(tmp_path):
    argv = rocprof.command("/opt/rocm/bin/rocprofv3", ["python3", "-m", "w"], tmp_path)
    assert argv[:3] == ["/opt/rocm/bin/rocprofv3", "--kernel-trace", "--stats"]
    assert argv[argv.index("--output-format") + 1] == "csv"
    assert argv[argv.index("-d") + 1] == str(tmp_path)
    assert argv[argv.index("--") + 1 :] == ["python3", "-m", "w"]
