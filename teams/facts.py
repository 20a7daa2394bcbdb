"""What a job takes from the project it is for: the kinds' project defaults, resolved.

A kind names the parameters a project fills (``Kind.project_defaults``: parameter ->
a ProjectFact, in the kind's own module); here each fact is read from the project.
Submission calls this on every path (page, REST, CLI), so a job for a project gets
the same defaults whichever way it comes, and no generic code names a kind.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stack.kinds import Kind, ProjectFact
from teams.models import AdoptionProject

# A fact's name -> how to read it from a project
FACTS: dict[str, Callable[[AdoptionProject], Any]] = {
    ProjectFact.COMPILE_TARGETS: AdoptionProject.compile_targets,
    ProjectFact.VENDORED: lambda p: p.porting_setting("vendored"),
    ProjectFact.NOT_VENDORED: lambda p: p.porting_setting("not_vendored"),
    ProjectFact.HAZARDS_OFF: lambda p: p.porting_setting("hazards_off"),
}


def project_facts(kind: Kind, project: AdoptionProject) -> dict[str, Any]:
    """Each parameter the kind takes from a project, with this project's value."""
    return {param: FACTS[fact](project) for param, fact in kind.project_defaults.items()}


def with_project_defaults(kind: Kind | None, project: AdoptionProject | None, params: Any) -> Any:
    """The params with what the job does not name filled from its project.

    Parameters the job names win (a compile check may name its own targets). No kind
    (unknown: submit says so), no project, or params that are not an object (the
    kind's validation says so) leave the params as they came.
    """
    if kind is None or project is None or not kind.project_defaults:
        return params
    if params is None:
        params = {}
    if not isinstance(params, dict):
        return params
    missing = {p: f for p, f in kind.project_defaults.items() if p not in params}
    if not missing:
        return params
    return {**params, **{param: FACTS[fact](project) for param, fact in missing.items()}}
