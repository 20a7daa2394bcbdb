"""Where a finding sits in C/C++/CUDA source: code, a comment, a string, or inside a longer word.

hipify-perl's warning pass matches its tables as plain substrings, comments and
strings included, without word boundaries: the word "texture" in a comment is a
"removed identifier" to it. The team needs both views (the tool's raw findings,
and which of them are real code), so every finding gets a context from here.

Not a compiler: a single regex pass that knows comments (``//`` with
backslash-newline continuation, ``/* */``), string literals (with escapes,
encoding prefixes and C++11 raw strings) and character literals (not C++14
digit separators, ``1'000``). A string on a ``#include`` line is the header's
name, which is code.
"""

from __future__ import annotations

import re
from bisect import bisect_right

CODE = "code"
COMMENT = "comment"
STRING = "string"
IDENTIFIER = "identifier"  # inside a longer identifier: "texture" in "my_texture_cache"
CONTEXTS = (CODE, COMMENT, STRING, IDENTIFIER)

_TOKEN = re.compile(
    r"""
      (?P<line>//(?:[^\n\\]|\\.|\\\n)*)
    | (?P<block>/\*.*?(?:\*/|\Z))
    | (?P<raw>\b(?:u8|u|U|L)?R"(?P<delim>[^()\\\s"]{0,16})\(.*?\)(?P=delim)")
    | (?P<str>(?:\b(?:u8|u|U|L))?"(?:[^"\\\n]|\\.|\\\n)*"?)
    | (?P<chr>(?:\b(?:u8|u|U|L)|(?<![\w']))'(?:[^'\\\n]|\\.)*'?)
    | (?P<include>^[ \t]*\#[ \t]*(?:include|include_next|import)\b(?:[^\n/]|/(?![/*]))*)
    """,
    re.S | re.M | re.X | re.A,
)


class SourceMap:
    """Comment and string spans of one text, for looking up offsets."""

    __slots__ = ("_ends", "_kinds", "_starts", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        starts: list[int] = []
        ends: list[int] = []
        kinds: list[str] = []
        if "/" in text or '"' in text or "'" in text:
            for m in _TOKEN.finditer(text):
                group = m.lastgroup
                if group == "include":
                    continue  # skipped whole: its <...> or "..." is the header's name
                kind = COMMENT if group in ("line", "block") else STRING
                starts.append(m.start())
                ends.append(m.end())
                kinds.append(kind)
        self._starts = starts
        self._ends = ends
        self._kinds = kinds

    def region(self, offset: int) -> str:
        """COMMENT, STRING or CODE for the character at ``offset``."""
        i = bisect_right(self._starts, offset) - 1
        if i >= 0 and offset < self._ends[i]:
            return self._kinds[i]
        return CODE

    def context(self, offset: int, length: int) -> str:
        """The context of the text ``[offset, offset+length)``.

        Comment and string win (that is where the noise is); otherwise a match
        with a word character touching either end sits inside a longer
        identifier; otherwise it is code.
        """
        region = self.region(offset)
        if region != CODE:
            return region
        text = self.text
        before = text[offset - 1] if offset > 0 else ""
        after = text[offset + length] if offset + length < len(text) else ""
        if is_word_char(before) or is_word_char(after):
            return IDENTIFIER
        return CODE


def is_word_char(ch: str) -> bool:
    """An ASCII letter, digit or underscore (False for the empty string)."""
    return ch.isascii() and (ch.isalnum() or ch == "_")


def line_starts(text: str) -> list[int]:
    """Offset of the start of each line of ``text`` (lines end at ``\\n``)."""
    starts = [0]
    find = text.find
    i = find("\n")
    while i >= 0:
        starts.append(i + 1)
        i = find("\n", i + 1)
    return starts


def line_bounds(starts: list[int], line_no: int, size: int) -> tuple[int, int]:
    """(start, end) offsets of 1-based line ``line_no`` without its newline; ``size``: len(text)."""
    start = starts[line_no - 1]
    return start, (starts[line_no] - 1 if line_no < len(starts) else size)
