"""What a job takes from its project: the kinds' project defaults, resolved (teams/facts.py)."""

from stack.kinds import KINDS
from teams.facts import project_facts, with_project_defaults
from teams.models import AdoptionProject

COMPILE = KINDS["compile-check"]


def _project(*gpus: str) -> AdoptionProject:
    return AdoptionProject(name="cfd", target_gpus=list(gpus))


def test_a_compile_check_for_a_project_compiles_for_the_architectures_of_its_gpus():
    assert with_project_defaults(COMPILE, _project("MI250X", "gfx1100"), None) == {
        "targets": ["gfx90a", "gfx1100"]
    }
    assert with_project_defaults(COMPILE, _project("MI300X"), {"jobs": 2}) == {
        "jobs": 2,
        "targets": ["gfx942"],
    }


def test_targets_the_job_names_win_over_the_projects():
    params = {"targets": ["gfx1030"]}
    assert with_project_defaults(COMPILE, _project("MI250X"), params) == params


def test_without_a_project_a_kind_or_such_defaults_the_params_stay_as_they_came():
    assert with_project_defaults(COMPILE, None, None) is None
    assert with_project_defaults(None, _project("MI250X"), {"a": 1}) == {"a": 1}
    convert = KINDS["hipify-convert"]  # a kind that takes nothing from a project
    assert with_project_defaults(convert, _project("MI250X"), None) is None
    # Not an object: left for the kind's validation to refuse, with its message.
    assert with_project_defaults(COMPILE, _project("MI250X"), ["targets"]) == ["targets"]


def test_project_facts_are_what_a_kind_would_take_from_the_project():
    assert project_facts(COMPILE, _project("MI250X")) == {"targets": ["gfx90a"]}
    assert project_facts(KINDS["noop"], _project("MI250X")) == {}


def test_a_scan_takes_the_projects_vendored_lists_and_switched_off_rules():
    project = _project("MI250X")
    project.porting_settings = {"vendored": ["libs/**"], "hazards_off": ["nvml"]}
    assert project_facts(KINDS["hipify-scan"], project) == {
        "vendored": ["libs/**"],
        "not_vendored": [],
        "hazards_off": ["nvml"],
    }
