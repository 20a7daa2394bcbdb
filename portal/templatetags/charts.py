"""Inline SVG charts under the Content-Security-Policy."""

from __future__ import annotations

from django import template
from django.utils.safestring import SafeString, mark_safe

register = template.Library()


@register.filter
def with_nonce(chart: SafeString, nonce: object) -> SafeString:
    """The chart with the response's CSP nonce on its <style> (pygal's own CSS).

    The nonce is base64 (no quote can end the attribute), and the chart is pygal's output,
    which escapes every label it draws.
    """
    value = "" if nonce is None else str(nonce)  # str(): django-csp's lazy nonce is falsy
    if not value:  # until it is read, and reading it is what puts it in the header
        return chart
    return mark_safe(str(chart).replace("<style", f'<style nonce="{value}"', 1))  # noqa: S308
