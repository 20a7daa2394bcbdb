"""Template filters that show stored values by their labels, not as raw enum text."""

from __future__ import annotations

from django import template

from roadmap.models import PhaseStatus

register = template.Library()


@register.filter
def phase_status(value: str) -> str:
    """'not_started' as "Not started" (the page showed "notstarted")."""
    try:
        return str(PhaseStatus(value).label)
    except ValueError:
        return value


@register.filter
def words(value: object) -> str:
    """'unsupported_device_function' as "unsupported device function": a name in words,
    which a table cell can also wrap (as one token it cut the porting report's table off)."""
    return str(value).replace("_", " ")
