from django.contrib import admin

from portal.models import AdoptionProject, Membership, Team


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
