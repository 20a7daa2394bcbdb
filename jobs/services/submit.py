"""Submit: validate a job and create its row; it is queued once the transaction commits.

Views, the CLI, reruns and schedules all come through submit_job, so a job is created
and queued the same way whoever launched it.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import transaction

from config.celery import queue_task
from jobs import routing
from jobs.choices import JobStatus, LaunchType
from jobs.models import Job, Schedule, TunedFile
from jobs.param_caps import param_cap_errors
from stack.kinds import KINDS, ParamsError, validate_params
from stack.tune.registry import STALE
from teams.access import writable_team_ids
from teams.facts import with_project_defaults
from teams.models import AdoptionProject, SourceSnapshot, Team
from teams.sources import newest_ready


class SubmissionError(Exception):
    """Bad submission input, as field errors (the API turns it into a 400)."""

    def __init__(self, errors: dict[str, list[str]]) -> None:
        super().__init__("; ".join(f"{k}: {' '.join(v)}" for k, v in errors.items()))
        self.errors = errors


@dataclass(frozen=True)
class Submission:
    """A submission that passed every check: what the job row is made of."""

    kind: Any  # the kind's spec (stack.kinds)
    team: Team
    project: AdoptionProject | None
    params: dict
    source: SourceSnapshot | None
    hardware: dict
    timeout_s: int
    image: str
    tuned_file: TunedFile | None = None
    route: routing.Route | None = None  # where it waits (a GPU job, or one naming a queue)


# Docker's reference grammar (distribution/reference), as one expression: an optional
# registry host[:port]/, path components of lowercase letters and digits joined by . _ __
# or dashes, an optional :tag and an optional @algorithm:hex digest.
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
IMAGE_REFERENCE = re.compile(
    rf"(?:[A-Za-z0-9.-]+(?::[0-9]+)?/)?{_COMPONENT}(?:/{_COMPONENT})*"
    r"(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(?:@[a-z0-9]+(?:[+._-][a-z0-9]+)*:[0-9a-f]{32,})?"
)


def check_submission(
    *,
    user: Any,
    kind: str,
    params: dict | None = None,
    team: Team | None = None,
    project: AdoptionProject | None = None,
    hardware: dict | None = None,
    timeout_s: int | None = None,
    image: str = "",
    source: SourceSnapshot | None = None,
    tuned_file: TunedFile | None = None,
) -> Submission:
    """Every check submit_job makes, without making the job: a schedule is checked this way
    when it is saved, and its job again when it fires (access or caps may have changed).

    ``tuned_file``: a registered tuned GEMM file the job runs with; refused when it is of
    another team or stale against the stack the team last ran that image on
    (jobs.services.tuned_files).
    """
    errors: dict[str, list[str]] = {}
    writable = writable_team_ids(user) if user is not None else None
    if project is None and source is not None:
        project = source.project  # a snapshot names its project, and so its team
    if team is None and project is not None:
        team = project.team
    if team is None:
        if writable and len(writable) == 1:
            team = Team.objects.get(pk=writable[0])
        else:
            errors["team"] = ["Choose the team this job belongs to."]
    elif writable is not None and team.pk not in writable:
        errors["team"] = ["You cannot submit jobs for this team."]
    if project is not None and team is not None and project.team_id != team.pk:
        errors["project"] = ["This project belongs to another team."]

    # A job for a project gets what its kind takes from the project (compile-check: the
    # architectures of its GPUs), whichever way it comes (page, REST, CLI), unless it
    # names its own.
    params = with_project_defaults(KINDS.get(kind), project, params)
    clean_params: dict = {}
    spec = KINDS.get(kind)
    if spec is None:
        errors["kind"] = [f"Unknown job kind {kind!r}; known kinds: {', '.join(sorted(KINDS))}."]
    else:
        try:
            clean_params = validate_params(kind, params or {})
        except ParamsError as exc:
            errors["params"] = [f"{name}: {m}" for name, msgs in exc.errors.items() for m in msgs]
        if capped := param_cap_errors(kind, clean_params, spec.params_schema):
            errors.setdefault("params", []).extend(capped)

    limit = settings.ROCPATH_JOB_TIMEOUT_MAX_S
    if timeout_s is not None and not (1 <= timeout_s <= limit):
        errors["timeout_s"] = [f"Must be between 1 and {limit} seconds."]
    if spec is not None:
        project, source = _resolve_source(spec, project, source, errors)
    if hardware is not None and (hardware_errors := validate_hardware(hardware)):
        errors["hardware"] = hardware_errors
    if team is not None and (queue_errors := routing.queue_errors(hardware, team)):
        errors.setdefault("hardware", []).extend(queue_errors)
    if image and not IMAGE_REFERENCE.fullmatch(image):
        # Quoted wherever it is used, but a newline or `$(…)` is never a real image.
        errors["image"] = [f"{image[:200]!r} is not an image reference (registry/name:tag@digest)."]
    elif image and not any(image.startswith(p) for p in settings.ROCPATH_IMAGE_ALLOW):
        errors["image"] = [
            f"Images must start with one of: {', '.join(settings.ROCPATH_IMAGE_ALLOW)}."
        ]
    problem = (
        _tuned_file_problem(tuned_file, team, image or image_for(kind))
        if tuned_file is not None and team is not None and spec is not None
        else None
    )
    if problem:
        errors["tuned_file"] = [problem]
    route = None
    if not errors:
        assert spec is not None
        try:
            route = _route(
                hardware or {},
                image or image_for(kind),
                min(timeout_s or spec.default_timeout_s, limit),
                clean_params.get("registered_model") or None,
            )
        except routing.Unroutable as exc:
            errors[exc.field] = [exc.message]
    if errors:
        raise SubmissionError(errors)
    assert spec is not None and team is not None
    return Submission(
        kind=spec,
        team=team,
        project=project,
        params=clean_params,
        source=source,
        hardware=hardware or {},
        timeout_s=min(timeout_s or spec.default_timeout_s, limit),
        image=image or image_for(kind),
        tuned_file=tuned_file,
        route=route,
    )


def _route(
    hardware: dict, image: str, timeout_s: int, model: str | None = None
) -> routing.Route | None:
    """A GPU job's route among the live workers, and a job naming a registered model's (to
    the workers that hold it); a CPU job naming a queue goes there; any other job goes to
    the default queue, unchecked, as before the fleet announced."""
    if routing.wants_capability(hardware) or (model and not hardware.get("queue")):
        return routing.route(hardware, image, timeout_s=timeout_s, model=model)
    if hardware.get("queue"):
        return routing.Route(str(hardware["queue"]), "")
    return None


def submit_job(
    *,
    user: Any,
    kind: str,
    params: dict | None = None,
    team: Team | None = None,
    project: AdoptionProject | None = None,
    hardware: dict | None = None,
    timeout_s: int | None = None,
    launch_type: str = LaunchType.MANUAL,
    rerun_of: Job | None = None,
    image: str = "",
    source: SourceSnapshot | None = None,
    schedule: Schedule | None = None,
    tuned_file: TunedFile | None = None,
) -> Job:
    """Validate and create a job; it is queued once the surrounding transaction commits
    (``tuned_file``: see check_submission)."""
    checked = check_submission(
        user=user,
        kind=kind,
        params=params,
        team=team,
        project=project,
        hardware=hardware,
        timeout_s=timeout_s,
        image=image,
        source=source,
        tuned_file=tuned_file,
    )
    with transaction.atomic():
        job = Job.objects.create(
            kind=kind,
            params=checked.params,
            team=checked.team,
            project=checked.project,
            created_by=user if getattr(user, "is_authenticated", False) else None,
            requested_hardware=checked.hardware,
            executor=settings.ROCPATH_EXECUTOR,
            image=checked.image,
            launch_type=launch_type,
            rerun_of=rerun_of,
            schedule=schedule,
            source=checked.source,
            timeout_s=checked.timeout_s,
            tuned_file=checked.tuned_file,
            queue=checked.route.queue if checked.route else "",
            route_note=checked.route.note if checked.route else "",
        )
        transaction.on_commit(lambda: enqueue(job))
    return job


def rerun_job(original: Job, *, user: Any) -> Job:
    """The same kind and parameters again; a job that reads source gets the newest snapshot."""
    return submit_job(
        user=user,
        kind=original.kind,
        params=original.params,
        team=original.team,
        project=original.project,
        hardware=original.requested_hardware,
        timeout_s=original.timeout_s,
        launch_type=LaunchType.RERUN,
        rerun_of=original,
        image=original.image,
        tuned_file=original.tuned_file,
    )


def _tuned_file_problem(tuned_file: TunedFile, team: Team, image: str) -> str | None:
    """Why this job may not run with that tuned file, or None."""
    from jobs.services.tuned_files import freshness, target_environment

    if tuned_file.team_id != team.pk:
        return "This tuned file belongs to another team."
    environment = target_environment(team.pk, image)
    found = freshness(tuned_file, environment.data if environment else None)
    if found.status == STALE:
        return "The tuned file is stale for this stack: " + "; ".join(found.reasons)
    return None


def _resolve_source(
    kind: Any, project: AdoptionProject | None, source: SourceSnapshot | None, errors: dict
) -> tuple[AdoptionProject | None, SourceSnapshot | None]:
    """The code snapshot a kind that reads source gets: the one asked for, or the newest."""
    if not kind.takes_source:
        if source is not None:
            errors["source"] = [f"Jobs of kind {kind.name} do not read source code."]
        return project, None
    if source is not None:
        if project is not None and source.project_id != project.pk:
            errors["source"] = ["This source belongs to another project."]
        elif source.status != SourceSnapshot.Status.READY:
            errors["source"] = [f"Source {source.pk} is {source.status}, not ready."]
        return project or source.project, source
    if project is None:
        errors["project"] = [f"Jobs of kind {kind.name} scan a project's code: choose the project."]
        return project, None
    source = newest_ready(project)  # the current code; another lineage is named explicitly
    if source is None:
        errors["source"] = [
            f"Project {project.name!r} has no source code yet: upload an archive or add a git URL."
        ]
    return project, source


MAX_GPUS_PER_JOB = 64
MAX_GPU_INDEX = 1023
QUEUE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")


def _bounded(kinds: tuple[type, ...], low: float, high: float) -> Callable[[object], str | None]:
    names = " or ".join(k.__name__ for k in kinds)

    def check(value: object) -> str | None:
        if isinstance(value, bool) or not isinstance(value, kinds):
            return f"must be {names}"
        if value < 0:
            return "must not be negative"
        if not low <= value <= high:
            return f"must be between {low} and {high}"
        return None

    return check


def _gpu_indices(value: object) -> str | None:
    if not isinstance(value, list):
        return "must be a list of GPU indices"
    if not 1 <= len(value) <= MAX_GPUS_PER_JOB:
        return f"must list between 1 and {MAX_GPUS_PER_JOB} indices"
    if any(isinstance(i, bool) or not isinstance(i, int) or i < 0 for i in value):
        return "must be a list of non-negative integers"
    if max(value) > MAX_GPU_INDEX:
        return f"indices must be at most {MAX_GPU_INDEX}"
    if len(set(value)) != len(value):
        return "must not name a GPU twice"
    return None


def _queue(value: object) -> str | None:
    if not isinstance(value, str) or not QUEUE_NAME.fullmatch(value):
        return "must be a queue name: letters, digits, - and _, at most 64 characters"
    return None


def _gpu_vendor(value: object) -> str | None:
    return None if value in ("amd", "nvidia") else "must be amd or nvidia"


def _gpu_model(value: object) -> str | None:
    if not isinstance(value, str) or not 1 <= len(value.strip()) <= 100:
        return "must be a GPU model name (or part of one, e.g. MI300X), at most 100 characters"
    return None


def _gpu_arch(value: object) -> str | None:
    if not isinstance(value, str) or not re.fullmatch(r"(gfx[0-9a-f]{3,5}|sm_[0-9]{2,3}a?)", value):
        return "must be a GPU architecture: gfx followed by its number (gfx942) or sm_NN (sm_90)"
    return None


# The schema of a job's hardware request: each field's check says what is wrong, or None.
# The executors then clamp the limits to the server's caps.
HARDWARE_FIELDS: dict[str, Callable[[object], str | None]] = {
    "queue": _queue,
    "gpu_vendor": _gpu_vendor,
    "gpu_count": _bounded((int,), 0, MAX_GPUS_PER_JOB),
    "gpu_indices": _gpu_indices,
    "gpu_model": _gpu_model,  # a part of the model name, any case: "MI300X"
    "gpu_arch": _gpu_arch,  # exact: gfx942, sm_90
    "gpu_memory_gb": _bounded((int, float), 0, 64 * 1024),  # per GPU, GiB, at least
    "memory_mb": _bounded((int,), 16, 16 * 1024 * 1024),
    "cpus": _bounded((int, float), 0.01, 4096),
    "pids": _bounded((int,), 8, 4 * 1024 * 1024),
}


def validate_hardware(hardware: object) -> list[str]:
    """What a job may ask of its worker, each problem as "field: what is wrong"."""
    if not isinstance(hardware, dict):
        return ["Must be an object."]
    problems = []
    for key, value in hardware.items():
        check = HARDWARE_FIELDS.get(key)
        if check is None:
            problems.append(f"{str(key)[:64]}: unknown field (known: {', '.join(HARDWARE_FIELDS)})")
        elif problem := check(value):
            problems.append(f"{key}: {problem}")
    return problems


def image_for(kind: str) -> str:
    """The container image that runs a kind unless the job names one."""
    default = getattr(KINDS.get(kind), "default_image", None) or settings.ROCPATH_IMAGE
    return settings.ROCPATH_KIND_IMAGES.get(kind, default)


def queue_for(job: Job) -> str:
    """Jobs that ask for particular hardware go to the queue of the workers that have it:
    the one routing chose at submission (job.queue), or the one the job names."""
    queue = job.queue or (job.requested_hardware or {}).get("queue")
    return str(queue) if queue else settings.CELERY_TASK_DEFAULT_QUEUE


RUN_TASK = "jobs.run_job"  # jobs/tasks.py
# What a submission answers (202, the page's notice) when the broker could not be reached.
BROKER_DOWN_NOTE = (
    "The job queue could not be reached: the job is kept pending and will be queued "
    "when the broker is back."
)


def waits_for_broker(job: Job) -> bool:
    """Whether a job just submitted was kept pending because the broker could not be reached.

    Only once its transaction has committed (enqueue runs then): inside one, every new
    job is pending, and its hand-off has not been tried yet.
    """
    return job.status == JobStatus.PENDING and not transaction.get_connection().in_atomic_block


def enqueue(job: Job, *, countdown: float | None = None, note: str = "") -> bool:
    """Mark the job queued under a new task id and queue its run (by name: jobs.tasks
    imports this module), to start no sooner than ``countdown`` s from now when given.
    False when the job moved first (canceled before it could be queued).

    When the broker cannot be reached the job goes back to pending, saying so, and the
    dispatcher (services.dispatch) queues it once the broker answers: a broker outage
    delays a job, it never ends it.
    """
    task_id = str(uuid.uuid4())
    if not job.mark_queued(task_id, note=note):
        return False
    queue_task(
        RUN_TASK,
        job.pk,
        task_id=task_id,
        queue=queue_for(job),
        on_error=lambda exc: job.mark_pending(
            f"could not reach the job queue ({type(exc).__name__}: {exc}): kept pending, "
            "it is queued when the broker is back"
        ),
        countdown=countdown,
    )
    return True
