"""The job contract: what a runner hands back, in a form both sides can check.

This module is the single source of truth for the seam between the
orchestrator (``jobs/``) and the runners (``stack/``): the result.json schema,
the exit codes, the statuses and the event lines. The orchestrator imports it
to validate what a job left behind; the runner side only uses the constants
(jsonschema is imported lazily, inside the validators, because the run path
must start fast and stay stdlib-only).

Over 400 lines: a third of it the result and environment schemas, the contract's text,
the rest what checks them and the event lines; one seam, kept true by being read in one
place rather than spread over modules.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Literal, overload

SCHEMA_VERSION = 1
RESULT_FILENAME = "result.json"
# How the runner's last stderr line starts when it could not write result.json: the worker
# leads the job's error with the rest of that line (jobs/services/ingest.py).
RUNNER_SAID_PREFIX = "stack: "

# Exit codes of ``python -m stack run``. The worker reads them before it reads
# result.json, so they must tell the three outcomes apart on their own.
EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_ERRORED = 3

SUCCEEDED = "succeeded"
FAILED = "failed"
ERRORED = "errored"
STATUSES = (SUCCEEDED, FAILED, ERRORED)

EXIT_CODE_BY_STATUS = {SUCCEEDED: EXIT_OK, FAILED: EXIT_FAILED, ERRORED: EXIT_ERRORED}

EVENT_PROGRESS = "progress"
EVENT_LOG = "log"
EVENT_METRIC = "metric"
EVENTS = (EVENT_PROGRESS, EVENT_LOG, EVENT_METRIC)
LOG_LEVELS = ("debug", "info", "warning", "error")

# Deepest nesting of arrays and objects a result.json or an event line may have. Anything
# that walks a deep document recurses (json.loads, json.dumps, jsonschema, the database's
# JSON column read back): a 900-deep summary parsed here, was stored, then crashed every
# read of its job. No result or event needs more than a few levels.
MAX_JSON_DEPTH = 32

GPU_VENDORS = ("amd", "nvidia")
TORCH_BACKENDS = ("rocm", "cuda", "cpu")
BETTER = ("higher", "lower")


class ContractError(ValueError):
    """A result, environment or event line that breaks the contract.

    The message starts with a readable path to the first problem
    (``measurements[0].unit: ...``) so that it can go straight into a job's
    error text.
    """


# --------------------------------------------------------------------------
# JSON Schemas
# --------------------------------------------------------------------------

# Relative POSIX path inside OUT: not absolute, no drive letter, no backslash,
# no "." / ".." / empty components, no trailing slash, and not result.json.
ARTIFACT_PATH_PATTERN = (
    r"^(?!/)(?![A-Za-z]:)(?!result\.json$)(?!.*\\)"
    r"(?!(?:.*/)?\.\.?(?:/|$))(?!.*//)(?!.*/$).+$"
)
ISO8601_UTC_PATTERN = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$"
KIND_NAME_PATTERN = r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$"

_NULLABLE_STR: dict[str, Any] = {"type": ["string", "null"]}
_NULLABLE_COUNT: dict[str, Any] = {"type": ["integer", "null"], "minimum": 0}

TOOL_STATUS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["present", "path", "version", "error"],
    "properties": {
        "present": {"type": "boolean"},
        "path": _NULLABLE_STR,
        "version": _NULLABLE_STR,
        "error": _NULLABLE_STR,
    },
    "additionalProperties": False,
}

# Every key of a GPU record, in the order the parsers write them (stack.parsers.gpu_entry).
GPU_FIELDS = (
    "index",
    "vendor",
    "model",
    "arch",
    "memory_bytes",
    "compute_units",
    "driver",
    "uuid",
    "source",
)

GPU_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": list(GPU_FIELDS),
    "properties": {
        "index": {"type": "integer", "minimum": 0},
        "vendor": {"enum": list(GPU_VENDORS)},
        "model": {"type": "string", "minLength": 1},
        "arch": _NULLABLE_STR,
        "memory_bytes": _NULLABLE_COUNT,
        "compute_units": _NULLABLE_COUNT,
        "driver": _NULLABLE_STR,
        "uuid": _NULLABLE_STR,
        "source": {"type": "string", "minLength": 1},
    },
}

HOST_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": [
        "hostname",
        "os",
        "kernel",
        "arch",
        "python",
        "cpu_model",
        "cpu_cores",
        "memory_bytes",
    ],
    "properties": {
        "hostname": {"type": "string"},
        "os": _NULLABLE_STR,
        "kernel": {"type": "string"},
        "arch": {"type": "string"},
        "python": {"type": "string"},
        "cpu_model": _NULLABLE_STR,
        "cpu_cores": _NULLABLE_COUNT,
        "memory_bytes": _NULLABLE_COUNT,
    },
}

SOFTWARE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": [
        "rocm_version",
        "cuda_version",
        "gpu_driver_version",
        "torch_version",
        "torch_backend",
        "libraries",
    ],
    "properties": {
        "rocm_version": _NULLABLE_STR,
        "cuda_version": _NULLABLE_STR,
        "gpu_driver_version": _NULLABLE_STR,
        "torch_version": _NULLABLE_STR,
        "torch_backend": {"enum": [*TORCH_BACKENDS, None]},
        "libraries": {"type": "object", "additionalProperties": {"type": "string"}},
    },
}

# Sub-objects require their documented keys but allow extra ones, so that a
# runner can add a fact (a cgroup limit, a PCI address) without a schema bump;
# the orchestrator stores the whole fingerprint as JSON.
ENVIRONMENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["host", "gpus", "software", "tools"],
    "properties": {
        "host": HOST_SCHEMA,
        "gpus": {"type": "array", "items": GPU_SCHEMA},
        "software": SOFTWARE_SCHEMA,
        "tools": {"type": "object", "additionalProperties": TOOL_STATUS_SCHEMA},
    },
}

MEASUREMENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["benchmark", "case", "metric", "unit", "value", "samples", "better"],
    "properties": {
        "benchmark": {"type": "string", "minLength": 1},
        "case": {
            "type": "object",
            "additionalProperties": {"type": ["string", "number", "boolean"]},
        },
        "metric": {"type": "string", "minLength": 1},
        "unit": {"type": "string", "minLength": 1},
        "value": {"type": "number"},
        "samples": {"type": "array", "items": {"type": "number"}},
        "better": {"enum": list(BETTER)},
    },
    "additionalProperties": False,
}

ARTIFACT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["path", "content_type", "description"],
    "properties": {
        "path": {"type": "string", "pattern": ARTIFACT_PATH_PATTERN},
        "content_type": {"type": "string", "minLength": 1},
        "description": {"type": "string"},
    },
    "additionalProperties": False,
}

RESULT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "rocpath job result",
    "type": "object",
    "required": [
        "schema_version",
        "kind",
        "status",
        "started_at",
        "finished_at",
        "environment",
        "measurements",
        "summary",
        "artifacts",
        "error",
    ],
    "properties": {
        "schema_version": {"const": SCHEMA_VERSION},
        "kind": {"type": "string", "pattern": KIND_NAME_PATTERN},
        "status": {"enum": list(STATUSES)},
        "started_at": {"type": "string", "pattern": ISO8601_UTC_PATTERN},
        "finished_at": {"type": "string", "pattern": ISO8601_UTC_PATTERN},
        "environment": {"anyOf": [{"type": "null"}, ENVIRONMENT_SCHEMA]},
        "measurements": {"type": "array", "items": MEASUREMENT_SCHEMA},
        "summary": {"type": "object"},
        "artifacts": {"type": "array", "items": ARTIFACT_SCHEMA},
        "error": _NULLABLE_STR,
    },
    "additionalProperties": False,
}


# --------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------


def format_path(parts: Any) -> str:
    """Turn a jsonschema error path into ``measurements[0].unit``.

    People read these in a job's error text; a deque of keys is not readable.
    """
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text or "(root)"


def artifact_path_problem(path: Any) -> str | None:
    """Say what is wrong with an artifact path, or None when it is fine.

    Kept apart from the schema pattern so that the runner side can check
    without jsonschema and both sides give the same reason.
    """
    if not isinstance(path, str) or not path:
        return "must be a non-empty string"
    if path.startswith("/") or re.match(r"^[A-Za-z]:", path):
        return "must be relative to OUT, not absolute"
    if "\\" in path:
        return "must use '/' as separator"
    parts = path.split("/")
    if ".." in parts:
        return "must not contain '..'"
    if any(part in ("", ".") for part in parts):
        return "must not contain empty or '.' components"
    if path == RESULT_FILENAME:
        return "must not be result.json itself"
    return None


def _first_schema_error(schema: dict[str, Any], data: Any) -> str | None:
    import jsonschema  # lazy: only the orchestrator and tests validate

    validator = jsonschema.Draft202012Validator(schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(data))
    if error is None:
        return None
    return f"{format_path(error.absolute_path)}: {error.message}"


def validate_result(data: dict[str, Any]) -> None:
    """Check a parsed result.json against the contract; raise ContractError if broken.

    Beyond the schema it checks what a regular expression says badly: artifact
    paths (absolute, ``..``) get a plain-words reason, and an errored result
    must say why.
    """
    # Before the schema: its path pattern rejects the same paths, and its
    # message is the raw regular expression, which tells nobody what to fix.
    # The document is not validated yet, so only well-shaped entries are read.
    artifacts = data.get("artifacts") if isinstance(data, dict) else None
    for i, artifact in enumerate(artifacts if isinstance(artifacts, list) else []):
        path = artifact.get("path") if isinstance(artifact, dict) else None
        if isinstance(path, str):
            reason = artifact_path_problem(path)
            if reason:
                raise ContractError(f"artifacts[{i}].path: {path!r} {reason}")
    problem = _first_schema_error(RESULT_SCHEMA, data)
    if problem:
        raise ContractError(problem)
    for i, measurement in enumerate(data["measurements"]):
        numbers = [measurement["value"], *measurement["samples"]]
        if not all(math.isfinite(x) for x in numbers):
            raise ContractError(f"measurements[{i}]: value and samples must be finite")
    if data["status"] == ERRORED and not data["error"]:
        raise ContractError("error: an errored result must say why (error is empty)")


def validate_environment(data: dict[str, Any]) -> None:
    """Check an environment fingerprint alone (e.g. one sent by a worker at start-up)."""
    problem = _first_schema_error(ENVIRONMENT_SCHEMA, data)
    if problem:
        raise ContractError(problem)


def exit_code_for(status: str) -> int:
    """Map a result status to the runner's exit code."""
    try:
        return EXIT_CODE_BY_STATUS[status]
    except KeyError:
        raise ContractError(f"status: {status!r} is not one of {list(STATUSES)}") from None


def status_for_exit_code(code: int | None) -> str:
    """What the worker should conclude from an exit code alone.

    Used when result.json is missing or unreadable: anything but the contract's
    own codes (a signal, an OOM kill, a crash of the interpreter) means the
    infrastructure, not the tool, decided the outcome.
    """
    if code == EXIT_OK:
        return SUCCEEDED
    if code == EXIT_FAILED:
        return FAILED
    return ERRORED


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


_JSON_STRUCTURE = re.compile(r'["\\\[\]{}]')
_JSON_STRUCTURE_BYTES = re.compile(rb'["\\\[\]{}]')


def nesting_depth(text: str | bytes, limit: int = MAX_JSON_DEPTH) -> int:
    """How deep arrays and objects nest in a JSON text, counting no further than limit + 1.

    Read before parsing, in one pass over the brackets, quotes and backslashes only (no
    recursion, no backtracking): deciding this after json.loads is too late.
    """
    pattern = _JSON_STRUCTURE_BYTES if isinstance(text, bytes) else _JSON_STRUCTURE
    depth = deepest = 0
    in_string = False
    skip_to = 0
    for match in pattern.finditer(text):
        if match.start() < skip_to:
            continue  # the character after a backslash
        char = match.group()
        char = char.decode() if isinstance(char, bytes) else char
        if in_string:
            if char == "\\":
                skip_to = match.end() + 1
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > limit:
                    return deepest
        elif char in "]}":
            depth -= 1
    return deepest


def log_event(message: str, level: str = "info") -> dict[str, Any]:
    """A log event as a dict: what Emitter.log writes, and what the worker adds itself."""
    return {"event": EVENT_LOG, "level": level, "message": message}


@overload
def parse_event(line: str | bytes, *, strict: Literal[True] = ...) -> dict[str, Any]: ...
@overload
def parse_event(line: str | bytes, *, strict: Literal[False]) -> dict[str, Any] | None: ...


def parse_event(line: str | bytes, *, strict: bool = True) -> dict[str, Any] | None:
    """Parse one event line from a runner's stdout: the one reader of the event vocabulary.

    ``strict`` (tests, tools that check a runner): the line must be a valid
    event, else ContractError. Not strict (the worker, on every line of a live
    stream): a JSON object with a string ``event`` is handed on as it is (the
    worker bounds each field as it stores it) and any other line is None, to be
    kept as a raw log line rather than dropped. Plain Python, not jsonschema.
    """
    if not strict:
        text = (line.decode("utf-8", "replace") if isinstance(line, bytes) else line).strip()
        if not (text.startswith("{") and text.endswith("}")):
            return None
        if nesting_depth(text) > MAX_JSON_DEPTH:
            return None  # kept as a log line: json.loads would recurse past the limit
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):
            return None
        return value if isinstance(value, dict) and isinstance(value.get("event"), str) else None
    if nesting_depth(line) > MAX_JSON_DEPTH:
        raise ContractError(f"(line): nested too deeply (at most {MAX_JSON_DEPTH} levels)")
    try:
        event = json.loads(line)
    except (ValueError, RecursionError) as exc:
        raise ContractError(f"(line): not JSON: {exc}") from None
    if not isinstance(event, dict):
        raise ContractError("(root): an event must be a JSON object")
    kind = event.get("event")
    if kind == EVENT_PROGRESS:
        pct = event.get("pct")
        if not _is_number(pct) or not 0 <= pct <= 100:
            raise ContractError("pct: must be a number from 0 to 100")
        if not isinstance(event.get("message", ""), str):
            raise ContractError("message: must be a string")
    elif kind == EVENT_LOG:
        if event.get("level") not in LOG_LEVELS:
            raise ContractError(f"level: must be one of {list(LOG_LEVELS)}")
        if not isinstance(event.get("message"), str):
            raise ContractError("message: must be a string")
    elif kind == EVENT_METRIC:
        if not isinstance(event.get("name"), str) or not event["name"]:
            raise ContractError("name: must be a non-empty string")
        if not _is_number(event.get("value")):
            raise ContractError("value: must be a finite number")
        if not isinstance(event.get("unit", ""), str):
            raise ContractError("unit: must be a string")
    else:
        raise ContractError(f"event: must be one of {list(EVENTS)}")
    return event
