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

from django.urls import reverse

from roadmap.checklist import NO, evaluate
from roadmap.criteria import NEEDS_DECISION, Facts, Link
from stack.kinds import blas_bench

ROCM, CUDA, UNDECIDED = "rocm", "cuda", "undecided"
TITLES = {ROCM: "Use ROCm", CUDA: "Stay on CUDA", UNDECIDED: "Not yet decidable"}
HOURS_PER_WEEK = 40
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
    kind: str = "scenario"  # "effort", "technology", "performance" or "scenario"


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


def performance_ratio(facts: Facts) -> dict | None:
    """Candidate (AMD) over current (non-AMD) throughput: geometric mean over common cases.

    Only "higher is better" throughput metrics of blas-bench, newest job per vendor, cases
    aligned exactly (benchmark, case, metric); None when either side is missing.
    """
    from jobs.models import Measurement
    from results.services import case_key

    jobs = facts.of_kinds([blas_bench.KIND.name])
    newest: dict[str, object] = {}
    for job in jobs:
        env = job.environment
        if env is None or not env.gpu_vendor:
            continue
        side = "candidate" if env.gpu_vendor.lower() == "amd" else "current"
        newest.setdefault(side, job)
    if len(newest) < 2:
        return None
    values: dict[str, dict] = {}
    for side, job in newest.items():
        values[side] = {
            (m.benchmark, case_key(m.case), m.metric): m.value
            for m in Measurement.objects.filter(job=job, better="higher", metric="throughput")
        }
    common = [k for k in values["candidate"] if k in values["current"] and values["current"][k] > 0]
    ratios = [
        values["candidate"][k] / values["current"][k] for k in common if values["candidate"][k] > 0
    ]
    if not ratios:
        return None
    geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    cand, cur = newest["candidate"], newest["current"]
    return {
        "ratio": geo,
        "cases": len(ratios),
        "candidate": cand,
        "current": cur,
        "candidate_gpu": cand.environment.gpu_model,
        "current_gpu": cur.environment.gpu_model,
    }


def nvidia_only_found(facts: Facts) -> list[str]:
    """The NVIDIA-only technology the current scan finds in the project's own code and the
    team has not decided yet: an API group HIP lacks with a recorded decision, or a hazard
    rule the project switched off, no longer holds the team on CUDA."""
    scan = facts.scan
    if scan is None:
        return []
    summary = scan.summary or {}
    if facts.api_groups is not None:
        groups = [g for g in facts.api_groups[0] if g["state"] == "open"]
    else:  # a scan from before API groups: its most used APIs, none decided
        groups = [
            {"api": a.get("identifier", ""), "kind": a.get("kind"), "in_code": a.get("in_code")}
            for a in summary.get("top_apis", [])
        ]
    found: list[str] = []

    def add(what: str) -> None:
        if what not in found:
            found.append(what)

    for group in groups:
        name = str(group.get("api") or "")
        if group.get("kind") not in NEEDS_DECISION or not group.get("in_code"):
            continue
        for prefix, what in NVIDIA_ONLY_APIS.items():
            if name.lower().startswith(prefix.lower()):
                add(what)
    hazards = summary.get("hazards")
    for rule in hazards.get("rules", []) if isinstance(hazards, dict) else []:
        if not rule.get("enabled", True) or not rule.get("findings"):
            continue
        name = rule.get("name")
        if name in NVIDIA_ONLY_RULES:
            add(NVIDIA_ONLY_RULES[name])
        elif name == "library-rewrite":
            for place in rule.get("locations", []):
                text = str(place.get("text", "")).lower()
                for library, what in LIBRARIES.items():
                    if library in text:
                        add(what)
    return found


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
    elif hours > capacity:
        rec.reasons.append(
            Reason(
                CUDA,
                f"The porting estimate, {hours:g} h, exceeds the {capacity:g} h "
                "the team has in its window.",
                scan_link,
                "effort",
            )
        )
        rec.would_change.append(
            f"an estimate under {capacity:g} h (decide or drop unsupported APIs, exclude "
            "vendored code) or a longer window"
        )
    else:
        rec.reasons.append(
            Reason(
                ROCM,
                f"The porting estimate, {hours:g} h, fits the {capacity:g} h the team has.",
                scan_link,
                "effort",
            )
        )

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

    perf = performance_ratio(facts)
    if perf is None:
        rec.missing.append(
            "benchmarks on the current GPU and an AMD candidate with cases in common"
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
        text = (
            f"Measured throughput {perf['candidate_gpu']} / {perf['current_gpu']}: "
            f"{perf['ratio']:.2f}x (geometric mean of {perf['cases']} cases)"
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

    for row in evaluate(facts):
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
    checklist; anything short of that is not yet decidable."""
    against = {r.kind for r in reasons if r.side == CUDA}
    for_rocm = {r.kind for r in reasons if r.side == ROCM}
    if against & {"effort", "technology", "hardware"}:
        return CUDA
    if "checklist" in against:
        return UNDECIDED
    if "performance" in against and "scenario" not in for_rocm:
        return CUDA
    if "effort" in for_rocm and for_rocm & {"performance", "scenario"}:
        return ROCM
    return UNDECIDED
