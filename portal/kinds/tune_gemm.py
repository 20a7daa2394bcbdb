"""tune-gemm on the job page: the speedups, what TunableOp chose (or that it had one
candidate), and the registered tuned file with whether it still fits the team's stack."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from jobs.models import Job, TunedFile
from jobs.services.tuned_files import freshness, target_environment
from portal.kinds.base import Presenter
from stack.kinds.tune_gemm import KIND


class TunePresenter(Presenter):
    """The tuned file's registry entry and its freshness beside the job's results."""

    partial = "portal/kinds/tune_gemm.html"

    def context(self, job: Job, request: HttpRequest | None = None) -> dict[str, Any]:
        """The registered file and how it stands against the team's latest stack."""
        tuned = TunedFile.objects.filter(job=job).first()
        if tuned is None:
            return {"tuned_entry": None}
        environment = target_environment(job.team_id, job.image)
        return {
            "tuned_entry": tuned,
            "tuned_freshness": freshness(tuned, environment.data if environment else None),
            "tuned_checked_against": environment,
        }


PRESENTER = TunePresenter(KIND)
