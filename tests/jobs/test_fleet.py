"""A worker's announcement (jobs.fleet): its configured inventory, what it adds to it, the
queues it serves, a beat that survives the database, and the leases seeing the same GPUs."""

from __future__ import annotations

import json
import subprocess
from types import SimpleNamespace

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db import OperationalError

from jobs import fleet
from jobs.executors import gpu_profiles
from jobs.executors.gpu_profiles import request_for
from jobs.models import Worker
from jobs.routing import arch_queue, host_queue
from tests.factories import H200, MI300X
from tests.waits import START_S, STOP_S, wait_until
from tests.workers import CELERY, ROOT, worker_env

PROBE = ROOT / "docs" / "results" / "probe-h200.json"


def test_an_inventory_is_read_inline_or_from_a_file_or_a_probes_result(tmp_path):
    inline = fleet.parse_inventory(json.dumps({"gpus": [MI300X, MI300X], "cpus": 8}))
    assert [g["index"] for g in inline["gpus"]] == [0, 1] and inline["cpus"] == 8
    path = tmp_path / "host.json"
    path.write_text(json.dumps({"gpus": [H200]}))
    assert fleet.parse_inventory(str(path))["gpus"][0]["arch"] == "sm_90"
    probed = fleet.parse_inventory(str(PROBE))  # a probe's result.json: its environment
    assert probed["gpus"][0]["model"] == "NVIDIA H200" and probed["source"] == "configured"


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        ("{not json", "not valid JSON"),
        ("/nowhere/inventory.json", "not inline JSON and not a readable file"),
        ('{"gpus": {}}', "'gpus' must be a list"),
        (
            '{"gpus": [{"vendor": "intel"}]}',
            "gpus[0] must be an object whose vendor is amd or nvidia",
        ),
        (
            '{"gpus": [{"vendor": "amd", "memory_bytes": "lots"}]}',
            "memory_bytes must be an integer",
        ),
        ('{"gpus": [], "cpus": "many"}', "cpus must be a number"),
    ],
)
def test_a_malformed_inventory_is_refused_saying_what_is_wrong(raw, says):
    with pytest.raises(ImproperlyConfigured, match=r"ROCPATH_WORKER_INVENTORY.*" + re_escape(says)):
        fleet.parse_inventory(raw)


def re_escape(text: str) -> str:
    import re

    return re.escape(text)


@pytest.mark.process
def test_a_worker_with_a_malformed_inventory_does_not_start(transactional_db, settings, tmp_path):
    env = worker_env(settings, ROCPATH_WORKER_INVENTORY='{"gpus": [{"vendor": "intel"}]}')
    result = subprocess.run(
        [CELERY, "-A", "config", "worker", "-Q", "fleet-never", "-n", "fleet-bad@%h"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=START_S,
        check=False,
    )
    assert result.returncode != 0
    assert "the worker does not start: ROCPATH_WORKER_INVENTORY: gpus[0]" in result.stderr


def test_the_leases_see_the_configured_gpus(settings, monkeypatch):
    settings.ROCPATH_WORKER_INVENTORY = json.dumps({"gpus": [MI300X, H200]})
    monkeypatch.setattr(gpu_profiles, "_inventory", None)
    inventory = gpu_profiles.worker_inventory()
    assert [g["model"] for g in inventory["gpus"]] == ["AMD Instinct MI300X", "NVIDIA H200"]
    assert request_for({"gpu_arch": "sm_90"}, inventory, None).vendor == "nvidia"


def test_a_lease_takes_only_gpus_with_the_properties_asked_for():
    mixed = {"gpus": [MI300X | {"arch": "gfx90a", "model": "MI210"}, MI300X, MI300X]}
    request = request_for({"gpu_arch": "gfx942", "gpu_count": 2}, mixed, None)
    assert request.vendor == "amd" and request.candidates == [1, 2]
    with pytest.raises(gpu_profiles.GpuUnavailable, match="lends 0 amd GPUs with"):
        request_for({"gpu_model": "MI250"}, mixed, None)


def test_the_announced_inventory_adds_what_a_job_may_get(settings, monkeypatch):
    settings.ROCPATH_WORKER_INVENTORY = json.dumps({"gpus": [MI300X, MI300X]})
    settings.ROCPATH_WORKER_GPUS = [1]
    local = fleet.announced_inventory("local")
    assert local["cpus"] == settings.HOST_CPUS and local["memory_mb"] == settings.HOST_MEMORY_MB
    assert [g["lent"] for g in local["gpus"]] == [False, True] and "images" not in local
    monkeypatch.setattr(fleet, "docker_images", lambda: ["rocpath/debian:latest"])
    docker = fleet.announced_inventory("docker")
    assert docker["cpus"] == settings.ROCPATH_DOCKER_MAX_CPUS
    assert docker["memory_mb"] == settings.ROCPATH_DOCKER_MAX_MEMORY_MB
    assert docker["images"] == ["rocpath/debian:latest"]


def test_a_worker_announces_the_models_its_registry_holds(settings, tmp_path):
    settings.ROCPATH_WORKER_INVENTORY = json.dumps({"gpus": [H200]})
    for name in ("llama-team", "qwen-eval"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text("{}")
    (tmp_path / "not-a-model").mkdir()  # no config.json: not listed
    settings.ROCPATH_MODEL_ROOT = str(tmp_path)
    assert fleet.announced_inventory("local")["models"] == ["llama-team", "qwen-eval"]
    settings.ROCPATH_MODEL_ROOT = ""
    assert "models" not in fleet.announced_inventory("local")


def test_a_slurm_worker_without_the_slurm_module_says_so_and_announces_the_probe(
    settings, monkeypatch, caplog
):
    import sys

    settings.ROCPATH_WORKER_INVENTORY = ""
    monkeypatch.setitem(sys.modules, "jobs.executors.slurm", None)  # as if absent
    monkeypatch.setattr(gpu_profiles, "_inventory", {"gpus": [H200]})
    assert fleet.announced_inventory("slurm")["gpus"] == [H200]
    assert "partition inventory is not available" in caplog.text


class FakeConsumer:
    """What announce reads of Celery's Consumer (the real one: tests/integration/test_fleet)."""

    def __init__(self, name: str, queues: list[str]) -> None:
        self.hostname = name
        self.app = SimpleNamespace(
            amqp=SimpleNamespace(queues=SimpleNamespace(consume_from=dict.fromkeys(queues)))
        )

    def add_task_queue(self, queue: str) -> None:
        self.app.amqp.queues.consume_from[queue] = None


def test_a_worker_consumes_and_records_the_queues_its_gpus_give_it(db, settings):
    settings.ROCPATH_WORKER_INVENTORY = json.dumps({"gpus": [MI300X, H200]})
    settings.ROCPATH_GPU_HOST = "gpu01"
    consumer = FakeConsumer("celery@gpu01", [settings.CELERY_TASK_DEFAULT_QUEUE])
    try:
        row = fleet.announce(consumer)
    finally:
        fleet.stop("celery@gpu01")
    expected = [
        settings.CELERY_TASK_DEFAULT_QUEUE,
        arch_queue("amd", "gfx942"),
        arch_queue("nvidia", "sm_90"),
        host_queue("gpu01"),
    ]
    assert row.queues == expected == list(consumer.app.amqp.queues.consume_from)
    assert row.executor == "local" and row.host == "gpu01"
    assert Worker.objects.get().stopped_at is not None


@pytest.mark.parametrize(
    "setting", ["ROCPATH_CONTROL_QUEUE", "ROCPATH_ALERT_QUEUE", "ROCPATH_COMPARE_QUEUE"]
)
def test_a_worker_of_the_control_or_alert_queue_alone_announces_no_capability(
    db, settings, setting
):
    settings.ROCPATH_WORKER_INVENTORY = json.dumps({"gpus": [MI300X]})
    queue = getattr(settings, setting)
    consumer = FakeConsumer("celery@service", [queue])
    try:
        row = fleet.announce(consumer)
    finally:
        fleet.stop("celery@service")
    assert row.queues == [queue] and row.inventory == {}
    assert row.executor == "local"


@pytest.mark.slow
def test_a_beat_that_cannot_reach_the_database_is_logged_and_the_next_one_beats(
    settings, monkeypatch, caplog
):
    settings.ROCPATH_WORKER_BEAT_S = 1
    beats = []

    def flaky(name: str, fields: dict) -> None:
        beats.append(name)
        if len(beats) == 1:
            raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(fleet, "beat", flaky)
    beater = fleet._Beat("celery@flaky", {})
    beater.start()
    try:
        assert wait_until(lambda: len(beats) >= 2, STOP_S, 0.1)
        assert beater.is_alive()
    finally:
        beater.stopping.set()
        beater.join(STOP_S)
    assert "the beat could not reach the database" in caplog.text


def test_a_beat_writes_last_seen_and_running_jobs_and_announces_a_missing_row(db, team):
    from jobs.choices import JobStatus
    from tests.factories import make_job

    fields = {"host": "h", "executor": "local", "queues": ["q"], "inventory": {}}
    fleet.beat("celery@new", fields)  # no row yet: the whole announcement
    row = Worker.objects.get(name="celery@new")
    make_job(team, status=JobStatus.RUNNING, worker="celery@new")
    fleet.beat("celery@new", fields)
    again = Worker.objects.get(name="celery@new")
    assert again.jobs_running == 1 and again.last_seen_at > row.last_seen_at


def test_a_slurm_worker_that_cannot_read_its_partition_does_not_start(settings, monkeypatch):
    from jobs.executors import ExecutorError, slurm

    settings.ROCPATH_WORKER_INVENTORY = ""

    def down() -> dict:
        raise ExecutorError("scontrol show partition failed: Unable to contact slurm controller")

    monkeypatch.setattr(slurm, "partition_inventory", down)
    with pytest.raises(SystemExit, match="its partition could not be read: scontrol show"):
        fleet.announced_inventory("slurm")
