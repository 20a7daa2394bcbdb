"""The kinds registry, as the Django side uses it: listing and validating params."""

import pytest

from stack.kinds import (
    KINDS,
    NON_FIELD_ERRORS,
    Kind,
    ParamsError,
    UnknownKind,
    get_kind,
    kinds_as_json,
    validate_params,
)


def test_get_kind_returns_the_registered_kind():
    assert get_kind("noop") is KINDS["noop"]
    assert isinstance(get_kind("probe"), Kind)


def test_get_kind_raises_unknown_kind_naming_the_known_ones():
    with pytest.raises(UnknownKind, match="noop, probe"):
        get_kind("hipify-scann")


@pytest.mark.parametrize("name", sorted(KINDS))
def test_every_kind_schema_forbids_unknown_fields_and_defaults_every_field(name):
    schema = KINDS[name].params_schema
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    assert all("default" in prop for prop in schema["properties"].values())
    # Defaults fill every field before validation, so nothing at the root is required
    # (validate_params has no per-field message for a missing one).
    assert "required" not in schema


@pytest.mark.parametrize("name", sorted(KINDS))
def test_every_kind_accepts_its_own_defaults(name):
    assert validate_params(name, {}) == KINDS[name].defaults()


@pytest.mark.parametrize("name", sorted(KINDS))
def test_every_kind_runner_imports_to_a_function(name):
    assert callable(KINDS[name].load_runner())


def test_validate_params_fills_defaults_without_touching_the_input():
    given = {"seconds": 2}
    params = validate_params("noop", given)
    assert params == {
        "seconds": 2,
        "steps": 1,
        "exit_status": "succeeded",
        "write_bytes": 0,
        "log_lines": 0,
    }
    assert given == {"seconds": 2}


def test_validate_params_reports_a_wrong_type_under_the_field():
    with pytest.raises(ParamsError) as caught:
        validate_params("noop", {"seconds": "ten"})
    assert list(caught.value.errors) == ["seconds"]
    assert "'ten' is not of type 'number'" in caught.value.errors["seconds"][0]


def test_validate_params_does_not_take_a_boolean_for_a_number():
    with pytest.raises(ParamsError) as caught:
        validate_params("noop", {"steps": True})
    assert "steps" in caught.value.errors


def test_validate_params_reports_unknown_fields_each_by_name():
    with pytest.raises(ParamsError) as caught:
        validate_params("probe", {"gpus": 8, "verbose": True})
    assert caught.value.errors == {"gpus": ["unknown field"], "verbose": ["unknown field"]}


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"seconds": -1}, "seconds"),
        ({"seconds": 86401}, "seconds"),
        ({"steps": 0}, "steps"),
        ({"steps": 1001}, "steps"),
        ({"exit_status": "canceled"}, "exit_status"),
    ],
)
def test_validate_params_reports_out_of_range_values(params, field):
    with pytest.raises(ParamsError) as caught:
        validate_params("noop", params)
    assert list(caught.value.errors) == [field]


def test_validate_params_reports_every_problem_at_once():
    with pytest.raises(ParamsError) as caught:
        validate_params("noop", {"seconds": -1, "steps": "many", "colour": "red"})
    assert set(caught.value.errors) == {"seconds", "steps", "colour"}
    assert "seconds" in str(caught.value)


def test_validate_params_rejects_params_that_are_not_an_object():
    with pytest.raises(ParamsError) as caught:
        validate_params("noop", [1, 2])
    assert caught.value.errors == {NON_FIELD_ERRORS: ["params must be a JSON object"]}


def test_validate_params_turns_whole_floats_into_ints_for_integer_fields():
    params = validate_params("noop", {"steps": 4.0})
    assert params["steps"] == 4
    assert isinstance(params["steps"], int)


def test_validate_params_of_an_unknown_kind_raises_unknown_kind():
    with pytest.raises(UnknownKind):
        validate_params("nope", {})


def test_kinds_as_json_lists_every_kind_with_schema_and_defaults():
    listed = kinds_as_json()
    assert [k["name"] for k in listed] == sorted(KINDS)
    noop = listed[[k["name"] for k in listed].index("noop")]
    assert set(noop) == {
        "name",
        "title",
        "description",
        "params_schema",
        "default_timeout_s",
        "defaults",
        "example_params",
    }
    assert noop["defaults"]["steps"] == 1


def _kind(**fields):
    schema = {
        "type": "object",
        "properties": {"seconds": {"type": "number", "default": 0}},
        "additionalProperties": False,
    }
    return Kind(
        name="x", title="X", description="", params_schema=schema, default_timeout_s=1,
        runner="m:f", **fields,
    )  # fmt: skip


def test_a_kind_caps_and_fills_only_parameters_it_has_by_names_the_server_knows():
    from stack.kinds import Cap, ProjectFact

    assert _kind(param_caps={"seconds": Cap.RUN_SECONDS}).param_caps == {"seconds": "run_seconds"}
    with pytest.raises(ValueError, match="param_caps names no parameter 'secs'"):
        _kind(param_caps={"secs": Cap.RUN_SECONDS})
    with pytest.raises(ValueError, match=r"param_caps\['seconds'\] is 'forever'"):
        _kind(param_caps={"seconds": "forever"})
    with pytest.raises(ValueError, match="project_defaults names no parameter 'targets'"):
        _kind(project_defaults={"targets": ProjectFact.COMPILE_TARGETS})
    with pytest.raises(ValueError, match=r"project_defaults\['seconds'\] is 'age'"):
        _kind(project_defaults={"seconds": "age"})
