"""Team scoping, in one place, for pages, API and downloads alike.

Objects of another team are answered with 404, never 403, so their
existence does not leak. The layers above scope their own rows through
``team_ids`` (jobs.access for jobs and artifacts).
"""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import QuerySet

from teams.choices import WRITE_ROLES, Role
from teams.models import AdoptionProject, Membership, Team

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


def can_write(user: AnyUser, team_id: int) -> bool:
    return team_id in writable_team_ids(user)


def is_admin(user: AnyUser, team_id: int) -> bool:
    """An admin of the team: the acts that change what a decision reads (the current code,
    a gate's override) are theirs."""
    return (
        user.is_authenticated
        and Membership.objects.filter(user=user, team_id=team_id, role=Role.ADMIN).exists()
    )
