"""The roadmap report's PDF breaks pages between small units, not whole sections."""

from __future__ import annotations

import io

import pytest
from django.conf import settings

from tests.factories import make_project


@pytest.mark.process  # WeasyPrint's rendering starts a subprocess
def test_page_one_of_the_pdf_holds_more_than_the_recommendation(member_client, team):
    from pypdf import PdfReader

    project = make_project(team, "solver port")
    pdf = member_client.get(f"/projects/{project.pk}/report.pdf")
    assert pdf["Content-Type"] == "application/pdf"
    first = PdfReader(io.BytesIO(pdf.content)).pages[0].extract_text()
    # With `section { break-inside: avoid-page }` the phase section went to page 2 whole,
    # leaving page 1 the title and the recommendation: 60 % blank.
    assert "Recommendation" in first and "Phase status" in first
    assert "Phase 1: Assessment & planning" in first


def test_only_small_units_are_kept_from_breaking():
    html = (settings.BASE_DIR / "templates/portal/roadmap_report.html").read_text()
    assert "section { break-inside" not in html
    assert "tr, li, figure, img { break-inside: avoid; }" in html
