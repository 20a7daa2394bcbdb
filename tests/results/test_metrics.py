"""/metrics: what it counts (read back with prometheus-client's parser), and who may read it."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from jobs.choices import JobStatus
from jobs.models import GpuLease, Worker
from results.models import Verdict, VerdictKind
from stack.kinds import KINDS, noop, probe
from tests.factories import make_job

pytestmark = pytest.mark.django_db
TOKEN = "metrics-token-for-tests"


@pytest.fixture
def scrape(settings: Any) -> Any:
    settings.ROCPATH_METRICS_TOKEN = TOKEN

    def get() -> dict[tuple[str, tuple], float]:
        response = Client().get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
        assert response.status_code == 200, response.content
        assert response["Content-Type"].startswith("text/plain; version=")
        samples = {}
        for family in text_string_to_metric_families(response.content.decode()):
            for sample in family.samples:
                samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
        return samples

    return get


def _finished(team: Any, kind: str, status: str, seconds: float) -> Any:
    end = timezone.now()
    return make_job(
        team,
        kind=kind,
        status=status,
        started_at=end - timedelta(seconds=seconds),
        finished_at=end,
    )


def test_jobs_are_counted_by_kind_and_status(team: Any, scrape: Any) -> None:
    for _ in range(2):
        _finished(team, noop.KIND.name, JobStatus.SUCCEEDED, 1)
    _finished(team, noop.KIND.name, JobStatus.FAILED, 1)
    make_job(team, kind="retired-kind", status=JobStatus.PENDING)
    samples = scrape()
    noop_name = noop.KIND.name
    assert samples[("rocpath_jobs", (("kind", noop_name), ("status", "succeeded")))] == 2
    assert samples[("rocpath_jobs", (("kind", noop_name), ("status", "failed")))] == 1
    assert samples[("rocpath_jobs", (("kind", "other"), ("status", "pending")))] == 1
    # Every kind of the registry with every status, zeros included, and nothing else.
    kinds = {labels[0][1] for name, labels in samples if name == "rocpath_jobs"}
    assert kinds == {*KINDS, "other"}
    assert sum(1 for name, _ in samples if name == "rocpath_jobs") == (len(KINDS) + 1) * 7


def test_queue_depth_counts_waiting_jobs_by_their_queue(
    team: Any, scrape: Any, settings: Any
) -> None:
    settings.ROCPATH_JOB_QUEUES = {"*": ["gpu-mi300x"]}
    make_job(team, status=JobStatus.QUEUED)
    make_job(team, status=JobStatus.QUEUED, requested_hardware={"queue": "gpu-mi300x"})
    make_job(team, status=JobStatus.PENDING, requested_hardware={"queue": "gpu-mi300x"})
    make_job(team, status=JobStatus.QUEUED, requested_hardware={"queue": "since-removed"})
    make_job(team, status=JobStatus.RUNNING)
    # routed by capability: the queue it was sent to, not the (absent) one it named
    make_job(team, status=JobStatus.QUEUED, queue="gpu-mi300x", requested_hardware={"gpu_count": 1})
    samples = scrape()
    default = settings.CELERY_TASK_DEFAULT_QUEUE

    def depth(queue: str, status: str) -> float:
        return samples[("rocpath_queue_depth", (("queue", queue), ("status", status)))]

    assert depth(default, "queued") == 1
    assert depth(default, "pending") == 0
    assert depth("gpu-mi300x", "queued") == 2
    assert depth("gpu-mi300x", "pending") == 1
    assert depth("other", "queued") == 1


def test_durations_are_a_histogram_per_kind(team: Any, scrape: Any) -> None:
    _finished(team, probe.KIND.name, JobStatus.SUCCEEDED, 3)
    _finished(team, probe.KIND.name, JobStatus.ERRORED, 100)
    _finished(team, probe.KIND.name, JobStatus.SUCCEEDED, 4000)
    make_job(team, kind=probe.KIND.name, status=JobStatus.RUNNING)  # not finished: not counted
    samples = scrape()
    kind = ("kind", probe.KIND.name)

    def bucket(le: str) -> float:
        return samples[("rocpath_job_duration_seconds_bucket", (kind, ("le", le)))]

    assert bucket("1.0") == 0
    assert bucket("5.0") == 1
    assert bucket("300.0") == 2
    assert bucket("3600.0") == 2
    assert bucket("7200.0") == 3
    assert bucket("+Inf") == 3
    assert samples[("rocpath_job_duration_seconds_count", (kind,))] == 3
    assert samples[("rocpath_job_duration_seconds_sum", (kind,))] == pytest.approx(4103, abs=1)


def test_workers_leases_and_open_regressions(team: Any, scrape: Any) -> None:
    now = timezone.now()
    running = make_job(team, status=JobStatus.RUNNING, worker="w1@gpu-a", heartbeat_at=now)
    make_job(team, status=JobStatus.RUNNING, worker="w1@gpu-a", heartbeat_at=now)
    make_job(team, status=JobStatus.RUNNING, worker="w2@gpu-b", heartbeat_at=now)
    make_job(
        team,
        status=JobStatus.SUCCEEDED,
        worker="w3@gone",
        created_at=now - timedelta(days=1),
        started_at=now - timedelta(days=1),
        heartbeat_at=now - timedelta(days=1),
    )
    make_job(team, status=JobStatus.SUCCEEDED, worker="w4@quick", started_at=now)  # ran, ended
    make_job(team, status=JobStatus.QUEUED)  # no worker yet
    GpuLease.objects.create(host="gpu-a", vendor="amd", index=0, job=running)
    GpuLease.objects.create(host="gpu-a", vendor="amd", index=1, job=running)
    for i, (verdict, acknowledged) in enumerate(
        [
            (VerdictKind.REGRESSED, None),
            (VerdictKind.REGRESSED, None),
            (VerdictKind.REGRESSED, now),
            (VerdictKind.UNCHANGED, None),
        ]
    ):
        Verdict.objects.create(
            job=running,
            benchmark="gemm",
            case_key=f"case-{i}",
            metric="t",
            verdict=verdict,
            acknowledged_at=acknowledged,
        )
    samples = scrape()
    assert samples[("rocpath_workers_seen", ())] == 3  # w1, w2 and w4; not w3
    assert samples[("rocpath_gpu_leases_held", (("vendor", "amd"),))] == 2
    assert samples[("rocpath_gpu_leases_held", (("vendor", "nvidia"),))] == 0
    assert samples[("rocpath_regressions_open", ())] == 2


def test_a_scrape_costs_the_same_queries_whatever_the_number_of_jobs(
    team: Any, scrape: Any
) -> None:
    _finished(team, noop.KIND.name, JobStatus.SUCCEEDED, 1)
    with CaptureQueriesContext(connection) as few:
        scrape()
    for kind in KINDS:
        for status in (JobStatus.SUCCEEDED, JobStatus.FAILED):
            for _ in range(5):
                _finished(team, kind, status, 10)
        make_job(team, kind=kind, status=JobStatus.QUEUED)
    with CaptureQueriesContext(connection) as many:
        scrape()
    assert len(many) == len(few) == 8  # seven reads, and the upsert of the scrape's time


# --- access ------------------------------------------------------------------------
def test_metrics_are_off_unless_a_token_or_an_address_list_is_set(db: None) -> None:
    assert Client().get("/metrics").status_code == 404


def test_a_scrape_without_the_token_is_refused(settings: Any) -> None:
    settings.ROCPATH_METRICS_TOKEN = TOKEN
    refused = Client().get("/metrics")
    assert refused.status_code == 401
    assert refused["WWW-Authenticate"] == 'Bearer realm="metrics"'
    assert b"rocpath_jobs" not in refused.content
    wrong = Client().get("/metrics", HTTP_AUTHORIZATION="Bearer not-the-token")
    assert wrong.status_code == 401
    basic = Client().get("/metrics", HTTP_AUTHORIZATION=f"Basic {TOKEN}")
    assert basic.status_code == 401


def test_an_address_list_lets_in_only_its_addresses(db: None, settings: Any) -> None:
    settings.ROCPATH_METRICS_ALLOW = ["10.0.0.0/8"]
    assert Client().get("/metrics").status_code == 403  # the test client is 127.0.0.1
    settings.ROCPATH_METRICS_ALLOW = ["10.0.0.0/8", "127.0.0.1"]
    assert Client().get("/metrics").status_code == 200


def test_with_both_a_scrape_needs_the_token_and_an_allowed_address(db: None, settings: Any) -> None:
    settings.ROCPATH_METRICS_TOKEN = TOKEN
    settings.ROCPATH_METRICS_ALLOW = ["127.0.0.1"]
    assert Client().get("/metrics").status_code == 401
    auth = {"HTTP_AUTHORIZATION": f"Bearer {TOKEN}"}
    assert Client().get("/metrics", **auth).status_code == 200
    settings.ROCPATH_METRICS_ALLOW = ["192.0.2.0/24"]
    assert Client().get("/metrics", **auth).status_code == 403


# --- the fleet ---------------------------------------------------------------------
def test_announced_workers_are_counted_by_executor_and_state(team: Any, scrape: Any) -> None:
    now = timezone.now()
    Worker.objects.create(name="a@live", host="a", executor="docker", last_seen_at=now)
    Worker.objects.create(name="b@live", host="b", executor="slurm", last_seen_at=now)
    Worker.objects.create(
        name="c@gone", host="c", executor="docker", last_seen_at=now - timedelta(hours=1)
    )
    Worker.objects.create(
        name="d@stopped", host="d", executor="docker", last_seen_at=now, stopped_at=now
    )
    samples = scrape()
    by = {"live": 1, "gone": 1, "stopped": 1}
    for state, n in by.items():
        assert samples[("rocpath_workers", (("executor", "docker"), ("state", state)))] == n
    assert samples[("rocpath_workers", (("executor", "slurm"), ("state", "live")))] == 1


def test_a_job_routed_to_a_capability_queue_is_counted_on_that_queue(
    team: Any, scrape: Any, settings: Any
) -> None:
    queue = f"{settings.CELERY_TASK_DEFAULT_QUEUE}-gpu-amd-gfx942"
    Worker.objects.create(name="a@mi300x", host="a", executor="docker", queues=[queue])
    make_job(team, status=JobStatus.QUEUED, queue=queue)
    samples = scrape()
    assert samples[("rocpath_queue_depth", (("queue", queue), ("status", "queued")))] == 1


def test_a_hosts_own_queue_is_never_a_label_its_jobs_count_as_other(
    team: Any, scrape: Any, settings: Any
) -> None:
    from jobs.routing import capability_queues

    # As a worker on host gpu-node-17.cluster.example with an MI300X announces itself.
    inventory = {"gpus": [{"vendor": "amd", "arch": "gfx942"}]}
    queues = capability_queues(inventory, "gpu-node-17.cluster.example")
    Worker.objects.create(
        name="w@gpu-node-17", host="gpu-node-17", executor="docker", queues=queues
    )
    make_job(team, status=JobStatus.QUEUED, queue=queues[-1])  # pinned to that host
    samples = scrape()
    assert not [key for key in samples if "gpu-node-17" in str(key)]  # docs/security.md
    assert samples[("rocpath_queue_depth", (("queue", "other"), ("status", "queued")))] == 1
    arch = queues[0]
    assert ("rocpath_queue_depth", (("queue", arch), ("status", "queued"))) in samples
