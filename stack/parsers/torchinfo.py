"""What PyTorch says about the GPUs it sees, gathered in a separate interpreter.

Importing torch takes seconds and can crash (a wheel built for another ROCm,
a missing libamdhip64.so), so the probe never imports it itself: it runs
SCRIPT with the same Python and reads the one JSON line SCRIPT prints after
MARKER. Everything here is the pure half: the script's text and the parser.
"""

from __future__ import annotations

import json
from typing import Any

from stack.parsers import ParseError, clean, gpu_entry

MARKER = "ROCPATH_TORCH_INFO "

SCRIPT = r"""
import json
info = {"version": None, "hip": None, "cuda": None, "device_count": 0, "devices": [],
        "libraries": {}, "error": None}
try:
    import torch
    info["version"] = str(torch.__version__)
    info["hip"] = getattr(torch.version, "hip", None)
    info["cuda"] = getattr(torch.version, "cuda", None)
    try:
        count = int(torch.cuda.device_count())
        info["device_count"] = count
        for i in range(count):
            p = torch.cuda.get_device_properties(i)
            uuid = getattr(p, "uuid", None)
            info["devices"].append({
                "name": str(p.name),
                "total_memory": int(p.total_memory),
                "multi_processor_count": getattr(p, "multi_processor_count", None),
                "gcnArchName": getattr(p, "gcnArchName", None),
                "major": getattr(p, "major", None),
                "minor": getattr(p, "minor", None),
                "uuid": None if uuid is None else str(uuid),
            })
    except Exception as exc:
        info["error"] = "%s: %s" % (type(exc).__name__, exc)
    try:
        if torch.backends.cudnn.is_available():
            name = "miopen" if info["hip"] else "cudnn"
            info["libraries"][name] = str(torch.backends.cudnn.version())
    except Exception:
        pass
except Exception as exc:
    info["error"] = "%s: %s" % (type(exc).__name__, exc)
print("ROCPATH_TORCH_INFO " + json.dumps(info), flush=True)
"""


def parse_output(text: str) -> dict[str, Any]:
    """The dict SCRIPT printed; ParseError if its line is missing or not JSON."""
    for line in reversed(text.splitlines()):
        if line.startswith(MARKER):
            try:
                info = json.loads(line[len(MARKER) :])
            except ValueError as exc:
                raise ParseError(f"torch probe printed invalid JSON: {exc}") from None
            if isinstance(info, dict):
                return info
    raise ParseError("torch probe printed no result line")


def backend(info: dict[str, Any]) -> str | None:
    """ "rocm", "cuda" or "cpu" for the build; None when torch was not imported."""
    if not info.get("version"):
        return None
    if info.get("hip"):
        return "rocm"
    if info.get("cuda"):
        return "cuda"
    return "cpu"


def _arch(device: dict[str, Any], build: str | None) -> str | None:
    gcn = clean(device.get("gcnArchName"))
    if build == "rocm" and gcn:
        return gcn.split(":", 1)[0]  # "gfx942:sramecc+:xnack-" → "gfx942"
    major, minor = device.get("major"), device.get("minor")
    if build == "cuda" and isinstance(major, int) and isinstance(minor, int):
        return f"sm_{major}{minor}"
    return None


def gpus(info: dict[str, Any]) -> list[dict[str, Any]]:
    """GPU records (environment schema) for the devices torch sees."""
    build = backend(info)
    vendor = {"rocm": "amd", "cuda": "nvidia"}.get(build or "")
    if vendor is None:
        return []
    found = []
    for index, device in enumerate(info.get("devices") or []):
        uuid = clean(device.get("uuid"))
        if uuid and vendor == "nvidia" and not uuid.startswith("GPU-"):
            uuid = f"GPU-{uuid}"  # nvidia-smi's spelling, so the two can be matched
        memory = device.get("total_memory")
        units = device.get("multi_processor_count")
        found.append(
            gpu_entry(
                index=index,
                vendor=vendor,
                model=clean(device.get("name")) or f"{vendor.upper()} GPU",
                arch=_arch(device, build),
                memory_bytes=memory if isinstance(memory, int) else None,
                compute_units=units if isinstance(units, int) and units > 0 else None,
                driver=None,
                uuid=uuid,
                source="torch",
            )
        )
    return found
