"""What the pages show of a kind beyond what every job shows: its presenter.

Every job page shows the job's facts, parameters, environment, measurements, summary,
artifacts and log; a kind that shows something more has one module here whose
``PRESENTER`` says what (portal/kinds/__init__.py lists those modules). Every other
kind gets the plain ``Presenter``: no partial, no charts, no project step.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.utils.safestring import SafeString

from stack.kinds import Kind

if TYPE_CHECKING:
    from django.http import HttpRequest

    from jobs.models import Job
    from teams.models import AdoptionProject


@dataclass(frozen=True)
class ProjectStep:
    """A roadmap step a project page starts with one click, on the project's newest source.

    ``order`` places the buttons (lower first); ``label`` is what the button says.
    """

    label: str
    order: int


class Presenter:
    """How the pages show jobs of one kind; the defaults show nothing special.

    ``partial``: a template included in the job page (its context is the page's:
    ``job``, ``measurements``, …, and what ``context`` adds); ``compare_partial``: one
    included in the compare page when it compares jobs of the kind (it reads
    ``section``: what ``compare_context`` returns); ``step``: the project page's button
    for the kind.
    A kind that draws charts subclasses this and overrides ``charts``.
    """

    partial: str | None = None
    compare_partial: str | None = None
    step: ProjectStep | None = None

    def __init__(
        self,
        kind: Kind | None = None,
        *,
        partial: str | None = None,
        step: ProjectStep | None = None,
    ) -> None:
        self.kind = kind
        if partial is not None:
            self.partial = partial
        if step is not None:
            self.step = step

    def context(self, job: Job, request: HttpRequest | None = None) -> dict[str, Any]:
        """What the kind's partial reads beyond the page's own context (judged from the
        job, read from its artifacts, paged by the request's query); none by default."""
        return {}

    def compare_context(self, jobs: list[Job]) -> dict[str, Any] | None:
        """The compare page's section for the kind's jobs compared, the baseline first;
        None: nothing to show (the default, and where the jobs hold nothing comparable)."""
        return None

    def charts(self, job: Job) -> list[SafeString]:
        """The charts the job page draws from the job's results."""
        return []

    def step_problem(self, project: AdoptionProject) -> str | None:
        """Why the step cannot run on this installation, and how to fix it (None: it can).

        The page shows this instead of a button that would only fail.
        """
        return None

    def step_label(self, project: AdoptionProject) -> str:
        """The step's button: its label, then what the job takes from this project.

        So a compile check's button names the architectures it will compile for.
        """
        from teams.facts import project_facts

        assert self.step is not None and self.kind is not None
        label = self.step.label
        for value in project_facts(self.kind, project).values():
            if value in ([], (), "", None):
                continue  # an empty setting (no vendored globs) says nothing on a button
            shown = ", ".join(map(str, value)) if isinstance(value, list | tuple) else value
            label += f" ({shown})"
        return label
