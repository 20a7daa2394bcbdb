"""A project's alerts page: where its alerts go, which events, and the delivery log.

Viewers see the settings and the log; members and owners change them. The HMAC secret
is shown to those who may write, since they set up the receivers that check it.
"""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db.models import Prefetch
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render

from results import alerts
from results.alert_models import CHOSEN_EVENTS
from results.models import AlertSettings, Delivery, DeliveryAttempt
from results.webhooks import WebhookRefused, check_url, redacted
from teams.access import can_write, projects_for

MAX_URLS = 10
MAX_EMAILS = 20
DELIVERIES_SHOWN = 50


def _lines(text: str) -> list[str]:
    return list(dict.fromkeys(line.strip() for line in text.splitlines() if line.strip()))


class AlertSettingsForm(forms.Form):
    webhook_urls = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3, "spellcheck": "false"}),
        required=False,
        label="Webhook URLs",
        help_text=f"one http(s) URL a line, at most {MAX_URLS}",
    )
    emails = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3, "spellcheck": "false"}),
        required=False,
        label="E-mail recipients",
        help_text=f"one address a line, at most {MAX_EMAILS}",
    )
    events = forms.MultipleChoiceField(
        choices=[(event.value, event.label) for event in CHOSEN_EVENTS],
        widget=forms.CheckboxSelectMultiple,
        required=False,
    )

    def clean_webhook_urls(self) -> list[str]:
        urls = _lines(self.cleaned_data["webhook_urls"])
        if len(urls) > MAX_URLS:
            raise ValidationError(f"at most {MAX_URLS} webhook URLs")
        for url in urls:
            if len(url) > 2000:
                raise ValidationError("a webhook URL is at most 2000 characters")
            try:
                check_url(url)
            except WebhookRefused as exc:
                raise ValidationError(str(exc)) from None
        return urls

    def clean_emails(self) -> list[str]:
        emails = _lines(self.cleaned_data["emails"])
        if len(emails) > MAX_EMAILS:
            raise ValidationError(f"at most {MAX_EMAILS} recipients")
        for email in emails:
            try:
                validate_email(email)
            except ValidationError:
                raise ValidationError(f"{email[:200]!r} is not an e-mail address") from None
        return emails


@login_required
def project_alerts(request: HttpRequest, pk: int) -> HttpResponse:
    project = get_object_or_404(projects_for(request.user), pk=pk)
    writable = can_write(request.user, project.team_id)
    config = AlertSettings.objects.filter(project=project).first()
    status = 200
    if request.method == "POST":
        if not writable:
            messages.error(request, "Viewers cannot change the alerts.")
            return redirect("portal:project-alerts", pk=pk)
        action = request.POST.get("action", "save")
        if action == "rotate" and config is not None:
            alerts.rotate_secret(config)
            messages.info(request, "A new signing secret: update your receivers.")
            return redirect("portal:project-alerts", pk=pk)
        if action == "test" and config is not None:
            try:
                sent = alerts.send_test(config)
            except alerts.TooManyTests as exc:
                messages.error(request, f"No test alert sent: {exc}.")
                return redirect("portal:project-alerts", pk=pk)
            messages.info(
                request,
                f"A test alert went to {sent} target(s); see the log below."
                if sent
                else "Nothing to send to: add a webhook URL or a recipient first.",
            )
            return redirect("portal:project-alerts", pk=pk)
        form = AlertSettingsForm(request.POST)
        if form.is_valid():
            alerts.save_settings(project, **form.cleaned_data)
            messages.info(request, "Alert settings saved.")
            return redirect("portal:project-alerts", pk=pk)
        status = 400
    else:
        form = AlertSettingsForm(
            initial={
                "webhook_urls": "\n".join(config.webhook_urls) if config else "",
                "emails": "\n".join(config.emails) if config else "",
                "events": config.events if config else [e.value for e in CHOSEN_EVENTS],
            }
        )
    deliveries = list(
        Delivery.objects.filter(alert__project=project)
        .select_related("alert")
        .prefetch_related(Prefetch("tries", queryset=DeliveryAttempt.objects.order_by("number")))
        .order_by("-created_at", "-id")[:DELIVERIES_SHOWN]
    )
    for delivery in deliveries:  # a viewer reads where alerts go, not the hooks' secrets
        webhook = delivery.channel == "webhook"
        delivery.shown_target = (
            redacted(delivery.target) if webhook and not writable else delivery.target
        )
    return render(
        request,
        "portal/project_alerts.html",
        {
            "project": project,
            "config": config,
            "webhooks_shown": [
                url if writable else redacted(url)
                for url in (config.webhook_urls if config else [])
            ],
            "form": form,
            "can_write": writable,
            "deliveries": deliveries,
        },
        status=status,
    )
