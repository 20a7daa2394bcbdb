"""Validators of what people name things."""

from __future__ import annotations

import re

from django.core.exceptions import ValidationError

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def no_control_characters(value: str) -> None:
    """Refuse a name holding a control character (CR, LF, tab, ...).

    Names go into mail subjects, reports and logs: a line break there forges a header
    (Django then refuses to send, and the alert failed for ever) or a line of its own.
    On the model field, so model forms, model serializers and the admin all check it.
    """
    found = _CONTROL.search(value or "")
    if found:
        raise ValidationError(
            "Names may not hold control characters (line breaks, tabs, ...): "
            f"found {found.group()!r} at position {found.start() + 1}.",
            code="control_characters",
        )
