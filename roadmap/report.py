"""The roadmap as data (for the API, the pages and the report) and as Markdown.

One function, ``roadmap_document``, reads everything once; the API returns it as JSON,
the report page renders it as HTML (print CSS, and PDF through WeasyPrint), and
``markdown`` renders it as text — so all three say the same thing.
"""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from roadmap.criteria import Facts
from roadmap.gates import roadmap_state
from roadmap.recommend import recommend
from stack.textsafe import markdown_text as md


def _link(link) -> dict[str, str] | None:
    return {"label": link.label, "url": link.url} if link else None


def roadmap_document(project: Any) -> dict[str, Any]:
    """Phases, gates, tasks, checklist, recommendation and the porting and benchmark
    figures behind them, as plain data."""
    facts = Facts(project)
    states = roadmap_state(project, facts)
    rec = recommend(facts)
    scan = facts.scan
    summary = (scan.summary or {}) if scan else {}
    perf = facts.performance
    return {
        "project": {
            "id": project.pk,
            "name": project.name,
            "team": project.team.slug,
            "current_platform": project.current_platform,
            "target_gpus": list(project.target_gpus or []),
        },
        "generated_at": timezone.now().isoformat(),
        "phases": [
            {
                "number": s.phase.number,
                "title": s.title,
                "status": s.status,
                "planned_days": [s.phase.planned_days_min, s.phase.planned_days_max],
                "planned_start": s.phase.planned_start,
                "planned_end": s.phase.planned_end,
                "actual_start": s.phase.actual_start,
                "actual_end": s.phase.actual_end,
                "owner": s.phase.owner.get_username() if s.phase.owner else None,
                "gate_open": s.gate_open,
                "criteria": [
                    {
                        "name": c.criterion.name,
                        "title": c.criterion.title,
                        "rationale": c.criterion.rationale,
                        "reads": c.criterion.reads,
                        "status": c.verdict.status,
                        "detail": c.verdict.detail,
                        "evidence": [_link(e) for e in c.verdict.evidence],
                        "fix": _link(c.verdict.fix),
                        "override": (
                            {
                                "id": c.override.pk,
                                "by": c.override.by.get_username() if c.override.by else None,
                                "at": c.override.at,
                                "expires_at": c.override.expires_at,
                                "reason": c.override.reason,
                            }
                            if c.override
                            else None
                        ),
                    }
                    for c in s.criteria
                ],
                "tasks": [
                    {
                        "id": t.task.pk,
                        "key": t.task.key,
                        "title": t.task.title,
                        "state": t.state,
                        "kinds": t.kinds,
                        "job": t.job.pk if t.job else None,
                    }
                    for t in s.tasks
                ],
            }
            for s in states
        ],
        "checklist": [
            {
                "key": r.key,
                "title": r.title,
                "asks": r.asks,
                "answer": r.answer,
                "source": r.source,
                "data_answer": r.data_answer,
                "evidence": r.evidence,
                "note": r.note,
            }
            for r in facts.checklist_rows
        ],
        "recommendation": {
            "verdict": rec.verdict,
            "title": rec.title,
            "reasons": [
                {
                    "side": r.side,
                    "kind": r.kind,
                    "text": r.text,
                    "evidence": [_link(e) for e in r.evidence],
                }
                for r in rec.reasons
            ],
            "missing": rec.missing,
            "would_change": rec.would_change,
            "figures": rec.figures,
        },
        "porting": {
            "scan": scan.pk if scan else None,
            "totals": summary.get("totals"),
            "effort": summary.get("effort"),
            "unsupported_in_code": facts.unsupported_in_code,
            # open ones first, then the most used
            "top_unsupported": sorted(
                facts.lacking,
                key=lambda r: (r["decision"] is not None, -r["in_code"], r["api"]),
            )[:15],
        },
        "benchmarks": (
            {
                "current_gpu": perf["current_gpu"],
                "candidate_gpu": perf["candidate_gpu"],
                "ratio": round(perf["ratio"], 3),
                "low": _r3(perf["low"]),
                "high": _r3(perf["high"]),
                "cases": perf["cases"],
                "flagged": perf["flagged"],
                "current_job": perf["current"].pk,
                "candidate_job": perf["candidate"].pk,
                "current_date": perf["current_date"].date().isoformat()
                if perf["current_date"]
                else None,
                "candidate_date": perf["candidate_date"].date().isoformat()
                if perf["candidate_date"]
                else None,
                "profile_job": perf["profile"].pk if perf["profile"] else None,
                "profile_unmeasured": perf["profile_unmeasured"],
                "weights_note": _weights_note(perf),
                "table": [
                    {
                        "workload": g["workload"],
                        "cases": g["cases"],
                        "weight": g["weight"],
                        "weight_from": g["weight_from"],
                        # a workload whose cases were all left out has no ratio
                        "ratio": _r3(g.get("ratio")),
                        "low": _r3(g.get("low")),
                        "high": _r3(g.get("high")),
                        "flagged": g["flagged"],
                    }
                    for g in perf["table"]
                ],
            }
            if perf
            else None
        ),
    }


def _r3(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def _weights_note(perf: dict[str, Any]) -> str:
    """Where the GEMM weights the team did not set come from, said once for the HTML, the
    PDF and the Markdown."""
    if not perf["profile"]:
        return ""
    note = (
        "GEMM weights not set by the team follow each precision's share of GEMM time in "
        f"profile job {perf['profile'].pk}."
    )
    if perf["profile_unmeasured"]:
        note += (
            f" Its {', '.join(perf['profile_unmeasured'])} GEMMs were not benchmarked: "
            "their time is not weighed."
        )
    return note


STATUS_WORDS = {
    "passed": "passed",
    "failed": "not met",
    "unavailable": "not available yet",
    "not_needed": "not needed",
}


def markdown(doc: dict[str, Any], base: str = "") -> str:
    """The report as Markdown: what a manager reads, every figure with its source job.

    Every text from the data goes through ``md``: names, notes and reasons are the
    users', and a note reading ``## Recommendation: ...`` must not become a heading.
    """
    p = doc["project"]
    out = [f"# Adoption roadmap: {md(p['name'])} ({md(p['team'])})", ""]
    targets = ", ".join(md(g) for g in p["target_gpus"]) or "none"
    out.append(
        f"Generated {doc['generated_at'][:16].replace('T', ' ')} UTC. Current platform: "
        f"{md(p['current_platform'] or 'not given')}; target GPUs: {targets}."
    )
    rec = doc["recommendation"]
    out += ["", f"## Recommendation: {md(rec['title'])}", ""]
    for r in rec["reasons"]:
        side = "for ROCm" if r["side"] == "rocm" else "for CUDA"
        refs = "; ".join(md(e["label"]) for e in r["evidence"])
        out.append(f"- ({side}) {md(r['text'])}" + (f" [{refs}]" if refs else ""))
    if rec["missing"]:
        out.append(f"- Missing: {'; '.join(map(md, rec['missing']))}.")
    if rec["would_change"]:
        out.append(f"- What would change the answer: {'; '.join(map(md, rec['would_change']))}.")
    out += [
        "",
        "## Phases",
        "",
        "| phase | status | planned | actual | gate |",
        "|---|---|---|---|---|",
    ]
    for ph in doc["phases"]:
        planned = f"{ph['planned_days'][0] // 7}-{ph['planned_days'][1] // 7} weeks"
        actual = f"{ph['actual_start'] or '-'} to {ph['actual_end'] or '-'}"
        gate = "open" if ph["gate_open"] else "shut"
        status = ph["status"].replace("_", " ")
        out.append(
            f"| {ph['number']} {md(ph['title'])} | {status} | {planned} | {actual} | {gate} |"
        )
    for ph in doc["phases"]:
        out += ["", f"### Phase {ph['number']}: {md(ph['title'])}", "", "Exit criteria:", ""]
        for c in ph["criteria"]:
            line = f"- **{md(c['title'])}**: {STATUS_WORDS[c['status']]}. {md(c['detail'])}"
            if c["evidence"]:
                line += " Evidence: " + ", ".join(
                    f"[{md(e['label'])}]({base}{e['url']})" for e in c["evidence"]
                )
            if c["override"]:
                o = c["override"]
                until = f" until {str(o['expires_at'])[:10]}" if o["expires_at"] else ""
                line += (
                    f" **Open by override** of {md(o['by'])} on {str(o['at'])[:10]}{until}: "
                    f"{md(o['reason'])}"
                )
            out.append(line)
        out += ["", "Tasks:", ""]
        out += [f"- {md(t['title'])}: {md(t['state'])}" for t in ph["tasks"]]
    out += [
        "",
        "## Decision checklist",
        "",
        "| question | answer | from | evidence |",
        "|---|---|---|---|",
    ]
    for r in doc["checklist"]:
        evidence = md(r["evidence"]) + (f" Team's note: {md(r['note'])}" if r["note"] else "")
        out.append(
            f"| {md(r['title'])} | {md(r['answer'] or 'unanswered')} | {md(r['source'] or '-')} | "
            f"{evidence} |"
        )
    por = doc["porting"]
    out += ["", "## Porting assessment", ""]
    if por["scan"]:
        effort = por["effort"] or {}
        out.append(
            f"Scan job {por['scan']}: {por['unsupported_in_code']} references in code to APIs "
            f"HIP lacks; estimate {effort.get('hours')} h."
        )
        for a in por["top_unsupported"]:
            out.append(
                f"- {md(a['api'])} ({md(a['kind'])}): {a['in_code']} in code; "
                f"{md(a['decision'] or 'open: no decision yet')}"
            )
    else:
        out.append("No scan of the current code yet.")
    out += ["", "## Benchmark comparison", ""]
    b = doc["benchmarks"]
    if b:
        out.append(
            f"{md(b['candidate_gpu'])} (job {b['candidate_job']}, {b['candidate_date']}) / "
            f"{md(b['current_gpu'])} (job {b['current_job']}, {b['current_date']}): "
            f"{b['ratio']}x throughput (95 % {b['low'] or '?'}-{b['high'] or '?'}), weighted "
            f"over the workloads below, {b['cases']} cases."
        )
        if b["weights_note"]:
            out.append(b["weights_note"])
        out += [
            "",
            "| workload | cases | ratio | 95 % | weight | from | left out (< 10 % of peak) |",
        ]
        out.append("| --- | ---: | ---: | --- | ---: | --- | ---: |")
        for g in b["table"]:
            span = f"{g['low']}-{g['high']}" if g["low"] is not None else "-"
            out.append(
                f"| {md(g['workload'])} | {g['cases']} | {g['ratio'] or '-'} | {span} | "
                f"{g['weight']:g} | {g['weight_from']} | {len(g['flagged'])} |"
            )
    else:
        out.append("No like-for-like benchmark of the current and a candidate GPU yet.")
    return "\n".join(out) + "\n"
