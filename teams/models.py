"""Teams own everything: a user sees and touches only the objects of their teams."""

from __future__ import annotations

import re

from django.conf import settings
from django.db import models

from teams.choices import Role
from teams.validators import no_control_characters


class Team(models.Model):
    name = models.CharField(max_length=120, unique=True, validators=[no_control_characters])
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
    name = models.CharField(max_length=200, validators=[no_control_characters])
    codebase_description = models.TextField(blank=True)
    current_platform = models.CharField(
        max_length=200, blank=True, help_text="e.g. 8x NVIDIA H100 SXM, CUDA 12.4"
    )
    target_gpus = models.JSONField(
        default=list, blank=True, help_text='GPU models or gfx targets, e.g. ["MI300X", "gfx942"]'
    )
    porting_settings = models.JSONField(
        default=dict,
        blank=True,
        help_text=(
            'how the HIPIFY scan reads the code: {"vendored": [globs], "not_vendored": '
            '[globs], "hazards_off": [rule names]} (docs/hipify.md)'
        ),
    )
    # Which codebase is "the current code": the lineage whose newest ready source the
    # roadmap, the estimate and the steps read. Blank: the first ready source's. A switch
    # to another lineage is a team admin's confirmed act (teams.sources.switch_lineage):
    # an unrelated upload must not become the code the decision is made on.
    current_lineage = models.CharField(max_length=320, blank=True)  # "git " + a 300-char URL
    current_lineage_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    current_lineage_at = models.DateTimeField(null=True, blank=True)
    # A newer source of the current lineage in which a scan finds no CUDA at all (after
    # sources that had some) is the current code only once an admin confirmed it.
    confirmed_source = models.ForeignKey(
        "portal.SourceSnapshot", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["team__name", "name"]
        constraints = [
            models.UniqueConstraint(fields=["team", "name"], name="project_unique_team_name")
        ]

    def __str__(self) -> str:
        return f"{self.team.slug}/{self.name}"

    def porting_setting(self, name: str) -> list[str]:
        """One list of porting_settings (teams.porting.clean_porting_settings checked it)."""
        value = (self.porting_settings or {}).get(name, [])
        return [str(v) for v in value] if isinstance(value, list) else []

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
    lineage = models.CharField(
        max_length=200,
        blank=True,
        help_text=(
            "which code this is a version of; blank: derived from the name "
            "(docs/hipify.md, 'Lineages')"
        ),
    )
    # The CUDA references the newest succeeded scan of this source found (jobs.receivers
    # writes it): a newer version of the code in which a scan finds none waits for an
    # admin before it becomes the current code (teams.sources.newest_ready).
    cuda_refs = models.PositiveIntegerField(null=True, blank=True)
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
    def lineage_key(self) -> str:
        """The lineage this snapshot belongs to: the one the team named, or one derived.

        A porting report's burn-down follows one lineage (one codebase over time), so
        the scan of an unrelated tree never reads as progress on this one.
        """
        return self.lineage.strip() or derived_lineage(self.origin, self.name)

    @property
    def status_label(self) -> str:
        """What the page shows: a pending upload is being extracted, a pending clone cloned."""
        if self.status == self.Status.PENDING:
            return "Extracting…" if self.origin == self.Origin.UPLOAD else "Cloning…"
        return self.get_status_display()


_ARCHIVE_SUFFIX = re.compile(r"\.(?:tar\.gz|tgz|tar\.bz2|tar\.xz|tar|zip)$", re.I)
# A version, date or build number at the end of an archive's stem: solver-1.2.3,
# solver_v2, solver-20260101, solver-1.0-rc1.
_VERSION_TAIL = re.compile(r"(?:[-_. ]+v?\d[\w.]*(?:[-_.](?:rc|alpha|beta|dev)\d*)?)+$", re.I)


def derived_lineage(origin: str, name: str) -> str:
    """A lineage from a source's origin and name, when the team named none.

    A git source is the repository: its URL without scheme case, a trailing slash or
    ``.git`` (every branch and commit of it is one lineage). An upload is the archive's
    name without its suffix and a trailing version (``solver-1.2.tar.gz`` and
    ``solver-1.3.zip`` are one lineage, ``other.zip`` another). The two origins never
    share a lineage unless the team names it.
    """
    text = name.strip()
    if origin == SourceSnapshot.Origin.GIT:
        text = text.rstrip("/")
        text = text[:-4] if text.lower().endswith(".git") else text
        scheme, sep, rest = text.partition("://")
        if sep:
            host, slash, path = rest.partition("/")
            text = f"{scheme.lower()}://{host.lower()}{slash}{path}"
        return f"git {text}"
    stem = _ARCHIVE_SUFFIX.sub("", text.rsplit("/", 1)[-1])
    return f"upload {_VERSION_TAIL.sub('', stem) or stem}"


class ApiDecision(models.Model):
    """What a team decided to do about one CUDA API HIP lacks, in one project.

    Keyed by the API's name (its group, docs/hipify.md), not by a scan: a re-scan
    finds the same names and so keeps the decisions; the roadmap reads whether every
    unsupported API of the project is decided.
    """

    class Decision(models.TextChoices):
        PORT = "port", "Port by hand"
        LIBRARY = "library", "Replace with a library call"
        STUB = "stub", "Stub it out"
        DROP = "drop", "Drop the feature"
        WONTFIX = "wontfix", "Won't fix"

    project = models.ForeignKey(
        AdoptionProject, on_delete=models.CASCADE, related_name="api_decisions"
    )
    api = models.CharField(max_length=200, help_text="the API group's name, as the report shows it")
    decision = models.CharField(max_length=16, choices=Decision.choices)
    replacement = models.CharField(
        max_length=200, blank=True, help_text="the library call it is replaced with"
    )
    note = models.TextField(blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["project", "api"]
        constraints = [
            models.UniqueConstraint(fields=["project", "api"], name="api_decision_unique_api")
        ]

    def __str__(self) -> str:
        return f"{self.project}: {self.api} -> {self.decision}"
