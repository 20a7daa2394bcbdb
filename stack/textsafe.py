"""User text made inert for the formats rocpath exports (docs/security.md, "Exports").

Project names, notes, case parameters and file paths from a scanned tree are written
into Markdown reports and CSV downloads. A Markdown viewer would read ``## ...`` or a
newline in a note as structure rocpath never wrote, and a spreadsheet runs a cell
starting with ``=`` as a formula. Every exporter passes user text through here, so the
rule lives in one place. No Django: the job side (stack.hipify.report) uses it too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

# Line breaks of any kind (and other control characters) become one space: user text
# stays on the line rocpath put it on, so it can never open a block of its own.
_BREAKS = re.compile(r"[\x00-\x1f\x7f\x85\u2028\u2029]+")
# Inline structure anywhere in the text: emphasis, code, links, HTML, table cells,
# headings, strikethrough, entities and escapes themselves.
_INLINE = re.compile(r"([\\`*_\[\]<>#|~&])")
# What opens a block at the start of a line (a list item, a setext underline, an
# ordered list "1." / "1)"): escaped where the text starts, in case it starts a line.
_LEADING = re.compile(r"^(\s*)([-+=]|\d+(?=[.)]))")


def markdown_text(value: Any) -> str:
    """``value`` as literal Markdown text, on one line.

    Backslash escapes rather than code spans: a code span can be closed by the text
    it holds, and a backslash-escaped character renders as itself in CommonMark and
    GitHub Markdown, inside table cells too.
    """
    text = _BREAKS.sub(" ", str(value))
    text = _INLINE.sub(r"\\\1", text)
    # "-x" becomes "\-x"; "1. x" becomes "1\. x" (the digits stay, the dot is escaped)
    return _LEADING.sub(
        lambda m: f"{m[1]}{m[2]}\\" if m[2][0].isdigit() else f"{m[1]}\\{m[2]}", text, count=1
    )


# OWASP's list: what a spreadsheet reads as the start of a formula.
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def csv_cell(value: Any) -> Any:
    """One CSV cell a spreadsheet shows and never evaluates.

    Text starting like a formula gets a leading ``'`` (OWASP's advice); numbers, and
    text that is a plain number such as ``-1.5``, are left alone so a sheet still sums
    them (a number cannot call anything).
    """
    if value is None or isinstance(value, (int, float)):
        return value
    text = value if isinstance(value, str) else str(value)
    if text.startswith(_FORMULA_STARTS) and not _NUMBER.fullmatch(text):
        return "'" + text
    return text


def csv_row(values: Iterable[Any]) -> list[Any]:
    """A row for ``csv.writer``: every cell through ``csv_cell``."""
    return [csv_cell(value) for value in values]
