"""FLOP and OPS rates shown in a unit fit to their size: 0.0006 TFLOP/s reads 600 MFLOP/s.

Runners store GEMM rates in TFLOP/s (TOPS for integers), the unit of a GPU; a CPU run's
rates are then a few thousandths, which a page rounds to "0.0006" or "0". Pages and
charts pass a rate through here before showing it, so every place picks the same unit.
Units other than FLOP/s and OPS rates come back as they are.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

_PREFIXES = (("T", 1e12), ("G", 1e9), ("M", 1e6))
_RATE = re.compile(r"^([TGM])(FLOP/s|OPS)$")


def rate_unit(unit: str, values: Iterable[float | None]) -> tuple[float, str]:
    """(factor, unit): multiply ``values`` by factor to read them in unit.

    The unit is the largest of T, G, M in which the largest value is at least 1, so one
    table column or chart axis has one unit for all its values; below 1 MFLOP/s, M.
    """
    match = _RATE.match(unit or "")
    finite = [abs(v) for v in values if v is not None and math.isfinite(v)]
    if match is None or not finite or max(finite) == 0:
        return 1.0, unit
    prefix, base = match[1], match[2]
    stored = dict(_PREFIXES)[prefix]
    top = max(finite) * stored
    name, size = next(((n, s) for n, s in _PREFIXES if top >= s), _PREFIXES[-1])
    return stored / size, f"{name}{base}"


def scaled(value: float | None, unit: str) -> tuple[float | None, str]:
    """One rate in the unit fit to it: (0.0006, "TFLOP/s") -> (600.0, "MFLOP/s")."""
    factor, shown = rate_unit(unit, [value])
    return (None if value is None else value * factor), shown
