"""The scan's sums: each file's record and aggregate, and totals a re-scan updates in place.

A file's record (findings.json's entry) and its aggregate (what the totals sum)
depend only on its content, so both are computed once when the file is
examined and cached (the record as JSON text, copied into findings.json as it
is; the aggregate marshalled).

The totals are a state that files are added to and taken out of
(:class:`Totals`). A scan with a cache stores it; a re-scan loads the previous
state and applies only the files that changed, instead of loading every
file's aggregate and summing again: its cost follows what changed, not the
size of the tree. Everything in the summary is a sum except the places listed
for the top APIs, the first ``MAX_LOCATIONS`` in path order. For those the
state keeps, per API, the paths of all the files using it and the places of
the first few; when taking files out leaves too few, the next users' aggregates
are loaded to list more (:meth:`Totals.refill`), and no others.
"""

from __future__ import annotations

import heapq
import marshal
from bisect import bisect_left
from collections.abc import Callable, Iterable
from typing import Any

from stack.hipify.families import FAMILY_ORDER, effort_estimate, family_of
from stack.hipify.lexer import CONTEXTS

WARNING_KINDS = (
    "unsupported",
    "unsupported_device_function",
    "deprecated",
    "removed",
    "experimental",
    "unconverted",
)
# Bump when record_core / aggregate change shape: it is part of the cache key.
RECORD_VERSION = 3
# Bump when the Totals state changes shape: Totals.loads refuses other versions.
STATE_VERSION = 2
MAX_LOCATIONS = 10  # places listed per top API
MAX_FILE_LOCATIONS = 3  # places one file contributes to that list


def _empty_kind_counts() -> dict[str, dict[str, int]]:
    return {kind: {"total": 0, **dict.fromkeys(CONTEXTS, 0)} for kind in WARNING_KINDS}


def record_core(findings: dict[str, Any]) -> dict[str, Any]:
    """A file's findings.json entry without its path (docs/hipify.md, "findings.json")."""
    refs = []
    cuda_refs = identity_refs = 0
    for row in findings["refs"]:
        cuda, hip, typ, n = row[:4]
        identity = cuda == hip
        entry = {
            "cuda": cuda,
            "hip": hip,
            "type": typ,
            "family": family_of(cuda, typ),
            "count": n,
            "identity": identity,
        }
        if len(row) > 4 and row[4]:
            entry["shared_target"] = True
        refs.append(entry)
        if identity:
            identity_refs += n
        else:
            cuda_refs += n
    counts = _empty_kind_counts()
    warnings = []
    hazards = findings.get("hazards", [])
    for line, col, ident, kind, since, context in findings["warnings"]:
        counts[kind]["total"] += 1
        counts[kind][context] += 1
        warnings.append(
            {
                "line": line,
                "column": col,
                "identifier": ident,
                "kind": kind,
                "since": since,
                "context": context,
                "family": family_of(ident),
            }
        )
    return {
        "bytes": findings["bytes"],
        "lines": findings["loc"],
        "printed": findings["printed"],
        "converted_refs": findings["converted_refs"],
        "cuda_refs": cuda_refs,
        "identity_refs": identity_refs,
        "device_function_refs": findings["device_functions"],
        "warnings_count": findings["warnings_count"],
        "counts": {k: v for k, v in counts.items() if v["total"]},
        "hazards": len(hazards),
        "refs": refs,
        "warnings": warnings,
        "hazard_findings": [
            {"rule": rule, "line": line, "column": col, "text": text}
            for rule, line, col, text in hazards
        ],
    }


def aggregate(core: dict[str, Any]) -> dict[str, Any]:
    """What one file adds to the summary (small: counts, not the warnings themselves)."""
    families: dict[str, dict[str, int]] = {}
    identity: dict[str, int] = {}
    apis: dict[str, list[Any]] = {}
    for ref in core["refs"]:
        if ref["identity"]:
            identity[ref["cuda"]] = identity.get(ref["cuda"], 0) + ref["count"]
            continue
        fam = families.setdefault(ref["family"], {"converted_refs": 0})
        fam["converted_refs"] += ref["count"]
    for w in core["warnings"]:
        kind, ctx = w["kind"], w["context"]
        fam = families.setdefault(w["family"], {"converted_refs": 0})
        fam[kind] = fam.get(kind, 0) + 1
        if ctx == "code":
            fam[f"{kind}_in_code"] = fam.get(f"{kind}_in_code", 0) + 1
        key = f"{w['identifier']}\t{kind}"
        api = apis.get(key)
        if api is None:
            api = apis[key] = [w["family"], w["since"], 0, 0, []]
        api[2] += 1
        api[3] += ctx == "code"
        if len(api[4]) < MAX_FILE_LOCATIONS:
            api[4].append([w["line"], ctx])
    hazards: dict[str, list[Any]] = {}
    for h in core.get("hazard_findings", []):
        entry = hazards.setdefault(h["rule"], [0, []])
        entry[0] += 1
        if len(entry[1]) < MAX_FILE_LOCATIONS:
            entry[1].append([h["line"], h["text"]])
    return {
        "row": {k: core.get(k, 0) for k in _ROW_KEYS},
        "families": families,
        "identity": identity,
        "apis": apis,
        "hazards": hazards,
    }


_ROW_KEYS = (
    "bytes",
    "lines",
    "printed",
    "converted_refs",
    "cuda_refs",
    "identity_refs",
    "device_function_refs",
    "warnings_count",
    "counts",
    "hazards",
)

# Row fields summed as they are into the totals, in the summary's order
# ("warnings_count" becomes "warnings").
_SUMMED = ("lines", "bytes", "converted_refs", "cuda_refs", "identity_refs")

# An API's entry in Totals.apis, by index.
_FAMILY, _SINCE, _TOTAL, _IN_CODE, _USERS, _PLACES = range(6)


class Totals:
    """The summary's sums over a set of files, which files can be added to and taken out of.

    ``apis`` maps "identifier\\tkind" to [family, since, total, in code, users,
    places]: ``users`` are the paths of the files using the API, sorted (as
    Python strings); ``places`` lists [path, [[line, context], ...]] for the
    first of them, as few as hold ``MAX_LOCATIONS`` places (or all).
    """

    def __init__(self) -> None:
        self.files: dict[str, tuple[str, bool, dict[str, Any]]] = {}  # path -> sha, dev, row
        self.sums = dict.fromkeys(
            (
                *_SUMMED,
                "device_function_refs",
                "device_refs_unknown",
                "warnings",
                "files_with_findings",
                "files_with_device_code",
            ),
            0,
        )
        self.kinds = _empty_kind_counts()
        self.families: dict[str, dict[str, int]] = {}
        self.identity: dict[str, int] = {}
        self.apis: dict[str, list[Any]] = {}
        # rule -> path -> [findings, [[line, text], ...] (the first few)]
        self.hazards: dict[str, dict[str, list[Any]]] = {}
        self._thinned: set[str] = set()

    @classmethod
    def build(cls, entries: Iterable[tuple[str, str, bool, dict[str, Any]]]) -> Totals:
        """Totals of (path, sha256, has device code, aggregate) entries."""
        totals = cls()
        for path, sha, device_code, agg in sorted(entries, key=lambda e: e[0]):
            totals.add(path, sha, device_code, agg)
        return totals

    def add(self, path: str, sha: str, device_code: bool, agg: dict[str, Any]) -> None:
        """Count a file in (its path must not be counted already)."""
        if path in self.files:
            raise ValueError(f"{path} is counted already")
        self.files[path] = (sha, device_code, agg["row"])
        self._count(agg, device_code, 1)
        for rule, entry in agg.get("hazards", {}).items():
            self.hazards.setdefault(rule, {})[path] = entry
        apis = self.apis
        for key, (family, since, total, in_code, locations) in agg["apis"].items():
            api = apis.get(key)
            if api is None:
                api = apis[key] = [family, since, 0, 0, [], []]
            api[_TOTAL] += total
            api[_IN_CODE] += in_code
            users, places = api[_USERS], api[_PLACES]
            at = bisect_left(users, path)
            users.insert(at, path)
            if at <= len(places):  # among the listed first users, or right after them
                places.insert(at, [path, locations])
                _trim(places)

    def remove(self, path: str, agg: dict[str, Any]) -> None:
        """Take a counted file out; ``agg`` must be the aggregate it was counted with."""
        _sha, device_code, _row = self.files.pop(path)
        self._count(agg, device_code, -1)
        for rule in agg.get("hazards", {}):
            users = self.hazards.get(rule, {})
            users.pop(path, None)
            if not users:
                self.hazards.pop(rule, None)
        apis = self.apis
        for key, (_family, _since, total, in_code, _locations) in agg["apis"].items():
            api = apis[key]
            users = api[_USERS]
            users.remove(path)
            if not users:
                del apis[key]
                continue
            api[_TOTAL] -= total
            api[_IN_CODE] -= in_code
            places = api[_PLACES]
            for i, (where, _locs) in enumerate(places):
                if where == path:
                    del places[i]
                    self._thinned.add(key)
                    break

    def refill(self, load: Callable[[list[str]], dict[str, dict[str, Any]]]) -> int:
        """List places again where taking files out left too few; ``load`` gives aggregates.

        ``load(paths)`` returns the aggregates of those counted files. Returns how
        many files were loaded (the next users of the thinned APIs, no others).
        """
        short = []  # (key, api, the users that may hold the missing places)
        for key in self._thinned:
            api = self.apis.get(key)
            if api is None:
                continue
            users, places = api[_USERS], api[_PLACES]
            missing = MAX_LOCATIONS - _held(places)
            if len(places) < len(users) and missing > 0:
                # every user holds at least one place: ``missing`` more users suffice
                short.append((key, api, users[len(places) : len(places) + missing]))
        self._thinned.clear()
        if not short:
            return 0
        wanted = sorted({path for _, _, nexts in short for path in nexts})
        loaded = load(wanted)
        for key, api, nexts in short:
            places = api[_PLACES]
            for path in nexts:
                places.append([path, loaded[path]["apis"][key][4]])
            _trim(places)
        return len(wanted)

    def _count(self, agg: dict[str, Any], device_code: bool, sign: int) -> None:
        row = agg["row"]
        sums = self.sums
        for name in _SUMMED:
            sums[name] += sign * row[name]
        if row["device_function_refs"] is None:
            sums["device_refs_unknown"] += sign
        else:
            sums["device_function_refs"] += sign * row["device_function_refs"]
        sums["warnings"] += sign * row["warnings_count"]
        sums["files_with_findings"] += sign * bool(row["printed"])
        sums["files_with_device_code"] += sign * bool(device_code)
        for kind, counts in row["counts"].items():
            target = self.kinds[kind]
            for k, v in counts.items():
                target[k] += sign * v
        for name, fam in agg["families"].items():
            into = self.families.setdefault(name, {"converted_refs": 0})
            for k, v in fam.items():
                into[k] = into.get(k, 0) + sign * v
            if sign < 0:  # a scan from scratch never holds zeros: drop them
                for k in [k for k, v in into.items() if not v and k != "converted_refs"]:
                    del into[k]
                if len(into) == 1 and not into["converted_refs"]:
                    del self.families[name]
        for name, n in agg["identity"].items():
            left = self.identity.get(name, 0) + sign * n
            if left:
                self.identity[name] = left
            else:
                del self.identity[name]

    def rows(self, paths: Iterable[str]) -> list[dict[str, Any]]:
        """Per-file counts without the warnings (the report's file table), for ``paths``."""
        return [{"path": p, **self.files[p][2]} for p in paths]

    def summary(self, top: int = 25) -> dict[str, Any]:
        """Totals, per-family counts, top APIs, identity mappings and the effort estimate."""
        sums = self.sums
        totals = {
            "files": len(self.files),
            "files_with_findings": sums["files_with_findings"],
            "files_with_device_code": sums["files_with_device_code"],
            **{name: sums[name] for name in _SUMMED},
            "device_function_refs": None
            if sums["device_refs_unknown"]
            else sums["device_function_refs"],
            "warnings": sums["warnings"],
        }
        apis = self.apis
        distinct_in_code = dict.fromkeys(WARNING_KINDS, 0)
        for key, api in apis.items():
            if api[_IN_CODE]:
                distinct_in_code[key.rpartition("\t")[2]] += 1
        ranked = heapq.nsmallest(
            top,
            (key for key in apis if not key.endswith("\tunconverted")),
            key=lambda k: (-apis[k][_IN_CODE], -apis[k][_TOTAL], k),
        )
        top_apis = []
        for key in ranked:
            family, since, total, in_code, users, places = apis[key]
            ident, kind = key.split("\t")
            locations = [
                {"path": path, "line": line, "context": ctx}
                for path, locs in places
                for line, ctx in locs
            ][:MAX_LOCATIONS]
            top_apis.append(
                {
                    "identifier": ident,
                    "kind": kind,
                    "family": family,
                    "since": since,
                    "total": total,
                    "in_code": in_code,
                    "files": len(users),
                    "locations": locations,
                }
            )
        kinds = self.kinds
        effort_inputs = {
            "converted_cuda_refs": totals["cuda_refs"],
            "unsupported_apis": distinct_in_code["unsupported"],
            "unsupported_refs": kinds["unsupported"]["code"],
            "removed_apis": distinct_in_code["removed"],
            "removed_refs": kinds["removed"]["code"],
            "deprecated_apis": distinct_in_code["deprecated"],
            "deprecated_refs": kinds["deprecated"]["code"],
            "unconverted_refs": kinds["unconverted"]["code"],
            "unsupported_device_function_refs": kinds["unsupported_device_function"]["code"],
            "files_with_device_code": totals["files_with_device_code"],
            **self._hazards_by_severity(),
        }
        return {
            "totals": totals,
            "warnings_by_kind": {kind: dict(counts) for kind, counts in kinds.items()},
            "families": {
                name: dict(self.families[name]) for name in sorted(self.families, key=_family_rank)
            },
            "top_apis": top_apis,
            "distinct_apis": {k: v for k, v in distinct_in_code.items() if k != "unconverted"},
            "identity_mappings": dict(sorted(self.identity.items())),
            "effort": effort_estimate(effort_inputs),
        }

    def _hazards_by_severity(self) -> dict[str, int]:
        from stack.hipify.hazards import BY_NAME, SEVERITIES

        out = {f"hazards_{sev}": 0 for sev in SEVERITIES}
        for rule, users in self.hazards.items():
            severity = BY_NAME[rule].severity if rule in BY_NAME else "low"
            out[f"hazards_{severity}"] += sum(n for n, _places in users.values())
        return out

    def dumps(self) -> bytes:
        """The state as bytes (marshal: plain data, fast to load, runs nothing)."""
        return marshal.dumps(
            (
                STATE_VERSION,
                self.files,
                self.sums,
                self.kinds,
                self.families,
                self.identity,
                self.apis,
                self.hazards,
            )
        )

    @classmethod
    def loads(cls, blob: bytes) -> Totals:
        """A state dumped by :meth:`dumps`; ValueError when it is not one."""
        try:
            state = marshal.loads(blob)  # noqa: S302
            version = state[0]
        except (EOFError, TypeError, ValueError, IndexError, KeyError) as exc:
            raise ValueError(f"not a totals state: {exc}") from exc
        if version != STATE_VERSION:
            raise ValueError(f"totals state version {version}, expected {STATE_VERSION}")
        try:
            _v, files, sums, kinds, families, identity, apis, hazards = state
        except (TypeError, ValueError) as exc:
            raise ValueError(f"not a totals state: {exc}") from exc
        totals = cls()
        totals.files, totals.sums, totals.kinds = files, sums, kinds
        totals.families, totals.identity, totals.apis = families, identity, apis
        totals.hazards = hazards
        return totals


def summarize(entries: Iterable[tuple[str, bool, dict[str, Any]]], top: int = 25) -> dict[str, Any]:
    """The summary of (path, has device code, aggregate) entries, summed from scratch."""
    return Totals.build((path, "", dev, agg) for path, dev, agg in entries).summary(top)


def _held(places: list[Any]) -> int:
    return sum(len(locs) for _, locs in places)


def _trim(places: list[Any]) -> None:
    """Keep the fewest first entries that hold MAX_LOCATIONS places."""
    held = _held(places)
    while len(places) > 1 and held - len(places[-1][1]) >= MAX_LOCATIONS:
        held -= len(places.pop()[1])


def _family_rank(name: str) -> tuple[int, str]:
    try:
        return FAMILY_ORDER.index(name), name
    except ValueError:
        return len(FAMILY_ORDER), name
