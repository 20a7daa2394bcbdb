"""The jobs and artifacts a user may see: those of their teams (teams.access decides which)."""

from __future__ import annotations

from django.db.models import QuerySet

from jobs.models import Artifact, Job
from teams.access import AnyUser, team_ids


def jobs_for(user: AnyUser) -> QuerySet[Job]:
    """The user's teams' jobs, with what every job list and page shows beside them."""
    return Job.objects.filter(team_id__in=team_ids(user)).select_related(
        "team", "project", "created_by"
    )


def artifacts_for(user: AnyUser) -> QuerySet[Artifact]:
    return Artifact.objects.filter(job__team_id__in=team_ids(user))
