"""The registry of job kinds: what can run, with which parameters, and by what code.

The orchestrator imports this module to list kinds in the UI and to validate
a submission's parameters before a job exists; the CLI imports it to find the
runner. Runners are named by a dotted path and imported only when a job of
that kind runs, so listing kinds never pays for a runner's imports.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from stack.blas.schema import PARAMS_SCHEMA as BLAS_BENCH_PARAMS
from stack.contract import STATUSES, SUCCEEDED
from stack.hipify.schemas import (
    COMPILE_CHECK_PARAMS,
    HIPIFY_CONVERT_PARAMS,
    HIPIFY_SCAN_PARAMS,
)

if TYPE_CHECKING:
    from stack.runtime import RunContext, RunResult

Runner = Callable[[dict[str, Any], "RunContext"], "RunResult"]

NON_FIELD_ERRORS = "non_field_errors"


class UnknownKind(LookupError):
    """No kind of that name is registered."""

    def __init__(self, name: str) -> None:
        super().__init__(f"unknown kind {name!r}; known kinds: {', '.join(sorted(KINDS))}")
        self.name = name


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
    """

    name: str
    title: str
    description: str
    params_schema: dict[str, Any]
    default_timeout_s: int
    runner: str
    # The job reads a project's source tree at WORK/src (the portal mounts the newest
    # ready snapshot there) and may keep a per-project cache in ROCPATH_CACHE_DIR.
    takes_source: bool = False

    def load_runner(self) -> Runner:
        """Import the runner function now (the CLI calls this, the web side never needs to)."""
        module_name, _, func_name = self.runner.partition(":")
        module = importlib.import_module(module_name)
        return getattr(module, func_name)

    def defaults(self) -> dict[str, Any]:
        """The parameters a job gets when it asks for nothing."""
        return apply_defaults(self.params_schema, {})

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready description, for ``python -m stack kinds`` and the UI."""
        return {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "params_schema": self.params_schema,
            "default_timeout_s": self.default_timeout_s,
            "defaults": self.defaults(),
        }


NOOP = Kind(
    name="noop",
    title="No-op",
    description=(
        "Sleeps, reports progress, optionally writes an artifact and ends with the "
        "status asked for. Exists to test and benchmark the orchestrator itself."
    ),
    params_schema={
        "type": "object",
        "properties": {
            "seconds": {
                "type": "number",
                "minimum": 0,
                "maximum": 86400,
                "default": 0,
                "description": "How long to sleep in total.",
            },
            "steps": {
                "type": "integer",
                "minimum": 1,
                "maximum": 1000,
                "default": 1,
                "description": "How many progress events, spread evenly over the sleep.",
            },
            "exit_status": {
                "type": "string",
                "enum": list(STATUSES),
                "default": SUCCEEDED,
                "description": "The status to end with.",
            },
            "write_bytes": {
                "type": "integer",
                "minimum": 0,
                "maximum": 4 * 1024**3,
                "default": 0,
                "description": "Size of the artifact noop.bin to write (0: none).",
            },
            "log_lines": {
                "type": "integer",
                "minimum": 0,
                "maximum": 1_000_000,
                "default": 0,
                "description": "How many log events to emit.",
            },
        },
        "additionalProperties": False,
    },
    default_timeout_s=600,
    runner="stack.kinds.noop:run",
)

PROBE = Kind(
    name="probe",
    title="Hardware and software probe",
    description=(
        "Inventories the host it runs on: CPU, memory, OS, GPUs (through amd-smi, "
        "rocm-smi, rocminfo, nvidia-smi and PyTorch, whichever are present) and the "
        "ROCm / CUDA / driver versions. Each tool's raw output is kept as an artifact."
    ),
    params_schema={
        "type": "object",
        "properties": {
            "tool_timeout_s": {
                "type": "number",
                "exclusiveMinimum": 0,
                "maximum": 600,
                "default": 20,
                "description": "Limit for each call of a GPU tool.",
            },
            "torch": {
                "type": "boolean",
                "default": True,
                "description": "Also ask PyTorch (in a subprocess) when it is installed.",
            },
            "torch_timeout_s": {
                "type": "number",
                "exclusiveMinimum": 0,
                "maximum": 600,
                "default": 60,
                "description": "Limit for the PyTorch subprocess (importing torch is slow).",
            },
        },
        "additionalProperties": False,
    },
    default_timeout_s=300,
    runner="stack.kinds.probe:run",
)

SANDBOX_CHECK = Kind(
    name="sandbox-check",
    title="Sandbox check",
    description=(
        "Tries one thing a job must not be able to do (write outside its out folder, "
        "open a network connection, fork without bound, allocate more memory than "
        "allowed) and reports whether the system let it: failed = refused."
    ),
    params_schema={
        "type": "object",
        "properties": {
            "action": {
                "type": "string",
                "enum": ["write-outside", "network", "fork-bomb", "allocate-memory"],
                "default": "write-outside",
            },
            "max_processes": {
                "type": "integer",
                "minimum": 1,
                "maximum": 100_000,
                "default": 5000,
                "description": "fork-bomb: stop after this many processes.",
            },
            "megabytes": {
                "type": "integer",
                "minimum": 1,
                "maximum": 1_048_576,
                "default": 4096,
                "description": "allocate-memory: how much to allocate and touch.",
            },
        },
        "additionalProperties": False,
    },
    default_timeout_s=120,
    runner="stack.kinds.sandbox_check:run",
)

BLAS_BENCH = Kind(
    name="blas-bench",
    title="Math-library benchmarks",
    description=(
        "GEMM in every precision (FP64 to INT8) over square sweeps, user shapes and batched "
        "problems, plus memory bandwidth, FFT and dense solvers, through PyTorch (cuBLAS / "
        "rocBLAS / hipBLASLt), numpy, rocblas-bench or hipblaslt-bench. Each case is warmed "
        "up, sampled until stable, checked against a float64 reference and reported with "
        "its % of the vendor peak, the GPU clocks, power and temperature seen while it ran, "
        "and the BF16/INT8/FP8 ratios people quote next to the measured ones."
    ),
    params_schema=BLAS_BENCH_PARAMS,
    default_timeout_s=3600,
    runner="stack.kinds.blas_bench:run",
)


HIPIFY_SCAN = Kind(
    name="hipify-scan",
    title="HIPIFY porting assessment",
    description=(
        "Examines every CUDA-relevant file of the source tree with hipify-perl's tables: "
        "references it converts (by name and API family), identifiers HIP lacks, deprecated "
        "and removed ones, each marked as in code, a comment, a string or a longer "
        "identifier; totals, a porting-effort estimate with its inputs, findings per file "
        "and a Markdown report. Unchanged files come from the cache."
    ),
    params_schema=HIPIFY_SCAN_PARAMS,
    default_timeout_s=3600,
    runner="stack.kinds.hipify_scan:run",
    takes_source=True,
)
HIPIFY_CONVERT = Kind(
    name="hipify-convert",
    title="HIPIFY conversion",
    description=(
        "Translates the CUDA files of the source tree to HIP with hipify-perl; the "
        "hipified tree as hipified.tar.gz and the changes as a unified diff."
    ),
    params_schema=HIPIFY_CONVERT_PARAMS,
    default_timeout_s=3600,
    runner="stack.kinds.hipify_convert:run",
    takes_source=True,
)
COMPILE_CHECK = Kind(
    name="compile-check",
    title="HIP compile check",
    description=(
        "Compiles each source of the hipified tree with hipcc --offload-arch for every "
        "target architecture (no GPU needed); compiler diagnostics parsed into file, line, "
        "column, severity and message; pass/fail per file and per target."
    ),
    params_schema=COMPILE_CHECK_PARAMS,
    default_timeout_s=7200,
    runner="stack.kinds.compile_check:run",
    takes_source=True,
)
KINDS: dict[str, Kind] = {
    kind.name: kind
    for kind in (
        NOOP,
        PROBE,
        SANDBOX_CHECK,
        BLAS_BENCH,
        HIPIFY_SCAN,
        HIPIFY_CONVERT,
        COMPILE_CHECK,
    )
}


def get_kind(name: str) -> Kind:
    """The registered kind of that name; UnknownKind if there is none."""
    try:
        return KINDS[name]
    except KeyError:
        raise UnknownKind(name) from None


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


def _field_of(path: Any) -> str:
    return ".".join(str(part) for part in path) or NON_FIELD_ERRORS


def validate_params(kind_name: str, params: Any) -> dict[str, Any]:
    """Validate a submission's params for a kind; return them with defaults filled.

    Raises UnknownKind for an unknown kind and ParamsError with every problem
    found, grouped by field, so that a form or an API client can show them all
    at once. Whole-number floats for integer fields become ints (JSON clients
    often send 2.0).
    """
    kind = get_kind(kind_name)
    if not isinstance(params, dict):
        raise ParamsError({NON_FIELD_ERRORS: ["params must be a JSON object"]})

    import jsonschema  # lazy: the runner side never validates

    schema = kind.params_schema
    properties = schema.get("properties", {})
    filled = apply_defaults(schema, params)
    errors: dict[str, list[str]] = {}
    validator = jsonschema.Draft202012Validator(schema)
    for error in sorted(validator.iter_errors(filled), key=lambda e: list(map(str, e.path))):
        if error.validator == "additionalProperties" and not error.path:
            for name in sorted(set(error.instance) - set(properties)):
                errors.setdefault(name, []).append("unknown field")
        else:
            errors.setdefault(_field_of(error.path), []).append(error.message)
    if errors:
        raise ParamsError(errors)

    for key, prop in properties.items():
        value = filled.get(key)
        if prop.get("type") == "integer" and isinstance(value, float) and value.is_integer():
            filled[key] = int(value)
    return filled


def kinds_as_json() -> list[dict[str, Any]]:
    """Every kind, described for listing (sorted by name)."""
    return [KINDS[name].as_dict() for name in sorted(KINDS)]
