"""``nvcc --version``: the CUDA toolkit's release."""

from __future__ import annotations

import re

_RELEASE = re.compile(r"release\s+(\d+\.\d+),\s*V(\d[\d.]*)")


def parse_version(text: str) -> dict[str, str | None]:
    """{"release": "12.4", "version": "12.4.131"} from "release 12.4, V12.4.131"."""
    match = _RELEASE.search(text)
    if not match:
        return {"release": None, "version": None}
    return {"release": match.group(1), "version": match.group(2)}
