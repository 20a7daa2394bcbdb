"""Team scoping, in one place, for pages, API and downloads alike.

Objects of another team are answered with 404, never 403, so their
existence does not leak.
"""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import QuerySet

from jobs.models import Artifact, Job
from portal.choices import WRITE_ROLES
from portal.models import AdoptionProject, Membership, Team

AnyUser = AbstractBaseUser | AnonymousUser


def team_ids(user: AnyUser) -> list[int]:
    if not user.is_authenticated:
        return []
    return list(Membership.objects.filter(user=user).values_list("team_id", flat=True))


def writable_team_ids(user: AnyUser) -> list[int]:
    if not user.is_authenticated:
        return []
    return list(
        Membership.objects.filter(user=user, role__in=WRITE_ROLES).values_list("team_id", flat=True)
    )


def teams_for(user: AnyUser) -> QuerySet[Team]:
    return (
        Team.objects.filter(memberships__user=user)
        if user.is_authenticated
        else Team.objects.none()
    )


def projects_for(user: AnyUser) -> QuerySet[AdoptionProject]:
    return AdoptionProject.objects.filter(team_id__in=team_ids(user)).select_related("team")


def jobs_for(user: AnyUser) -> QuerySet[Job]:
    """The user's teams' jobs, with what every job list and page shows beside them."""
    return Job.objects.filter(team_id__in=team_ids(user)).select_related(
        "team", "project", "created_by"
    )


def artifacts_for(user: AnyUser) -> QuerySet[Artifact]:
    return Artifact.objects.filter(job__team_id__in=team_ids(user))


def can_write(user: AnyUser, team_id: int) -> bool:
    return team_id in writable_team_ids(user)
