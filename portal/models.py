"""Teams own everything: a user sees and touches only the objects of their teams."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from portal.choices import Role


class Team(models.Model):
    name = models.CharField(max_length=120, unique=True)
    slug = models.SlugField(max_length=120, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    members = models.ManyToManyField(
        settings.AUTH_USER_MODEL, through="Membership", related_name="teams"
    )

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.MEMBER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["team", "user"], name="membership_unique_team_user")
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.team} ({self.role})"


class AdoptionProject(models.Model):
    """One team's effort to move one codebase from its current platform to ROCm."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="projects")
    name = models.CharField(max_length=200)
    codebase_description = models.TextField(blank=True)
    current_platform = models.CharField(
        max_length=200, blank=True, help_text="e.g. 8x NVIDIA H100 SXM, CUDA 12.4"
    )
    target_gpus = models.JSONField(
        default=list, blank=True, help_text='GPU models or gfx targets, e.g. ["MI300X", "gfx942"]'
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["team__name", "name"]
        constraints = [
            models.UniqueConstraint(fields=["team", "name"], name="project_unique_team_name")
        ]

    def __str__(self) -> str:
        return f"{self.team.slug}/{self.name}"
