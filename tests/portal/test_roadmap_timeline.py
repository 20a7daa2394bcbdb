"""The roadmap page's timeline: bars of planned and actual days on a dated axis (issue 36:
the bars said how long, not when)."""

from __future__ import annotations

import datetime as dt
import itertools
import re

import pytest
from django.test import Client
from django.urls import reverse

from portal.roadmap import MOST_TICKS, timeline_axis
from roadmap.models import Phase
from teams.choices import Role
from tests.factories import add_member, make_project, make_user

pytestmark = pytest.mark.django_db

START = dt.date(2026, 12, 3)


def _axis(html: str) -> list[tuple[float, str]]:
    row = re.search(r'<tr class="timeline-axis">.*?</tr>', html, re.S)
    assert row, "no date axis under the timeline"
    return [
        (float(x), label)
        for x, label in re.findall(r'<text x="([\d.]+)%"[^>]*>([^<]+)</text>', row[0])
    ]


def test_the_timeline_has_a_date_axis_of_the_planned_phases(team):
    project = make_project(team)
    user = make_user()
    add_member(team, user, Role.MEMBER)
    client = Client()
    client.force_login(user)
    client.get(reverse("portal:project-roadmap", args=[project.pk]))  # the phases made
    plans = [(1, START, START + dt.timedelta(days=14)), (2, START + dt.timedelta(days=14), None)]
    for number, start, end in plans:
        response = client.post(
            reverse("portal:roadmap-phase", args=[project.pk, number]),
            {
                "planned_days_min": 5,
                "planned_days_max": 20,
                "planned_start": start.isoformat(),
                "planned_end": end.isoformat() if end else "",
            },
        )
        assert response.status_code == 302
    assert Phase.objects.get(project=project, number=1).planned_start == START

    html = client.get(reverse("portal:project-roadmap", args=[project.pk])).content.decode()
    ticks = _axis(html)
    assert 3 <= len(ticks) <= MOST_TICKS
    days = [dt.datetime.strptime(f"{label} 2026", "%d %b %Y").date() for _, label in ticks]
    assert all(re.fullmatch(r"\d{1,2} [A-Z][a-z]{2}", label) for _, label in ticks)  # "7 Dec"
    xs = [x for x, _ in ticks]
    assert xs == sorted(xs) and xs[0] >= 0 and xs[-1] <= 100
    gaps = {round(b - a, 1) for a, b in itertools.pairwise(xs)}
    assert max(gaps) - min(gaps) <= 0.2  # evenly spaced
    steps = {(b - a).days for a, b in itertools.pairwise(days) if b > a}
    (step,) = steps  # one step throughout: days, or weeks from a Monday
    assert step in (1, 2, 7, 14) and (step < 7 or days[0].weekday() == 0)
    # the bars are drawn against the same origin: phase 1 starts at 0 %
    assert re.search(r'<rect class="planned" x="0(\.0)?%"', html)


@pytest.mark.parametrize(
    ("span", "first", "every"),
    [(5, "3 Dec", 1), (12, "3 Dec", 2), (60, "7 Dec", 14), (200, "Jan 2027", None)],
)
def test_ticks_are_spaced_to_the_span_and_labelled_readably(span, first, every):
    ticks = timeline_axis(START, span)
    assert 2 <= len(ticks) <= MOST_TICKS
    assert ticks[0]["label"] == first
    if every:
        pct = every * 100 / span
        assert all(abs(b["pct"] - a["pct"] - pct) < 1e-9 for a, b in itertools.pairwise(ticks))
    assert all(0 <= t["pct"] <= 100 for t in ticks)
    assert ticks[-1]["anchor"] in ("middle", "end") and ticks[0]["anchor"] in ("start", "middle")
