"""inference-bench's measurements go through the results path unchanged: two real runs of
a tiny random-weight Llama on this CPU are compared case by case, and the second is judged
against the first pinned as the baseline."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.utils.datastructures import MultiValueDict

from jobs.choices import JobStatus
from jobs.services.ingest import ingest_result
from results import services
from results.compare import CompareQuery, compare
from stack.kinds.inference_bench import KIND
from tests.factories import make_job, make_project

pytest.importorskip("transformers")

pytestmark = [pytest.mark.process, pytest.mark.django_db]

REPO_ROOT = Path(__file__).resolve().parents[2]
PARAMS = {
    "model": "tiny-llama",
    "device": "cpu",
    "requests": 12,
    "input_dist": "fixed",
    "input_len": 24,
    "output_len": 6,
    "concurrency": [3],
    "modes": ["offline"],
    "environment": False,
}


def run(folder: Path) -> dict:
    (folder / "params.json").write_text(json.dumps(PARAMS))
    done = subprocess.run(
        [sys.executable, "-m", "stack", "run", KIND.name, "--params",
         str(folder / "params.json"), "--out", str(folder / "out")],
        cwd=REPO_ROOT, env=dict(os.environ, PYTHONPATH=str(REPO_ROOT)), capture_output=True,
        text=True, timeout=600, check=False,
    )  # fmt: skip
    document = json.loads((folder / "out" / "result.json").read_text())
    assert document["status"] == "succeeded", (document["error"], done.stderr[-2000:])
    # One machine's fingerprint for both runs: the scope a baseline is pinned in.
    document["environment"] = {"host": {"hostname": "cpu-box"}, "gpus": [], "software": {},
                               "tools": {}}  # fmt: skip
    return document


@pytest.fixture(scope="module")
def documents(tmp_path_factory):
    return [run(tmp_path_factory.mktemp(f"run{i}")) for i in range(2)]


def stored(team, project, document):
    job = make_job(team, kind=KIND.name, status=JobStatus.RUNNING, worker="w@h",
                   params=PARAMS, project=project)  # fmt: skip
    ingest_result(job, document, None, exit_code=0)
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED, job.error
    return job


def test_two_runs_compare_case_by_case_with_a_ratio_on_every_latency(team, user, documents):
    project = make_project(team)
    a, b = (stored(team, project, d) for d in documents)
    query = CompareQuery.parse(MultiValueDict({"jobs": [f"{a.pk},{b.pk}"]}))
    rows = {(r.case["mode"], r.case["concurrency"], r.metric): r for r in compare(user, query).rows}
    for metric in ("ttft_p50", "tpot_p50", "itl_p50", "e2el_p50"):
        row = rows["offline", 3, metric]
        assert [c.value for c in row.cells] == [
            m["value"] for d in documents for m in d["measurements"] if m["metric"] == metric
        ]
        assert row.cells[1].ratio is not None  # samples on both sides: a ratio and its interval
    assert ("offline", 3, "output_throughput") in rows


def test_a_run_is_judged_against_the_pinned_baseline_on_its_latencies(team, user, documents):
    project = make_project(team)
    a, b = (stored(team, project, d) for d in documents)
    services.pin_baseline(a, user=user)
    verdicts = {v.metric: v for v in services.compare_job(b.pk)}
    assert {"ttft_p50", "tpot_p50", "e2el_p50"} <= set(verdicts)
    allowed = {"improved", "regressed", "unchanged", "inconclusive", "noisy"}
    assert all(v.verdict in allowed for v in verdicts.values())
