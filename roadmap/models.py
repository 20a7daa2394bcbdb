"""A project's roadmap: its four phases, their tasks, gate overrides and checklist answers.

What the roadmap says about a phase comes from stored results (roadmap/criteria.py):
these rows hold only what a person decides — planned lengths and dates, owners, the
team's own tasks, a gate opened by hand (with who, when and why), and the checklist
answers no data can give.
"""

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.utils import timezone


class PhaseStatus(models.TextChoices):
    NOT_STARTED = "not_started", "Not started"
    ACTIVE = "active", "Active"
    BLOCKED = "blocked", "Blocked"
    DONE = "done", "Done"


class Phase(models.Model):
    project = models.ForeignKey(
        "portal.AdoptionProject", on_delete=models.CASCADE, related_name="phases"
    )
    number = models.PositiveSmallIntegerField()
    planned_days_min = models.PositiveSmallIntegerField()
    planned_days_max = models.PositiveSmallIntegerField()
    planned_start = models.DateField(null=True, blank=True)
    planned_end = models.DateField(null=True, blank=True)
    actual_start = models.DateField(null=True, blank=True)
    actual_end = models.DateField(null=True, blank=True)
    status = models.CharField(
        max_length=16, choices=PhaseStatus.choices, default=PhaseStatus.NOT_STARTED
    )
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta:
        ordering = ["project", "number"]
        constraints = [
            models.UniqueConstraint(fields=["project", "number"], name="phase_one_per_number"),
            models.CheckConstraint(
                condition=models.Q(number__gte=1, number__lte=4), name="phase_number_1_to_4"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.project} phase {self.number}"


class Task(models.Model):
    """A task of a phase: a built-in one (``key``, a stack.kinds.RoadmapTask name, whose
    state comes from the jobs of the kinds that serve it) or the team's own (no key;
    done when a person says so)."""

    phase = models.ForeignKey(Phase, on_delete=models.CASCADE, related_name="tasks")
    key = models.CharField(max_length=64, blank=True)
    title = models.CharField(max_length=300)
    order = models.PositiveSmallIntegerField(default=100)
    done_at = models.DateTimeField(null=True, blank=True)
    done_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta:
        ordering = ["phase", "order", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["phase", "key"],
                condition=~models.Q(key=""),
                name="task_builtin_once_per_phase",
            )
        ]

    def __str__(self) -> str:
        return self.title


class GateOverride(models.Model):
    """A person opened a gate its criteria did not pass: who, when, why — shown with it."""

    phase = models.ForeignKey(Phase, on_delete=models.CASCADE, related_name="overrides")
    criterion = models.CharField(max_length=64, help_text="a roadmap.criteria name")
    reason = models.TextField()
    by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    at = models.DateTimeField(default=timezone.now)
    # An override opens a gate for a while, not for ever: past it the criterion counts again.
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta:
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return f"override of {self.criterion} on {self.phase}"


class ChecklistAnswer(models.Model):
    """The team's answer to one question of the decision checklist, with its evidence."""

    project = models.ForeignKey(
        "portal.AdoptionProject", on_delete=models.CASCADE, related_name="checklist_answers"
    )
    question = models.CharField(max_length=64, help_text="a roadmap.checklist question key")
    answer = models.CharField(max_length=16)
    note = models.TextField(blank=True)
    by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["project", "question"]
        constraints = [
            models.UniqueConstraint(fields=["project", "question"], name="checklist_one_answer")
        ]

    def __str__(self) -> str:
        return f"{self.question}: {self.answer}"


def checked_weights(weights: dict) -> dict[str, float]:
    """Workload weights as the team gives them (the context form, the API): at most 64
    workloads named in 1 to 80 characters, each weighing 0 to 100; names with their
    spaces squeezed, as the performance table names workloads."""
    out: dict[str, float] = {}
    for name, weight in weights.items():
        key = " ".join(str(name).split())
        try:
            value = float(weight)
        except (TypeError, ValueError):
            value = -1.0
        if not key or len(key) > 80 or not 0 <= value <= 100 or len(out) >= 64:
            raise ValidationError(
                f"{str(name)[:80]!r}={str(weight)[:20]}: a workload named in 1 to 80 "
                'characters weighing 0 to 100 (e.g. "gemm bf16=3"), at most 64 of them'
            )
        out[key] = value
    return out


class DecisionContext(models.Model):
    """What only the team knows and the recommendation weighs: its time window, the
    scenario it is in, prices (for performance per dollar)."""

    project = models.OneToOneField(
        "portal.AdoptionProject", on_delete=models.CASCADE, related_name="decision_context"
    )
    time_window_weeks = models.PositiveSmallIntegerField(null=True, blank=True)
    engineers = models.PositiveSmallIntegerField(null=True, blank=True)
    multi_gpu = models.BooleanField(default=False, help_text="jobs span more than one GPU")
    multi_vendor_fleet = models.BooleanField(default=False)
    new_cluster = models.BooleanField(default=False)
    needs_low_level_access = models.BooleanField(default=False)
    budget_limited = models.BooleanField(default=False)
    current_gpu_price = models.FloatField(null=True, blank=True, help_text="per GPU, any currency")
    candidate_gpu_price = models.FloatField(null=True, blank=True)
    workload_weights = models.JSONField(
        default=dict,
        blank=True,
        help_text="how much each measured workload weighs in the performance summary, "
        '{"gemm bf16": 3, "gemm int8": 0}; unnamed ones weigh 1',
    )
    confirmed_cases = models.JSONField(
        default=list,
        blank=True,
        help_text="cases measured below the plausibility floor that the team confirmed as "
        'real, by key: ["gemm|{"m": 8192, "precision": "int8"}"]; they count again',
    )

    # What the team sets on the roadmap page's form and through the API.
    TEAM_FIELDS = (
        "time_window_weeks",
        "engineers",
        "multi_gpu",
        "multi_vendor_fleet",
        "new_cluster",
        "needs_low_level_access",
        "budget_limited",
        "current_gpu_price",
        "candidate_gpu_price",
        "workload_weights",
    )

    def __str__(self) -> str:
        return f"decision context of {self.project}"
