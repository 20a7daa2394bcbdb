"""Roles of a team member; what each may do is decided in teams.access."""

from django.db import models


class Role(models.TextChoices):
    VIEWER = "viewer", "Viewer"  # reads the team's jobs and results
    MEMBER = "member", "Member"  # also submits and cancels jobs
    ADMIN = "admin", "Admin"  # also manages projects and members


# Roles allowed to change things (submit, cancel).
WRITE_ROLES = frozenset({Role.MEMBER, Role.ADMIN})
