"""rocm-smi: ``--showproductname --showmeminfo vram --showdriverversion --showuniqueid --json``.

rocm-smi's JSON is ``{"card0": {"Label": "value", ...}, ..., "system": {...}}``
with the human labels as keys and every value a string. Labels changed case
between releases ("Card series" in ROCm 5, "Card Series" later) and newer
releases add "GFX Version", so keys are matched case-insensitively.
"""

from __future__ import annotations

import re
from typing import Any

from stack.parsers import ParseError, clean, extract_json, gpu_entry, to_int

_CARD = re.compile(r"^card(\d+)$")
_HEX_ID = re.compile(r"^0x[0-9a-fA-F]+$")
_GFX = re.compile(r"^gfx[0-9a-f]+$")

# Most to least descriptive; "Card Model" is often only the PCI device id.
_MODEL_KEYS = ("device name", "card series", "card model")


def _lower_keys(mapping: dict[str, Any]) -> dict[str, Any]:
    return {str(key).strip().lower(): value for key, value in mapping.items()}


def parse_json(text: str) -> dict[str, Any]:
    """{"gpus": [GPU records], "driver_version": str | None} from rocm-smi's JSON."""
    payload = extract_json(text)
    if not isinstance(payload, dict):
        raise ParseError("rocm-smi JSON is not an object")
    driver = clean(_lower_keys(payload.get("system") or {}).get("driver version"))
    cards = sorted(
        (int(m.group(1)), value)
        for key, value in payload.items()
        if (m := _CARD.match(str(key))) and isinstance(value, dict)
    )
    gpus = []
    for index, card in cards:
        fields = _lower_keys(card)
        model = None
        for key in _MODEL_KEYS:
            candidate = clean(fields.get(key))
            if candidate and not _HEX_ID.match(candidate):
                model = candidate
                break
        arch = clean(fields.get("gfx version"))
        gpus.append(
            gpu_entry(
                index=index,
                vendor="amd",
                model=model or clean(fields.get("card model")) or "AMD GPU",
                arch=arch if arch and _GFX.match(arch) else None,
                memory_bytes=to_int(fields.get("vram total memory (b)")),
                compute_units=None,
                driver=driver,
                uuid=clean(fields.get("unique id")),
                source="rocm-smi",
            )
        )
    return {"gpus": gpus, "driver_version": driver}


def parse_version(text: str) -> dict[str, str | None]:
    """{"tool", "library"} from ``rocm-smi --version``."""
    found: dict[str, str | None] = {"tool": None, "library": None}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        key = key.strip().lower()
        if not sep:
            continue
        if key == "rocm-smi version":
            found["tool"] = clean(value)
        elif key == "rocm-smi-lib version":
            found["library"] = clean(value)
    return found
