"""result.json's schema and checks, exit codes, and event lines."""

import copy
import json
import re

import pytest

from stack.contract import (
    ARTIFACT_PATH_PATTERN,
    ERRORED,
    EXIT_ERRORED,
    EXIT_FAILED,
    EXIT_OK,
    FAILED,
    SUCCEEDED,
    ContractError,
    artifact_path_problem,
    exit_code_for,
    log_event,
    parse_event,
    status_for_exit_code,
    validate_environment,
    validate_result,
)

ENVIRONMENT = {
    "host": {
        "hostname": "gpu-node-07",
        "os": "Ubuntu 24.04.1 LTS",
        "kernel": "6.8.0-45-generic",
        "arch": "x86_64",
        "python": "3.12.3",
        "cpu_model": "AMD EPYC 9654 96-Core Processor",
        "cpu_cores": 384,
        "memory_bytes": 1623000113152,
    },
    "gpus": [
        {
            "index": 0,
            "vendor": "amd",
            "model": "AMD Instinct MI300X",
            "arch": "gfx942",
            "memory_bytes": 206141652992,
            "compute_units": 304,
            "driver": "6.8.5",
            "uuid": None,
            "source": "amd-smi",
        }
    ],
    "software": {
        "rocm_version": "6.2.2",
        "cuda_version": None,
        "gpu_driver_version": "6.8.5",
        "torch_version": None,
        "torch_backend": None,
        "libraries": {"amdsmi": "24.6.3.0"},
    },
    "tools": {
        "amd-smi": {
            "present": True,
            "path": "/opt/rocm/bin/amd-smi",
            "version": "24.6.3",
            "error": None,
        },
        "nvidia-smi": {"present": False, "path": None, "version": None, "error": None},
    },
}

RESULT = {
    "schema_version": 1,
    "kind": "blas-bench",
    "status": "succeeded",
    "started_at": "2026-11-30T10:00:00.000000Z",
    "finished_at": "2026-11-30T10:01:02.500000Z",
    "environment": ENVIRONMENT,
    "measurements": [
        {
            "benchmark": "rocblas-bench",
            "case": {"function": "gemm", "precision": "f32_r", "m": 4096, "transA": False},
            "metric": "throughput",
            "unit": "TFLOP/s",
            "value": 123.4,
            "samples": [123.1, 123.4, 123.9],
            "better": "higher",
        }
    ],
    "summary": {"best": 123.9},
    "artifacts": [{"path": "raw/rocblas-bench.csv", "content_type": "text/csv", "description": ""}],
    "error": None,
}


def result(**changes):
    document = copy.deepcopy(RESULT)
    document.update(changes)
    return document


def test_a_complete_result_validates():
    validate_result(result())


def test_a_result_without_environment_validates():
    validate_result(result(environment=None, measurements=[], artifacts=[]))


def test_validate_result_rejects_a_missing_kind():
    document = result()
    del document["kind"]
    with pytest.raises(ContractError, match="kind"):
        validate_result(document)


def test_validate_result_rejects_an_unknown_status():
    with pytest.raises(ContractError, match=r"^status: 'done' is not one of"):
        validate_result(result(status="done"))


def test_validate_result_rejects_another_schema_version():
    with pytest.raises(ContractError, match="schema_version"):
        validate_result(result(schema_version=2))


@pytest.mark.parametrize(
    "path", ["../etc/passwd", "raw/../../x", "/etc/passwd", "result.json", "a//b", "./a", "C:/x"]
)
def test_validate_result_rejects_an_unsafe_artifact_path(path):
    document = result(artifacts=[{"path": path, "content_type": "text/plain", "description": ""}])
    with pytest.raises(ContractError, match=r"^artifacts\[0\]\.path") as caught:
        validate_result(document)
    # The plain-words reason, not the schema's regular expression.
    assert str(caught.value) == f"artifacts[0].path: {path!r} {artifact_path_problem(path)}"
    assert "(?!" not in str(caught.value)


def test_the_schema_pattern_rejects_what_the_plain_words_check_rejects():
    """External validators only get the schema, so it must stay as strict."""
    paths = ["../etc/passwd", "raw/../../x", "/etc/passwd", "result.json", "a//b", "./a", "C:/x"]
    for path in [*paths, "a/", "a\\b", "probe/rocminfo.txt", "..hidden"]:
        matches = re.fullmatch(ARTIFACT_PATH_PATTERN, path) is not None
        assert matches == (artifact_path_problem(path) is None), path


def test_validate_result_rejects_a_measurement_without_unit():
    document = result()
    del document["measurements"][0]["unit"]
    with pytest.raises(ContractError, match=r"^measurements\[0\]: 'unit' is a required property"):
        validate_result(document)


def test_validate_result_rejects_a_case_value_that_is_not_a_scalar():
    document = result()
    document["measurements"][0]["case"]["shape"] = [1, 2]
    with pytest.raises(ContractError, match=r"measurements\[0\]\.case\.shape"):
        validate_result(document)


def test_validate_result_rejects_non_finite_samples():
    document = result()
    document["measurements"][0]["samples"] = [1.0, float("nan")]
    with pytest.raises(ContractError, match="finite"):
        validate_result(document)


def test_validate_result_rejects_an_errored_result_that_does_not_say_why():
    with pytest.raises(ContractError, match="error"):
        validate_result(result(status=ERRORED, error=None))


def test_validate_result_rejects_a_timestamp_that_is_not_iso8601():
    with pytest.raises(ContractError, match="started_at"):
        validate_result(result(started_at="yesterday"))


def test_validate_result_rejects_a_gpu_of_an_unknown_vendor():
    document = result()
    document["environment"]["gpus"][0]["vendor"] = "intel"
    with pytest.raises(ContractError, match=r"environment"):
        validate_result(document)


def test_validate_environment_checks_a_fingerprint_alone():
    validate_environment(ENVIRONMENT)
    broken = copy.deepcopy(ENVIRONMENT)
    del broken["tools"]["amd-smi"]["present"]
    with pytest.raises(ContractError, match=r"tools\.amd-smi"):
        validate_environment(broken)


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("probe/rocminfo.txt", None),
        ("..hidden", None),
        ("a/../b", "must not contain '..'"),
        ("/abs", "must be relative to OUT, not absolute"),
        ("result.json", "must not be result.json itself"),
        ("", "must be a non-empty string"),
    ],
)
def test_artifact_path_problem_says_what_is_wrong_in_plain_words(path, reason):
    assert artifact_path_problem(path) == reason


def test_exit_codes_follow_the_status():
    assert [exit_code_for(s) for s in (SUCCEEDED, FAILED, ERRORED)] == [0, 1, 3]
    with pytest.raises(ContractError):
        exit_code_for("canceled")


@pytest.mark.parametrize(
    ("code", "status"),
    [
        (EXIT_OK, SUCCEEDED),
        (EXIT_FAILED, FAILED),
        (EXIT_ERRORED, ERRORED),
        (2, ERRORED),
        (-9, ERRORED),
        (137, ERRORED),
        (None, ERRORED),
    ],
)
def test_an_exit_code_alone_tells_the_worker_the_status(code, status):
    assert status_for_exit_code(code) == status


@pytest.mark.parametrize(
    "line",
    [
        '{"event":"progress","pct":42.0,"message":"step 2"}',
        '{"event":"log","level":"warning","message":"slow"}',
        '{"event":"metric","name":"gflops","value":1.5,"unit":"GFLOP/s"}',
    ],
)
def test_parse_event_accepts_the_three_kinds(line):
    assert parse_event(line)["event"] in ("progress", "log", "metric")


@pytest.mark.parametrize(
    "line",
    [
        "hello world",
        "[1, 2]",
        '{"event":"progress","pct":142}',
        '{"event":"progress","pct":true}',
        '{"event":"log","level":"loud","message":"x"}',
        '{"event":"metric","name":"x","value":"fast"}',
        '{"event":"party"}',
    ],
)
def test_parse_event_rejects_lines_that_are_not_events(line):
    with pytest.raises(ContractError):
        parse_event(line)


def test_not_strict_only_json_objects_with_an_event_name_are_events():
    assert parse_event('{"event": "log", "message": "x"}', strict=False) == {
        "event": "log",
        "message": "x",
    }
    assert parse_event('{"message": "x"}', strict=False) is None
    assert parse_event("plain text", strict=False) is None
    assert parse_event("{broken", strict=False) is None
    assert parse_event(b' {"event": "progress", "pct": 5}\n', strict=False)["pct"] == 5


def test_a_log_event_built_by_the_helper_is_a_valid_event():
    assert parse_event(json.dumps(log_event("leased GPU 0", "warning"))) == {
        "event": "log",
        "level": "warning",
        "message": "leased GPU 0",
    }
