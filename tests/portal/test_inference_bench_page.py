"""The inference-bench job page, on the result of a real run: a tiny random-weight Llama
served on this machine's CPU offline and online at two concurrencies, run through the
stack CLI and stored by the worker's own ingest. The page shows the model, a row per
case with its figures, and the latency and throughput charts."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.urls import reverse

from jobs.choices import JobStatus
from jobs.models import Job
from jobs.services.ingest import ingest_result
from portal.kinds import presenter_for
from portal.kinds.inference_bench import figure
from stack.kinds.inference_bench import KIND
from tests.factories import make_job

pytest.importorskip("transformers")

pytestmark = pytest.mark.process  # the kind runs as `python -m stack`

REPO_ROOT = Path(__file__).resolve().parents[2]
PARAMS = {
    "model": "tiny-llama",
    "device": "cpu",
    "requests": 12,
    "input_len": 32,
    "output_len": 8,
    "concurrency": [1, 4],
    "modes": ["offline", "online"],
    "environment": False,
}
CASES = [("offline", 1), ("offline", 4), ("online", 1), ("online", 4)]


def run_inference_bench(folder: Path, params: dict = PARAMS) -> dict:
    """The result.json of a real inference-bench run on the CPU (~15 s with PARAMS)."""
    (folder / "params.json").write_text(json.dumps(params))
    out = folder / "out"
    done = subprocess.run(
        [sys.executable, "-m", "stack", "run", KIND.name, "--params", str(folder / "params.json"),
         "--out", str(out)],
        cwd=REPO_ROOT, env=dict(os.environ, PYTHONPATH=str(REPO_ROOT)), capture_output=True,
        text=True, timeout=600, check=False,
    )  # fmt: skip
    document = json.loads((out / "result.json").read_text())
    assert document["status"] == "succeeded", (document["error"], done.stderr[-2000:])
    return document


def store(team, document: dict, params: dict = PARAMS) -> Job:
    """A job of the team that ran and handed back ``document``: stored by the worker's ingest."""
    job = make_job(team, kind=KIND.name, status=JobStatus.RUNNING, worker="w@h", params=params)
    ingest_result(job, document, None, exit_code=0)
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED, job.error
    return job


@pytest.fixture(scope="module")
def document(tmp_path_factory) -> dict:
    return run_inference_bench(tmp_path_factory.mktemp("inference-bench"))


COLUMNS = [
    "mode", "concurrency", "completed", "failed", "ttft_p50", "ttft_p90", "ttft_p99",
    "tpot_p50", "tpot_p99", "itl_p50", "e2el_p50", "e2el_p99", "request_throughput",
    "output_throughput", "total_token_throughput", "peak_memory_gib", "kv_cache_gib",
    "kv_cache_blocks", "cache_batch", "tokens_per_joule",
]  # fmt: skip


def table_rows(page: str) -> dict[tuple[str, int], dict[str, str]]:
    """The page's case table: (mode, concurrency) -> column -> the cell's text."""
    section = re.search(r'<section class="card" id="inference-cases">(.*?)</section>', page, re.S)
    assert section, "no case table on the page"
    rows = {}
    for mode, concurrency, cells in re.findall(
        r'<tr data-mode="([^"]*)" data-concurrency="(\d+)">(.*?)</tr>', section[1], re.S
    ):
        texts = re.findall(r"<td[^>]*>([^<]*)</td>", cells)
        assert len(texts) == len(COLUMNS), texts
        rows[(mode, int(concurrency))] = dict(zip(COLUMNS, texts, strict=True))
    return rows


def near(cell: str, value: float) -> bool:
    """The cell reads the value, to the digits it shows (at most half its last digit off)."""
    shown = float(cell.replace(",", ""))
    last = cell.replace(",", "").partition(".")[2]
    return abs(shown - value) <= 0.5 * 10 ** -len(last) + 1e-9 * abs(value)


def test_the_page_shows_the_model_and_a_row_per_case_with_its_figures(
    member_client, team, document
):
    job = store(team, document)
    page = member_client.get(reverse("portal:job-detail", args=[job.pk])).content.decode()

    model = document["summary"]["model"]
    facts = re.search(r'<section class="card" id="inference-model">(.*?)</section>', page, re.S)
    assert facts, "no model card on the page"
    assert "<code>tiny-llama</code>" in facts[1] and "preset <code>tiny-llama</code>" in facts[1]
    assert f"<dt>Layers</dt><dd>{model['layers']}</dd>" in facts[1]
    assert f"<dt>Parameters</dt><dd>{model['parameters']:,}</dd>" in facts[1]
    assert f"<dt>Dtype</dt><dd>{model['dtype']}</dd>" in facts[1]
    assert f"{model['kv_bytes_per_token']} bytes" in facts[1]
    assert f"{figure(model['weights_bytes'] / 2**30)} GiB" in facts[1]
    assert 'id="random-weights"' in facts[1]
    room = document["summary"].get("memory") or {}
    if room.get("largest_batch") is None:  # off a GPU: no free memory to size a batch by
        assert "<dt>Largest batch</dt>" not in facts[1]

    rows = table_rows(page)
    assert list(rows) == CASES
    for case in document["summary"]["cases"]:
        row, stats = rows[(case["mode"], case["concurrency"])], case["stats"]
        assert (row["completed"], row["failed"]) == (str(stats["completed"]), "0")
        for column, value in (
            ("ttft_p50", stats["ttft_ms"]["p50"]),
            ("ttft_p90", stats["ttft_ms"]["p90"]),
            ("ttft_p99", stats["ttft_ms"]["p99"]),
            ("tpot_p50", stats["tpot_ms"]["p50"]),
            ("tpot_p99", stats["tpot_ms"]["p99"]),
            ("itl_p50", stats["itl_ms"]["p50"]),
            ("e2el_p50", stats["e2el_ms"]["p50"]),
            ("e2el_p99", stats["e2el_ms"]["p99"]),
            ("request_throughput", stats["request_throughput"]),
            ("output_throughput", stats["output_throughput"]),
            ("total_token_throughput", stats["total_token_throughput"]),
        ):
            assert near(row[column], value), (case["mode"], case["concurrency"], column, row)
        # A CPU run measures no device memory and no energy: blank, not zero.
        assert row["peak_memory_gib"] == row["tokens_per_joule"] == ""
        if case.get("cache"):  # offline: transformers' paged cache, as the engine sized it
            assert near(row["kv_cache_gib"], case["cache"]["bytes"] / 2**30)
            assert row["kv_cache_blocks"] == str(case["cache"]["num_blocks"])
            # how many longest requests that cache holds ("largest_batch" in older results)
            held = case.get("cache_batch", case.get("largest_batch"))
            assert row["cache_batch"] == ("" if held is None else str(held))
        else:  # online: the server's cache is not seen from the client
            assert row["kv_cache_gib"] == row["kv_cache_blocks"] == row["cache_batch"] == ""
    assert any(c.get("cache") for c in document["summary"]["cases"])


def test_the_charts_draw_ttft_tpot_and_throughput_against_concurrency_per_mode(
    member_client, team, document
):
    job = store(team, document)
    charts = presenter_for(job.kind).charts(job)
    titles = [re.search(r'class="title plot_title"[^>]*>([^<]*)<', svg)[1] for svg in charts]
    assert titles == [
        "Time to first token (TTFT) against concurrency: tiny-llama · cpu",
        "Time per output token (TPOT) against concurrency: tiny-llama · cpu",
        "Output throughput against concurrency: tiny-llama · cpu",
    ]
    ttft, tpot, throughput = charts
    for svg in (ttft, tpot):
        for mode in ("offline", "online"):
            for q in ("p50", "p90", "p99"):
                assert f">{mode} {q}<" in svg  # a legend entry per mode and percentile
        assert "concurrency (requests in flight)" in svg
    assert ">offline<" in throughput and ">online<" in throughput
    assert "output tokens/s" in throughput
    # each point carries its value: the offline p99 TTFT at concurrency 4 among them
    offline4 = next(
        c for c in document["summary"]["cases"] if (c["mode"], c["concurrency"]) == ("offline", 4)
    )
    p99 = offline4["stats"]["ttft_ms"]["p99"]
    hovers = [float(v) for v in re.findall(r"<title>4: ([\d.]+)</title>", ttft)]
    assert any(abs(v - p99) <= 1e-3 * p99 for v in hovers), (p99, hovers)

    page = member_client.get(reverse("portal:job-detail", args=[job.pk])).content.decode()
    assert page.count('<div class="chart"><svg') == 3
    assert "<script" not in "".join(re.findall(r'<div class="chart">(.*?)</div>', page, re.S))


def test_gpu_figures_show_and_a_case_that_served_nothing_leaves_its_figures_blank(
    member_client, team, document
):
    """The CPU run's document with what a GPU run adds (device memory, energy, the room
    left after the weights) and its last case failed outright."""
    summary = json.loads(json.dumps(document["summary"]))
    summary["memory"] = {
        "free_after_weights_bytes": 120 * 2**30,
        "request_kv_bytes": 40 * 2**20,
        "largest_batch": 2764,
    }
    first = summary["cases"][0]
    first.update(peak_memory_bytes=3 * 2**30, energy_j=12.5, tokens_per_joule=1234.5)
    failed = summary["cases"][-1]
    failed["stats"].update(
        completed=0,
        failed=12,
        **{k: {"mean": None, "p50": None, "p90": None, "p99": None}
           for k in ("ttft_ms", "tpot_ms", "itl_ms", "e2el_ms")},
    )  # fmt: skip
    job = store(team, {**document, "summary": summary})
    page = member_client.get(reverse("portal:job-detail", args=[job.pk])).content.decode()
    assert (
        "<dt>Largest batch</dt><dd>2,764 of the workload's longest requests (41,943,040 bytes"
        " of KV cache each) in 90 % of the 120.0 GiB free after the weights</dd>"
    ) in page.replace("&#x27;", "'")
    rows = table_rows(page)
    gpu = rows[(first["mode"], first["concurrency"])]
    assert (gpu["peak_memory_gib"], gpu["tokens_per_joule"]) == ("3.00", "1,234")
    row = rows[(failed["mode"], failed["concurrency"])]
    assert (row["completed"], row["failed"]) == ("0", "12")
    assert row["ttft_p50"] == row["tpot_p99"] == row["e2el_p99"] == ""
    charts = presenter_for(job.kind).charts(job)
    assert len(charts) == 3  # the other cases still draw
