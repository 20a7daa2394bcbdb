"""rocminfo's report: HSA system attributes, then one block per agent (CPU or GPU).

rocminfo prints ``label: value`` pairs, the label padded to 25 columns and
indented two spaces per level: agent fields at one level, pools, ISAs and
caches deeper. Several deeper blocks reuse agent labels ("Name:" of an ISA,
"Size:" of a pool), so fields are taken by their indentation relative to the
agent's own "Name:" line rather than by label alone.
"""

from __future__ import annotations

import re
from typing import Any

from stack.parsers import clean, gpu_entry, size_to_bytes, strip_ansi, to_int

_AGENT_HEADER = re.compile(r"^\s*Agent\s+(\d+)\s*$")
_POOL_HEADER = re.compile(r"^\s*Pool\s+(\d+)\s*$")
_ISA_HEADER = re.compile(r"^\s*ISA\s+(\d+)\s*$")
_PAIR = re.compile(r"^(\s*)([^:]+?):(.*)$")
_ROCK = re.compile(r"ROCk module version\s+(\S+)\s+is loaded")
_GFX = re.compile(r"^gfx[0-9a-f]+$")

# rocminfo prints this when the device has no unique id.
_PLACEHOLDER_UUIDS = {"GPU-XX", "CPU-XX"}


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def parse_rocminfo(text: str) -> dict[str, Any]:
    """The whole report: runtime version, ROCk module version and every agent.

    Each agent is a dict of its own fields (label without the colon → value
    as printed) plus ``pools`` (segment, size) and ``isas`` (names).
    """
    text = strip_ansi(text)
    report: dict[str, Any] = {
        "runtime_version": None,
        "rock_module_version": None,
        "agents": [],
    }
    rock = _ROCK.search(text)
    if rock:
        report["rock_module_version"] = rock.group(1)

    agent: dict[str, Any] | None = None
    base: int | None = None  # indentation of the current agent's own fields
    section: str | None = None  # "pool" or "isa" while inside one
    for line in text.splitlines():
        if not line.strip() or set(line.strip()) == {"*"}:
            continue
        header = _AGENT_HEADER.match(line)
        if header:
            agent = {"number": int(header.group(1)), "fields": {}, "pools": [], "isas": []}
            report["agents"].append(agent)
            base, section = None, None
            continue
        if agent is None:
            pair = _PAIR.match(line)
            if pair and pair.group(2).strip() == "Runtime Version":
                report["runtime_version"] = clean(pair.group(3))
            continue
        indent = _indent(line)
        if base is None:
            if not _PAIR.match(line):
                continue
            base = indent
        if indent <= base:
            section = None
        if _POOL_HEADER.match(line):
            agent["pools"].append({})
            section = "pool"
            continue
        if _ISA_HEADER.match(line):
            agent["isas"].append({})
            section = "isa"
            continue
        pair = _PAIR.match(line)
        if not pair:
            continue
        label, value = pair.group(2).strip(), pair.group(3).strip()
        if indent == base:
            agent["fields"].setdefault(label, value)
        elif section == "pool" and agent["pools"]:
            agent["pools"][-1].setdefault(label, value)
        elif section == "isa" and agent["isas"]:
            agent["isas"][-1].setdefault(label, value)
    return report


def _gpu_memory_bytes(pools: list[dict[str, str]]) -> int | None:
    # The device's VRAM is its coarse-grained global pool; fine-grained pools
    # on a GPU agent are host memory it can reach.
    for pool in pools:
        segment = pool.get("Segment", "")
        if "GLOBAL" in segment and "COARSE GRAINED" in segment:
            return size_to_bytes(pool.get("Size"), "KB")
    return None


def gpu_agents(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The agents whose Device Type is GPU (CPU and DSP agents are skipped)."""
    return [a for a in report["agents"] if clean(a["fields"].get("Device Type")) == "GPU"]


def parse_gpus(text: str) -> list[dict[str, Any]]:
    """GPU records (environment schema) from rocminfo's output, in agent order."""
    return gpus_from_report(parse_rocminfo(text))


def gpus_from_report(report: dict[str, Any]) -> list[dict[str, Any]]:
    """GPU records from an already parsed report (see parse_rocminfo)."""
    gpus = []
    for index, agent in enumerate(gpu_agents(report)):
        fields = agent["fields"]
        name = clean(fields.get("Name"))
        uuid = clean(fields.get("Uuid"))
        gpus.append(
            gpu_entry(
                index=index,
                vendor="amd",
                model=clean(fields.get("Marketing Name")) or name or "AMD GPU",
                arch=name if name and _GFX.match(name) else None,
                memory_bytes=_gpu_memory_bytes(agent["pools"]),
                compute_units=to_int(fields.get("Compute Unit")),
                driver=None,
                uuid=None if uuid in _PLACEHOLDER_UUIDS else uuid,
                source="rocminfo",
            )
        )
    return gpus
