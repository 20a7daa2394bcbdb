from django.contrib import admin

from teams.models import AdoptionProject, ApiDecision, Membership, SourceSnapshot, Team


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 1
    raw_id_fields = ["user"]


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "created_at"]
    prepopulated_fields = {"slug": ["name"]}
    inlines = [MembershipInline]


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["team", "user", "role"]
    list_filter = ["role", "team"]


@admin.register(AdoptionProject)
class AdoptionProjectAdmin(admin.ModelAdmin):
    list_display = ["name", "team", "current_platform", "created_at"]
    list_filter = ["team"]


@admin.register(SourceSnapshot)
class SourceSnapshotAdmin(admin.ModelAdmin):
    """For operators to see what was uploaded or cloned, by whom, and why a fetch failed.

    Read-only: a row stands for a tree on disk (teams.sources) that only an upload
    or a clone makes, so one added here would have no code, and one deleted here
    would leave its tree behind.
    """

    list_display = ["id", "project", "origin", "name", "status", "file_count", "created_at"]
    list_filter = ["status", "origin"]
    search_fields = ["name", "commit", "archive_sha256"]
    list_select_related = ["project__team"]
    # Every field: nothing here may change a row (see above).
    readonly_fields = [f.name for f in SourceSnapshot._meta.concrete_fields if not f.primary_key]

    def has_add_permission(self, request: object) -> bool:
        return False

    def has_delete_permission(self, request: object, obj: object = None) -> bool:
        return False


@admin.register(ApiDecision)
class ApiDecisionAdmin(admin.ModelAdmin):
    list_display = ["project", "api", "decision", "replacement", "decided_by", "updated_at"]
    list_filter = ["decision"]
    search_fields = ["api", "note"]
    list_select_related = ["project__team", "decided_by"]
