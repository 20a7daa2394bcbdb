"""The registry of job kinds: what can run, with which parameters, and by what code.

The orchestrator imports this package to list kinds in the UI and to validate a
submission's parameters before a job exists; the CLI imports it to find the
runner. Each kind is one module here holding its ``KIND``; adding a kind is
writing that module and one line in ``_MODULES``. Kind modules are light at
import time (runners import their libraries inside ``run()``), so listing kinds
never pays for a runner's imports.
"""

from __future__ import annotations

from typing import Any

from stack.kinds import (
    blas_bench,
    collective_bench,
    compile_check,
    hipify_convert,
    hipify_scan,
    inference_bench,
    noop,
    probe,
    profile,
    sandbox_check,
    tune_gemm,
)
from stack.kinds.base import (
    NON_FIELD_ERRORS,
    Cap,
    Kind,
    ParamsError,
    ProjectFact,
    RoadmapTask,
    Runner,
    UnknownKind,
    apply_defaults,
)
from stack.tools import register_install_hints

_MODULES = (
    noop,
    probe,
    sandbox_check,
    blas_bench,
    hipify_scan,
    hipify_convert,
    compile_check,
    profile,
    collective_bench,
    inference_bench,
    tune_gemm,
)

KINDS: dict[str, Kind] = {module.KIND.name: module.KIND for module in _MODULES}

for _kind in KINDS.values():
    register_install_hints(_kind.install_hints)
if sum(kind.submit_default for kind in KINDS.values()) > 1:
    raise ValueError("at most one kind is the submit form's default (Kind.submit_default)")

__all__ = [
    "KINDS",
    "NON_FIELD_ERRORS",
    "Cap",
    "Kind",
    "ParamsError",
    "ProjectFact",
    "RoadmapTask",
    "Runner",
    "UnknownKind",
    "apply_defaults",
    "get_kind",
    "kinds_as_json",
    "validate_params",
]


def get_kind(name: str) -> Kind:
    """The registered kind of that name; UnknownKind if there is none."""
    try:
        return KINDS[name]
    except KeyError:
        raise UnknownKind(name, KINDS) from None


def validate_params(kind_name: str, params: Any) -> dict[str, Any]:
    """Validate a submission's params for a kind; return them with defaults filled.

    Raises UnknownKind for an unknown kind and ParamsError with every problem
    found, grouped by field (see Kind.validate).
    """
    return get_kind(kind_name).validate(params)


def kinds_as_json() -> list[dict[str, Any]]:
    """Every kind, described for listing (sorted by name)."""
    return [KINDS[name].as_dict() for name in sorted(KINDS)]
