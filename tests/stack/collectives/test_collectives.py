"""collective-bench: nccl-tests' formulas, the tools' output, the topology, and real
collectives through gloo on the CPU (two and three processes)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from stack_helpers import run_stack

from stack.collectives import nccl_tests, topology
from stack.collectives.formulas import algbw_gbps, bus_factor, busbw_gbps, sweep
from stack.kinds import ParamsError, validate_params

FIXTURES = Path(__file__).parent / "fixtures"
needs_torch = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None, reason="torch is not installed"
)


@pytest.mark.parametrize(
    ("op", "ranks", "factor"),
    [
        ("all_reduce", 2, 1.0),
        ("all_reduce", 8, 1.75),
        ("all_gather", 8, 0.875),
        ("reduce_scatter", 4, 0.75),
        ("all_to_all", 2, 0.5),
        ("broadcast", 8, 1.0),
        ("send_recv", 2, 1.0),
    ],
)
def test_the_bus_factor_is_nccl_tests_one(op, ranks, factor):
    assert bus_factor(op, ranks) == pytest.approx(factor)


def test_bandwidths_are_in_gigabytes_of_ten_to_the_nine():
    assert algbw_gbps(10**9, 1.0) == 1.0
    # nccl-tests' own row: 128 MiB all-reduce on 2 GPUs in 421.4 us -> 318.50 GB/s both
    assert algbw_gbps(134217728, 421.4e-6) == pytest.approx(318.50, abs=0.01)
    assert busbw_gbps("all_reduce", 2, 134217728, 421.4e-6) == pytest.approx(318.50, abs=0.01)


def test_the_sweep_doubles_and_every_rank_gets_a_whole_share():
    sizes = sweep(8, 1024, 2, 3, "float32")
    assert sizes[0] == 12 and all(s % 12 == 0 for s in sizes) and sizes[-1] <= 1024
    assert sweep(8, 64, 2, 1, "float32") == [8, 16, 32, 64]


def test_the_rccl_and_nccl_tests_table_is_read_with_and_without_a_root_column():
    new = nccl_tests.parse((FIXTURES / "all_reduce_perf-2.13.txt").read_text())
    assert len(new["rows"]) == 4 and new["avg_busbw_gbps"] == pytest.approx(92.4416)
    last = new["rows"][-1]
    assert (last["size"], last["time_us"], last["busbw_gbps"], last["wrong"]) == (
        134217728,
        421.4,
        318.5,
        0,
    )
    assert last["in_place_busbw_gbps"] == 318.88
    old = nccl_tests.parse((FIXTURES / "all_gather_perf-2.9-no-root.txt").read_text())
    assert [r["size"] for r in old["rows"]] == [8, 1048576]
    assert old["rows"][1]["busbw_gbps"] == 37.13 and old["rows"][1]["wrong"] is None


def test_the_command_is_the_one_the_tools_readme_runs():
    argv = nccl_tests.command("all_reduce_perf", min_bytes=8, max_bytes=2**27, factor=2, gpus=8,
                              dtype="bfloat16", iters=20, warmup=5, check=True)  # fmt: skip
    assert argv[:9] == ["all_reduce_perf", "-b", "8", "-e", "134217728", "-f", "2", "-g", "8"]
    assert argv[argv.index("-d") + 1] == "bfloat16"


def test_the_links_between_gpus_are_read_from_nvidia_smi_and_rocm_smi():
    nv = topology.parse_nvidia_topo((FIXTURES / "nvidia-smi-topo-2xH200.txt").read_text())
    assert nv == {"links": {"GPU0-GPU1": "NV18"}, "gpus": 2}
    amd = topology.parse_rocm_topo((FIXTURES / "rocm-smi-showtopo-2xMI300X.txt").read_text())
    assert amd == {"links": {"GPU0-GPU1": "XGMI"}, "gpus": 2}


def test_link_peaks_name_their_source():
    name, row = topology.peak_for("NVIDIA H200")
    assert row["gbps"] == 900 and "NVLink" in name and row["source"]
    assert topology.peak_for("AMD Instinct MI300X")[1]["gbps"] == 448
    assert topology.peak_for("Tesla T4") is None


def test_bad_sweeps_are_refused_at_submit():
    with pytest.raises(ParamsError):
        validate_params("collective-bench", {"collectives": ["all_reduce", "gossip"]})
    with pytest.raises(ParamsError):
        validate_params("collective-bench", {"factor": 1})


def _run_gloo(tmp_path, *, ranks: int, max_bytes: int):
    """A small collective-bench job on the CPU through the real CLI: (result.json, process)."""
    params = {"ranks": ranks, "max_bytes": max_bytes, "iters": 2, "repeats": 2,
              "warmup": 1, "backend": "gloo"}  # fmt: skip
    (tmp_path / "p.json").write_text(json.dumps(params))
    out = tmp_path / "out"
    done = run_stack(
        ["run", "collective-bench", "--params", str(tmp_path / "p.json"), "--out", str(out)],
        timeout=600,
    )
    return json.loads((out / "result.json").read_text()), done


@needs_torch
@pytest.mark.parametrize("ranks", [2, 3])
@pytest.mark.process
def test_real_collectives_on_the_cpu_are_correct_and_measured(tmp_path, ranks):
    result, done = _run_gloo(tmp_path, ranks=ranks, max_bytes=4096)
    assert result["status"] == "succeeded", (result["error"], done.stderr[-2000:])
    summary = result["summary"]
    assert summary["backend"] == "gloo" and summary["ranks"] == ranks and not summary["wrong"]
    measured = {r["op"] for r in summary["table"]}
    assert measured == {
        "all_reduce",
        "all_gather",
        "reduce_scatter",
        "all_to_all",
        "broadcast",
        "send_recv",
    }
    assert all(r["wrong"] == 0 and r["samples"] == 2 for r in summary["table"])
    busbw = [m for m in result["measurements"] if m["metric"] == "busbw"]
    row = max(
        (m for m in busbw if m["case"]["op"] == "all_reduce"), key=lambda m: m["case"]["bytes"]
    )
    assert row["case"]["bytes"] == sweep(8, 4096, 2, ranks, "float32")[-1]
    time_us = next(
        m for m in result["measurements"] if m["metric"] == "time" and m["case"] == row["case"]
    )
    assert row["value"] == pytest.approx(
        busbw_gbps("all_reduce", ranks, row["case"]["bytes"], time_us["value"] / 1e6), rel=1e-6
    )


def test_the_real_h200_topology_output_with_its_ansi_underline_is_read():
    """Captured on the lent H200: nvidia-smi underlines the header even into a pipe."""
    text = (FIXTURES / "nvidia-smi-topo-1xH200-real.txt").read_text()
    assert "\x1b[4m" in text
    assert topology.parse_nvidia_topo(text) == {"links": {}, "gpus": 1}
    two = "\t\x1b[4mGPU0\tGPU1\tCPU Affinity\x1b[0m\nGPU0\t X \tNV18\t0-15\nGPU1\tNV18\t X \t0-15\n"
    assert topology.parse_nvidia_topo(two) == {"links": {"GPU0-GPU1": "NV18"}, "gpus": 2}


@needs_torch
@pytest.mark.process
def test_one_rank_keeps_times_but_claims_no_bandwidth(tmp_path):
    result, _ = _run_gloo(tmp_path, ranks=1, max_bytes=1024)
    assert result["status"] == "succeeded", result["error"]
    assert {m["metric"] for m in result["measurements"]} == {"time"}
    assert "no link is measured" in result["summary"]["note"]
