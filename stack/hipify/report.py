"""The Markdown report of a HIPIFY scan: what a team reads first, and what it downloads."""

from __future__ import annotations

from typing import Any

# User text (paths in the scanned tree, the project's globs) as literal Markdown; API
# names from hipify-perl's tables and cudaX identifiers stay in code spans as they are.
from stack.textsafe import markdown_text as _cell

_KIND_TITLES = {
    "unsupported": "unsupported (HIP lacks it)",
    "unsupported_device_function": "unsupported device function",
    "deprecated": "deprecated in CUDA",
    "removed": "removed from CUDA",
    "experimental": "experimental in HIP",
    "unconverted": "cudaX left after translation",
}
MAX_FILE_ROWS = 500
MAX_GROUP_ROWS = 200


def _noise_sections(summary: dict[str, Any]) -> list[str]:
    """API groups, hazards, vendored files and the unconverted split (stack.hipify.noise)."""
    out: list[str] = []
    groups = [g for g in summary.get("api_groups", []) if g["in_code"]]
    if groups:
        out += ["", "## APIs HIP lacks, grouped (one decision each)", ""]
        out += ["| API group | kind | members | in code | vendored | files | first places |"]
        out.append("|---|---|---:|---:|---:|---:|---|")
        for g in groups[:MAX_GROUP_ROWS]:
            places = ", ".join(f"{p['path']}:{p['line']}" for p in g["locations"][:3])
            out.append(
                f"| `{g['api']}` | {g['kind']} | {len(g['members'])} | {g['in_code']} | "
                f"{g['vendored_in_code']} | {g['files'] if g['files'] is not None else '-'} | "
                f"{_cell(places)} |"
            )
        if len(groups) > MAX_GROUP_ROWS:
            out.append(f"\n{len(groups) - MAX_GROUP_ROWS} more groups in the job summary.")
    hazards = summary.get("hazards")
    if hazards:
        out += ["", "## Hazards HIPIFY cannot see", ""]
        out += ["| rule | severity | findings | vendored | counted | first places |"]
        out.append("|---|---|---:|---:|---|---|")
        for h in hazards["rules"]:
            if h["findings"] or h["vendored"]:
                places = ", ".join(f"{p['path']}:{p['line']}" for p in h["locations"][:3])
                out.append(
                    f"| `{h['name']}` | {h['severity']} | {h['findings']} | {h['vendored']} | "
                    f"{'yes' if h['enabled'] else 'switched off'} | {_cell(places)} |"
                )
    split = summary.get("unconverted_split")
    if split:
        out += [
            "",
            f"cudaX tokens left after translation in the project's code: "
            f"{split['cuda_name']['refs']} are CUDA names HIP lacks, "
            f"{split['project_identifier']['refs']} the project's own identifiers "
            f"({', '.join(f'`{n}`' for n in list(split['project_identifier']['top'])[:10])}).",
        ]
    vendored = summary.get("vendored")
    if vendored and vendored["files"]:
        out += ["", "## Vendored code (left out of the estimate)", ""]
        out += ["| file | why |", "|---|---|"]
        out += [f"| {_cell(p)} | {_cell(why)} |" for p, why in vendored["paths"].items()]
    return out


def markdown_report(result: Any) -> str:
    """The report of a ScanResult, from what the scan summed (Totals.summary).

    Not from a kind's summary: what a kind adds (engine, timings, ...) is not
    report material, and any caller of scan_tree can then render one.
    """
    tool = result.tables.describe()
    summary = result.summary
    totals = summary["totals"]
    effort = summary["effort"]
    lines = [
        "# HIPIFY porting assessment",
        "",
        f"hipify-perl {tool['hip_version']} (sha256 `{tool['sha256'][:16]}...`), "
        f"engine `{result.engine}`; {result.examined} files examined, "
        f"{result.cached} from the cache.",
        "",
        "## Totals",
        "",
        "| | |",
        "|---|---|",
        f"| files | {totals['files']} ({totals['files_with_findings']} with findings, "
        f"{totals['files_with_device_code']} with device code) |",
        f"| lines | {totals['lines']} |",
        f"| converted references (hipify-perl's count) | {totals['converted_refs']} |",
        f"| of which CUDA references | {totals['cuda_refs']} |",
        f"| of which identity mappings of non-CUDA names | {totals['identity_refs']} |",
        f"| of which supported device-function calls | {totals['device_function_refs']} |",
        f"| warnings (hipify-perl's count) | {totals['warnings']} |",
        "",
        "## Warnings by kind and where they sit",
        "",
        "hipify-perl matches its tables as plain substrings, comments included; "
        "only the `code` column is work.",
        "",
        "| kind | all | code | comment | string | inside a longer identifier |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for kind, counts in summary["warnings_by_kind"].items():
        if counts["total"]:
            lines.append(
                f"| {_KIND_TITLES.get(kind, kind)} | {counts['total']} | {counts['code']} | "
                f"{counts['comment']} | {counts['string']} | {counts['identifier']} |"
            )
    lines += [
        "",
        "## Porting effort (estimate)",
        "",
        f"**{effort['hours']} hours** (about {effort['person_days']} person-days at "
        f"{effort['hours_per_day']:g} h/day). {effort['note']}.",
        "",
        "| input | value | hours each | hours |",
        "|---|---:|---:|---:|",
    ]
    left_out = effort.get("left_out", {})
    lines[-2:] = [
        "| input | counted | hours each | hours | left out, and why |",
        "|---|---:|---:|---:|---|",
    ]
    for key, value in effort["inputs"].items():
        weight, term = effort["weights_hours"][key], effort["terms_hours"][key]
        why = "; ".join(f"{p['value']} {p['why']}" for p in left_out.get(key, [])) or "-"
        lines.append(f"| {key} | {value} | {weight:g} | {term:g} | {_cell(why)} |")
    if "effort_everything" in summary:
        lines += [
            "",
            f"Counting every file and identifier as hipify-perl reports them: "
            f"{summary['effort_everything']['hours']} hours.",
        ]
    lines += _noise_sections(summary)
    lines += ["", "## By API family", "", "| family | converted refs | warnings (code) |"]
    lines.append("|---|---:|---|")
    for name, fam in summary["families"].items():
        parts = [f"{k} {fam[k]} ({fam.get(k + '_in_code', 0)})" for k in _KIND_TITLES if fam.get(k)]
        lines.append(f"| {name} | {fam.get('converted_refs', 0)} | {', '.join(parts) or '-'} |")
    lines += ["", "## Top APIs to decide on", ""]
    if summary["top_apis"]:
        lines += ["| identifier | kind | family | in code | all | files | first places |"]
        lines.append("|---|---|---|---:|---:|---:|---|")
        for api in summary["top_apis"]:
            places = ", ".join(f"{p['path']}:{p['line']}" for p in api["locations"][:3])
            lines.append(
                f"| `{api['identifier']}` | {api['kind']}"
                f"{' since ' + api['since'] if api['since'] else ''} | {api['family']} | "
                f"{api['in_code']} | {api['total']} | {api['files']} | {_cell(places)} |"
            )
    else:
        lines.append("None: hipify-perl found nothing it cannot translate.")
    if summary["identity_mappings"]:
        lines += [
            "",
            "## Identity mappings (not CUDA references)",
            "",
            "hipify-perl counts these names (OpenGL types, half types, ...) as conversions "
            "although they map to themselves; they are kept out of the CUDA reference count.",
            "",
        ]
        lines.append(
            ", ".join(f"`{name}` {count}" for name, count in summary["identity_mappings"].items())
        )
    files = sorted(
        result.rows(),
        key=lambda r: (
            -sum(c.get("code", 0) for c in r["counts"].values()),
            -r["cuda_refs"],
            r["path"],
        ),
    )
    lines += [
        "",
        "## Files",
        "",
        "| file | lines | CUDA refs | unsupported (code) | deprecated (code) | removed (code) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for rec in files[:MAX_FILE_ROWS]:
        c = rec["counts"]

        def pair(kind: str, c: dict[str, Any] = c) -> str:
            k = c.get(kind)
            return f"{k['total']} ({k['code']})" if k else "0"

        lines.append(
            f"| {_cell(rec['path'])} | {rec['lines']} | {rec['cuda_refs']} | "
            f"{pair('unsupported')} | {pair('deprecated')} | {pair('removed')} |"
        )
    if len(files) > MAX_FILE_ROWS:
        lines.append(f"\n{len(files) - MAX_FILE_ROWS} more files in findings.json.")
    return "\n".join(lines) + "\n"
