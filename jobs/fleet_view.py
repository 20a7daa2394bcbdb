"""The fleet as people read it: each worker's state, its GPUs summarized, the jobs it runs
that the reader may see, and where a waiting job waits and why.

The Workers page, the workers API and the job page (and the job API's ``waiting``) all
read the fleet through this module, so that "live", "gone" and "busy" mean one thing
everywhere. Writing the rows is jobs.fleet's (the workers' announcements); nothing here
writes. The fleet is tens of rows, not thousands: filters that look inside the JSON
fields (vendor, queue) run in Python, which also keeps them working on SQLite, where
JSON containment lookups do not exist.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db.models import QuerySet
from django.utils import timezone

from jobs.choices import JobStatus
from jobs.models import Job, Worker
from jobs.models.worker import live_since
from teams.access import AnyUser


class WorkerState:
    """What the page's badge and the API's ``state`` say of a worker."""

    LIVE = "live"  # seen within ROCPATH_WORKER_GONE_S
    GONE = "gone"  # not seen for that long, never said goodbye (lost, killed, unplugged)
    STOPPED = "stopped"  # stopped cleanly (stopped_at set)

    # Live first: the fleet that serves jobs now, then what left.
    ORDER = (LIVE, GONE, STOPPED)


WAITING_STATUSES = (JobStatus.PENDING, JobStatus.QUEUED)


def state_of(worker: Worker, since: Any = None) -> str:
    """live, gone or stopped; ``since`` is live_since() when one call judges many rows."""
    if worker.stopped_at is not None:
        return WorkerState.STOPPED
    return WorkerState.LIVE if worker.last_seen_at >= (since or live_since()) else WorkerState.GONE


def gpu_groups(inventory: dict[str, Any]) -> list[dict[str, Any]]:
    """The inventory's GPUs as "count x model" groups (same vendor, model, arch, memory).

    A host of eight MI300X is one line, not eight; a host that mixes models keeps one
    line per model. Order: as the first of each group appears in the inventory.
    """
    gpus = inventory.get("gpus") if isinstance(inventory, dict) else None
    counts: Counter[tuple[Any, ...]] = Counter()
    for gpu in gpus if isinstance(gpus, list) else []:
        if isinstance(gpu, dict):
            key = (gpu.get("vendor"), gpu.get("model"), gpu.get("arch"), gpu.get("memory_bytes"))
            counts[key] += 1
    return [
        {"count": n, "vendor": v, "model": m, "arch": a, "memory_bytes": mem}
        for (v, m, a, mem), n in counts.items()  # Counter keeps first-seen order
    ]


def vendors_of(worker: Worker) -> set[str]:
    gpus = (worker.inventory or {}).get("gpus") or []
    return {str(g.get("vendor", "")).lower() for g in gpus if isinstance(g, dict)}


def consumes(worker: Worker, queue: str) -> bool:
    return isinstance(worker.queues, list) and queue in worker.queues


@dataclass
class FleetMember:
    """A worker with what the reader is shown of it."""

    worker: Worker
    state: str
    gpus: list[dict[str, Any]]
    jobs: list[Job] = field(default_factory=list)  # running on it, of the reader's teams

    @property
    def seen_s_ago(self) -> int:
        return max(0, int((timezone.now() - self.worker.last_seen_at).total_seconds()))

    @property
    def software(self) -> dict[str, Any]:
        software = (self.worker.inventory or {}).get("software")
        return software if isinstance(software, dict) else {}

    @property
    def images(self) -> list[Any]:
        images = (self.worker.inventory or {}).get("images")
        return images if isinstance(images, list) else []


def fleet(
    *, state: str | None = None, vendor: str | None = None, queue: str | None = None
) -> list[FleetMember]:
    """Every worker (one query), live first, then gone, then stopped, by name within each.

    ``state``, ``vendor`` (amd / nvidia: has at least one such GPU) and ``queue`` (consumes
    it) narrow the list; jobs are not attached yet (with_visible_jobs, for the rows shown).
    """
    since = live_since()
    members = []
    for worker in Worker.objects.order_by("name"):
        member = FleetMember(worker, state_of(worker, since), gpu_groups(worker.inventory or {}))
        if state and member.state != state:
            continue
        if vendor and vendor.lower() not in vendors_of(worker):
            continue
        if queue and not consumes(worker, queue):
            continue
        members.append(member)
    members.sort(key=lambda m: WorkerState.ORDER.index(m.state))  # stable: names stay sorted
    return members


def running_jobs_visible_to(user: AnyUser, worker_names: list[str]) -> QuerySet[Job]:
    """Running jobs on these workers of the user's teams only: one query, teams joined in.

    The fleet is shared infrastructure, every signed-in user sees it; the jobs on it are
    their teams' business (teams.access), so another team's job is not even counted here.
    """
    if not user.is_authenticated or not worker_names:
        return Job.objects.none()
    return (
        Job.objects.filter(
            status=JobStatus.RUNNING,
            worker__in=worker_names,
            team__memberships__user=user,
        )
        .only("id", "kind", "status", "worker", "team_id")
        .order_by("id")
    )


def with_visible_jobs(members: list[FleetMember], user: AnyUser) -> list[FleetMember]:
    """Attach to each member the running jobs the user may see (one query for all)."""
    by_name = {m.worker.name: m for m in members}
    for job in running_jobs_visible_to(user, list(by_name)):
        by_name[job.worker].jobs.append(job)
    return members


def member(worker: Worker, user: AnyUser) -> FleetMember:
    """One worker as the detail page and API show it."""
    one = FleetMember(worker, state_of(worker), gpu_groups(worker.inventory or {}))
    return with_visible_jobs([one], user)[0]


@dataclass(frozen=True)
class Waiting:
    """Where a pending or queued job waits, why it was sent there, and who could take it."""

    queue: str
    is_default: bool  # routed nowhere in particular: the default queue
    route_note: str
    status: str
    live_workers: list[str]  # live workers consuming the queue, by name
    busy_workers: list[str]  # those of them running a job now

    @property
    def idle_workers(self) -> int:
        return len(self.live_workers) - len(self.busy_workers)

    @property
    def note(self) -> str:
        """One sentence on what happens next, for the page and the API alike."""
        if self.status == JobStatus.PENDING:
            lead = "Not yet handed to the queue (it is once the broker takes it); then: "
        else:
            lead = ""
        if not self.live_workers:
            return (
                f"{lead}no live worker consumes this queue now: it will wait until one does "
                f"or the reaper ends it after ROCPATH_QUEUED_GRACE_S "
                f"({settings.ROCPATH_QUEUED_GRACE_S} s)."
            )
        n, busy = len(self.live_workers), len(self.busy_workers)
        workers = f"{n} live worker{'s' if n != 1 else ''} consume{'s' if n == 1 else ''} it"
        if busy == n:
            return f"{lead}{workers}, all busy: it runs when one of them finishes its job."
        return f"{lead}{workers}, {busy} busy: a free one should take it shortly."

    def as_dict(self) -> dict[str, Any]:
        return {
            "queue": self.queue,
            "default_queue": self.is_default,
            "route_note": self.route_note,
            "live_workers": self.live_workers,
            "busy_workers": self.busy_workers,
            "note": self.note,
        }


def queue_of(job: Job) -> str:
    """The queue the job waits on: routed (job.queue), named by hand, or the default."""
    hardware = job.requested_hardware if isinstance(job.requested_hardware, dict) else {}
    return job.queue or str(hardware.get("queue") or "") or settings.CELERY_TASK_DEFAULT_QUEUE


def waiting_for(job: Job) -> Waiting | None:
    """Where a pending or queued job waits and what the fleet on that queue is doing now.

    None for a job that is not waiting (running or ended). One query: the live workers.
    """
    if job.status not in WAITING_STATUSES:
        return None
    queue = queue_of(job)
    consumers = [
        w
        for w in Worker.objects.filter(stopped_at__isnull=True, last_seen_at__gte=live_since())
        .only("name", "queues", "jobs_running")
        .order_by("name")
        if consumes(w, queue)
    ]
    return Waiting(
        queue=queue,
        is_default=queue == settings.CELERY_TASK_DEFAULT_QUEUE,
        route_note=job.route_note,
        status=job.status,
        live_workers=[w.name for w in consumers],
        busy_workers=[w.name for w in consumers if w.jobs_running > 0],
    )
