"""Signal apart from noise, never hidden: vendored code, API groups, look-alike identifiers.

hipify-perl counts every match in every file. Three kinds of them are not work
on the project's own code, and drove estimates far off (docs/hipify.md):

- **vendored code**: bundled third-party headers (GLEW, glext, freeglut, stb, …)
  and folders such as ``third_party/``, ``external/``, ``vendor/`` or
  ``Common/GL/``. :func:`vendored_reason` says why a path is taken for one; a
  project adds its own globs or takes a path back (``vendored`` /
  ``not_vendored``). Such files are still scanned and reported, in a column of
  their own, and left out of the estimate.
- **identifiers that are one decision**: a typedef and its tag
  (``CUctx_flags`` / ``CUctx_flags_enum``) and the constants of one enum
  (``CU_TARGET_COMPUTE_20`` … ``_75``) are grouped under one API name
  (:func:`api_group`): one decision each, one term of the estimate.
- **look-alike identifiers**: the "cudaX left after translation" tokens are
  split into CUDA names hipify's tables know (HIP lacks them) and the project's
  own identifiers that only look like one (``cudaCheckError``).

:func:`assess` turns the scan's totals into the estimate that counts the
project's code, with every term's left-out part and the reason beside it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from stack.hipify.families import effort_estimate
from stack.hipify.hazards import BY_NAME, RULE_NAMES, SEVERITIES

# Folders that hold other people's code, matched as a whole path component
# (case-insensitive), anywhere in the path.
VENDORED_FOLDERS = frozenset(
    {
        "third_party",
        "third-party",
        "thirdparty",
        "3rdparty",
        "3rd_party",
        "external",
        "externals",
        "extern",
        "vendor",
        "vendored",
        "_deps",
    }
)
# Khronos header folders (GL/glew.h, KHR/khrplatform.h): matched case-sensitively,
# as the headers name them in #include.
KHRONOS_FOLDERS = frozenset({"GL", "GLES", "GLES2", "GLES3", "KHR", "EGL"})
# File names of well-known bundled libraries (fnmatch-style, case-insensitive).
VENDORED_FILES: tuple[tuple[str, str], ...] = (
    ("glew.h", "GLEW"),
    ("glxew.h", "GLEW"),
    ("wglew.h", "GLEW"),
    ("eglew.h", "GLEW"),
    ("glext.h", "OpenGL extension header"),
    ("glxext.h", "OpenGL extension header"),
    ("wglext.h", "OpenGL extension header"),
    ("glcorearb.h", "OpenGL core header"),
    ("khrplatform.h", "Khronos platform header"),
    ("freeglut*.h", "freeglut"),
    ("glut.h", "GLUT"),
    ("glfw*.h", "GLFW"),
    ("stb_*.h", "stb"),
    ("tiny_obj_loader.h", "tinyobjloader"),
    ("lodepng.*", "LodePNG"),
    ("json.hpp", "nlohmann/json"),
    ("catch.hpp", "Catch2"),
    ("doctest.h", "doctest"),
    ("cxxopts.hpp", "cxxopts"),
    ("dynlink_*.h", "a bundled copy of CUDA's own headers (dynamic loading)"),
    ("cuda_drvapi_dynlink*", "a bundled copy of CUDA's own headers (dynamic loading)"),
)


def _file_rx(pattern: str) -> re.Pattern[str]:
    return re.compile(re.escape(pattern).replace(r"\*", ".*") + r"\Z", re.I)


_VENDORED_FILES = tuple((_file_rx(p), what, p) for p, what in VENDORED_FILES)
# One pass for the common answer (no known name): the file names' patterns as one regex.
_ANY_VENDORED_FILE = re.compile("|".join(f"(?:{rx.pattern})" for rx, _, _ in _VENDORED_FILES), re.I)


def vendored_reason(
    path: str,
    vendored: Sequence[re.Pattern[str]] = (),
    not_vendored: Sequence[re.Pattern[str]] = (),
) -> str | None:
    """Why ``path`` (relative, POSIX) is taken for vendored code; None: the project's own.

    The project's lists win: ``not_vendored`` takes a path back, ``vendored`` adds
    one (compiled globs, stack.hipify.scan.glob_to_regex).
    """
    if any(rx.fullmatch(path) for rx in not_vendored):
        return None
    for rx in vendored:
        if rx.fullmatch(path):
            return f"the project's vendored list ({rx.pattern})"
    parts = path.split("/")
    for folder in parts[:-1]:
        if folder.lower() in VENDORED_FOLDERS:
            return f"in a third-party folder ({folder}/)"
        if folder in KHRONOS_FOLDERS:
            return f"in a Khronos header folder ({folder}/)"
    name = parts[-1]
    if not _ANY_VENDORED_FILE.match(name):
        return None
    for rx, what, pattern in _VENDORED_FILES:
        if rx.match(name):
            return f"a known bundled header ({pattern}: {what})"
    return None


# --- API groups ----------------------------------------------------------------------

_TWIN_SUFFIX = re.compile(r"(?:_enum|_st|_struct|_union)$")
_CONSTANT = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\Z")
DECIDED_KINDS = ("unsupported", "removed", "unsupported_device_function", "deprecated")
_KIND_RANK = {kind: i for i, kind in enumerate(DECIDED_KINDS)}
# Groups (most used first) whose files and first places the summary lists; the rest
# have them in findings.json (a dense tree has thousands of groups: listing every one's
# places would cost a re-scan more than the re-scan itself).
MAX_GROUPS_WITH_PLACES = 300


def api_groups(identifiers: Iterable[str]) -> dict[str, str]:
    """Each identifier's API group: the name one decision is recorded under.

    A typedef twin joins its plain name (``CUctx_flags_enum`` → ``CUctx_flags``,
    ``CUstream_st`` → ``CUstream``). An all-caps constant joins the enum its
    siblings share: all but its last ``_`` part, at most three parts
    (``CU_TARGET_COMPUTE_20`` → ``CU_TARGET_COMPUTE_*``), when at least two of
    the identifiers given share it; a constant alone stays itself. A heuristic,
    so the group always lists its members.
    """
    names = list(dict.fromkeys(identifiers))
    prefix_of: dict[str, str] = {}
    counts: dict[str, int] = {}
    for name in names:
        if _CONSTANT.match(name):
            parts = name.split("_")
            if len(parts) >= 3:
                prefix = "_".join(parts[: min(3, len(parts) - 1)])
                prefix_of[name] = prefix
                counts[prefix] = counts.get(prefix, 0) + 1
    groups = {}
    for name in names:
        prefix = prefix_of.get(name)
        if prefix is not None and counts[prefix] >= 2:
            groups[name] = f"{prefix}_*"
        else:
            groups[name] = _TWIN_SUFFIX.sub("", name) or name
    return groups


# --- the assessment --------------------------------------------------------------------


def _project_api_entries(all_apis: dict[str, list[Any]], vendored_apis: dict[str, list[Any]]):
    """(identifier, kind, family, since, project total, project in code, vendored total,
    vendored in code, project files, project places) per API of a decided kind."""
    for key, (family, since, total, in_code, users, places) in all_apis.items():
        ident, _, kind = key.rpartition("\t")
        if kind not in _KIND_RANK:
            continue
        v = vendored_apis.get(key)
        if v is None:  # most APIs: no vendored file uses them, nothing to take out
            yield ident, kind, family, since, total, in_code, 0, 0, users, places
            continue
        v_users = set(v[4])
        yield (
            ident,
            kind,
            family,
            since,
            total - v[2],
            in_code - v[3],
            v[2],
            v[3],
            [u for u in users if u not in v_users],
            [(path, locs) for path, locs in places if path not in v_users],
        )


def assess(
    totals: Any,
    vendored_totals: Any,
    vendored_files: dict[str, str],
    known_cuda_names: set[str] | frozenset[str],
    hazards_off: Sequence[str] = (),
    max_locations: int = 10,
) -> dict[str, Any]:
    """The project-only view of a scan: vendored code, API groups, the unconverted split,
    hazards, and the estimate of the project's own code with what it left out and why.

    ``totals`` are every scanned file's (stack.hipify.totals.Totals), ``vendored_totals``
    the vendored files' alone; what the project's code holds is their difference.
    """
    all_apis, v_apis = totals.apis, vendored_totals.apis
    entries = list(_project_api_entries(all_apis, v_apis))
    group_of = api_groups(e[0] for e in entries)
    groups: dict[str, dict[str, Any]] = {}
    rank = _KIND_RANK
    distinct_idents = dict.fromkeys(DECIDED_KINDS, 0)  # identifiers in the project's code
    vendored_only = dict.fromkeys(DECIDED_KINDS, 0)  # identifiers only vendored code uses
    for ident, kind, family, since, total, code, v_total, v_code, users, places in entries:
        if code > 0:
            distinct_idents[kind] += 1
        elif v_code > 0:
            vendored_only[kind] += 1
        name = group_of[ident]
        g = groups.get(name)
        if g is None:
            g = groups[name] = {
                "api": name,
                "kind": kind,
                "family": family,
                "members": {},
                "in_code": 0,
                "total": 0,
                "vendored_in_code": 0,
                "vendored_total": 0,
                "files": [],
                "locations": [],
            }
        elif rank[kind] < rank[g["kind"]]:
            g["kind"] = kind
        g["files"].append(users)
        g["locations"].append(places)
        members = g["members"]
        member = members.get(ident)
        if member is None:
            members[ident] = {
                "kinds": [kind],
                "since": since,
                "in_code": code,
                "total": total,
                "vendored_in_code": v_code,
                "vendored_total": v_total,
            }
            g["in_code"] += code
            g["total"] += total
            g["vendored_in_code"] += v_code
            g["vendored_total"] += v_total
            continue
        # An identifier in two tables (unsupported and removed) warns twice at one
        # place: the group counts its places once (the larger count).
        member["kinds"].append(kind)
        member["since"] = member["since"] or since
        for field, value in (
            ("in_code", code),
            ("total", total),
            ("vendored_in_code", v_code),
            ("vendored_total", v_total),
        ):
            grow = max(0, value - member[field])
            member[field] += grow
            g[field] += grow
    ranked = sorted(
        groups.values(),
        key=lambda g: (-g["in_code"], -g["total"], _KIND_RANK[g["kind"]], g["api"]),
    )
    for i, g in enumerate(ranked):
        users = g["files"]
        if len(g["members"]) > 1:
            g["members"] = dict(sorted(g["members"].items()))
        if i >= MAX_GROUPS_WITH_PLACES:  # the rest: files and places in findings.json
            g["files"] = len(users[0]) if len(users) == 1 else None
            g["locations"] = []
            continue
        g["files"] = len(users[0]) if len(users) == 1 else len(set().union(*users))
        places = [
            (p, line, ctx) for member in g["locations"] for p, locs in member for line, ctx in locs
        ]
        if len(g["locations"]) > 1 or len(places) > max_locations:
            places.sort(key=lambda loc: (loc[2] != "code", loc[0], loc[1]))
        g["locations"] = [
            {"path": p, "line": line, "context": ctx} for p, line, ctx in places[:max_locations]
        ]

    # "cudaX left after translation": known CUDA names vs the project's look-alikes
    split = {"cuda_name": {}, "project_identifier": {}}
    vendored_unconverted = 0
    for key, api in all_apis.items():
        ident, _, kind = key.rpartition("\t")
        if kind != "unconverted":
            continue
        v = v_apis.get(key)
        code = api[3] - (v[3] if v else 0)
        vendored_unconverted += v[3] if v else 0
        if code:
            which = "cuda_name" if ident in known_cuda_names else "project_identifier"
            split[which][ident] = code
    unconverted = {
        which: {
            "refs": sum(names.values()),
            "names": len(names),
            "top": dict(sorted(names.items(), key=lambda kv: (-kv[1], kv[0]))[:25]),
        }
        for which, names in split.items()
    }

    hazards = hazard_summary(totals, vendored_files, hazards_off)
    vk = vendored_totals.kinds
    kinds = totals.kinds
    vs = vendored_totals.sums

    def code(kind: str) -> int:
        return kinds[kind]["code"] - vk[kind]["code"]

    decided: dict[str, list[dict[str, Any]]] = {k: [] for k in DECIDED_KINDS}
    for g in ranked:
        if g["in_code"]:
            decided[g["kind"]].append(g)
    inputs = {
        "converted_cuda_refs": totals.sums["cuda_refs"] - vs["cuda_refs"],
        "unsupported_apis": len(decided["unsupported"]),
        "unsupported_refs": code("unsupported"),
        "removed_apis": len(decided["removed"]),
        "removed_refs": code("removed"),
        "deprecated_apis": len(decided["deprecated"]),
        "deprecated_refs": code("deprecated"),
        "unconverted_refs": unconverted["cuda_name"]["refs"],
        "unsupported_device_function_refs": code("unsupported_device_function"),
        "files_with_device_code": totals.sums["files_with_device_code"]
        - vs["files_with_device_code"],
        **{f"hazards_{sev}": hazards["by_severity"][sev]["counted"] for sev in SEVERITIES},
    }
    vendored_note = f"in the {len(vendored_files)} vendored files"
    left_out: dict[str, list[dict[str, Any]]] = {
        "converted_cuda_refs": [{"value": vs["cuda_refs"], "why": vendored_note}],
        "unconverted_refs": [
            {"value": vendored_unconverted, "why": vendored_note},
            {
                "value": unconverted["project_identifier"]["refs"],
                "why": "the project's own identifiers that only look like CUDA names "
                "(no HIPIFY table names them)",
            },
        ],
        "files_with_device_code": [{"value": vs["files_with_device_code"], "why": vendored_note}],
        **{
            f"hazards_{sev}": [
                {"value": hazards["by_severity"][sev]["vendored"], "why": vendored_note},
                {
                    "value": hazards["by_severity"][sev]["switched_off"],
                    "why": "rules the project switched off"
                    + (f" ({', '.join(sorted(hazards_off))})" if hazards_off else ""),
                },
            ]
            for sev in SEVERITIES
        },
    }
    for kind, term in (
        ("unsupported", "unsupported"),
        ("removed", "removed"),
        ("deprecated", "deprecated"),
        ("unsupported_device_function", "unsupported_device_function"),
    ):
        left_out[f"{term}_refs"] = [{"value": vk[kind]["code"], "why": vendored_note}]
        if kind == "unsupported_device_function":
            continue
        left_out[f"{term}_apis"] = [
            {"value": vendored_only[kind], "why": f"identifiers used only {vendored_note}"},
            {
                "value": max(0, distinct_idents[kind] - len(decided[kind])),
                "why": "identifiers folded into the API group they belong to "
                "(typedef twins, constants of one enum)",
            },
        ]
    effort = effort_estimate(inputs)
    effort["left_out"] = {
        term: [part for part in parts if part["value"]]
        for term, parts in left_out.items()
        if any(part["value"] for part in parts)
    }
    effort["counts"] = (
        "the project's own code: findings in code (not comments, strings or longer "
        "identifiers), outside vendored files; one term per API group"
    )
    vendored_summary = {
        "files": len(vendored_files),
        "lines": vs["lines"],
        "cuda_refs": vs["cuda_refs"],
        "warnings": vs["warnings"],
        "warnings_in_code": {kind: vk[kind]["code"] for kind in (*DECIDED_KINDS, "unconverted")},
        "paths": dict(sorted(vendored_files.items())[:200]),
    }
    return {
        "vendored": vendored_summary,
        "api_groups": ranked,
        "unconverted_split": unconverted,
        "hazards": hazards,
        "effort": effort,
    }


def hazard_summary(
    totals: Any, vendored_files: dict[str, str], hazards_off: Sequence[str] = (), places: int = 20
) -> dict[str, Any]:
    """Per rule: findings in the project's code, in vendored files, its first places."""
    off = set(hazards_off)
    rules: list[dict[str, Any]] = []
    counted = vendored = switched_off = 0
    by_severity = {sev: {"counted": 0, "vendored": 0, "switched_off": 0} for sev in SEVERITIES}
    for name in RULE_NAMES:
        rule = BY_NAME[name]
        users = totals.hazards.get(name, {})
        own = v = 0
        first: list[dict[str, Any]] = []
        for path in sorted(users):
            n, locs = users[path]
            if path in vendored_files:
                v += n
                continue
            own += n
            for line, text in locs:
                if len(first) < places:
                    first.append({"path": path, "line": line, "text": text})
        enabled = name not in off
        tally = by_severity[rule.severity]
        if enabled:
            counted += own
            tally["counted"] += own
        else:
            switched_off += own
            tally["switched_off"] += own
        vendored += v
        tally["vendored"] += v
        rules.append(
            {
                "name": name,
                "title": rule.title,
                "severity": rule.severity,
                "rationale": rule.rationale,
                "enabled": enabled,
                "findings": own,
                "vendored": v,
                "files": sum(1 for p in users if p not in vendored_files),
                "locations": first,
            }
        )
    return {
        "rules": rules,
        "counted": counted,
        "vendored": vendored,
        "switched_off": switched_off,
        "by_severity": by_severity,
    }
