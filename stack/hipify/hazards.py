"""Hazards a port trips over that no HIPIFY table lists: named rules over the source text.

hipify-perl renames what its tables know; what compiles after the rename but
behaves differently on AMD GPUs, or does not exist there at all, it cannot see:
a lane index taken ``& 31`` (CDNA wavefronts are 64 wide), inline PTX, NVML,
cuDNN calls (MIOpen is a different API, not a rename). Each rule here has a
name (what a project switches off), a severity, a rationale and a regular
expression; :func:`detect` runs them in the scan's own pass over a file, on the
text it already read, and keeps only matches in code (not comments or strings).

Every rule has a literal ``needles`` prefilter: a rule whose needles are all
absent from the file costs one substring test, so most files cost a handful of
``in`` checks (bench/hipify_scan.py measures the whole scan). docs/hipify.md
shows an example of each rule.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass
from typing import Any

from stack.hipify.lexer import CODE, SourceMap, line_starts

HIGH, MEDIUM, LOW = "high", "medium", "low"
SEVERITIES = (HIGH, MEDIUM, LOW)
MAX_TEXT = 160  # characters of the matched line kept with a finding


@dataclass(frozen=True)
class Rule:
    name: str
    title: str
    severity: str
    rationale: str
    needles: tuple[str, ...]
    pattern: re.Pattern[str]


def _rx(source: str, flags: int = 0) -> re.Pattern[str]:
    return re.compile(source, re.A | flags)


_ARG = r"(?:[^,()]|\([^()]*\))*"  # one call argument (one level of parentheses)

RULES: tuple[Rule, ...] = (
    Rule(
        "warp-lane-mask",
        "lane index of a 32-wide warp",
        HIGH,
        "`x & 31` / `x % 32` takes a thread's lane in a 32-thread warp; AMD CDNA "
        "wavefronts are 64 wide, so lanes 32-63 alias lanes 0-31. Use `% warpSize` "
        "(or `__lane_id()`), or prove the kernel only runs with 32-wide groups.",
        ("31", "0x1f", "0x1F", "32"),
        _rx(r"&\s*(?:31|0x1[fF])\b(?!\s*[.\w])|%\s*32\b(?!\s*\.)"),
    ),
    Rule(
        "warp-index-shift",
        "warp index as `>> 5`",
        HIGH,
        "`tid >> 5` is `tid / 32`, the warp a thread is in when warps are 32 wide; "
        "with 64-wide wavefronts it counts two warps per wavefront. Use `tid / warpSize`.",
        (">>",),
        _rx(r">>\s*5\b(?!\s*\.)"),
    ),
    Rule(
        "warp-size-constant",
        "warp size hard-coded as 32",
        HIGH,
        "A constant that says the warp is 32 threads (`#define WARP_SIZE 32`, "
        "`constexpr int kWarpSize = 32`, `enum { warp_size = 32 }`) sizes loops, shuffles "
        "and shared memory for half an AMD wavefront; a cooperative-groups tile of 32 "
        "(`tiled_partition<32>`) is a warp on NVIDIA GPUs but half a wavefront on CDNA. "
        "Use `warpSize` (device) or query it (`hipDeviceProp_t::warpSize`, host).",
        ("warp", "Warp", "WARP", "tiled_partition", "thread_block_tile"),
        _rx(
            r"warp_?size\w*\s*(?:=\s*|\s+)\(?\s*32\b"
            r"|\b(?:tiled_partition|thread_block_tile)\s*<\s*32\s*>",
            re.I,
        ),
    ),
    Rule(
        "full-warp-mask",
        "32-bit full-warp mask",
        HIGH,
        "`0xffffffff` as the member mask of a `*_sync` warp intrinsic names 32 lanes; "
        "a 64-wide wavefront needs a 64-bit mask, and `__ballot_sync` results are 64 "
        "bits on AMD. Use `__activemask()` or a 64-bit mask.",
        ("0xffffffff", "0xFFFFFFFF", "0xFFFFffff", "0xffffFFFF"),
        _rx(
            r"_sync\s*\(\s*0x[fF]{8}[uUlL]*\b"
            r"|#\s*define\s+\w*MASK\w*\s+\(?\s*0x[fF]{8}[uUlL]*\b"
            r"|mask\w*\s*=\s*\(?\s*0x[fF]{8}[uUlL]*\s*\)?\s*(?:;|>>|<<)",
            re.I,
        ),
    ),
    Rule(
        "shuffle-offset-16",
        "shuffle reduction starting at offset 16",
        HIGH,
        "A butterfly/shuffle loop that starts at 16 and halves (`for (int o = 16; o > 0; "
        "o >>= 1)`), or a scan that doubles up to 16 (`for (i = 1; i <= 16; i *= 2)`), "
        "covers 32 lanes; on a 64-wide wavefront it leaves two partial results. Loop "
        "to `warpSize / 2`.",
        ("16", "32"),
        _rx(
            r"\bfor\s*\(\s*(?:(?:unsigned|int|auto|const|uint32_t|size_t)\s+)*\w+\s*=\s*16\s*;"
            r"[^;{}]*;[^){}]*(?:>>=\s*1|/=\s*2|>>\s*1|/\s*2)"
            r"|\bfor\s*\([^;{}]*=\s*1\s*;\s*\w+\s*(?:<=\s*16|<\s*32)\s*;"
            r"\s*\w+\s*(?:\*=\s*2|<<=\s*1)"
            rf"|\b__shfl_(?:down|xor|up)_sync\s*\({_ARG},{_ARG},\s*16\s*[,)]"
            rf"|\b__shfl_(?:down|xor|up)\s*\({_ARG},\s*16\s*[,)]"
        ),
    ),
    Rule(
        "shared-sized-by-32",
        "shared memory sized by a hard-coded 32",
        MEDIUM,
        "A `__shared__` array with 32 in its size usually holds one value per warp "
        "lane or per warp of a 1024-thread block; with 64-wide wavefronts the index "
        "math around it changes. Size it from `warpSize`-derived constants.",
        ("__shared__",),
        _rx(r"__shared__[^;{}]*\[[^\];]*\b32\b[^\];]*\]"),
    ),
    Rule(
        "inline-ptx",
        "inline PTX assembly",
        HIGH,
        "`asm(...)` in CUDA code is PTX, NVIDIA's virtual ISA: hipify leaves it, and "
        "no AMD compiler reads it. Replace each with a HIP intrinsic or portable C++, "
        "or write GCN/CDNA assembly for the target.",
        ("asm",),
        _rx(r"\b(?:asm|__asm__|__asm)\s*(?:volatile\s*|__volatile__\s*)?\("),
    ),
    Rule(
        "cuda-arch-branch",
        "`__CUDA_ARCH__` branch",
        MEDIUM,
        "Code under `#if __CUDA_ARCH__ >= ...` picks a path by NVIDIA compute "
        "capability; under HIP-Clang `__CUDA_ARCH__` is not defined for AMD targets, "
        "so the device path silently changes (often to the host or oldest one). "
        "Rewrite with `__HIP_DEVICE_COMPILE__` and `__gfx*__` / feature macros.",
        ("__CUDA_ARCH__",),
        _rx(r"\b__CUDA_ARCH__\b"),
    ),
    Rule(
        "nvml",
        "NVML (NVIDIA management library)",
        HIGH,
        "hipify neither converts nor flags NVML: `#include <nvml.h>` and `nvml*()` "
        "calls stay and fail to build. AMD's counterparts are AMD SMI (`amdsmi.h`) "
        "or ROCm SMI (`rocm_smi.h`), with different calls and units.",
        ("nvml",),
        _rx(r"#\s*include\s*[<\"]nvml\.h[>\"]|\bnvml[A-Z]\w*\s*\("),
    ),
    Rule(
        "cooperative-groups-gap",
        "cooperative-groups feature HIP lacks",
        HIGH,
        "HIP's cooperative groups cover thread blocks, tiles, coalesced and grid "
        "groups, but not `memcpy_async`/`wait`, `cg::reduce`/scans, clusters, "
        "`labeled_partition`/`binary_partition` or `invoke_one`: port them by hand.",
        ("cg::", "cooperative_groups"),
        _rx(
            r"\b(?:cg|cooperative_groups)::(?:memcpy_async|wait|wait_prior|reduce|"
            r"inclusive_scan|exclusive_scan|this_cluster|cluster_group|labeled_partition|"
            r"binary_partition|invoke_one|invoke_one_broadcast)\b"
            r"|#\s*include\s*[<\"]cooperative_groups/(?:memcpy_async|reduce|scan)\.h[>\"]"
        ),
    ),
    Rule(
        "graph-feature-gap",
        "CUDA graphs feature HIP lacks",
        MEDIUM,
        "HIP graphs cover capture, instantiation and the common node types, but not "
        "conditional nodes, device-side graph launch or capture into an existing graph; "
        "hipify may rename these without HIP having them.",
        ("Conditional", "DeviceLaunch", "CaptureToGraph", "AddNode_v2"),
        _rx(
            r"\b(?:cudaGraphConditional\w*|cudaGraphSetConditional|cudaGraphCond\w*|"
            r"cudaGraphInstantiateFlagDeviceLaunch|cudaGraphNodeTypeConditional|"
            r"cudaStreamBeginCaptureToGraph|cudaGraphAddNode_v2|cuGraphConditional\w*)\b"
        ),
    ),
    Rule(
        "texture-surface-object",
        "texture or surface object",
        LOW,
        "HIP has texture and surface objects, but not every format, address or filter "
        "mode, and their cost differs on AMD hardware: check each descriptor and test "
        "the results on the target.",
        ("Object_t", "ObjectCreate", "cudaCreateTextureObject", "cudaCreateSurfaceObject"),
        _rx(
            r"\b(?:cudaTextureObject_t|cudaSurfaceObject_t|CUtexObject|CUsurfObject|"
            r"cudaCreateTextureObject|cudaCreateSurfaceObject|cuTexObjectCreate|"
            r"cuSurfObjectCreate)\b"
        ),
    ),
    Rule(
        "library-rewrite",
        "library with no drop-in HIP counterpart",
        HIGH,
        "cuDNN maps to MIOpen, a different API (descriptors, find/tuning, layouts): a "
        "rewrite, not a rename. NPP, OptiX, cuFile, nvJPEG, NVSHMEM and cuDLA have no "
        "drop-in (rocJPEG, rocSHMEM differ): decide each per API.",
        ("cudnn", "npp", "optix", "cufile", "nvjpeg", "nvshmem", "cudla"),
        _rx(
            r"#\s*include\s*[<\"](?:cudnn\w*|npp\w*|optix\w*|cufile|nvjpeg|nvshmem\w*|"
            r"cudla)\.h[>\"]"
        ),
    ),
    Rule(
        "managed-memory",
        "managed (unified) memory",
        MEDIUM,
        "`cudaMallocManaged` / `__managed__` memory migrates pages on demand on NVIDIA "
        "GPUs; on AMD discrete GPUs (MI200) it needs XNACK (`HSA_XNACK=1`, an `xnack+` "
        "target) or it is pinned host memory read over the link, and prefetch/advice "
        "hints differ. Measure, or allocate device memory explicitly.",
        ("Managed", "__managed__", "cudaMemAdvise", "cudaMemPrefetchAsync"),
        _rx(
            r"\b(?:cudaMallocManaged|cuMemAllocManaged|__managed__|cudaMemAdvise|"
            r"cudaMemPrefetchAsync)\b"
        ),
    ),
)
RULE_NAMES = tuple(rule.name for rule in RULES)
BY_NAME = {rule.name: rule for rule in RULES}


def detect(data: bytes) -> list[list[Any]]:
    """[rule, line, column, line text] for every rule match in code, in file order.

    Path-free (a file's content decides it), so it is cached with the file's other
    findings; which rules count is the project's choice, applied when summing.
    """
    # latin-1: every byte is one character, as the rest of the scan reads a file
    text = data.decode("latin-1")
    hits = raw_hits(text)
    return in_code(text, hits, SourceMap(text), line_starts(text)) if hits else []


def raw_hits(text: str) -> list[tuple[int, str]]:
    """(offset, rule) of every match, comments and strings included (cheap: prefiltered)."""
    hits: list[tuple[int, str]] = []
    for rule in RULES:
        if any(needle in text for needle in rule.needles):
            hits.extend((m.start(), rule.name) for m in rule.pattern.finditer(text))
    return hits


def in_code(
    text: str, hits: list[tuple[int, str]], smap: SourceMap, starts: list[int]
) -> list[list[Any]]:
    """The hits that sit in code, as findings (one per rule and line).

    Takes the caller's SourceMap and line starts: the fast engine has built them for
    the file's hipify findings already, and building them is most of the cost.
    """
    out: list[list[Any]] = []
    seen: set[tuple[str, int]] = set()
    for offset, name in sorted(hits):
        if smap.region(offset) != CODE:
            continue
        line = bisect_right(starts, offset)
        if (name, line) in seen:  # one finding per rule and line
            continue
        seen.add((name, line))
        start = starts[line - 1]
        end = text.find("\n", start)
        body = text[start : end if end >= 0 else len(text)].strip()
        out.append([name, line, offset - start, body[:MAX_TEXT]])
    return out


def describe_rules(off: list[str] | tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """The rules as data (for reports and docs), each with whether the project has it on."""
    return [
        {
            "name": r.name,
            "title": r.title,
            "severity": r.severity,
            "rationale": r.rationale,
            "enabled": r.name not in off,
        }
        for r in RULES
    ]
