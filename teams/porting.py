"""What a team decides about its port: per-API decisions, and how its scans read the code.

Both live with the project (teams is where projects are), below the jobs and the report
that read them: a scan takes the settings as parameters (teams.facts), the report
joins the decisions to the API groups a scan found, by name, so a re-scan keeps them.
"""

from __future__ import annotations

from typing import Any

from stack.hipify.hazards import RULE_NAMES
from teams.models import AdoptionProject, ApiDecision

# The kinds of hipify warning that name an API HIP lacks: each needs a decision, and each
# reference in the project's own code is porting work (the estimate's terms).
NEEDS_DECISION = ("unsupported", "removed", "unsupported_device_function")
MAX_API_CHARS = 200
MAX_NOTE_CHARS = 5000
MAX_GLOBS = 200
MAX_GLOB_CHARS = 500


class PortingInputError(ValueError):
    """Input refused; ``field`` names what to fix (the API answers 400 with it)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def lacking_refs(summary: dict[str, Any]) -> dict[str, int]:
    """References in the project's own code to APIs HIP lacks, per kind and in ``total``:
    what the estimate counts (its inputs; vendored files, comments and strings left out).
    The porting page's tiles, the gates, the report and the checklist read this one count;
    the page once showed hipify's per-kind totals beside it ("350 unsupported" vs 236). A
    scan from before the estimate recorded its inputs falls back to hipify's in-code
    counts."""
    inputs = (summary.get("effort") or {}).get("inputs")
    kinds = summary.get("warnings_by_kind") or {}
    out = {
        kind: int(inputs.get(f"{kind}_refs", 0) or 0)
        if inputs is not None
        else int((kinds.get(kind) or {}).get("code", 0) or 0)
        for kind in NEEDS_DECISION
    }
    out["total"] = sum(out.values())
    return out


def record_decision(
    project: AdoptionProject,
    *,
    api: str,
    decision: str,
    replacement: str = "",
    note: str = "",
    user: Any = None,
) -> ApiDecision:
    """Record (or change) the team's decision on one API group; one per name and project.

    A "replace with a library call" names the call (``replacement``): a decision that
    says "a library" without which one is not one a porting engineer can act on.
    """
    api = (api or "").strip()
    if not api:
        raise PortingInputError("api", "name the API (group) the decision is about")
    if len(api) > MAX_API_CHARS:
        raise PortingInputError("api", f"longer than {MAX_API_CHARS} characters")
    if decision not in ApiDecision.Decision.values:
        choices = ", ".join(ApiDecision.Decision.values)
        raise PortingInputError("decision", f"{decision!r} is not one of {choices}")
    replacement = (replacement or "").strip()
    if decision == ApiDecision.Decision.LIBRARY and not replacement:
        raise PortingInputError("replacement", "say which library call replaces it")
    if len(replacement) > 200:
        raise PortingInputError("replacement", "longer than 200 characters")
    note = (note or "").strip()
    if len(note) > MAX_NOTE_CHARS:
        raise PortingInputError("note", f"longer than {MAX_NOTE_CHARS} characters")
    row, _ = ApiDecision.objects.update_or_create(
        project=project,
        api=api,
        defaults={
            "decision": decision,
            "replacement": replacement,
            "note": note,
            "decided_by": user if getattr(user, "is_authenticated", False) else None,
        },
    )
    return row


def forget_decision(project: AdoptionProject, api: str) -> bool:
    """Reopen an API: its decision is removed. Whether there was one."""
    deleted, _ = ApiDecision.objects.filter(project=project, api=api.strip()).delete()
    return bool(deleted)


def decisions_of(project: AdoptionProject) -> dict[str, ApiDecision]:
    return {d.api: d for d in project.api_decisions.all()}


def clean_porting_settings(data: dict[str, Any]) -> dict[str, list[str]]:
    """The project's scan settings, checked: vendored / not_vendored globs, hazards_off rules.

    Lists, or text with one glob per line (the page's text areas).
    """
    out: dict[str, list[str]] = {}
    for name in ("vendored", "not_vendored"):
        value = data.get(name, [])
        if isinstance(value, str):
            value = value.splitlines()
        if not isinstance(value, list):
            raise PortingInputError(name, "a list of globs")
        globs = []
        for item in value:
            if not isinstance(item, str):
                raise PortingInputError(name, "every glob is text")
            item = item.strip()
            if not item:
                continue
            if len(item) > MAX_GLOB_CHARS or any(not ch.isprintable() for ch in item):
                raise PortingInputError(name, f"{item[:60]!r}: not a glob of a path")
            if item not in globs:
                globs.append(item)
        if len(globs) > MAX_GLOBS:
            raise PortingInputError(name, f"more than {MAX_GLOBS} globs")
        out[name] = globs
    off = data.get("hazards_off", [])
    if isinstance(off, str):
        off = [off]
    if not isinstance(off, list) or any(r not in RULE_NAMES for r in off):
        unknown = [r for r in off if r not in RULE_NAMES] if isinstance(off, list) else off
        raise PortingInputError(
            "hazards_off", f"unknown rule(s) {unknown!r}; rules: {', '.join(RULE_NAMES)}"
        )
    out["hazards_off"] = sorted(set(off), key=RULE_NAMES.index)
    return out


def save_porting_settings(project: AdoptionProject, data: dict[str, Any]) -> dict[str, list[str]]:
    """Check and store the settings; the next scan takes them (teams.facts)."""
    project.porting_settings = clean_porting_settings(data)
    project.save(update_fields=["porting_settings"])
    return project.porting_settings


def api_groups_with_decisions(
    groups: list[dict[str, Any]], decisions: dict[str, Any]
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The scan's API groups, each with the team's decision (by name), and the tally.

    A group needs a decision when the project's own code uses it in code; groups found
    only in vendored code, comments or strings are listed but never "open".
    """
    rows = []
    tally = {"open": 0, "decided": 0, "not_needed": 0}
    for group in groups:
        d = decisions.get(group["api"])
        needs = group.get("in_code", 0) > 0
        state = ("decided" if d else "open") if needs else "not_needed"
        tally[state] += 1
        rows.append(
            {
                **group,
                "state": state,
                "decision": (
                    {
                        "decision": d.decision,
                        "label": d.get_decision_display(),
                        "replacement": d.replacement,
                        "note": d.note,
                        "by": d.decided_by.get_username() if d.decided_by else None,
                        "at": d.updated_at,
                    }
                    if d
                    else None
                ),
            }
        )
    tally["all_decided"] = tally["open"] == 0
    # decisions whose API the newest scan no longer finds: kept, and shown as such
    found = {g["api"] for g in groups}
    tally["no_longer_found"] = sorted(name for name in decisions if name not in found)
    return rows, tally
