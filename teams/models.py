"""Teams own everything: a user sees and touches only the objects of their teams."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from teams.choices import Role


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

    def compile_targets(self) -> list[str]:
        """The AMD architectures to compile this project for, from its target GPUs.

        A ``gfx…`` entry is taken as it is; a GPU name through the GPU table
        (``stack.blas.peaks``: MI300X → gfx942, MI250X → gfx90a, …); NVIDIA names
        and unknown ones add nothing. Every target must fit the compile check's own
        schema (pattern and default), so the page never offers what the job refuses.
        A method on the model, so that the jobs (which submit compile checks) and the
        pages (which offer them) read the same answer from the layer below both.
        """
        import re

        from stack.blas.peaks import PEAK_TABLE, match_name
        from stack.hipify.schemas import COMPILE_CHECK_PARAMS

        schema = COMPILE_CHECK_PARAMS["properties"]["targets"]
        pattern = re.compile(schema["items"]["pattern"])
        targets: list[str] = []
        for entry in self.target_gpus or []:
            text = str(entry).strip().lower()
            if pattern.fullmatch(text):
                arch = text
            else:
                row = match_name(text)
                arch = PEAK_TABLE[row].arch if row else ""
            if pattern.fullmatch(arch) and arch not in targets:
                targets.append(arch)
        return targets or list(schema["default"])


class SourceSnapshot(models.Model):
    """One version of a project's code: an uploaded archive or a git clone, extracted.

    The tree lives under ARTIFACT_ROOT/sources/<id>/tree; scans of the project use
    the newest ready snapshot unless a job names one.
    """

    class Origin(models.TextChoices):
        UPLOAD = "upload", "Uploaded archive"
        GIT = "git", "Git repository"

    class Status(models.TextChoices):
        PENDING = "pending", "Fetching"
        READY = "ready", "Ready"
        FAILED = "failed", "Failed"

    project = models.ForeignKey(AdoptionProject, on_delete=models.CASCADE, related_name="sources")
    origin = models.CharField(max_length=16, choices=Origin.choices)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    name = models.CharField(max_length=300, help_text="file name, or repository URL")
    ref = models.CharField(max_length=200, blank=True, help_text="git branch, tag or commit")
    commit = models.CharField(max_length=64, blank=True)
    archive_sha256 = models.CharField(max_length=64, blank=True)
    file_count = models.PositiveIntegerField(default=0)
    total_bytes = models.BigIntegerField(default=0)
    error = models.TextField(blank=True)
    # Its extraction or clone could not be sent (the broker was down): it stays pending and
    # the dispatcher (jobs.services.dispatch) sends it once the broker answers.
    awaiting_broker = models.BooleanField(default=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.project} source {self.pk} ({self.origin})"

    @property
    def status_label(self) -> str:
        """What the page shows: a pending upload is being extracted, a pending clone cloned."""
        if self.status == self.Status.PENDING:
            return "Extracting…" if self.origin == self.Origin.UPLOAD else "Cloning…"
        return self.get_status_display()
