"""Admin pages of the alerting models (results.admin holds the baselines' own).

Deliveries and their tries are a log: read-only here, written only by results.alerts.
"""

from django.contrib import admin

from results.alert_models import Alert, AlertSettings, Delivery, DeliveryAttempt


@admin.register(AlertSettings)
class AlertSettingsAdmin(admin.ModelAdmin):
    list_display = ("project", "events", "updated_at")
    # The signing secret is not shown in lists; rotate it from the project's alerts page.
    exclude = ("secret",)


class DeliveryAttemptInline(admin.TabularInline):
    model = DeliveryAttempt
    extra = 0
    can_delete = False
    readonly_fields = [f.name for f in DeliveryAttempt._meta.fields]


@admin.register(Alert)
class AlertAdmin(admin.ModelAdmin):
    list_display = ("id", "project", "event", "created_at")
    list_filter = ("event",)
    readonly_fields = ("project", "event", "payload", "dedupe_key", "created_at")


@admin.register(Delivery)
class DeliveryAdmin(admin.ModelAdmin):
    list_display = ("id", "alert", "channel", "target", "status", "attempts", "created_at")
    list_filter = ("status", "channel")
    readonly_fields = [f.name for f in Delivery._meta.fields]
    inlines = [DeliveryAttemptInline]


@admin.register(DeliveryAttempt)
class DeliveryAttemptAdmin(admin.ModelAdmin):
    list_display = ("delivery", "number", "status_code", "error", "will_retry", "started_at")
    readonly_fields = [f.name for f in DeliveryAttempt._meta.fields]
