from django.contrib import admin

from roadmap.models import ChecklistAnswer, DecisionContext, GateOverride, Phase, Task


class TaskInline(admin.TabularInline):
    model = Task
    extra = 0


@admin.register(Phase)
class PhaseAdmin(admin.ModelAdmin):
    list_display = (
        "project",
        "number",
        "status",
        "planned_start",
        "actual_start",
        "actual_end",
        "owner",
    )
    list_filter = ("number", "status")
    inlines = [TaskInline]


@admin.register(GateOverride)
class GateOverrideAdmin(admin.ModelAdmin):
    list_display = ("phase", "criterion", "by", "at", "revoked_at")
    readonly_fields = ("phase", "criterion", "reason", "by", "at")


@admin.register(ChecklistAnswer)
class ChecklistAnswerAdmin(admin.ModelAdmin):
    list_display = ("project", "question", "answer", "by", "at")


admin.site.register(DecisionContext)
