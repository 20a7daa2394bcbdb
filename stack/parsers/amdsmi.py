"""amd-smi: ``static --json``, ``list --json``, ``version`` and ``metric --json``.

The JSON's shape moved between releases: ROCm 6.x prints a bare list of
per-GPU objects, ROCm 7 wraps it as ``{"gpu_data": [...]}``; ``vram.size`` is
``{"value": 196592, "unit": "MB"}`` in JSON mode but ``"196592 MB"`` in some
releases. All of these are accepted. amd-smi's "MB" is MiB (the library
reports VRAM in mebibytes).
"""

from __future__ import annotations

import re
from typing import Any

from stack.parsers import ParseError, clean, extract_json, gpu_entry, size_to_bytes, to_int

_HEX_ID = re.compile(r"^0x[0-9a-fA-F]+$")


def gpu_objects(payload: Any) -> list[dict[str, Any]]:
    """The per-GPU objects of an amd-smi JSON document, whichever shape it has."""
    if isinstance(payload, dict):
        if isinstance(payload.get("gpu_data"), list):
            payload = payload["gpu_data"]
        elif "gpu" in payload:
            payload = [payload]
        else:
            raise ParseError("amd-smi JSON object has no 'gpu_data' list")
    if not isinstance(payload, list):
        raise ParseError("amd-smi JSON is neither a list nor an object")
    return [item for item in payload if isinstance(item, dict) and "gpu" in item]


def _section(entry: dict[str, Any], name: str) -> dict[str, Any]:
    value = entry.get(name)
    return value if isinstance(value, dict) else {}


def _model(asic: dict[str, Any], board: dict[str, Any]) -> str:
    # Older releases put the PCI device id ("0x74a1") in market_name when the
    # marketing name is unknown; the board's product name is better then.
    for candidate in (asic.get("market_name"), board.get("product_name")):
        text = clean(candidate)
        if text and not _HEX_ID.match(text):
            return text
    return clean(asic.get("market_name")) or "AMD GPU"


def parse_static(text: str) -> list[dict[str, Any]]:
    """GPU records (environment schema) from ``amd-smi static --json``."""
    gpus = []
    for position, entry in enumerate(gpu_objects(extract_json(text))):
        asic = _section(entry, "asic")
        board = _section(entry, "board")
        vram = _section(entry, "vram")
        driver = _section(entry, "driver")
        index = to_int(entry.get("gpu"))
        gpus.append(
            gpu_entry(
                index=position if index is None else index,
                vendor="amd",
                model=_model(asic, board),
                arch=clean(asic.get("target_graphics_version")),
                memory_bytes=size_to_bytes(vram.get("size"), "MB"),
                compute_units=to_int(asic.get("num_compute_units")),
                driver=clean(driver.get("version")),
                uuid=None,
                source="amd-smi",
            )
        )
    return gpus


def parse_list(text: str) -> dict[int, dict[str, str | None]]:
    """GPU index → {"uuid", "bdf"} from ``amd-smi list --json`` (static has no UUID)."""
    found: dict[int, dict[str, str | None]] = {}
    for position, entry in enumerate(gpu_objects(extract_json(text))):
        index = to_int(entry.get("gpu"))
        found[position if index is None else index] = {
            "uuid": clean(entry.get("uuid")),
            "bdf": clean(entry.get("bdf")),
        }
    return found


_VERSION_KEYS = {
    "amdsmi tool": "tool",
    "version": "tool",
    "amdsmi library version": "library",
    "amdsmi_library_version": "library",
    "rocm version": "rocm",
    "rocm_version": "rocm",
    "amdgpu version": "amdgpu",
    "amdgpu_version": "amdgpu",
}


def parse_version(text: str) -> dict[str, str | None]:
    """Versions from ``amd-smi version`` (plain ``A: x | B: y`` or its JSON form).

    Returns keys tool, library, rocm and amdgpu (the driver, printed by newer
    releases), each None when not printed or "N/A".
    """
    found: dict[str, str | None] = {"tool": None, "library": None, "rocm": None, "amdgpu": None}
    pairs: list[tuple[str, Any]] = []
    stripped = text.strip()
    if stripped.startswith(("[", "{")):
        payload = extract_json(stripped)
        if isinstance(payload, list) and payload:
            payload = payload[0]
        if isinstance(payload, dict):
            pairs = list(payload.items())
    else:
        for part in stripped.replace("\n", "|").split("|"):
            key, sep, value = part.partition(":")
            if sep:
                pairs.append((key, value))
    for key, value in pairs:
        name = _VERSION_KEYS.get(str(key).strip().lower())
        if name and found[name] is None:
            found[name] = clean(value)
    return found


# --------------------------------------------------------------------------
# metric --json: what the benchmarks' telemetry polls
# --------------------------------------------------------------------------


def _walk(node: Any, path: tuple[str, ...] = ()) -> Any:
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _walk(value, (*path, str(key).lower()))
    elif isinstance(node, list):
        for item in node:
            yield from _walk(item, path)
    else:
        yield path, node


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        match = re.search(r"[-+]?\d+(?:\.\d+)?", value)
        return float(match.group(0)) if match else None
    return None


def _first(pairs: list[tuple[tuple[str, ...], Any]], *patterns: str) -> float | None:
    for pattern in patterns:
        regex = re.compile(pattern)
        for path, value in pairs:
            joined = "/".join(path)
            if regex.search(joined):
                number = _number(value)
                if number is not None:
                    return number
    return None


def parse_metric(text: str) -> dict[str, Any] | None:
    """The first GPU's clocks, power and temperature from ``amd-smi metric --json``.

    rocm-smi's ``--json`` is read by the same walk (the samplers fall back to
    it when amd-smi is absent), so its keys are here too. amd-smi:
    ``power.socket_power`` (or ``average_socket_power``) as a number or
    ``{"value", "unit"}``, ``clock.gfx_0.clk``, ``temperature.hotspot`` /
    ``edge``, ``power.throttle_status``. rocm-smi: ``card0`` keys such as
    ``Average Graphics Package Power (W)``, ``sclk clock speed:`` "(2100Mhz)",
    ``Temperature (Sensor junction) (C)``. The JSON's nesting changed across
    ROCm releases, hence a walk for the keys each version uses rather than
    fixed paths. None when no clock, power or temperature is in the text.
    """
    try:
        data = extract_json(text)
    except ParseError:
        return None
    if isinstance(data, dict) and "gpu_data" in data:
        data = data["gpu_data"]
    if isinstance(data, list):
        data = data[0] if data else {}
    if isinstance(data, dict) and len(data) == 1 and next(iter(data)).lower().startswith("card"):
        data = next(iter(data.values()))
    pairs = [(path, value) for path, value in _walk(data) if not path or path[-1] != "unit"]
    readings = {
        "sm_clock_mhz": _first(pairs, r"gfx_?0?/clk$", r"^clock/gfx", r"sclk", r"gfxclk"),
        "mem_clock_mhz": _first(pairs, r"mem_?0?/clk$", r"^clock/mem", r"mclk", r"uclk"),
        "power_w": _first(
            pairs,
            r"(^|/)socket_power(/value)?$",
            r"average_socket_power",
            r"package power",
            r"power",
        ),
        "temperature_c": _first(pairs, r"hotspot", r"junction", r"edge", r"temperature"),
    }
    if all(readings[key] is None for key in ("sm_clock_mhz", "power_w", "temperature_c")):
        return None
    status = [v for path, v in pairs if path and "throttle_status" in path[-1]]
    readings["throttled"] = bool(
        status and isinstance(status[0], str) and status[0].strip().upper() == "THROTTLED"
    )
    return readings
