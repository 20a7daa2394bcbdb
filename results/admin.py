from django.contrib import admin

from results.models import Baseline, Verdict


@admin.register(Baseline)
class BaselineAdmin(admin.ModelAdmin):
    list_display = ("project", "benchmark", "fingerprint", "job", "created_at")


@admin.register(Verdict)
class VerdictAdmin(admin.ModelAdmin):
    list_display = ("job", "benchmark", "metric", "verdict", "ratio", "p_value", "created_at")
    list_filter = ("verdict",)
