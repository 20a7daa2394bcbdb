"""Which Celery queue a job goes to, and which queues a team may name.

A queue is a promise about the workers that listen on it: an operator may give one worker
GPUs, another ``ROCPATH_LOCAL_UNSANDBOXED=1`` for code it trusts. So ``hardware.queue`` is
not the team's to choose freely: a team may name the default queue (``ROCPATH_QUEUE``) and
the queues ``ROCPATH_JOB_QUEUES`` opens to every team or to it, nothing else; and where
workers have announced themselves (jobs.fleet), only a queue a live worker consumes.

A job that asks for GPU properties is routed by capability: the live workers' announced
inventories (jobs.models.Worker) say which of them can ever serve it; none is a refusal
that names the property no worker has, and otherwise the job goes to the narrowest queue
that only capable workers consume, so that no worker takes a job it cannot run. A CPU job
goes to the default queue, as every worker consumes it.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from jobs.executors.gpu_profiles import GIB, gpu_fits, gpus_needed, wants_gpus

# ROCPATH_JOB_QUEUES's key for the queues open to every team (no team slug is "*").
EVERY_TEAM = "*"

# The hardware fields capability routing reads, matched in the order a job names them.
GPU_FIELDS = ("gpu_vendor", "gpu_model", "gpu_arch", "gpu_memory_gb", "gpu_count", "gpu_indices")
CAPABILITY_FIELDS = (*GPU_FIELDS, "cpus", "memory_mb")
QUEUE_MAX = 64  # jobs.services.submit.QUEUE_NAME


def allowed_queues(team: Any) -> list[str]:
    """The queues this team may name in ``hardware.queue``: the default first."""
    extra = settings.ROCPATH_JOB_QUEUES
    names = [settings.CELERY_TASK_DEFAULT_QUEUE]
    for queue in [*extra.get(EVERY_TEAM, []), *extra.get(team.slug, [])]:
        if queue not in names:
            names.append(queue)
    return names


def queue_errors(hardware: object, team: Any) -> list[str]:
    """``queue: ...`` when the job names a queue its team may not, or (where workers have
    announced themselves) one no live worker consumes; else nothing.

    Only a well-formed queue name is judged here; validate_hardware reports the rest.
    The default queue is never refused for want of a worker: every CPU job goes there
    unchecked, and naming it changes nothing.
    """
    if not isinstance(hardware, dict) or not isinstance(hardware.get("queue"), str):
        return []
    queue = hardware["queue"]
    allowed = allowed_queues(team)
    if queue not in allowed:
        return [
            f"queue: {queue[:64]!r} is not a queue this team may use; allowed: "
            f"{', '.join(allowed)} (ROCPATH_QUEUE and ROCPATH_JOB_QUEUES)"
        ]
    if queue == settings.CELERY_TASK_DEFAULT_QUEUE:
        return []
    from jobs.models import Worker

    if not Worker.objects.exists():  # no worker of this deployment announces: as before
        return []
    consumed = sorted({q for w in live_workers() for q in w.queues})
    if queue in consumed:
        return []
    return [
        f"queue: no live worker consumes {queue!r}; the live workers consume: "
        f"{', '.join(consumed) or 'nothing (no worker is live)'}"
    ]


# --- queue names --------------------------------------------------------------


def queue_name(*parts: str) -> str:
    """A capability queue's name: this deployment's default queue, then ``parts``.

    Prefixed with the default queue so that two deployments on one broker never share
    one; characters a queue name may not hold become "-", and a name over 64 characters
    keeps its start and gets a hash of the whole, so that it stays unique.
    """
    raw = "-".join([settings.CELERY_TASK_DEFAULT_QUEUE, *parts])
    name = re.sub(r"[^A-Za-z0-9_-]", "-", raw)
    if len(name) > QUEUE_MAX:
        digest = hashlib.sha256(raw.encode()).hexdigest()[:10]
        name = f"{name[: QUEUE_MAX - len(digest) - 1]}-{digest}"
    return name


def arch_queue(vendor: str, arch: str) -> str:
    """The queue of the workers with a GPU of this vendor and architecture."""
    return queue_name(vendor, arch)


def host_queue(host: str) -> str:
    """The queue of the workers of one host (the name its GPUs are leased under)."""
    return queue_name("host", host)


def service_queues() -> set[str]:
    """The control, alert and comparison queues: their workers run no job, so they
    announce no capability and need no room for job output."""
    return {
        settings.ROCPATH_CONTROL_QUEUE,
        settings.ROCPATH_ALERT_QUEUE,
        settings.ROCPATH_COMPARE_QUEUE,
    }


def is_host_queue(name: str) -> bool:
    """Whether a queue is one host's own: its name carries the host's, which labels and
    other teams' pages must not (docs/security.md)."""
    return name.startswith(queue_name("host", ""))


def capability_queues(inventory: dict, host: str) -> list[str]:
    """The queues a worker with this inventory on this host serves: one per (vendor,
    arch) of its GPUs, then its host's."""
    names = []
    for gpu in inventory.get("gpus") or []:
        vendor, arch = str(gpu.get("vendor") or ""), str(gpu.get("arch") or "")
        if vendor and arch and (name := arch_queue(vendor, arch)) not in names:
            names.append(name)
    return [*names, host_queue(host)]


# --- capability ---------------------------------------------------------------


def wants_capability(hardware: dict | None) -> bool:
    """Whether a job is routed by capability: it asks for a GPU or a GPU's property (the
    same question the leases ask: jobs.executors.gpu_profiles.wants_gpus)."""
    return wants_gpus(hardware)


def live_workers() -> list[Any]:
    """The workers seen within ROCPATH_WORKER_GONE_S and not stopped, by name."""
    from jobs.models import Worker
    from jobs.models.worker import live_since

    return list(Worker.objects.filter(stopped_at__isnull=True, last_seen_at__gte=live_since()))


def fitting_gpus(inventory: dict, hardware: dict) -> dict[str, list[int]]:
    """vendor → the positions (in that vendor's list, as leases number them) of the GPUs
    that fit the job and that the worker lends."""
    found: dict[str, list[int]] = {}
    positions: dict[str, int] = {}
    for gpu in inventory.get("gpus") or []:
        vendor = str(gpu.get("vendor") or "")
        position = positions[vendor] = positions.get(vendor, -1) + 1
        if gpu.get("lent", True) and gpu_fits(gpu, hardware):
            found.setdefault(vendor, []).append(position)
    return found


def serves(
    worker: Any,
    hardware: dict,
    image: str | None = None,
    timeout_s: int | None = None,
    model: str | None = None,
) -> bool:
    """Whether this worker can ever run a job asking for ``hardware`` (and ``image``, for
    ``timeout_s``: a Slurm partition announces its MaxTime, and a longer job would pend
    there until its own timeout ended it; ``model``: a registered model its registry
    must hold, jobs.fleet's ``inventory.models``)."""
    inventory = worker.inventory or {}
    if model and model not in (inventory.get("models") or []):
        return False
    limit = inventory.get("max_time_s")
    if timeout_s is not None and isinstance(limit, int | float) and timeout_s > limit:
        return False
    if wants_gpus(hardware):
        named = hardware.get("gpu_indices")
        fits = fitting_gpus(inventory, hardware).values()
        if named and not any(set(named) <= set(found) for found in fits):
            return False
        if not any(len(found) >= gpus_needed(hardware) for found in fits):
            return False
    for key in ("cpus", "memory_mb"):
        have = inventory.get(key)
        if key in hardware and isinstance(have, int | float) and have < hardware[key]:
            return False
    return image is None or runs_image(worker, image)


def runs_image(worker: Any, image: str) -> bool:
    """A docker worker runs the images its engine has; the others run any."""
    if worker.executor != "docker":
        return True
    present = set((worker.inventory or {}).get("images") or [])
    tagged = image if ":" in image.rsplit("/", 1)[-1] or "@" in image else f"{image}:latest"
    return image in present or tagged in present


class Unroutable(Exception):
    """No live worker can ever serve the job: ``field`` says which of its asks it is."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


@dataclass(frozen=True)
class Route:
    """Where a job waits, and why there (what the job page says)."""

    queue: str
    note: str
    workers: tuple[str, ...] = ()


def route(
    hardware: dict,
    image: str,
    *,
    timeout_s: int | None = None,
    workers: Sequence[Any] | None = None,
    model: str | None = None,
) -> Route:
    """The queue a job asking for GPU properties goes to, among the live workers.

    Raises Unroutable naming the first property (in the order the job names them) that
    leaves no live worker, with what the fleet has of it. A job naming ``queue`` (an
    operator's override, validated by queue_errors) goes there, if one of its consumers
    can serve it.
    """
    live = list(live_workers() if workers is None else workers)
    if model and not live:
        raise Unroutable(
            "params",
            f"registered_model: no live worker has announced itself, so none holds {model!r} "
            "(start a worker with ROCPATH_MODEL_ROOT: docs/inference.md)",
        )
    named = hardware.get("queue")
    pool = [w for w in live if named in w.queues] if named else live
    capable = _eliminate(
        pool, hardware, image, timeout_s, where=f" consuming {named}" if named else ""
    )
    if model:
        holding = [w for w in capable if serves(w, {}, None, None, model)]
        if not holding:
            raise Unroutable(
                "params",
                f"registered_model: no live worker able to run the job holds the model "
                f"{model!r} (the fleet has: {_models_text(capable)}; register it under a "
                "worker's ROCPATH_MODEL_ROOT: docs/inference.md)",
            )
        capable = holding
    if named:
        return Route(named, _note(named, capable, "named by hardware.queue; "), _names(capable))

    def only_capable(queue: str) -> list[Any] | None:
        consumers = [w for w in live if queue in w.queues]
        capable = all(serves(w, hardware, image, timeout_s, model) for w in consumers)
        return consumers if capable else None

    by_arch: dict[str, list[Any]] = {}
    for worker in capable:
        for gpu in worker.inventory.get("gpus") or []:
            if gpu_fits(gpu, hardware) and gpu.get("arch"):
                queue = arch_queue(str(gpu.get("vendor")), str(gpu["arch"]))
                fresh = queue in worker.queues and queue not in by_arch
                if fresh and (consumers := only_capable(queue)) is not None:
                    by_arch[queue] = consumers
    if by_arch:  # the one most capable workers consume; the least busy of those
        queue = min(by_arch, key=lambda q: (-len(by_arch[q]), _busy(by_arch[q]), q))
        return Route(queue, _note(queue, by_arch[queue]), _names(by_arch[queue]))
    for worker in sorted(capable, key=lambda w: (w.jobs_running, w.name)):
        queue = host_queue(worker.host)
        if queue in worker.queues and (consumers := only_capable(queue)) is not None:
            return Route(queue, _note(queue, consumers), _names(consumers))
    raise Unroutable(
        "hardware",
        f"no queue is consumed only by workers that can serve this job: "
        f"{_names_text(capable)} can, but share their queues with workers that cannot "
        "(give workers of different GPUs their own ROCPATH_GPU_HOST: docs/fleet.md)",
    )


def _eliminate(
    pool: list[Any], hardware: dict, image: str, timeout_s: int | None, *, where: str = ""
) -> list[Any]:
    """The workers of ``pool`` that serve the job; Unroutable naming the first ask that
    leaves none."""
    if not pool:
        raise Unroutable(
            "hardware",
            f"{_first_ask(hardware)}: no live worker{where} has announced itself, so none "
            "can run a GPU job (start a worker on a GPU host: docs/fleet.md)",
        )
    asks = [key for key in hardware if key in CAPABILITY_FIELDS]
    candidates = pool
    for i, key in enumerate(asks):
        subset = {k: hardware[k] for k in asks[: i + 1]}
        left = [w for w in candidates if serves(w, subset)]
        if not left:
            raise Unroutable(
                "hardware",
                f"{key}: no live worker{where} has {_describe(subset)} "
                f"(the fleet has: {_offers(key, candidates, subset)})",
            )
        candidates = left
    left = [w for w in candidates if serves(w, hardware, image)]
    if not left:
        raise Unroutable(
            "image",
            f"no live docker worker able to run the job has the image {image!r} "
            f"({_names_text(candidates)} would, with it: build or pull it there)",
        )
    timely = [w for w in left if serves(w, hardware, image, timeout_s)]
    if not timely:
        limits = "; ".join(f"{(w.inventory or {}).get('max_time_s')} s on {w.name}" for w in left)
        raise Unroutable(
            "timeout_s",
            f"the job's timeout of {timeout_s} s is longer than any capable worker's time "
            f"limit (a Slurm partition's MaxTime: {limits}); ask for less",
        )
    return timely


def _models_text(workers: list[Any]) -> str:
    held = sorted({m for w in workers for m in (w.inventory or {}).get("models") or []})
    return ", ".join(held) if held else "no registered models"


def _first_ask(hardware: dict) -> str:
    return next((k for k in hardware if k in CAPABILITY_FIELDS), "gpu_count")


def _describe(asks: dict) -> str:
    """What the asks so far want, in words: "a gfx942 GPU", "2 amd GPUs with >= 192 GiB"."""
    parts = []
    if any(key in asks for key in GPU_FIELDS):
        words = [str(asks[k]) for k in ("gpu_vendor", "gpu_model", "gpu_arch") if k in asks]
        count = gpus_needed(asks)
        text = " ".join([*words, "GPUs" if count > 1 else "GPU"])
        text = f"{count} {text}" if count > 1 else f"{_article(text)} {text}"
        if "gpu_indices" in asks:
            text += f" at indices {asks['gpu_indices']}"
        if "gpu_memory_gb" in asks:
            text += f" with >= {asks['gpu_memory_gb']} GiB"
        parts.append(text)
    if "cpus" in asks:
        parts.append(f"{asks['cpus']} CPUs")
    if "memory_mb" in asks:
        parts.append(f"{asks['memory_mb']} MB of memory")
    return " and ".join(parts)


def _article(text: str) -> str:
    """ "an" before what is read with a vowel first: amd, nvidia, sm_90, MI300X, H200."""
    return "an" if text[:1].lower() in "aefhilmnorsx" else "a"


def _offers(key: str, workers: Iterable[Any], asks: dict) -> str:
    """What the workers have of the property ``key``: "sm_90 on celery@h200-1; ..."."""
    earlier = {k: v for k, v in asks.items() if k != key}
    found: dict[str, list[str]] = {}
    for worker in workers:
        inventory = worker.inventory or {}
        gpus = [g for g in inventory.get("gpus") or [] if gpu_fits(g, earlier)]
        if key in ("gpu_vendor", "gpu_model", "gpu_arch"):
            field = key.removeprefix("gpu_")
            values = sorted({str(g.get(field)) for g in gpus}) or ["no GPU"]
        elif key == "gpu_memory_gb":
            values = sorted({f"{(g.get('memory_bytes') or 0) / GIB:.0f} GiB" for g in gpus})
        elif key in ("gpu_count", "gpu_indices"):
            counts = [len(found) for found in fitting_gpus(inventory, earlier).values()]
            values = [f"{max(counts, default=0)} such GPU(s)"]
        else:
            have = inventory.get(key)
            values = [f"{have} {'CPUs' if key == 'cpus' else 'MB'}" if have is not None else "?"]
        for value in values or ["nothing"]:
            found.setdefault(value, []).append(worker.name)
    return "; ".join(f"{value} on {', '.join(names)}" for value, names in found.items())


def _busy(workers: Iterable[Any]) -> int:
    return sum(w.jobs_running for w in workers)


def _names(workers: Iterable[Any]) -> tuple[str, ...]:
    return tuple(sorted(w.name for w in workers))


def _names_text(workers: Iterable[Any]) -> str:
    return ", ".join(_names(workers)) or "none"


def _note(queue: str, workers: Sequence[Any], why: str = "") -> str:
    """The job page's line: where it waits, who takes jobs from there, how busy they are."""
    state = ", ".join(
        f"{w.name} busy ({w.jobs_running} running)" if w.jobs_running else f"{w.name} idle"
        for w in sorted(workers, key=lambda w: w.name)
    )
    note = (
        f"waiting on {queue}: {why}consumed by {len(workers)} capable worker(s): "
        f"{_names_text(workers)}; {state}"
    )
    return note if len(note) <= 500 else note[:497] + "..."
