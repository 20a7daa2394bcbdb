"""Rates in a unit fit to their size on the pages (portal/units.py): value and unit are
two filters because the tables show them in two cells."""

from __future__ import annotations

from django import template

from portal.units import scaled

register = template.Library()


@register.filter
def rate_value(value: float | None, unit: str) -> float | None:
    """``{{ m.value|rate_value:m.unit|floatformat:4 }}``: the value in its fitting unit."""
    return scaled(value, unit)[0]


@register.filter
def rate_unit(unit: str, value: float | None) -> str:
    """``{{ m.unit|rate_unit:m.value }}``: the unit rate_value's value is in."""
    return scaled(value, unit)[1]


@register.filter
def times(value: float | None, factor: float) -> float | None:
    """A value of a column read in one unit (the view's factor from portal.units.rate_unit)."""
    return None if value is None else value * factor
