"""What a job kind is (Kind) and how its parameters are checked, without any kind in it.

Each kind is one module, ``stack/kinds/<kind>.py``, that builds its ``KIND`` from
this; stack/kinds/__init__.py lists those modules. A kind module stays light at
import time (the orchestrator imports every one to list and validate): its runner
is named by a dotted path and imported only when a job of that kind runs.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from stack.runtime import RunContext, RunResult

Runner = Callable[[dict[str, Any], "RunContext"], "RunResult"]

NON_FIELD_ERRORS = "non_field_errors"


class UnknownKind(LookupError):
    """No kind of that name is registered."""

    def __init__(self, name: str, known: Iterable[str] = ()) -> None:
        super().__init__(f"unknown kind {name!r}; known kinds: {', '.join(sorted(known))}")
        self.name = name


class Cap:
    """What this installation gives one job, by name: a kind says which of its parameters
    counts against which (``Kind.param_caps``), and the server reads each cap's value from
    its settings (jobs/param_caps.py), so no generic code keeps a table of kinds."""

    RUN_SECONDS = "run_seconds"  # the longest a job may run
    FILE_BYTES = "file_bytes"  # the largest file a job may write
    MEMORY_MB = "memory_mb"  # the memory one job may take
    PROCESSES = "processes"  # the processes one job may start
    CPUS = "cpus"  # this host's CPUs
    ALL = (RUN_SECONDS, FILE_BYTES, MEMORY_MB, PROCESSES, CPUS)


class ProjectFact:
    """What a kind may take from the project a job is for, by name: ``Kind.project_defaults``
    maps a parameter to one of these, and the server fills it from the project
    (teams/facts.py) when the job does not name its own."""

    COMPILE_TARGETS = "compile_targets"  # the AMD architectures of the project's target GPUs
    VENDORED = "vendored"  # globs of third-party code in the project's tree
    NOT_VENDORED = "not_vendored"  # globs of its own code the detection took for vendored
    HAZARDS_OFF = "hazards_off"  # hazard rules the project does not count
    ALL = (COMPILE_TARGETS, VENDORED, NOT_VENDORED, HAZARDS_OFF)


class RoadmapTask:
    """The adoption roadmap's built-in tasks, by name: a kind says which it serves
    (``Kind.roadmap_tasks``), and the roadmap (roadmap/plan.py) links each task to the kinds
    that serve it, so a new kind joins its task without the roadmap naming it."""

    ASSESS_PORTING = "assess-porting"  # 1: assess porting complexity with HIPIFY
    BENCHMARK_LIBRARIES = "benchmark-libraries"  # 1: benchmark the ROCm math libraries
    HARDWARE_PLAN = "hardware-plan"  # 1: hardware purchase and deployment plan
    DEV_ENVIRONMENT = "dev-environment"  # 2: set up the ROCm development environment
    PORT_KERNELS = "port-kernels"  # 2: port the core kernels
    MEMORY_ACCESS = "memory-access"  # 2: optimise memory-access patterns
    FIND_BOTTLENECKS = "find-bottlenecks"  # 3: find bottlenecks with the profiler
    TUNE_KERNELS = "tune-kernels"  # 3: tune kernel parameters and launch configuration
    MULTI_GPU = "multi-gpu"  # 3: optimise multi-GPU communication
    DEPLOY = "deploy"  # 4: containerised deployment
    MONITORING = "monitoring"  # 4: monitoring and alerting integration
    BASELINE = "baseline"  # 4: establish the performance baseline
    ALL = (
        ASSESS_PORTING,
        BENCHMARK_LIBRARIES,
        HARDWARE_PLAN,
        DEV_ENVIRONMENT,
        PORT_KERNELS,
        MEMORY_ACCESS,
        FIND_BOTTLENECKS,
        TUNE_KERNELS,
        MULTI_GPU,
        DEPLOY,
        MONITORING,
        BASELINE,
    )


# What a kind's own roadmap task key looks like: the Task row's key (64 characters at most).
TASK_KEY_PATTERN = re.compile(r"^[a-z][a-z0-9-]{0,63}$")


@dataclass(frozen=True)
class NewRoadmapTask:
    """A roadmap task a kind brings with it (``Kind.new_roadmap_tasks``), beside the
    built-in RoadmapTask ones: the roadmap finds it in the kinds registry and adds it to
    every project's phase, so a kind whose work the built-in table never foresaw (serving
    an LLM) is a task of the roadmap without an edit to roadmap/plan.py. The declaring
    kind serves it."""

    phase: int
    key: str  # unique among all tasks, built-in or declared; never renamed (rows hold it)
    title: str


class GateCheck:
    """The gate checks the roadmap runs on what a kind's jobs record, by name: a kind
    declares a criterion as one of these (``Kind.gate_criteria``), and roadmap/criteria.py
    holds each check's reading, so the roadmap names no kind and a check counts once a
    kind declares it."""

    # The SLO point's goodput per GPU (summary["serving"], per mode) of the newest
    # succeeded job against the project's pinned baseline job's, within within_pct.
    SERVING_GOODPUT_NEAR_BASELINE = "serving-goodput-near-baseline"
    ALL = (SERVING_GOODPUT_NEAR_BASELINE,)


@dataclass(frozen=True)
class GateCriterion:
    """An exit criterion of a roadmap phase that a kind declares (``Kind.gate_criteria``):
    which GateCheck, the phase whose gate it holds, and the bound the check allows."""

    phase: int
    check: str  # a GateCheck name
    within_pct: float = 10.0  # how far below the baseline still passes, in %


class ParamsError(ValueError):
    """Parameters that do not fit a kind's schema.

    ``errors`` maps a field name (dotted for nested values,
    ``non_field_errors`` for the object as a whole) to readable messages, the
    shape DRF and Django forms already use.
    """

    def __init__(self, errors: dict[str, list[str]]) -> None:
        detail = "; ".join(f"{field}: {', '.join(msgs)}" for field, msgs in errors.items())
        super().__init__(f"invalid params: {detail}")
        self.errors = errors


@dataclass(frozen=True)
class Kind:
    """One kind of job.

    ``params_schema`` is a JSON Schema of an object with
    ``"additionalProperties": false`` and a ``default`` for every field (so
    none is required: a job that asks for nothing gets the defaults);
    ``runner`` is ``"module:function"``, imported when the job runs.

    The rest is what the orchestrator and the portal may ask of a kind instead
    of naming it: ``needs_gpu`` (what it measures is a GPU: without one it runs,
    but says little), ``default_image`` (the container image for its jobs; None:
    the server's ``ROCPATH_IMAGE``), ``phases`` (the roadmap phases, 1 to 4, whose
    work it does; empty for the orchestrator's own kinds) and ``install_hints``
    (where each external tool it drives comes from, for ToolMissing messages),
    ``param_caps`` (parameter -> the Cap it may not exceed on this installation) and
    ``project_defaults`` (parameter -> the ProjectFact it defaults to when the job is
    for a project and does not name it), ``roadmap_tasks`` (the RoadmapTask names it
    serves), ``new_roadmap_tasks`` (tasks of its own it adds to the roadmap, and serves),
    ``gate_criteria`` (exit criteria of its own it adds to a phase's gate),
    ``example_params`` (a small first run the
    submit form and the API docs offer, when the defaults are a long one) and
    ``submit_default`` (the kind the submit form starts on: at most one kind, quick and
    harmless on any machine).
    """

    name: str
    title: str
    description: str
    params_schema: dict[str, Any]
    default_timeout_s: int
    runner: str
    # The job reads a project's source tree at WORK/src (the portal mounts the newest
    # ready snapshot there) and may keep a per-project cache in ctx.cache_dir.
    takes_source: bool = False
    needs_gpu: bool = False
    default_image: str | None = None
    phases: tuple[int, ...] = ()
    install_hints: Mapping[str, str] = field(default_factory=dict, hash=False)
    param_caps: Mapping[str, str] = field(default_factory=dict, hash=False)
    project_defaults: Mapping[str, str] = field(default_factory=dict, hash=False)
    # The RoadmapTask names whose work a job of this kind does.
    roadmap_tasks: tuple[str, ...] = ()
    new_roadmap_tasks: tuple[NewRoadmapTask, ...] = ()
    gate_criteria: tuple[GateCriterion, ...] = ()
    example_params: Mapping[str, Any] | None = field(default=None, hash=False)
    submit_default: bool = False

    def __post_init__(self) -> None:
        if any(phase not in (1, 2, 3, 4) for phase in self.phases):
            raise ValueError(f"kind {self.name}: phases must be among 1-4, not {self.phases}")
        if unknown := [t for t in self.roadmap_tasks if t not in RoadmapTask.ALL]:
            raise ValueError(f"kind {self.name}: roadmap_tasks {unknown} are not RoadmapTask names")
        for task in self.new_roadmap_tasks:
            if task.phase not in (1, 2, 3, 4) or not task.title.strip():
                raise ValueError(f"kind {self.name}: {task} needs a phase 1-4 and a title")
            if task.key in RoadmapTask.ALL or not TASK_KEY_PATTERN.match(task.key):
                raise ValueError(
                    f"kind {self.name}: new task key {task.key!r} is a built-in RoadmapTask "
                    "name or not lowercase letters, digits and dashes (64 at most)"
                )
        for criterion in self.gate_criteria:
            if criterion.phase not in (1, 2, 3, 4) or criterion.check not in GateCheck.ALL:
                raise ValueError(
                    f"kind {self.name}: {criterion} needs a phase 1-4 and a GateCheck name"
                )
            if not 0 < criterion.within_pct < 100:
                raise ValueError(f"kind {self.name}: {criterion} needs within_pct in (0, 100)")
        # Checked here, when the registry is built, so a typo fails at start-up rather
        # than leaving a parameter silently uncapped or unfilled.
        properties = self.params_schema.get("properties", {})
        for what, mapping, known in (
            ("param_caps", self.param_caps, Cap.ALL),
            ("project_defaults", self.project_defaults, ProjectFact.ALL),
        ):
            for param, name in mapping.items():
                if param not in properties:
                    raise ValueError(f"kind {self.name}: {what} names no parameter {param!r}")
                if name not in known:
                    raise ValueError(
                        f"kind {self.name}: {what}[{param!r}] is {name!r}, not one of {known}"
                    )

    def serves(self, task_key: str) -> bool:
        """Whether a job of this kind does that roadmap task's work: a built-in one it
        names, or one it declared itself."""
        return task_key in self.roadmap_tasks or any(
            task.key == task_key for task in self.new_roadmap_tasks
        )

    def load_runner(self) -> Runner:
        """Import the runner function now (the CLI calls this, the web side never needs to)."""
        module_name, _, func_name = self.runner.partition(":")
        module = importlib.import_module(module_name)
        return getattr(module, func_name)

    def defaults(self) -> dict[str, Any]:
        """The parameters a job gets when it asks for nothing."""
        return apply_defaults(self.params_schema, {})

    def validate(self, params: Any) -> dict[str, Any]:
        """These params checked against the schema, returned with defaults filled.

        Raises ParamsError with every problem found, grouped by field, so that a
        form or an API client can show them all at once. Whole-number floats for
        integer fields become ints (JSON clients often send 2.0).
        """
        if not isinstance(params, dict):
            raise ParamsError({NON_FIELD_ERRORS: ["params must be a JSON object"]})

        import jsonschema  # lazy: the runner side never validates

        schema = self.params_schema
        properties = schema.get("properties", {})
        filled = apply_defaults(schema, params)
        errors: dict[str, list[str]] = {}
        validator = jsonschema.Draft202012Validator(schema)
        for error in sorted(validator.iter_errors(filled), key=lambda e: list(map(str, e.path))):
            if error.validator == "additionalProperties" and not error.path:
                for name in sorted(set(error.instance) - set(properties)):
                    errors.setdefault(name, []).append("unknown field")
            else:
                errors.setdefault(_field_of(error.path), []).append(_message(error))
        if errors:
            raise ParamsError(errors)

        for key, prop in properties.items():
            value = filled.get(key)
            if prop.get("type") == "integer" and isinstance(value, float) and value.is_integer():
                filled[key] = int(value)
        return filled

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready description, for ``python -m stack kinds`` and the UI."""
        return {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "params_schema": self.params_schema,
            "default_timeout_s": self.default_timeout_s,
            "defaults": self.defaults(),
            "example_params": dict(self.example_params) if self.example_params else None,
        }


def apply_defaults(schema: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
    """A copy of params with the schema's top-level defaults filled in.

    Cheap on purpose (no jsonschema): the CLI calls it on every run, after
    the server has already validated.
    """
    filled = dict(params)
    for key, prop in schema.get("properties", {}).items():
        if key not in filled and "default" in prop:
            default = prop["default"]
            if isinstance(default, dict | list):
                import copy

                default = copy.deepcopy(default)
            filled[key] = default
    return filled


def _message(error: Any) -> str:
    """jsonschema's message, or for a pattern the schema's own words (``x-pattern-message``):
    "does not match '<a regular expression>'" tells a team nothing."""
    said = error.schema.get("x-pattern-message") if error.validator == "pattern" else None
    return f"{error.instance!r} {said}" if said else error.message


def _field_of(path: Any) -> str:
    return ".".join(str(part) for part in path) or NON_FIELD_ERRORS
