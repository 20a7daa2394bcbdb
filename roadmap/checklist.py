"""The decision checklist: five questions, answered from data where data exists.

Hardware compatibility is read from the project's target GPUs against ROCm's GPU
support list; the software ecosystem from the HIPIFY scan; performance needs from the
benchmarks. Toolchain familiarity and long-term maintenance are the team's to answer.
A question the data answers shows the data as its evidence; the team may still answer
it, and then its answer is what counts (shown beside the data).
"""

from __future__ import annotations

from dataclasses import dataclass

from stack.blas.peaks import PEAK_TABLE, match_name

YES, NO, PARTLY = "yes", "no", "partly"
ANSWERS = (YES, NO, PARTLY)

# LLVM targets (gfx) ROCm lists as supported on Linux, per release. Source: ROCm's
# compatibility matrix, docs/compatibility/compatibility-matrix-historical-6.0.csv in
# github.com/ROCm/ROCm (releases 6.0.0 to 6.3.1; every one lists the same five targets).
# A release not in this table is answered "unknown", never guessed.
ROCM_SUPPORTED_TARGETS: dict[str, frozenset[str]] = {
    release: frozenset({"gfx1100", "gfx1030", "gfx942", "gfx90a", "gfx908"})
    for release in (
        "6.0.0", "6.0.2", "6.1.0", "6.1.1", "6.1.2", "6.2.0", "6.2.1", "6.2.2", "6.2.4",
        "6.3.0", "6.3.1",
    )
}  # fmt: skip
SUPPORT_SOURCE = (
    "ROCm compatibility matrix (github.com/ROCm/ROCm, "
    "docs/compatibility/compatibility-matrix-historical-6.0.csv), ROCm 6.0.0-6.3.1"
)
NEWEST_LISTED = "6.3.1"


@dataclass(frozen=True)
class Question:
    key: str
    title: str
    asks: str


QUESTIONS: tuple[Question, ...] = (
    Question("hardware", "Hardware compatibility",
             "Is the target GPU on ROCm's support list (Instinct MI series, Radeon RDNA)?"),
    Question("software", "Software ecosystem",
             "Is the code base CUDA, and what does porting cost?"),
    Question("performance", "Performance needs",
             "Does the workload need what the candidate GPU measured (and Infinity Fabric "
             "bandwidth, where it spans GPUs)?"),
    Question("toolchain", "Toolchain familiarity",
             "Is the team familiar with the open toolchain (HIP, hipcc, rocprof)?"),
    Question("maintenance", "Long-term maintenance",
             "Is the open ecosystem's activity and support enough for the years ahead?"),
)  # fmt: skip


@dataclass(frozen=True)
class Row:
    key: str
    title: str
    asks: str
    answer: str | None  # what counts: the team's answer, else the data's
    source: str  # "team", "data" or "" (unanswered)
    data_answer: str | None
    evidence: str
    note: str = ""


def target_arch(entry: str) -> tuple[str, str]:
    """(gfx target or "", how it was found) for one of the project's target GPUs."""
    text = str(entry).strip()
    if text.lower().startswith("gfx"):
        return text.lower(), "given as a target"
    row = match_name(text)
    if row:
        return PEAK_TABLE[row].arch, f"{row} is {PEAK_TABLE[row].arch} (stack/blas/peaks.py)"
    return "", "not a GPU rocpath knows"


def hardware_answer(targets: list[str], release: str = NEWEST_LISTED) -> tuple[str | None, str]:
    supported = ROCM_SUPPORTED_TARGETS.get(release)
    if not targets:
        return None, "The project names no target GPU."
    if supported is None:
        return None, f"ROCm {release} is not in rocpath's support table ({SUPPORT_SOURCE})."
    found, missing, unknown = [], [], []
    for entry in targets:
        arch, how = target_arch(entry)
        if not arch and "nvidia" in str(entry).lower():
            missing.append(f"{entry} (an NVIDIA GPU)")
        elif not arch:
            unknown.append(f"{entry} ({how})")  # a typo or a GPU the table lacks: not a no
        else:
            (found if arch in supported else missing).append(f"{entry} ({how})")
    evidence = f"On ROCm {release}'s list: {', '.join(found) or 'none'}."
    if missing:
        evidence += f" Not on it: {', '.join(missing)}."
    if unknown:
        evidence += f" Unknown here, so not judged: {', '.join(unknown)}."
    evidence += f" Source: {SUPPORT_SOURCE}."
    if not found and not missing:
        return None, evidence  # nothing rocpath knows: the team answers it
    answer = YES if not missing and not unknown else (PARTLY if found else NO)
    return answer, evidence


def software_answer(facts) -> tuple[str | None, str]:
    scan = facts.scan
    if scan is None:
        return None, "No HIPIFY scan of the current code."
    summary = scan.summary or {}
    totals = summary.get("totals", {})
    hours = (summary.get("effort") or {}).get("hours")
    cuda = totals.get("cuda_refs", 0)
    evidence = (
        f"Scan {scan.pk}: {cuda} CUDA references in {totals.get('files', '?')} files, "
        f"{facts.unsupported_in_code} references in code to APIs HIP lacks; estimate {hours} h."
    )
    if not cuda:
        return NO, evidence + " The code base is not CUDA."
    return YES, evidence


def performance_answer(facts) -> tuple[str | None, str]:
    from roadmap.criteria import PASSED, libraries_compared

    verdict = libraries_compared(facts)
    if verdict.status != PASSED:
        return None, verdict.detail
    return YES, verdict.detail + " (the team judges whether the measured ratio is enough)"


def evaluate(facts) -> list[Row]:
    """Every question with its answer (the team's if given, else the data's) and evidence."""
    project = facts.project
    data: dict[str, tuple[str | None, str]] = {
        "hardware": hardware_answer(list(project.target_gpus or [])),
        "software": software_answer(facts),
        "performance": performance_answer(facts),
    }
    rows = []
    for q in QUESTIONS:
        data_answer, evidence = data.get(q.key, (None, "The team answers this one."))
        team = facts.checklist.get(q.key)
        if team is not None:
            answer, source, note = team.answer, "team", team.note
        elif data_answer is not None:
            answer, source, note = data_answer, "data", ""
        else:
            answer, source, note = None, "", ""
        rows.append(Row(q.key, q.title, q.asks, answer, source, data_answer, evidence, note))
    return rows
