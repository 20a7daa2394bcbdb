"""Comparison and history: measurements side by side, aligned like for like.

A comparison puts jobs in columns, oldest first (the oldest is the baseline unless the
query names another) and cases in rows. A row is one *case*: the benchmark, its parameters (the
``case`` JSON, compared as canonical JSON so key order does not matter) and the metric;
two measurements share a row only when all three are equal, so a GEMM 4096³ in FP16 is
never set beside one in BF16. Each cell holds the value, how many raw samples it had,
and — beside the baseline — the ratio of medians with its 95 % bootstrap interval
(results.stats.ratio_interval, seeded so a permalink shows the same numbers).

A ratio alone lies when the machines differ: every column says how its environment
differs from the baseline's in what changes performance (GPU vendor, model, arch and
count, ROCm / CUDA / torch and library versions, image digest), so "1.3 times" is read
beside "other GPU model: MI300X vs H200".

History is one case over the runs of one environment identity (Environment.fingerprint:
the same machine and stack), oldest first, with the change points results.detect finds.

The query is plain data (CompareQuery, HistoryQuery) parsed from URL parameters, so the
page, its exports and the REST endpoint read the same URL the same way; bad input is a
QueryError naming the parameter.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import statistics
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from typing import TYPE_CHECKING, Any

from django.core.cache import caches
from django.core.cache.backends.base import BaseCache
from django.db.models import Exists, OuterRef, TextField
from django.db.models.functions import Cast
from django.utils import timezone

from jobs.access import jobs_for
from jobs.models import Environment, Job, Measurement
from jobs.models.measurement import SampleCount
from results import detect
from results.stats import BOOTSTRAP_RESAMPLES, CONFIDENCE, Ratio, _clean, ratio_interval
from stack.kinds import KINDS
from teams.access import AnyUser, team_ids

if TYPE_CHECKING:
    import numpy as np

REPEATED = "repeated case: the first measurement of each job is used"
MAX_COLUMNS = 8  # jobs in one comparison: a table wider than this is not read
MAX_ROWS = 5000  # cases in one comparison
MAX_HISTORY = 1000  # runs in one history
RATIO_CACHE_S = 7 * 24 * 3600  # a ratio of two stored measurements never changes
CACHE_ALIAS = "results"  # settings.CACHES["results"]: Redis with CACHE_URL, else files
_BATCH_VALUES = 2_000_000  # resampled values held at once by _intervals (16 MB)


def results_cache() -> BaseCache:
    """The cache of intervals and change points (settings.CACHES["results"])."""
    return caches[CACHE_ALIAS]


# Query parameter -> Environment field, for the facets a comparison filters on.
FACETS: dict[str, str] = {
    "vendor": "gpu_vendor",
    "gpu_model": "gpu_model",
    "gpu_arch": "gpu_arch",
    "rocm": "rocm_version",
    "cuda": "cuda_version",
    "image_digest": "image_digest",
}
_LIBRARY = re.compile(r"^([A-Za-z0-9_.+-]{1,64}):(.{1,64})$")
_FINGERPRINT = re.compile(r"^[0-9a-f]{8,64}$")


class QueryError(ValueError):
    """A parameter the comparison cannot use; ``field`` names it (for a 400)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


# -- the query -------------------------------------------------------------------------


def _values(params: Mapping[str, Any], key: str) -> list[str]:
    """Every value of a parameter, repeated (``jobs=1&jobs=2``) or comma-separated."""
    raw = params.getlist(key) if hasattr(params, "getlist") else params.get(key, [])
    if isinstance(raw, str):
        raw = [raw]
    return [part.strip() for value in raw for part in str(value).split(",") if part.strip()]


def _one(params: Mapping[str, Any], key: str) -> str:
    values = _values(params, key)
    if len(values) > 1:
        raise QueryError(key, "give one value")
    return values[0] if values else ""


def _int(params: Mapping[str, Any], key: str) -> int | None:
    value = _one(params, key)
    if not value:
        return None
    if not value.isdecimal():
        raise QueryError(key, f"must be a whole number, not {value[:40]!r}")
    return int(value)


def _date(params: Mapping[str, Any], key: str) -> date | None:
    value = _one(params, key)
    if not value:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise QueryError(key, f"must be a date as YYYY-MM-DD, not {value[:40]!r}") from None


@dataclass(frozen=True)
class CompareQuery:
    """What to compare: explicit jobs, or the newest jobs matching filters."""

    jobs: tuple[int, ...] = ()
    baseline: int | None = None
    project: int | None = None
    kind: str = ""
    benchmark: str = ""
    metric: str = ""
    facets: tuple[tuple[str, tuple[str, ...]], ...] = ()
    libraries: tuple[tuple[str, str], ...] = ()
    since: date | None = None
    until: date | None = None
    seed: int = 0

    @classmethod
    def parse(cls, params: Mapping[str, Any]) -> CompareQuery:
        jobs: list[int] = []
        for value in _values(params, "jobs"):
            if not value.isdecimal():
                raise QueryError("jobs", f"job ids are whole numbers, not {value[:40]!r}")
            if int(value) not in jobs:
                jobs.append(int(value))
        if len(jobs) > MAX_COLUMNS:
            raise QueryError("jobs", f"compare at most {MAX_COLUMNS} jobs at once")
        kind = _one(params, "kind")
        if kind and kind not in KINDS:
            raise QueryError("kind", f"unknown kind {kind[:40]!r}")
        libraries = []
        for value in _values(params, "library"):
            match = _LIBRARY.match(value)
            if not match:
                raise QueryError("library", f"give name:version, not {value[:40]!r}")
            libraries.append((match[1], match[2]))
        since, until = _date(params, "since"), _date(params, "until")
        if since and until and since > until:
            raise QueryError("since", "must not be after until")
        baseline = _int(params, "baseline")
        if baseline is not None and jobs and baseline not in jobs:
            raise QueryError("baseline", "must be one of the jobs compared")
        return cls(
            jobs=tuple(jobs),
            baseline=baseline,
            project=_int(params, "project"),
            kind=kind,
            benchmark=_one(params, "benchmark")[:128],
            metric=_one(params, "metric")[:128],
            facets=tuple(
                (key, tuple(values)) for key in FACETS if (values := _values(params, key))
            ),
            libraries=tuple(libraries),
            since=since,
            until=until,
            seed=_int(params, "seed") or 0,
        )

    def params(self) -> list[tuple[str, str]]:
        """The query as URL parameters, in a fixed order: the permalink's query string."""
        out: list[tuple[str, str]] = []
        if self.jobs:
            out.append(("jobs", ",".join(map(str, self.jobs))))
        for key, value in (
            ("baseline", self.baseline),
            ("project", self.project),
            ("kind", self.kind),
            ("benchmark", self.benchmark),
            ("metric", self.metric),
        ):
            if value not in (None, ""):
                out.append((key, str(value)))
        out += [(key, ",".join(values)) for key, values in self.facets]
        out += [("library", f"{name}:{version}") for name, version in self.libraries]
        if self.since:
            out.append(("since", self.since.isoformat()))
        if self.until:
            out.append(("until", self.until.isoformat()))
        if self.seed:
            out.append(("seed", str(self.seed)))
        return out


# -- environments ------------------------------------------------------------------------

# (label, how to read it from an Environment) of what makes results not like for like.
_ENV_FIELDS: tuple[tuple[str, str], ...] = (
    ("GPU vendor", "gpu_vendor"),
    ("GPU model", "gpu_model"),
    ("GPU arch", "gpu_arch"),
    ("GPU count", "gpu_count"),
    ("ROCm", "rocm_version"),
    ("CUDA", "cuda_version"),
    ("image digest", "image_digest"),
)


@dataclass(frozen=True)
class Difference:
    """One thing that differs between a column's environment and the baseline's."""

    what: str
    baseline: str
    current: str

    def __str__(self) -> str:
        return f"{self.what}: {self.current or '—'} vs {self.baseline or '—'}"


def _software(env: Environment) -> dict:
    data = env.data if isinstance(env.data, dict) else {}
    software = data.get("software")
    return software if isinstance(software, dict) else {}


def environment_differences(
    baseline: Environment | None, current: Environment | None
) -> list[Difference]:
    """What differs that matters, by name; an unknown environment differs in everything."""
    if baseline is None or current is None:
        if baseline is current:
            return []
        return [
            Difference("environment", "recorded" if baseline else "", "recorded" if current else "")
        ]
    found = [
        Difference(label, str(getattr(baseline, attr) or ""), str(getattr(current, attr) or ""))
        for label, attr in _ENV_FIELDS
        if (getattr(baseline, attr) or "") != (getattr(current, attr) or "")
    ]
    soft_a, soft_b = _software(baseline), _software(current)
    if (soft_a.get("torch_version") or "") != (soft_b.get("torch_version") or ""):
        found.append(
            Difference(
                "torch",
                str(soft_a.get("torch_version") or ""),
                str(soft_b.get("torch_version") or ""),
            )
        )
    libs_a = soft_a.get("libraries") if isinstance(soft_a.get("libraries"), dict) else {}
    libs_b = soft_b.get("libraries") if isinstance(soft_b.get("libraries"), dict) else {}
    for name in sorted(set(libs_a) | set(libs_b)):
        if str(libs_a.get(name, "")) != str(libs_b.get(name, "")):
            found.append(Difference(name, str(libs_a.get(name, "")), str(libs_b.get(name, ""))))
    return found


# -- the comparison ----------------------------------------------------------------------


@dataclass(frozen=True)
class Column:
    job: Job
    is_baseline: bool
    differences: list[Difference]

    @property
    def label(self) -> str:
        env = self.job.environment
        gpu = env.gpu_model if env and env.gpu_model else "no GPU recorded"
        return f"#{self.job.pk} {gpu}"


@dataclass
class Cell:
    job_id: int
    measurement_id: int
    value: float
    unit: str
    n_samples: int
    samples_text: str = field(default="", repr=False)  # jsonb text, as stored
    ratio: Ratio | None = None
    # better / worse (the interval excludes 1, read in the metric's better direction),
    # even (it includes 1), "" (no interval: a side had fewer than two samples)
    reading: str = ""

    def samples(self) -> list[float]:
        """The raw samples, parsed only when an interval must be computed (a cache miss)."""
        parsed = json.loads(self.samples_text) if self.samples_text else []
        if not isinstance(parsed, list):
            return []
        return [float(s) for s in parsed if isinstance(s, int | float)]


@dataclass
class Row:
    benchmark: str
    case: dict
    metric: str
    unit: str
    better: str
    cells: list[Cell | None]
    case_json: str = ""  # canonical JSON of the case (jsonb's text)
    flags: list[str] = field(default_factory=list)

    @property
    def case_label(self) -> str:
        return case_label(self.case)


def canonical(case: Any) -> str:
    return json.dumps(case, sort_keys=True, separators=(",", ":"))


def case_label(case: Any) -> str:
    """A case's parameters in a line: ``backend=rocblas m=4096 precision=fp16``."""
    if not isinstance(case, dict) or not case:
        return "—" if not case else str(case)
    return " ".join(f"{k}={v}" for k, v in sorted(case.items()))


@dataclass
class Comparison:
    query: CompareQuery
    columns: list[Column]
    rows: list[Row]
    truncated: bool = False

    @property
    def baseline(self) -> Column | None:
        return next((c for c in self.columns if c.is_baseline), None)

    def groups(self) -> list[tuple[tuple[str, str, str], list[Row]]]:
        """Rows by (benchmark, metric, unit): one chart each, so no axis mixes units."""
        found: dict[tuple[str, str, str], list[Row]] = {}
        for row in self.rows:
            found.setdefault((row.benchmark, row.metric, row.unit), []).append(row)
        return list(found.items())

    def as_dict(self) -> dict:
        """The comparison as JSON: the REST answer and the page's JSON download."""
        return {
            "query": dict(self.query.params()),
            "seed": self.query.seed,
            "confidence": 0.95,
            "columns": [
                {
                    "job": c.job.pk,
                    "kind": c.job.kind,
                    "created_at": c.job.created_at.isoformat(),
                    "baseline": c.is_baseline,
                    "environment": _environment_dict(c.job.environment),
                    "differences": [
                        {"what": d.what, "baseline": d.baseline, "current": d.current}
                        for d in c.differences
                    ],
                }
                for c in self.columns
            ],
            "rows": [
                {
                    "benchmark": r.benchmark,
                    "case": r.case,
                    "metric": r.metric,
                    "unit": r.unit,
                    "better": r.better,
                    "flags": r.flags,
                    "cells": [_cell_dict(c) for c in r.cells],
                }
                for r in self.rows
            ],
            "truncated": self.truncated,
        }

    def export_rows(self) -> Iterator[list[Any]]:
        """One line per case and job (long form: a spreadsheet pivots it, a script reads it)."""
        yield [
            "benchmark", "case", "metric", "unit", "better", "job", "baseline_job",
            "value", "samples", "ratio", "ratio_low", "ratio_high", "reading",
            "environment_differences", "flags",
        ]  # fmt: skip
        base = self.baseline
        for row in self.rows:
            for column, cell in zip(self.columns, row.cells, strict=True):
                if cell is None:
                    continue
                ratio = cell.ratio
                yield [
                    row.benchmark,
                    row.case_json,
                    row.metric,
                    row.unit,
                    row.better,
                    column.job.pk,
                    base.job.pk if base else "",
                    cell.value,
                    cell.n_samples,
                    _num(ratio.value if ratio else None),
                    _num(ratio.low if ratio else None),
                    _num(ratio.high if ratio else None),
                    cell.reading,
                    "; ".join(str(d) for d in column.differences),
                    "; ".join(row.flags),
                ]


def _num(value: float | None) -> str | float:
    return "" if value is None else value


def _environment_dict(env: Environment | None) -> dict | None:
    if env is None:
        return None
    return {
        "fingerprint": env.fingerprint,
        "gpu_vendor": env.gpu_vendor,
        "gpu_model": env.gpu_model,
        "gpu_arch": env.gpu_arch,
        "gpu_count": env.gpu_count,
        "rocm_version": env.rocm_version,
        "cuda_version": env.cuda_version,
        "image_digest": env.image_digest,
        "libraries": _software(env).get("libraries") or {},
    }


def _cell_dict(cell: Cell | None) -> dict | None:
    if cell is None:
        return None
    ratio = cell.ratio
    return {
        "job": cell.job_id,
        "value": cell.value,
        "unit": cell.unit,
        "samples": cell.n_samples,
        "ratio": None
        if ratio is None
        else {"value": ratio.value, "low": ratio.low, "high": ratio.high},
        "reading": cell.reading,
    }


def select_jobs(user: AnyUser, query: CompareQuery) -> list[Job]:
    """The columns, oldest first: the named jobs, or the newest that match the filters.

    A job id the user may not see reads as one that does not exist (no leak of another
    team's ids).
    """
    jobs = jobs_for(user).select_related("environment")
    if query.jobs:
        found = {j.pk: j for j in jobs.filter(pk__in=query.jobs)}
        missing = [str(pk) for pk in query.jobs if pk not in found]
        if missing:
            raise QueryError("jobs", f"no such job: {', '.join(missing)}")
        return sorted(found.values(), key=lambda j: (j.created_at, j.pk))
    if query.project is not None:
        jobs = jobs.filter(project_id=query.project)
    if query.kind:
        jobs = jobs.filter(kind=query.kind)
    for key, values in query.facets:
        jobs = jobs.filter(**{f"environment__{FACETS[key]}__in": values})
    for name, version in query.libraries:
        jobs = jobs.filter(**{f"environment__data__software__libraries__{name}": version})
    if query.since:
        jobs = jobs.filter(created_at__gte=_start_of(query.since))
    if query.until:
        jobs = jobs.filter(created_at__lt=_start_of(query.until, days=1))
    measured = Measurement.objects.filter(job=OuterRef("pk"))
    if query.benchmark:
        measured = measured.filter(benchmark=query.benchmark)
    if query.metric:
        measured = measured.filter(metric=query.metric)
    newest = list(jobs.filter(Exists(measured)).order_by("-created_at", "-id")[:MAX_COLUMNS])
    return newest[::-1]


def _start_of(day: date, *, days: int = 0) -> datetime:
    return timezone.make_aware(datetime.combine(day + timedelta(days=days), time.min))


def _reading(ratio: Ratio, better: str) -> str:
    if ratio.low is None or ratio.high is None:
        return ""
    if ratio.low <= 1 <= ratio.high:
        return "even"
    up = ratio.low > 1
    return "better" if up == (better == "higher") else "worse"


def _column_key(pairs: list[tuple[Cell, Cell]], seed: int) -> str:
    """The cache key of one column's intervals: a digest of every pair's samples.

    The samples themselves (and the seed), not the rows' ids, so a reused id cannot be
    served a stale interval.
    """
    digest = hashlib.sha256(f"ratios-v2|{seed}|{BOOTSTRAP_RESAMPLES}|{CONFIDENCE}".encode())
    for base, cell in pairs:
        digest.update(
            f"\n{base.samples_text}|{base.value!r}|{cell.samples_text}|{cell.value!r}".encode()
        )
    return f"results:ratios:{digest.hexdigest()}"


def _ratios(columns: list[list[tuple[Cell, Cell]]], seed: int) -> list[list[Ratio]]:
    """The intervals of each column's (baseline, current) pairs: one cache entry a column.

    The interval of two sample lists under a seed never changes, so it is computed once.
    One entry per job pair, not per case: a 4,000-case comparison is one value read in
    one round trip (Redis) or one file (the embedded defaults), where 4,000 entries
    overflowed a bounded cache (Django's default 300: never warm) and made a file cache
    list its folder per write. A column seen in another comparison (the same pair, the
    same cases) is served from the same entry.
    """
    cache = results_cache()
    keys = [_column_key(pairs, seed) for pairs in columns]
    known = cache.get_many(keys) if keys else {}
    fresh: dict[str, list[tuple]] = {}
    out: list[list[Ratio]] = []
    for key, pairs in zip(keys, columns, strict=True):
        found = known.get(key)
        if isinstance(found, list) and len(found) == len(pairs):
            out.append([Ratio(*r) for r in found])
            continue
        ratios = _intervals(
            [(b.samples() or [b.value], c.samples() or [c.value]) for b, c in pairs], seed
        )
        fresh[key] = [(r.value, r.low, r.high, r.n_baseline, r.n_current) for r in ratios]
        out.append(ratios)
    if fresh:
        cache.set_many(fresh, RATIO_CACHE_S)
    return out


def _intervals(pairs: list[tuple[list[float], list[float]]], seed: int) -> list[Ratio]:
    """results.stats.ratio_interval of every pair, equal to it number for number, batched.

    A cold 4,000-case comparison made 4,000 calls of about 1 ms each. With the same seed
    and the same sample counts, every call draws the same resampling indices, so pairs
    of equal counts share one draw and their bootstrap medians are taken together (a
    sort along the last axis, which for a few samples is faster than np.median's
    partition). Pairs that need ratio_interval's special cases (fewer than two samples,
    a zero median) are given to it.
    """
    import numpy as np

    out: list[Ratio | None] = [None] * len(pairs)
    groups: dict[tuple[int, int], list[int]] = {}
    clean = []
    for i, (base, current) in enumerate(pairs):
        a, b = _clean(base), _clean(current)
        clean.append((a, b))
        if a.size < 2 or b.size < 2 or np.median(a) == 0:
            out[i] = ratio_interval(a, b, seed=seed)
        else:
            groups.setdefault((a.size, b.size), []).append(i)
    tail = (1 - CONFIDENCE) / 2 * 100
    for (na, nb), members in groups.items():
        rng = np.random.default_rng(seed)
        pick_a = rng.integers(0, na, size=(BOOTSTRAP_RESAMPLES, na))
        pick_b = rng.integers(0, nb, size=(BOOTSTRAP_RESAMPLES, nb))
        step = max(1, _BATCH_VALUES // (BOOTSTRAP_RESAMPLES * max(na, nb)))
        for start in range(0, len(members), step):
            chunk = members[start : start + step]
            a = np.stack([clean[i][0] for i in chunk])
            b = np.stack([clean[i][1] for i in chunk])
            med_a, med_b = _medians(a[:, pick_a]), _medians(b[:, pick_b])
            with np.errstate(divide="ignore", invalid="ignore"):  # rows with a zero: below
                low, high = np.percentile(med_b / med_a, [tail, 100 - tail], axis=1)
            for k, i in enumerate(chunk):
                if not np.all(med_a[k]):  # a zero resampled median: ratio_interval drops it
                    out[i] = ratio_interval(clean[i][0], clean[i][1], seed=seed)
                    continue
                value = float(np.median(b[k])) / float(np.median(a[k]))
                out[i] = Ratio(value, float(low[k]), float(high[k]), na, nb)
    return [r for r in out if r is not None]


def _medians(resampled: np.ndarray) -> np.ndarray:
    """np.median along the last axis, bit for bit: the middle value, or the mean of two."""
    import numpy as np

    n = resampled.shape[-1]
    ordered = np.sort(resampled, axis=-1)
    if n % 2:
        return ordered[..., n // 2]
    return (ordered[..., n // 2 - 1] + ordered[..., n // 2]) / 2


def compare(user: AnyUser, query: CompareQuery) -> Comparison:
    """The like-for-like table of the query, in three queries whatever its size."""
    jobs = select_jobs(user, query)
    if not jobs:
        return Comparison(query, [], [])
    by_id = {j.pk: j for j in jobs}
    base_id = query.baseline if query.baseline in by_id else jobs[0].pk
    if query.baseline is not None and query.baseline not in by_id:
        raise QueryError("baseline", "must be one of the jobs compared")
    base_env = by_id[base_id].environment
    columns = [
        Column(j, j.pk == base_id, environment_differences(base_env, j.environment)) for j in jobs
    ]
    index = {j.pk: i for i, j in enumerate(jobs)}
    measurements = Measurement.objects.filter(job_id__in=list(by_id)).order_by("id")
    if query.benchmark:
        measurements = measurements.filter(benchmark=query.benchmark)
    if query.metric:
        measurements = measurements.filter(metric=query.metric)
    rows: dict[tuple[str, str, str], Row] = {}
    truncated = False
    # The case and samples as PostgreSQL's jsonb text: canonical (jsonb orders keys
    # itself), so equal cases have equal text with no parse-and-dump per row.
    found = measurements.annotate(
        case_text=Cast("case", TextField()),
        samples_text=Cast("samples", TextField()),
        n_samples=SampleCount("samples"),
    ).values_list(
        "id",
        "job_id",
        "benchmark",
        "case_text",
        "metric",
        "unit",
        "value",
        "samples_text",
        "n_samples",
        "better",
    )
    for (
        pk,
        job_id,
        benchmark,
        case,
        metric,
        unit,
        value,
        samples,
        n_samples,
        better,
    ) in found:  # one round trip: a server-side cursor would add two
        key = (benchmark, case, metric)
        row = rows.get(key)
        if row is None:
            if len(rows) >= MAX_ROWS:
                truncated = True
                continue
            row = rows[key] = Row(
                benchmark, json.loads(case), metric, unit, better, [None] * len(jobs), case
            )
        i = index[job_id]
        if row.cells[i] is not None:
            if REPEATED not in row.flags:
                row.flags.append(REPEATED)
            continue
        row.cells[i] = Cell(job_id, pk, float(value), unit, n_samples, samples or "")
    base_i = index[base_id]
    columns_pairs: list[list[tuple[Cell, Cell]]] = [[] for _ in jobs]
    for row in rows.values():
        base = row.cells[base_i]
        units = {c.unit for c in row.cells if c is not None}
        if len(units) > 1:
            row.flags.append(f"units differ ({', '.join(sorted(units))}): no ratio")
            continue
        if base is None:
            continue
        for i, c in enumerate(row.cells):
            if c is not None and i != base_i:
                columns_pairs[i].append((base, c))
    columns_pairs = [pairs for pairs in columns_pairs if pairs]
    for pairs, ratios in zip(columns_pairs, _ratios(columns_pairs, query.seed), strict=True):
        for (_, cell), ratio in zip(pairs, ratios, strict=True):
            cell.ratio = ratio
    for row in rows.values():
        for cell in row.cells:
            if cell is not None and cell.ratio is not None:
                cell.reading = _reading(cell.ratio, row.better)
    return Comparison(query, columns, list(rows.values()), truncated)


# -- history -----------------------------------------------------------------------------


@dataclass(frozen=True)
class HistoryQuery:
    benchmark: str
    metric: str
    case: dict
    fingerprint: str
    limit: int = MAX_HISTORY

    @classmethod
    def parse(cls, params: Mapping[str, Any]) -> HistoryQuery:
        benchmark, metric = _one(params, "benchmark"), _one(params, "metric")
        if not benchmark:
            raise QueryError("benchmark", "required")
        if not metric:
            raise QueryError("metric", "required")
        raw_case = params.get("case", "") or "{}"
        try:
            case = json.loads(raw_case)
        except ValueError:
            raise QueryError("case", "must be a JSON object of the case's parameters") from None
        if not isinstance(case, dict):
            raise QueryError("case", "must be a JSON object of the case's parameters")
        fingerprint = _one(params, "fingerprint")
        if not _FINGERPRINT.match(fingerprint):
            raise QueryError("fingerprint", "must be an environment fingerprint (hex)")
        limit = _int(params, "limit") or MAX_HISTORY
        if not 2 <= limit <= MAX_HISTORY:
            raise QueryError("limit", f"must be from 2 to {MAX_HISTORY}")
        return cls(benchmark[:128], metric[:128], case, fingerprint, limit)

    def params(self) -> list[tuple[str, str]]:
        out = [
            ("benchmark", self.benchmark),
            ("metric", self.metric),
            ("case", canonical(self.case)),
            ("fingerprint", self.fingerprint),
        ]
        return out + ([("limit", str(self.limit))] if self.limit != MAX_HISTORY else [])


@dataclass(frozen=True)
class Point:
    job_id: int
    at: datetime
    value: float
    n_samples: int


@dataclass(frozen=True)
class Segment:
    """Runs [start, end) between change points; ratio is its median over the previous one's."""

    start: int
    end: int
    median: float
    ratio: Ratio | None


@dataclass
class History:
    query: HistoryQuery
    unit: str
    better: str
    points: list[Point]
    change_points: list[int]
    segments: list[Segment]

    def as_dict(self) -> dict:
        return {
            "query": dict(self.query.params()),
            "unit": self.unit,
            "better": self.better,
            "points": [
                {"job": p.job_id, "at": p.at.isoformat(), "value": p.value, "samples": p.n_samples}
                for p in self.points
            ],
            "change_points": self.change_points,
            "segments": [
                {
                    "start": s.start,
                    "end": s.end,
                    "median": s.median,
                    "ratio": None
                    if s.ratio is None
                    else {"value": s.ratio.value, "low": s.ratio.low, "high": s.ratio.high},
                }
                for s in self.segments
            ],
        }

    def export_rows(self) -> Iterator[list[Any]]:
        yield ["job", "at", "value", "unit", "samples", "change_point"]
        starts = set(self.change_points)
        for i, p in enumerate(self.points):
            yield [p.job_id, p.at.isoformat(), p.value, self.unit, p.n_samples, int(i in starts)]


def _segments(values: Sequence[float], starts: list[int], seed: int = 0) -> list[Segment]:
    """The runs between change points, each with its ratio to the one before.

    The ratios are ratio_interval's, computed together by _intervals (the same numbers,
    its faster medians: a series' first view waits for these and the change points).
    """
    bounds = [0, *starts, len(values)]
    spans = [(a, b) for a, b in itertools.pairwise(bounds) if a < b]
    pairs = [
        (list(values[p0:p1]), list(values[a:b])) for (p0, p1), (a, b) in itertools.pairwise(spans)
    ]
    ratios: list[Ratio | None] = [None, *_intervals(pairs, seed)] if pairs else [None]
    return [
        Segment(a, b, statistics.median(values[a:b]), ratio)
        for (a, b), ratio in zip(spans, ratios, strict=False)
    ]


def _detect(values: list[float]) -> tuple[list[int], list[Segment]]:
    """detect.change_points and the segments between them, remembered by the series.

    PELT on an L1 cost is quadratic in the runs in the worst case (seconds for 1,000 on
    a busy machine), and so is a bootstrap per segment; a history only changes when a
    run is added, and the same series under the same detector settings always has the
    same answer.
    """
    if len(values) < 2:
        return [], _segments(values, [])
    settings = (detect.ALPHA, detect.MIN_EFFECT, detect.MIN_SEGMENT, detect.PENALTY_FACTOR)
    digest = hashlib.sha256(repr((settings, values)).encode()).hexdigest()
    key = f"results:history-segments:{digest}"
    cache = results_cache()
    found = cache.get(key)
    if found is None:
        starts = detect.change_points(values)
        found = (starts, _segments(values, starts))
        cache.set(key, found, RATIO_CACHE_S)
    return list(found[0]), list(found[1])


def _series(teams: Any, fingerprint: str, benchmark: str, metric: str, case: Any) -> Any:
    """One case's measurements on one environment identity, newest first: the rows a
    history reads and warm_histories warms (one query, so the two cannot drift apart)."""
    return Measurement.objects.filter(
        job__team_id__in=teams,
        environment__fingerprint=fingerprint,
        benchmark=benchmark,
        metric=metric,
        case=case,
    ).order_by("-job__created_at", "-job_id", "-id")


WARM_CASES = 200  # series a finished job's comparison warms (~0.15-0.3 s each)


def warm_histories(job_id: int, most: int = WARM_CASES) -> int:
    """Compute and cache the change points of the histories a finished job extended.

    A series' first view waits ~100 ms for PELT and ~40 ms for its segments' intervals
    (issue 39); run in the comparison worker after each comparison, the page finds them
    cached. The series are the job's team's, as a member of that team sees them (the
    cache key is the values: a member of several teams with runs on one environment sees
    another series, computed on its first view). At most ``most`` cases of the job, in
    the order of its measurements. Returns the number of series warmed.
    """
    job = Job.objects.select_related("environment").filter(pk=job_id).first()
    if job is None or job.environment is None:
        return 0
    seen: set[tuple[str, str, str]] = set()
    for benchmark, metric, case in (
        Measurement.objects.filter(job_id=job_id)
        .order_by("id")
        .values_list("benchmark", "metric", "case")
        .iterator()
    ):
        key = (benchmark, metric, canonical(case))
        if key in seen:
            continue
        if len(seen) >= most:
            break
        seen.add(key)
        values = [
            float(value)
            for value in _series(
                [job.team_id], job.environment.fingerprint, benchmark, metric, case
            ).values_list("value", flat=True)[:MAX_HISTORY]
        ][::-1]
        _detect(values)
    return len(seen)


def history(user: AnyUser, query: HistoryQuery) -> History:
    """The newest ``limit`` runs of one case on one environment identity, oldest first.

    One query: the user's team ids are read inside it, and the environment's rows of
    this fingerprint through a join on the indexed fingerprint.
    """
    rows = list(
        _series(team_ids(user), query.fingerprint, query.benchmark, query.metric, query.case)
        .annotate(n_samples=SampleCount("samples"))
        .values_list("job_id", "job__created_at", "value", "n_samples", "unit", "better")[
            : query.limit
        ]
    )[::-1]
    points = [
        Point(job_id, at, float(value), n_samples) for job_id, at, value, n_samples, _, _ in rows
    ]
    values = [p.value for p in points]
    starts, segments = _detect(values)
    unit = rows[-1][4] if rows else ""
    better = rows[-1][5] if rows else ""
    return History(query, unit, better, points, starts, segments)
