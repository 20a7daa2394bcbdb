"""compile-check on the pages: a porting step whose button names the architectures it
compiles for (the kind takes them from the project: ``Kind.project_defaults``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from portal.kinds.base import Presenter, ProjectStep
from stack.kinds.compile_check import KIND

if TYPE_CHECKING:
    from teams.models import AdoptionProject


class CompilePresenter(Presenter):
    def step_problem(self, project: AdoptionProject) -> str | None:
        """Jobs in the debian job image can compile (its hipcc 5.7.1 knows gfx942 and
        gfx90a); local jobs only where this host's hipcc knows every target.

        Asked on the web host, which is the worker's in the default set-up (make run).
        """
        from django.conf import settings

        from jobs.executors import resolve_executor
        from stack.kinds.compile_check import hipcc_target_problem

        if resolve_executor() == "docker":
            return None
        problems = [p for t in project.compile_targets() if (p := hipcc_target_problem(t))]
        if not problems:
            return None
        return (
            f"jobs run as local processes here (no Docker engine with the job image "
            f"{settings.ROCPATH_IMAGE}), and {'; '.join(problems)}. Run `make images` "
            "(docs/containers.md) to build the debian job image, whose hipcc 5.7.1 knows "
            "gfx942 and gfx90a, or install a hipcc that knows the targets "
            "(scripts/install-rocm-tools.sh --hipcc)"
        )


PRESENTER = CompilePresenter(KIND, step=ProjectStep(label="Compile check", order=3))
