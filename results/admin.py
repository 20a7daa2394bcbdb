from django.contrib import admin

from results.models import Baseline, Verdict


@admin.register(Baseline)
class BaselineAdmin(admin.ModelAdmin):
    list_display = ["id", "project", "benchmark", "job", "fingerprint", "created_at"]
    list_filter = ["benchmark", "project"]
    list_select_related = ["project", "job"]
    raw_id_fields = ["job", "created_by"]


@admin.register(Verdict)
class VerdictAdmin(admin.ModelAdmin):
    list_display = ["id", "job", "benchmark", "metric", "verdict", "ratio", "p_value"]
    list_filter = ["verdict", "benchmark"]
    search_fields = ["job__id", "metric"]
    raw_id_fields = ["job", "baseline", "baseline_job"]
    # What a comparison measured is not edited by hand; only the acknowledgement is.
    readonly_fields = [
        f.name for f in Verdict._meta.fields if f.name not in ("id", "acknowledged_at")
    ]
