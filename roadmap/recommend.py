"""The recommendation: use ROCm, stay on CUDA, or not yet decidable — with its reasons.

Reasoned from the product's scenarios. For ROCm: a new cluster that wants long-term
control of its technology, a multi-vendor fleet that wants one programming model, deep
optimisation that wants low-level hardware access, a limited budget. For CUDA: a code
base whose porting cost is too high for the time the team has, dependence on
NVIDIA-only technology, a window too tight for a port. Every reason carries the number
that drives it and a link to its evidence; ``would_change`` says what would flip it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import NamedTuple

from django.conf import settings
from django.urls import reverse

from roadmap.checklist import NO
from roadmap.criteria import Facts, Link
from stack.hipify.families import HOURS_PER_DAY

ROCM, CUDA, UNDECIDED = "rocm", "cuda", "undecided"
TITLES = {ROCM: "Use ROCm", CUDA: "Stay on CUDA", UNDECIDED: "Not yet decidable"}
# One hours convention everywhere (the scan's estimate, the window, the report): a
# person-day is HOURS_PER_DAY focused porting hours (stack.hipify.families), a week five
# of them. Weighing 6-h person-days against a 40-h week overstated the window by a third.
DAYS_PER_WEEK = 5
HOURS_PER_WEEK = DAYS_PER_WEEK * HOURS_PER_DAY
# NVIDIA-only technology, as a real scan records it (stack.hipify): API groups HIP lacks
# (``api_groups[].api`` / ``top_apis[].identifier``, by name prefix), and the hazard rules
# that find what hipify neither converts nor flags (``hazards.rules[].name``).
NVIDIA_ONLY_APIS = {
    "nvshmem": "NVSHMEM",
    "cudnn": "cuDNN-only paths (MIOpen is a rewrite, not a rename)",
    "cudaGraph": "CUDA graph features HIP lacks",
    "cuGraph": "CUDA graph features HIP lacks",
    "nvml": "NVML",
    "cuCtxEnablePeerAccess": "NVLink peer access",
}
NVIDIA_ONLY_RULES = {
    "nvml": "NVML",
    "graph-feature-gap": "CUDA graph features HIP lacks",
    "inline-ptx": "inline PTX assembly",
    "cooperative-groups-gap": "cooperative-groups features HIP lacks",
}
# library-rewrite names the library in the line it found (an #include).
LIBRARIES = {
    "cudnn": "cuDNN-only paths (MIOpen is a rewrite, not a rename)",
    "npp": "NPP",
    "optix": "OptiX",
    "cufile": "cuFile (GPUDirect Storage)",
    "nvjpeg": "nvJPEG",
    "nvshmem": "NVSHMEM",
    "cudla": "cuDLA",
}


@dataclass(frozen=True)
class Reason:
    side: str  # ROCM or CUDA
    text: str
    evidence: tuple[Link, ...] = ()
    kind: str = "scenario"  # "effort", "technology", "performance", "serving" or "scenario"


@dataclass
class Recommendation:
    verdict: str
    reasons: list[Reason] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    would_change: list[str] = field(default_factory=list)
    figures: dict = field(default_factory=dict)

    @property
    def title(self) -> str:
        return TITLES[self.verdict]


# A case measured below this share of its GPU's dense peak on either side is flagged and
# left out of the summary until a person confirms it: an INT8 GEMM at 6 % of the board's
# peak decided a 1.15x "Use ROCm" that was 0.88x without it.
PLAUSIBLE_PCT_OF_PEAK = 10.0
Z95 = 1.96


def _mean_log_var(samples: list) -> float | None:
    """The variance of the mean log of a case's per-iteration rates; None with fewer than
    two (no spread to read: the interval is unknown, not zero)."""
    logs = [math.log(v) for v in samples or [] if isinstance(v, int | float) and v > 0]
    if len(logs) < 2:
        return None
    mean = sum(logs) / len(logs)
    return sum((x - mean) ** 2 for x in logs) / (len(logs) - 1) / len(logs)


def profile_gemm_flops(facts: Facts) -> tuple[object, dict[str, float]] | None:
    """The GEMM work of the team's own workload, per precision: 2·m·n·k·batch FLOPs times
    the calls of each shape its newest profile recorded (``summary.gemm_shapes``, as the
    profile kind writes it); None without a profile that recorded any."""
    from stack.kinds.profile import KIND as PROFILE

    for job in facts.of_kinds([PROFILE.name]):
        rows = (job.summary or {}).get("gemm_shapes") or []
        flops: dict[str, float] = {}
        for row in rows:
            try:
                precision = str(row["precision"])
                work = 2.0 * row["m"] * row["n"] * row["k"] * row.get("batch", 1) * row["calls"]
            except (KeyError, TypeError, AttributeError):
                continue  # a row another version wrote differently decides nothing
            if not (math.isfinite(work) and work > 0):
                continue  # nor does a shape of no (or negative) size: it has no share
            flops[precision] = flops.get(precision, 0.0) + work
        if flops:
            return job, flops
    return None


class ProfileWeights(NamedTuple):
    job: object  # the profile job the weights come from
    weights: dict[str, float]  # GEMM workload -> weight; empty when no precision overlaps
    unmeasured: list[str]  # the profile's precisions no benchmark measured


def _profile_weights(facts: Facts, table: list[dict]) -> ProfileWeights | None:
    """Default weights of the GEMM workloads from the team's profile: each precision's share
    of the profile's GEMM *time* on the current GPU (its FLOPs over the current side's
    measured rate), spread over the weight the GEMM rows would have had equally (one each),
    so non-GEMM rows (bandwidth) keep theirs. Also the profile's precisions no benchmark
    measured (their time cannot be weighed: the report names them). The weights are empty
    when it ran none the benchmarks measured; None without a profile."""
    found = profile_gemm_flops(facts)
    if found is None:
        return None
    job, flops = found
    gemm = [g for g in table if g["benchmark"] == "gemm" and g["current_rate"]]
    measured = {g["precision"] for g in gemm}
    unmeasured = sorted(p for p in flops if p not in measured)
    times = {g["workload"]: flops.get(g["precision"], 0.0) / g["current_rate"] for g in gemm}
    total = sum(times.values())
    if total <= 0:
        return ProfileWeights(job, {}, unmeasured)
    shares = {name: round(len(gemm) * t / total, 3) for name, t in times.items()}
    return ProfileWeights(job, shares, unmeasured)


def _interval(log_ratio: float, se: float) -> tuple[float, float]:
    return math.exp(log_ratio - Z95 * se), math.exp(log_ratio + Z95 * se)


def performance_ratio(facts: Facts) -> dict | None:
    """Candidate (AMD) over current (non-AMD) throughput, as a table per workload
    (benchmark and precision) and a weighted summary of it; None when either side is
    missing.

    Newest blas-bench job per vendor; cases aligned exactly (benchmark, case); only the
    throughput metric counts as a case (not time, power, clocks or CV rows). A case below
    PLAUSIBLE_PCT_OF_PEAK of its peak on either side is flagged and left out, unless the
    team confirmed it (DecisionContext.confirmed_cases, by the flagged case's ``key``). Each
    workload's ratio is the geometric mean over its cases; its 95 % interval is the
    measurement noise of those cases (the spread of their per-iteration rates), not the
    run-to-run drift a second pair of jobs would show. The summary weighs each workload
    by the team's DecisionContext.workload_weights ("gemm bf16": 3; unnamed ones 1, 0
    leaves one out).
    """
    from jobs.models import Measurement
    from results.services import case_key

    newest = facts.benchmark_sides
    if len(newest) < 2:
        return None
    if any(facts.stale_days(job) is not None for job in newest.values()):
        return None  # what the comparison gate refuses as stale decides nothing either
    rows: dict[str, dict] = {}
    for side, job in newest.items():
        rows[side] = {}
        for m in Measurement.objects.filter(job=job, metric__in=("throughput", "pct_of_peak")):
            entry = rows[side].setdefault((m.benchmark, case_key(m.case)), {"case": m.case})
            entry[m.metric] = m
    context = getattr(facts.project, "decision_context", None)
    weights = dict(getattr(context, "workload_weights", None) or {})
    confirmed = set(getattr(context, "confirmed_cases", None) or [])
    groups: dict[str, dict] = {}
    for key, cand in rows["candidate"].items():
        cur = rows["current"].get(key)
        if cur is None or "throughput" not in cand or "throughput" not in cur:
            continue
        a, b = cand["throughput"], cur["throughput"]
        if a.value <= 0 or b.value <= 0:
            continue
        case = cand["case"]
        precision = str(case.get("precision") or case.get("dtype") or "-")
        name = f"{key[0]} {precision}"
        group = groups.setdefault(
            name,
            {"workload": name, "benchmark": key[0], "precision": precision, "unit": a.unit,
             "logs": [], "vars": [], "flagged": [], "current_logs": []},
        )  # fmt: skip
        pcts = [e["pct_of_peak"].value for e in (cand, cur) if "pct_of_peak" in e]
        flag = f"{key[0]}|{key[1]}"  # what the team confirms a flagged case back in by
        if pcts and min(pcts) < PLAUSIBLE_PCT_OF_PEAK and flag not in confirmed:
            group["flagged"].append(
                {"key": flag, "case": case, "ratio": round(a.value / b.value, 3),
                 "pct_of_peak": [round(p, 1) for p in pcts]}
            )  # fmt: skip
            continue
        var_a, var_b = _mean_log_var(a.samples), _mean_log_var(b.samples)
        group["logs"].append(math.log(a.value / b.value))
        group["current_logs"].append(math.log(b.value))
        group["vars"].append(None if var_a is None or var_b is None else var_a + var_b)
    table = []
    for group in sorted(groups.values(), key=lambda g: g["workload"]):
        logs = group.pop("logs")
        variances = group.pop("vars")
        current_logs = group.pop("current_logs")
        group["current_rate"] = (
            math.exp(sum(current_logs) / len(current_logs)) if current_logs else None
        )
        group["cases"] = len(logs)
        if logs:
            mean = sum(logs) / len(logs)
            se = None if None in variances else math.sqrt(sum(variances)) / len(logs)
            group["ratio"], group["log"], group["se"] = math.exp(mean), mean, se
            group["low"], group["high"] = _interval(mean, se) if se is not None else (None, None)
        table.append(group)
    profiled = _profile_weights(facts, table)
    for group in table:
        if group["workload"] in weights:
            group["weight"], group["weight_from"] = float(weights[group["workload"]]), "team"
        elif profiled is not None and group["workload"] in profiled.weights:
            group["weight"] = profiled.weights[group["workload"]]
            group["weight_from"] = f"profile job {profiled.job.pk}"
        else:
            group["weight"], group["weight_from"] = 1.0, "equal"
    counted = [g for g in table if g["cases"] and g["weight"] > 0]
    if not counted:
        return None
    total = sum(g["weight"] for g in counted)
    mean = sum(g["weight"] * g["log"] for g in counted) / total
    if any(g["se"] is None for g in counted):
        low = high = None  # a workload without samples: no interval, not a zero-width one
    else:
        se = math.sqrt(sum((g["weight"] / total) ** 2 * g["se"] ** 2 for g in counted))
        low, high = _interval(mean, se)
    cand, cur = newest["candidate"], newest["current"]
    return {
        "ratio": math.exp(mean),
        "low": low,
        "high": high,
        "cases": sum(g["cases"] for g in counted),
        "flagged": sum(len(g["flagged"]) for g in table),
        "table": table,
        "profile": profiled.job if profiled else None,
        "profile_unmeasured": profiled.unmeasured if profiled else [],
        "candidate": cand,
        "current": cur,
        "candidate_gpu": cand.environment.gpu_model,
        "current_gpu": cur.environment.gpu_model,
        "candidate_date": cand.finished_at,
        "current_date": cur.finished_at,
    }


def nvidia_only_found(facts: Facts) -> list[str]:
    """The NVIDIA-only technology the current scan finds in the project's own code and the
    team has not decided yet: an API group HIP lacks with a recorded decision, or a hazard
    rule the project switched off, no longer holds the team on CUDA."""
    scan = facts.scan
    if scan is None:
        return []
    summary = scan.summary or {}
    groups = [g for g in facts.lacking if g["decision"] is None]  # the open ones
    found: list[str] = []  # in the order found; repeats dropped at the end
    for group in groups:
        name = str(group["api"] or "")
        found += [w for p, w in NVIDIA_ONLY_APIS.items() if name.lower().startswith(p.lower())]
    hazards = summary.get("hazards")
    for rule in hazards.get("rules", []) if isinstance(hazards, dict) else []:
        if not rule.get("enabled", True) or not rule.get("findings"):
            continue
        name = rule.get("name")
        if name in NVIDIA_ONLY_RULES:
            found.append(NVIDIA_ONLY_RULES[name])
        elif name == "library-rewrite":
            texts = [str(place.get("text", "")).lower() for place in rule.get("locations", [])]
            found += [w for lib, w in LIBRARIES.items() if any(lib in t for t in texts)]
    return list(dict.fromkeys(found))


# A candidate that serves at least this share of the current GPU's output per GPU at the
# SLO weighs for ROCm, as the math libraries' ratio does (0.9: within 10 %).
SERVING_WITHIN = 0.9


def serving_sides(facts: Facts) -> dict[str, object]:
    """The newest serving sweep (``summary["serving"]``) of the current GPU (any vendor but
    AMD) and of an AMD candidate, where each exists: the two the recommendation compares."""
    sides: dict[str, object] = {}
    for job in facts.serving_jobs:
        env = job.environment
        if env is None or not env.gpu_vendor or not env.gpu_model:
            continue
        sides.setdefault("candidate" if env.gpu_vendor.lower() == "amd" else "current", job)
    return sides


def _serving_reason(facts: Facts, rec: Recommendation) -> None:
    """What the serving sweeps say, and how it weighed: the candidate's output per GPU at
    the SLO over the current GPU's, per mode both swept (stack.inference.sweep's
    compare_at_slo). A mode weighs only where the ratio's 95 % interval lies on one side of
    SERVING_WITHIN (low at or above it: for ROCm; high below it: against), or where only
    one side meets the SLO; at least SERVING_WITHIN in every mode weighed is for ROCm,
    below it in any mode against (as measured performance does). A comparison the data
    cannot make (one side, another SLO or load, neither meeting it, no interval or one
    across the bar, no mode in common) weighs nothing and is named as missing."""
    from stack.inference.sweep import compare_at_slo

    if not facts.serving_jobs:
        return  # the team serves no LLM here: nothing to weigh, nothing missing
    sides = serving_sides(facts)
    if len(sides) < 2:
        rec.missing.append(
            "serving sweeps of the current GPU and an AMD candidate at the same SLO "
            f"(measured: {', '.join(sides) or 'no GPU named'})"
        )
        return
    cand, cur = sides["candidate"], sides["current"]
    names = (cand.environment.gpu_model, cur.environment.gpu_model)
    rows = compare_at_slo(cand.summary["serving"], cur.summary["serving"], names)
    if not rows:
        swept = [
            ", ".join(str(c.get("mode")) for c in job.summary["serving"].get("curves") or [])
            or "no mode"
            for job in (cand, cur)
        ]
        rec.missing.append(
            f"serving sweeps with a mode in common (no mode in common: {names[0]} swept "
            f"{swept[0]}, {names[1]} {swept[1]})"
        )
        return
    weighed, unweighed, ratios = [], [], {}
    for row in rows:
        per_gpu = row.get("per_gpu") or {}
        ratio, low, high = per_gpu.get("ratio"), per_gpu.get("low"), per_gpu.get("high")
        if ratio is not None:
            ratios[row["mode"]] = round(ratio, 3)
        if not row.get("comparable"):
            unweighed.append(f"{row['mode']}: {row['text']}")
            continue
        if ratio is None:
            if per_gpu.get("winner") is not None:  # only one side meets the SLO
                weighed.append((row["mode"], per_gpu["winner"] == "a", row["text"]))
            else:
                unweighed.append(f"{row['mode']}: {row['text'].rstrip('.')}")
            continue
        # weighed only where the ratio's 95 % interval lies on one side of the bar, even
        # taking each side's capacity at the SLO up to the step where it broke the SLO
        # (the step grid, compare_at_slo's grid bounds); one across it, or none, cannot say
        interval = low, high
        low, high = per_gpu.get("grid_low"), per_gpu.get("grid_high")
        if low is not None and low >= SERVING_WITHIN:
            weighed.append((row["mode"], True, row["text"]))
        elif high is not None and high < SERVING_WITHIN:
            weighed.append((row["mode"], False, row["text"]))
        else:
            grid = " with the step grid" if (low, high) != interval else ""
            why = (
                f" (per GPU, the ratio's interval{grid}, {low:.2f} to {high:.2f}, lies across the "
                f"bar of {SERVING_WITHIN:g})"
                if low is not None and high is not None
                else ""
            )
            unweighed.append(f"{row['mode']}: {row['text'].rstrip('.')}{why}")
    rec.figures["serving_ratio"] = ratios or None
    if unweighed:
        rec.missing.append("a serving comparison the data can make (" + "; ".join(unweighed) + ")")
    if not weighed:
        return
    short = [mode for mode, holds, _ in weighed if not holds]
    bar = f"{SERVING_WITHIN * 100:g} % of the current GPU's output per GPU"
    how = (
        f"weighs against ROCm: below {bar} in {', '.join(short)}"
        if short
        else f"weighs for ROCm: at least {bar} in every mode swept"
    )
    links = tuple(
        Link(
            f"{job.environment.gpu_model}: job {job.pk}",
            reverse("portal:job-detail", args=[job.pk]),
        )
        for job in (cand, cur)
    )
    said = "; ".join(f"{mode}, {text.rstrip('.')}" for mode, _, text in weighed)
    text = f"Serving sweeps, {said} ({how})."
    rec.reasons.append(Reason(CUDA if short else ROCM, text, links, "serving"))
    if short:
        rec.would_change.append(f"a candidate serving at least {bar} at the SLO in every mode")


def recommend(facts: Facts) -> Recommendation:
    project = facts.project
    context = getattr(project, "decision_context", None)
    rec = Recommendation(UNDECIDED)
    scan_link = (
        (Link(f"scan {facts.scan.pk}", reverse("portal:job-detail", args=[facts.scan.pk])),)
        if facts.scan
        else ()
    )

    hours = ((facts.scan.summary or {}).get("effort") or {}).get("hours") if facts.scan else None
    capacity = None
    if context and context.time_window_weeks:
        capacity = context.time_window_weeks * (context.engineers or 1) * HOURS_PER_WEEK
    rec.figures.update(effort_hours=hours, capacity_hours=capacity)
    if hours is None:
        rec.missing.append("a HIPIFY scan of the current code (the porting effort)")
    elif capacity is None:
        rec.missing.append("the team's time window and engineers (to weigh the effort against)")
    else:
        # Both sides of the comparison in the one hours convention, said the same way.
        estimate = (
            f"The porting estimate, {hours:g} h ({hours / HOURS_PER_DAY:.1f} person-days "
            f"of {HOURS_PER_DAY:g} h)"
        )
        window = (
            f"({context.time_window_weeks} weeks x {context.engineers or 1} engineers x "
            f"{DAYS_PER_WEEK} days x {HOURS_PER_DAY:g} h)"
        )
        if hours > capacity:
            rec.reasons.append(
                Reason(CUDA,
                       f"{estimate}, exceeds the {capacity:g} h the team has in its window "
                       f"{window}.", scan_link, "effort")
            )  # fmt: skip
            rec.would_change.append(
                f"an estimate under {capacity:g} h (decide or drop unsupported APIs, exclude "
                "vendored code) or a longer window"
            )
        else:
            rec.reasons.append(
                Reason(ROCM, f"{estimate}, fits the {capacity:g} h the team has {window}.",
                       scan_link, "effort")
            )  # fmt: skip

    found = nvidia_only_found(facts)
    if found:
        rec.reasons.append(
            Reason(
                CUDA,
                "The code depends on NVIDIA-only technology the team has not decided "
                "yet: " + ", ".join(found) + ".",
                scan_link,
                "technology",
            )
        )
        rec.would_change.append("replacing those dependencies (or deciding them per API)")

    perf = facts.performance
    if perf is None:
        rec.missing.append(
            "benchmarks on the current GPU and an AMD candidate with cases in common, each "
            f"newer than {settings.ROCPATH_EVIDENCE_MAX_AGE_DAYS} days"
        )
    else:
        links = tuple(
            Link(
                f"{perf[s + '_gpu']}: job {perf[s].pk}",
                reverse("portal:job-detail", args=[perf[s].pk]),
            )
            for s in ("candidate", "current")
        )
        rec.figures["performance_ratio"] = round(perf["ratio"], 3)
        interval = (
            f"95 % {perf['low']:.2f}-{perf['high']:.2f}"
            if perf["low"] is not None
            else "no interval: cases without samples"
        )
        rec.figures["performance_interval"] = (
            [round(perf["low"], 3), round(perf["high"], 3)] if perf["low"] is not None else None
        )
        text = (
            f"Measured throughput {perf['candidate_gpu']} / {perf['current_gpu']}: "
            f"{perf['ratio']:.2f}x ({interval}; weighted over "
            f"{sum(1 for g in perf['table'] if g['cases'])} workloads, {perf['cases']} cases"
            + (
                f"; {perf['flagged']} below {PLAUSIBLE_PCT_OF_PEAK:g} % of peak left out"
                if perf["flagged"]
                else ""
            )
            + ")"
        )
        if context and context.current_gpu_price and context.candidate_gpu_price:
            per_dollar = perf["ratio"] * context.current_gpu_price / context.candidate_gpu_price
            rec.figures["performance_per_price_ratio"] = round(per_dollar, 3)
            text += f"; per unit of price {per_dollar:.2f}x"
        side = (
            ROCM
            if perf["ratio"] >= 0.9 or rec.figures.get("performance_per_price_ratio", 0) >= 1
            else CUDA
        )
        rec.reasons.append(Reason(side, text + ".", links, "performance"))
        if side == CUDA:
            rec.would_change.append(
                "a candidate measured within 10 % of the current GPU, or a lower price"
            )

    _serving_reason(facts, rec)

    for row in facts.checklist_rows:
        if row.answer != NO:
            continue
        said = f'The checklist answers no to "{row.asks}" ({row.title}; {row.source}'
        said += f': "{row.note}")' if row.source == "team" and row.note else ")"
        if row.key == "hardware":
            # Nothing to run ROCm on: the one answer that decides by itself.
            rec.reasons.append(Reason(CUDA, said + ".", (), "hardware"))
            rec.would_change.append("a target GPU on ROCm's support list")
        else:
            # It weighs against: while it stands, the answer is not "Use ROCm".
            rec.reasons.append(Reason(CUDA, said + ".", (), "checklist"))
            rec.would_change.append(f"a yes (or partly) to {row.title.lower()}")

    if context:
        for flag, text in (
            ("new_cluster", "A new cluster that wants long-term control of its technology."),
            (
                "multi_vendor_fleet",
                "A multi-vendor fleet that wants one programming model (HIP runs on both).",
            ),
            (
                "needs_low_level_access",
                "Deep optimisation that wants access to low-level hardware features.",
            ),
            ("budget_limited", "A limited budget that needs enterprise-grade GPU compute."),
        ):
            if getattr(context, flag):
                rec.reasons.append(Reason(ROCM, text))
    else:
        rec.missing.append(
            "the team's scenario (new cluster, multi-vendor fleet, budget, time window)"
        )

    rec.verdict = _weigh(rec.reasons)
    if rec.verdict == UNDECIDED:
        rec.would_change += [f"recording {m}" for m in rec.missing]
    return rec


def _weigh(reasons: list[Reason]) -> str:
    """Effort over the window, NVIDIA-only technology or a target GPU ROCm does not support
    keeps a team on CUDA whatever else holds; ROCm needs the effort to fit, a reason to move
    (the candidate measured well, or one of the ROCm scenarios) and no "no" in the
    checklist; anything short of that is not yet decidable. Measurements are the math
    libraries' ("performance") and serving at the SLO ("serving"): either one short keeps
    the team on CUDA unless a ROCm scenario holds, whatever the other says, as a team that
    serves LLMs is not served by fast GEMMs alone."""
    against = {r.kind for r in reasons if r.side == CUDA}
    for_rocm = {r.kind for r in reasons if r.side == ROCM}
    measured = {"performance", "serving"}
    if against & {"effort", "technology", "hardware"}:
        return CUDA
    if "checklist" in against:
        return UNDECIDED
    if against & measured and "scenario" not in for_rocm:
        return CUDA
    if "effort" in for_rocm and for_rocm & (measured | {"scenario"}):
        return ROCM
    return UNDECIDED
