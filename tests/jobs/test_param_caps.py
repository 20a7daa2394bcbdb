"""Caps on job parameters: a kind names which parameter counts against which cap, the
server gives each cap its value (the security suite checks the refusals end to end)."""

import pytest

from jobs.param_caps import CAPS, param_cap_errors
from stack.kinds import KINDS, Cap

CAPPED = [(name, param) for name in sorted(KINDS) for param in KINDS[name].param_caps]


def test_every_cap_a_kind_may_name_has_a_value_on_the_server():
    assert set(CAPS) == set(Cap.ALL)


def test_the_kinds_cap_what_they_capped_before_the_caps_moved_onto_them_and_profiles_runs():
    assert set(CAPPED) == {
        ("noop", "seconds"),
        ("noop", "write_bytes"),
        ("sandbox-check", "megabytes"),
        ("sandbox-check", "max_processes"),
        ("sandbox-check", "processes"),
        ("probe", "tool_timeout_s"),
        ("probe", "torch_timeout_s"),
        ("compile-check", "file_timeout_s"),
        ("hipify-scan", "jobs"),
        ("hipify-convert", "jobs"),
        ("compile-check", "jobs"),
        ("profile", "workload_timeout_s"),
        ("profile", "profiler_timeout_s"),
        ("profile", "trace_max_bytes"),
        ("collective-bench", "ranks"),
        ("collective-bench", "rank_timeout_s"),
        ("collective-bench", "tool_timeout_s"),
        ("tune-gemm", "driver_timeout_s"),
        ("tune-gemm", "tool_timeout_s"),
        ("inference-bench", "case_timeout_s"),
        ("inference-bench", "server_start_timeout_s"),
    }


@pytest.mark.parametrize(("kind", "param"), CAPPED)
def test_each_capped_parameter_is_refused_above_its_cap_and_taken_at_it(kind, param, settings):
    settings.ROCPATH_JOB_TIMEOUT_MAX_S = 60
    settings.ROCPATH_JOB_MAX_FILE_MB = 1
    settings.ROCPATH_JOB_MAX_MEMORY_MB = 64
    settings.ROCPATH_JOB_MAX_PROCESSES = 50
    settings.HOST_CPUS = 2
    spec = KINDS[kind]
    cap_of, what = CAPS[spec.param_caps[param]]
    cap = cap_of()
    assert param_cap_errors(kind, {param: cap}, spec.params_schema) == []
    assert param_cap_errors(kind, {param: cap + 1}, spec.params_schema) == [
        f"{param}: at most {int(cap)}, {what}; {int(cap + 1)} asked"
    ]


def test_a_kind_without_caps_or_an_unknown_kind_has_nothing_refused():
    assert param_cap_errors("blas-bench", {"jobs": 10**9}, KINDS["blas-bench"].params_schema) == []
    assert param_cap_errors("no-such-kind", {"jobs": 10**9}, {}) == []
