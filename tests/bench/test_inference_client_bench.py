"""bench/inference_client.py end to end, with tiny numbers: it runs and reports both clients.

No timing is asserted: speed is measured by the bench itself (docs/benchmarks.md), never by
timed tests. What is held: every request of both clients completed, with its tokens, and
the JSON names both clients' figures, the machine and the ratios.
"""

import json

import pytest

from bench import inference_client

# Starts the fake server in a subprocess and connects to it: the process tier.
pytestmark = pytest.mark.process


def test_the_bench_writes_both_clients_figures_and_every_request_completed(tmp_path, capsys):
    out = tmp_path / "overhead.json"
    argv = ["--requests", "50", "--concurrency", "8", "--tokens", "4"]
    assert (
        inference_client.main([*argv, "--ttft-requests", "20", "--rounds", "1", "--out", str(out)])
        == 0
    )
    result = json.loads(out.read_text())
    assert result["machine"]["nproc"] >= 1 and result["machine"]["python"]
    for phase, requests, tokens in (("throughput", 50, 4), ("ttft", 20, 2)):
        for name in ("rocpath", "bare"):
            (row,) = result["rounds"][phase][name]
            assert row["completed"] == requests and row["failed"] == 0, (phase, name, row)
            assert row["tokens"] == requests * tokens, (phase, name, row)
    for name in ("rocpath", "bare"):
        assert result["medians"]["throughput"][name]["requests_per_s"] > 0
        assert result["medians"]["ttft"][name]["ttft_p50_ms"] > 0
    assert set(result["ratios_rocpath_over_bare"]) >= {"requests_per_s", "ttft_p50"}
    assert "rocpath" in capsys.readouterr().out
