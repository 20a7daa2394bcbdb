"""The presenters of the kinds that show something special; every other kind gets the default.

A kind is its module under stack/kinds; if its pages show more than every job shows
(a partial on the job page, charts, a project step), it also has one module here
holding its ``PRESENTER``, and one line in ``_MODULES``. Generic views and templates
ask ``presenter_for(kind)`` and never name a kind.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from portal.kinds import (
    blas_bench,
    collective_bench,
    compile_check,
    hipify_convert,
    hipify_scan,
    inference_bench,
    profile,
    tune_gemm,
)
from portal.kinds.base import Presenter, ProjectStep
from stack.kinds import KINDS

if TYPE_CHECKING:
    from jobs.models import Job

_MODULES = (
    blas_bench,
    hipify_scan,
    hipify_convert,
    compile_check,
    collective_bench,
    profile,
    tune_gemm,
    inference_bench,
)

PRESENTERS: dict[str, Presenter] = {m.PRESENTER.kind.name: m.PRESENTER for m in _MODULES}

__all__ = [
    "PRESENTERS",
    "Presenter",
    "ProjectStep",
    "compare_sections",
    "presenter_for",
    "project_steps",
]


def presenter_for(kind: str) -> Presenter:
    """The kind's presenter; the default one (showing nothing special) if it has none."""
    return PRESENTERS.get(kind) or Presenter(KINDS.get(kind))


def project_steps() -> list[Presenter]:
    """The presenters of the kinds a project page starts with one click, in their order."""
    stepped = [p for p in PRESENTERS.values() if p.step is not None]
    return sorted(stepped, key=lambda p: p.step.order)  # type: ignore[union-attr]


def compare_sections(jobs: list[Job]) -> list[dict[str, Any]]:
    """The compare page's kind-specific sections: one per kind whose presenter has one,
    given that kind's jobs in the page's order (the baseline first), and only where it
    has something to show. So the compare page never names a kind."""
    by_kind: dict[str, list[Job]] = {}
    for job in jobs:
        by_kind.setdefault(job.kind, []).append(job)
    sections = []
    for kind, kind_jobs in by_kind.items():
        presenter = presenter_for(kind)
        if presenter.compare_partial and (found := presenter.compare_context(kind_jobs)):
            sections.append({"partial": presenter.compare_partial, "kind": kind, **found})
    return sections
