"""Capability routing (jobs.routing): which live workers can serve a GPU job, the queue it
waits on, and the refusal that names what the fleet lacks."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from jobs import routing
from jobs.models import Job
from jobs.routing import Unroutable, arch_queue, host_queue, queue_name, route
from jobs.services import SubmissionError, queue_for, submit_job
from tests.factories import H200, MI300X, make_job, make_worker

pytestmark = pytest.mark.django_db

MI210 = {
    "vendor": "amd",
    "model": "AMD Instinct MI210",
    "arch": "gfx90a",
    "memory_bytes": 64 * 2**30,
}


def refusal(hardware: dict, image: str = "rocpath/debian:latest") -> Unroutable:
    with pytest.raises(Unroutable) as caught:
        route(hardware, image)
    return caught.value


def test_a_job_for_an_arch_goes_to_that_arch_queue_when_only_such_workers_consume_it():
    make_worker("celery@h200-1", gpus=[H200])
    make_worker("celery@mi-1", gpus=[MI300X])
    make_worker("celery@mi-2", gpus=[MI300X], jobs_running=1)
    found = route({"gpu_arch": "gfx942", "gpu_count": 1}, "rocpath/debian:latest")
    assert found.queue == arch_queue("amd", "gfx942")
    assert found.workers == ("celery@mi-1", "celery@mi-2")
    assert found.note == (
        f"waiting on {found.queue}: consumed by 2 capable worker(s): celery@mi-1, celery@mi-2; "
        "celery@mi-1 idle, celery@mi-2 busy (1 running)"
    )


def test_the_model_matches_any_case_as_part_of_the_name_and_memory_is_a_minimum_per_gpu():
    make_worker("celery@mi-1", gpus=[MI300X])
    make_worker("celery@mi210", gpus=[MI210])
    assert route({"gpu_model": "mi300x"}, "x").workers == ("celery@mi-1",)
    assert route({"gpu_vendor": "amd", "gpu_memory_gb": 100}, "x").workers == ("celery@mi-1",)
    assert set(route({"gpu_vendor": "amd", "gpu_memory_gb": 64}, "x").workers) <= {
        "celery@mi-1",
        "celery@mi210",
    }


def test_when_the_arch_queue_has_a_worker_that_cannot_serve_the_job_the_host_queue_is_used():
    make_worker("celery@big", gpus=[MI300X] * 8, host="big")
    make_worker("celery@small", gpus=[MI300X], host="small")  # consumes the gfx942 queue too
    found = route({"gpu_arch": "gfx942", "gpu_count": 4}, "x")
    assert found.queue == host_queue("big") and found.workers == ("celery@big",)


def test_the_host_queue_chosen_is_the_least_busy_capable_workers():
    make_worker("celery@a", gpus=[MI300X] * 2, host="a", jobs_running=3)
    make_worker("celery@b", gpus=[MI300X] * 2, host="b", jobs_running=1)
    make_worker("celery@c", gpus=[MI300X], host="c")
    assert route({"gpu_vendor": "amd", "gpu_count": 2}, "x").queue == host_queue("b")


def test_what_no_live_worker_has_is_named_with_what_the_fleet_does_have():
    make_worker("celery@h200-1", gpus=[H200])
    assert refusal({"gpu_arch": "gfx942"}).message == (
        "gpu_arch: no live worker has a gfx942 GPU (the fleet has: sm_90 on celery@h200-1)"
    )
    assert refusal({"gpu_vendor": "nvidia", "gpu_count": 2}).message == (
        "gpu_count: no live worker has 2 nvidia GPUs (the fleet has: 1 such GPU(s) on "
        "celery@h200-1)"
    )
    assert refusal({"gpu_count": 1, "cpus": 64}).message == (
        "cpus: no live worker has a GPU and 64 CPUs (the fleet has: 16 CPUs on celery@h200-1)"
    )
    assert refusal({"gpu_memory_gb": 512}).field == "hardware"


def test_the_property_named_is_the_first_in_request_order_that_leaves_no_worker():
    make_worker("celery@h200-1", gpus=[H200])
    make_worker("celery@mi-1", gpus=[MI300X])
    # each alone is served; together nobody: the second one asked is the one to blame
    assert refusal({"gpu_vendor": "nvidia", "gpu_arch": "gfx942"}).message.startswith(
        "gpu_arch: no live worker has an nvidia gfx942 GPU (the fleet has: sm_90 on celery@h200-1)"
    )
    assert refusal({"gpu_arch": "gfx942", "gpu_vendor": "nvidia"}).message.startswith(
        "gpu_vendor: no live worker has an nvidia gfx942 GPU (the fleet has: amd on celery@mi-1)"
    )


def test_stopped_and_gone_workers_are_not_routed_to(settings):
    make_worker("celery@stopped", gpus=[MI300X], stopped_at=timezone.now())
    gone = timezone.now() - timedelta(seconds=settings.ROCPATH_WORKER_GONE_S + 1)
    make_worker("celery@gone", gpus=[MI300X], last_seen_at=gone)
    assert refusal({"gpu_arch": "gfx942"}).message.startswith(
        "gpu_arch: no live worker has announced itself"
    )


def test_a_docker_worker_serves_only_the_images_it_has_and_a_local_one_any():
    worker = make_worker("celery@d", gpus=[MI300X], executor="docker")
    worker.inventory["images"] = ["rocpath/rocm:latest", "sha256:abc"]
    worker.save()
    assert route({"gpu_count": 1}, "rocpath/rocm").workers == ("celery@d",)
    missing = refusal({"gpu_count": 1}, "rocpath/other:1")
    assert missing.field == "image" and "rocpath/other:1" in missing.message
    make_worker("celery@l", gpus=[MI300X], host="l")
    assert route({"gpu_count": 1}, "rocpath/other:1").workers == ("celery@l",)


def test_workers_sharing_every_queue_with_one_that_cannot_serve_the_job_refuse_it_saying_so():
    make_worker("celery@a", gpus=[MI300X] * 2, host="one")
    make_worker("celery@b", gpus=[MI300X], host="one")
    message = refusal({"gpu_count": 2}).message
    assert "celery@a can, but share their queues" in message and "ROCPATH_GPU_HOST" in message


def test_gpus_a_worker_does_not_lend_are_not_counted():
    gpus = [{**MI300X, "lent": False}, MI300X]
    make_worker("celery@half", gpus=gpus)
    assert route({"gpu_count": 1}, "x").workers == ("celery@half",)
    assert refusal({"gpu_count": 2}).message.startswith("gpu_count: no live worker has 2 GPUs")


def test_capability_queue_names_are_the_deployments_and_fit_a_queue_name(settings):
    settings.CELERY_TASK_DEFAULT_QUEUE = "rocpath"
    assert arch_queue("amd", "gfx942") == "rocpath-amd-gfx942"
    assert host_queue("gpu01.lab") == "rocpath-host-gpu01-lab"
    long = host_queue("h" * 200)
    assert len(long) == 64 and long.startswith("rocpath-host-hhh")
    assert long != host_queue("h" * 199)  # the hash keeps them apart
    settings.CELERY_TASK_DEFAULT_QUEUE = "other"
    assert queue_name("amd", "gfx942") == "other-amd-gfx942"


# --- through submit -----------------------------------------------------------


def test_a_routed_job_keeps_its_queue_and_note_and_is_sent_there(user, no_enqueue):
    make_worker("celery@mi-1", gpus=[MI300X])
    job = submit_job(user=user, kind="noop", hardware={"gpu_arch": "gfx942", "gpu_count": 1})
    assert job.queue == arch_queue("amd", "gfx942") == queue_for(job)
    assert job.route_note.startswith(f"waiting on {job.queue}: consumed by 1 capable worker")


def test_a_gpu_job_nobody_can_serve_is_refused_under_hardware(user, no_enqueue):
    with pytest.raises(SubmissionError) as caught:
        submit_job(user=user, kind="noop", hardware={"gpu_count": 1})
    assert caught.value.errors["hardware"][0].startswith(
        "gpu_count: no live worker has announced itself"
    )
    assert not Job.objects.exists()


def test_a_cpu_job_goes_to_the_default_queue_without_asking_the_fleet(user, no_enqueue, settings):
    job = submit_job(user=user, kind="noop", hardware={"cpus": 1})
    assert job.queue == "" and queue_for(job) == settings.CELERY_TASK_DEFAULT_QUEUE


def test_a_named_queue_must_be_one_a_live_worker_consumes_once_workers_announce(
    user, no_enqueue, settings
):
    settings.ROCPATH_JOB_QUEUES = {"*": ["gpu-big", "gpu-old"]}
    job = submit_job(user=user, kind="noop", hardware={"queue": "gpu-old"})  # nobody announced
    assert queue_for(job) == "gpu-old"
    make_worker("celery@big", gpus=[MI300X], queues=[settings.CELERY_TASK_DEFAULT_QUEUE, "gpu-big"])
    with pytest.raises(SubmissionError) as caught:
        submit_job(user=user, kind="noop", hardware={"queue": "gpu-old"})
    assert caught.value.errors["hardware"] == [
        "queue: no live worker consumes 'gpu-old'; the live workers consume: gpu-big, "
        f"{settings.CELERY_TASK_DEFAULT_QUEUE}"
    ]
    job = submit_job(user=user, kind="noop", hardware={"queue": "gpu-big", "gpu_count": 1})
    assert job.queue == "gpu-big" and "named by hardware.queue" in job.route_note
    with pytest.raises(SubmissionError) as caught:
        submit_job(user=user, kind="noop", hardware={"queue": "gpu-big", "gpu_arch": "sm_90"})
    assert caught.value.errors["hardware"][0].startswith(
        "gpu_arch: no live worker consuming gpu-big has an sm_90 GPU"
    )


def test_queue_for_prefers_the_routed_queue_to_the_requested_one(team, settings):
    job = make_job(team, queue="rocpath-amd-gfx942", requested_hardware={"queue": "x"})
    assert queue_for(job) == "rocpath-amd-gfx942"
    assert queue_for(make_job(team, requested_hardware={"queue": "x"})) == "x"


def test_wants_capability_is_any_gpu_property_or_a_gpu_count():
    assert routing.wants_capability({"gpu_arch": "gfx942"})
    assert routing.wants_capability({"gpu_count": 2})
    assert not routing.wants_capability({"gpu_count": 0, "cpus": 2})
    assert not routing.wants_capability(None)


def test_a_job_longer_than_a_slurm_partitions_time_limit_is_refused_naming_it():
    partition = {"gpus": [{"index": 0, **MI300X}], "cpus": 2, "memory_mb": 2048}
    make_worker("celery@slurm", executor="slurm", inventory={**partition, "max_time_s": 3600})
    assert route({"gpu_arch": "gfx942"}, "x", timeout_s=3600).workers == ("celery@slurm",)
    with pytest.raises(Unroutable) as caught:
        route({"gpu_arch": "gfx942"}, "x", timeout_s=7200)
    assert caught.value.field == "timeout_s"
    assert "timeout of 7200 s is longer" in caught.value.message
    assert "3600 s on celery@slurm" in caught.value.message


def test_a_partitions_time_limit_keeps_a_long_job_on_the_workers_without_one():
    partition = {"gpus": [{"index": 0, **MI300X}], "cpus": 2, "memory_mb": 2048}
    make_worker("celery@slurm", executor="slurm", inventory={**partition, "max_time_s": 3600})
    make_worker("celery@box", gpus=[MI300X], host="box")
    found = route({"gpu_arch": "gfx942"}, "x", timeout_s=7200)
    assert found.workers == ("celery@box",) and found.queue == host_queue("box")
