"""Browser forms. They collect input; jobs.services.submit_job decides what is valid."""

from __future__ import annotations

import json
from typing import Any

from django import forms

from stack.kinds import KINDS
from teams.api.parsers import JSONLimitError, loads_bounded
from teams.models import AdoptionProject, Team
from teams.validators import no_control_characters


def offer_teams(field: forms.ModelChoiceField, teams: Any) -> None:
    """The teams a form may pick from; with only one, it is chosen and "---------" is gone
    (a newcomer's first project otherwise failed with "This field is required")."""
    field.queryset = teams
    if len(teams) == 1:
        field.initial = teams[0]
        field.empty_label = None


class JobSubmitForm(forms.Form):
    kind = forms.ChoiceField(choices=())
    team = forms.ModelChoiceField(queryset=Team.objects.none())
    project = forms.ModelChoiceField(queryset=AdoptionProject.objects.none(), required=False)
    params = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 6, "spellcheck": "false"}),
        required=False,
        label="Parameters",
        initial="{}",
        help_text="JSON object; {} takes every default (the kind's parameters are listed below)",
    )
    timeout_s = forms.IntegerField(required=False, min_value=1, label="Timeout (s)")

    def __init__(self, *args: object, teams: object, projects: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        self.fields["kind"].choices = [
            (k.name, f"{k.name} — {k.title}") for k in sorted(KINDS.values(), key=lambda k: k.name)
        ]
        self.fields["project"].queryset = projects
        offer_teams(self.fields["team"], teams)
        # A new user's first submit: the quick, harmless kind, not the first in the list
        # (a full benchmark sweep, an hour on a CPU, when its parameters are {}).
        first = next((k.name for k in KINDS.values() if k.submit_default), None)
        self.fields["kind"].initial = self.initial.get("kind") or first

    def clean_params(self) -> dict:
        return _json_object(self.cleaned_data.get("params"), "The parameters")


def _json_object(raw: str | None, what: str) -> dict:
    try:
        value = loads_bounded(raw or "{}", what=what)
    except JSONLimitError as exc:
        raise forms.ValidationError(str(exc)) from None
    if not isinstance(value, dict):
        raise forms.ValidationError(f"{what} must be a JSON object.")
    return value


class ScheduleForm(JobSubmitForm):
    """A job to submit on a cron expression: the submit form's fields and the timing.
    jobs.services.schedules decides what is valid (the expression, the zone, the job)."""

    name = forms.CharField(max_length=200, validators=[no_control_characters])
    hardware = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 2, "spellcheck": "false"}),
        required=False,
        initial="{}",
        help_text='JSON object, e.g. {"gpu_vendor": "amd", "gpu_count": 1}',
    )
    cron = forms.CharField(
        max_length=200,
        label="Cron expression",
        help_text="five fields: minute hour day-of-month month day-of-week; "
        "'0 3 * * *' is 03:00 every day",
        widget=forms.TextInput(attrs={"spellcheck": "false", "placeholder": "0 3 * * *"}),
    )
    time_zone = forms.CharField(
        max_length=64,
        initial="UTC",
        help_text="IANA name, e.g. Europe/Berlin: the cron's times are this zone's clock",
        widget=forms.TextInput(attrs={"list": "time-zones", "spellcheck": "false"}),
    )
    enabled = forms.BooleanField(required=False, initial=True)

    field_order = ["name", "team", "project", "kind", "params", "hardware", "timeout_s"]

    def clean_hardware(self) -> dict:
        return _json_object(self.cleaned_data.get("hardware"), "The hardware request")


def _type_of(prop: dict[str, Any]) -> str:
    """A JSON Schema property's type in words: "list of string: gemm, fft", "integer 1-64"."""
    kind = prop.get("type", "any")
    if isinstance(kind, list):
        kind = " or ".join(map(str, kind))
    if kind == "array":
        return "list of " + _type_of(prop.get("items") or {})
    text = str(kind)
    if "enum" in prop:
        text += ": " + ", ".join(str(v) for v in prop["enum"])
    low = prop.get("minimum", prop.get("exclusiveMinimum"))
    high = prop.get("maximum", prop.get("exclusiveMaximum"))
    if low is not None or high is not None:
        text += f" {'' if low is None else low}\u2013{'' if high is None else high}"
    return text


def param_fields(schema: dict[str, Any]) -> list[dict[str, str]]:
    """A kind's parameters as rows a page can show: name, type, default, description.

    The raw JSON Schema (thousands of lines for a benchmark) is for programs; a person
    submitting a job wants each field once, in words.
    """
    rows = []
    for name, prop in (schema.get("properties") or {}).items():
        prop = prop if isinstance(prop, dict) else {}
        default = json.dumps(prop["default"]) if "default" in prop else ""
        rows.append(
            {
                "name": name,
                "type": _type_of(prop),
                "default": default,
                "description": str(prop.get("description", "")),
            }
        )
    return rows


class ProjectForm(forms.ModelForm):
    target_gpus = forms.CharField(
        required=False,
        label="Target GPUs",
        help_text="comma-separated, e.g. MI300X, gfx942, MI250X",
    )

    class Meta:
        model = AdoptionProject
        fields = ["team", "name", "codebase_description", "current_platform", "target_gpus"]

    def __init__(self, *args: object, teams: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        offer_teams(self.fields["team"], teams)

    def clean_target_gpus(self) -> list[str]:
        raw = self.cleaned_data.get("target_gpus") or ""
        if isinstance(raw, list):
            return raw
        return [item.strip() for item in raw.split(",") if item.strip()]
