"""The presenters: what the pages show of a kind beyond what every job shows."""

import pytest
from django.template.loader import get_template

from portal.kinds import PRESENTERS, Presenter, presenter_for, project_steps
from stack.kinds import KINDS
from teams.models import AdoptionProject


def test_every_presenter_is_of_a_registered_kind_and_its_partial_exists():
    for name, presenter in PRESENTERS.items():
        assert presenter.kind is KINDS[name]
        if presenter.partial:
            get_template(presenter.partial)


@pytest.mark.parametrize("name", ["noop", "probe", "no-such-kind"])
def test_a_kind_without_a_presenter_shows_nothing_special(name):
    presenter = presenter_for(name)
    assert type(presenter) is Presenter
    assert (presenter.partial, presenter.step, presenter.charts(None)) == (None, None, [])


def test_the_project_steps_are_scan_convert_compile_in_that_order():
    assert [p.kind.name for p in project_steps()] == [
        "hipify-scan",
        "hipify-convert",
        "compile-check",
    ]


def test_a_steps_button_names_what_the_job_takes_from_the_project():
    project = AdoptionProject(name="cfd", target_gpus=["MI250X", "gfx1100"])
    labels = [p.step_label(project) for p in project_steps()]
    assert labels == ["Scan with HIPIFY", "Convert to HIP", "Compile check (gfx90a, gfx1100)"]
