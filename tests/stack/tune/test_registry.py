"""Which tuned file fits which stack: current, stale (never applied), unconfirmed (flagged)."""

from __future__ import annotations

from tune_helpers import tune_fixture

from stack.tune.files import parse_tunableop_file
from stack.tune.registry import (
    CURRENT,
    STALE,
    UNCONFIRMED,
    check,
    environment_validators,
    registry_key,
    tunableop_env,
)

MI300X = parse_tunableop_file(tune_fixture("tunableop_results0-mi300x.csv")).validators


def rocm_environment(torch="2.6.0+rocm6.3", rocm="6.3.1", arch="gfx942", **libraries):
    return {
        "software": {"torch_version": torch, "rocm_version": rocm, "libraries": libraries},
        "gpus": [{"vendor": "amd", "arch": arch, "model": "AMD Instinct MI300X"}],
    }


def test_a_stack_that_says_every_validator_and_matches_is_current():
    env = environment_validators(
        rocm_environment(hipblaslt="0.12.0-a5b6b9b3", rocblas="4.3.0-1f8c4f9a")
    )
    found = check(MI300X, env, gpu_arch="gfx942", stack_arch="gfx942")
    assert found.status == CURRENT and found.applicable and found.reasons == []


def test_a_new_pytorch_makes_the_file_stale_naming_both_versions():
    env = environment_validators(rocm_environment(torch="2.7.0+rocm6.3"))
    found = check(MI300X, env)
    assert found.status == STALE and not found.applicable
    assert "PT_VERSION: the file was tuned with 2.6.0+rocm6.3, this stack has 2.7.0+rocm6.3" in (
        found.reasons
    )


def test_another_gpu_architecture_is_stale_even_when_the_versions_match():
    env = environment_validators(
        rocm_environment(arch="gfx90a", hipblaslt="0.12.0-a5b6b9b3", rocblas="4.3.0-1f8c4f9a")
    )
    found = check(MI300X, env)
    assert found.status == STALE
    assert any(r.startswith("GCN_ARCH_NAME: the file was tuned with gfx942") for r in found.reasons)


def test_what_the_probe_cannot_tell_leaves_the_file_unconfirmed_not_applied():
    found = check(MI300X, environment_validators(rocm_environment()))
    assert found.status == UNCONFIRMED and not found.applicable
    assert any(r.startswith("HIPBLASLT_VERSION:") for r in found.reasons)


def test_a_cuda_file_is_keyed_by_the_gpu_it_was_tuned_on_too():
    validators = {"PT_VERSION": "2.11.0+cu130"}
    stack = {"PT_VERSION": "2.11.0+cu130"}
    assert check(validators, stack, gpu_arch="sm_90", stack_arch="sm_90").status == CURRENT
    other = check(validators, stack, gpu_arch="sm_90", stack_arch="sm_100")
    assert other.status == STALE and "tuned on sm_90, this stack runs sm_100" in other.reasons[0]
    assert check({}, stack).status == UNCONFIRMED


def test_the_key_and_the_env_vars_a_later_job_gets():
    key = registry_key(MI300X, None)
    assert key["gpu_arch"] == "gfx942" and key["hipblaslt_version"] == "0.12.0-a5b6b9b3"
    assert tunableop_env("/work/tunableop/tunableop_results.csv") == {
        "PYTORCH_TUNABLEOP_ENABLED": "1",
        "PYTORCH_TUNABLEOP_TUNING": "0",
        "PYTORCH_TUNABLEOP_FILENAME": "/work/tunableop/tunableop_results.csv",
    }
