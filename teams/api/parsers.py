"""JSON with limits: a body larger than ROCPATH_JSON_MAX_BYTES or nested deeper than
ROCPATH_JSON_MAX_DEPTH is refused with a 400 (a form error in the portal), not parsed.

``json.loads`` raises RecursionError on a very deep document (a 100,000-deep array is a few
hundred kilobytes) and anything that walks a merely deep one later (jsonschema, the
serializers) can too; no job parameter needs more than a few levels.
"""

from __future__ import annotations

import codecs
from typing import Any

from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser, get_encoding
from rest_framework.utils import json


class JSONLimitError(ValueError):
    """The document is too large, too deep or not JSON; the message says which."""


def depth_of(value: Any, limit: int) -> int:
    """How deep containers nest in a parsed value, counting no further than ``limit`` + 1."""
    deepest = 0
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            depth += 1
            deepest = max(deepest, depth)
            if depth > limit:
                return depth
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth) for child in children)
    return deepest


def loads_bounded(text: str | bytes, *, what: str = "JSON") -> Any:
    """Parse JSON within the server's size and depth limits (strict: no NaN or Infinity)."""
    max_bytes, max_depth = settings.ROCPATH_JSON_MAX_BYTES, settings.ROCPATH_JSON_MAX_DEPTH
    size = len(text.encode() if isinstance(text, str) else text)
    if size > max_bytes:
        raise JSONLimitError(f"{what} is {size} bytes; at most {max_bytes} bytes are accepted")
    try:
        value = json.loads(text)
    except RecursionError:
        raise JSONLimitError(
            f"{what} is nested too deep (at most {max_depth} levels are accepted)"
        ) from None
    except ValueError as exc:
        raise JSONLimitError(f"Not valid JSON: {exc}") from None
    if depth_of(value, max_depth) > max_depth:
        raise JSONLimitError(f"{what} is nested too deep (at most {max_depth} levels are accepted)")
    return value


class BoundedJSONParser(JSONParser):
    def parse(
        self, stream: Any, media_type: str | None = None, parser_context: dict | None = None
    ) -> Any:
        encoding = get_encoding(parser_context or {})
        limit = settings.ROCPATH_JSON_MAX_BYTES
        raw = stream.read(limit + 1) if stream is not None else b""
        if len(raw) > limit:
            raise ParseError(f"The JSON body is over {limit} bytes; at most {limit} are accepted.")
        try:
            text = codecs.decode(raw, encoding)
        except UnicodeDecodeError as exc:
            raise ParseError(f"JSON parse error - not {encoding}: {exc.reason}") from None
        try:
            return loads_bounded(text, what="The JSON body")
        except JSONLimitError as exc:
            raise ParseError(str(exc)) from None
