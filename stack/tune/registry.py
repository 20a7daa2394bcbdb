"""Which tuned file fits which stack: the registry's key, its stale check, and its env vars.

A TunableOp file is only valid on the stack it was tuned on; PyTorch itself drops a file
whose validators do not match (the whole file, with a warning few read). So rocpath keys
every registered file by its GPU architecture and its validators, and checks them
against the stack a job will run on before it hands the file to the job:

- ``current``: every validator the environment can tell matches;
- ``stale``: one does not (a new PyTorch, ROCm or hipBLASLt; another GPU) — flagged,
  never applied;
- ``unconfirmed``: the environment does not say some validator's value (the probe knows
  PyTorch, ROCm, CUDA and the GPU, not hipBLASLt's or rocBLAS's builds) — flagged too;
  the job itself confirms at start, where PyTorch can be asked (``live_validators``).

Plain Python: the server (jobs) and the job's container (the stack CLI) share it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

CURRENT, STALE, UNCONFIRMED = "current", "stale", "unconfirmed"

PT_VERSION = "PT_VERSION"
ROCM_VERSION = "ROCM_VERSION"
HIPBLASLT_VERSION = "HIPBLASLT_VERSION"
ROCBLAS_VERSION = "ROCBLAS_VERSION"
GCN_ARCH_NAME = "GCN_ARCH_NAME"

# Where a job's container finds a registered file (an input folder of the job) and the
# environment variables that make PyTorch use it without tuning again.
INPUT_FOLDER = "tunableop"
FILE_NAME = "tunableop_results.csv"
MANIFEST_NAME = "manifest.json"


def _base_arch(value: str | None) -> str | None:
    """ "gfx942:sramecc+:xnack-" → "gfx942" (the environment records the bare name)."""
    return value.split(":")[0].strip() if value else value


def _version_matches(file_value: str, env_value: str) -> bool:
    """ROCm's validator carries a build suffix ("6.3.1.0-48-7a5e3a1") the probe's "6.3.1"
    lacks: equal, or the file's value starts with the environment's and a separator."""
    if file_value == env_value:
        return True
    return file_value.startswith(env_value) and file_value[len(env_value) : len(env_value) + 1] in (
        ".",
        "-",
        "+",
    )


def environment_validators(environment: dict[str, Any] | None) -> dict[str, str | None]:
    """What an environment fingerprint (the probe's) says for each validator it can know."""
    environment = environment or {}
    software = environment.get("software") if isinstance(environment.get("software"), dict) else {}
    gpus = environment.get("gpus") if isinstance(environment.get("gpus"), list) else []
    first = gpus[0] if gpus and isinstance(gpus[0], dict) else {}
    libraries = software.get("libraries") if isinstance(software.get("libraries"), dict) else {}
    return {
        PT_VERSION: software.get("torch_version"),
        ROCM_VERSION: software.get("rocm_version"),
        HIPBLASLT_VERSION: libraries.get("hipblaslt"),
        ROCBLAS_VERSION: libraries.get("rocblas"),
        GCN_ARCH_NAME: first.get("arch") if first.get("vendor") == "amd" else None,
    }


@dataclass
class Freshness:
    """Whether a tuned file fits a stack, and every reason it may not."""

    status: str
    reasons: list[str] = field(default_factory=list)

    @property
    def applicable(self) -> bool:
        """Only a current file is ever handed to a job."""
        return self.status == CURRENT

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {"status": self.status, "reasons": list(self.reasons)}


def check(
    validators: dict[str, str],
    stack: dict[str, str | None],
    *,
    gpu_arch: str | None = None,
    stack_arch: str | None = None,
) -> Freshness:
    """The file's validators against a stack's values (``environment_validators`` or
    ``live_validators``); ``gpu_arch`` / ``stack_arch`` also compare the GPU it was tuned
    on (a CUDA file has no arch validator, and an sm_90 tuning says nothing of sm_100)."""
    stale, unknown = [], []
    for key, value in sorted(validators.items()):
        have = stack.get(key)
        if key == GCN_ARCH_NAME:
            value, have = _base_arch(value) or "", _base_arch(have)
        if have is None:
            unknown.append(f"{key}: the file was tuned with {value}; this stack does not say")
        elif not _version_matches(value, have):
            stale.append(f"{key}: the file was tuned with {value}, this stack has {have}")
    if gpu_arch and stack_arch and _base_arch(gpu_arch) != _base_arch(stack_arch):
        stale.append(f"GPU: the file was tuned on {gpu_arch}, this stack runs {stack_arch}")
    elif gpu_arch and not stack_arch:
        unknown.append(f"GPU: the file was tuned on {gpu_arch}; this stack does not say")
    if not validators:
        unknown.append("the file has no Validator lines")
    if stale:
        return Freshness(STALE, stale + unknown)
    if unknown:
        return Freshness(UNCONFIRMED, unknown)
    return Freshness(CURRENT)


def registry_key(validators: dict[str, str], gpu_arch: str | None) -> dict[str, str | None]:
    """The registry's key of a file: its GPU architecture and stack versions."""
    return {
        "gpu_arch": _base_arch(gpu_arch) or _base_arch(validators.get(GCN_ARCH_NAME)),
        "torch_version": validators.get(PT_VERSION),
        "rocm_version": validators.get(ROCM_VERSION),
        "hipblaslt_version": validators.get(HIPBLASLT_VERSION),
        "rocblas_version": validators.get(ROCBLAS_VERSION),
    }


def tunableop_env(path: str) -> dict[str, str]:
    """The environment variables that make PyTorch read ``path`` and use its choices
    without tuning again (PyTorch reads them once, at its first tunable GEMM)."""
    return {
        "PYTORCH_TUNABLEOP_ENABLED": "1",
        "PYTORCH_TUNABLEOP_TUNING": "0",
        "PYTORCH_TUNABLEOP_FILENAME": path,
    }


def validator_pairs(value: Any) -> dict[str, str]:
    """``torch.cuda.tunable.get_validators()`` (pairs of key and value) as a dict."""
    try:
        return {str(k): str(v) for k, v in value}
    except (TypeError, ValueError):
        return {}


def live_validators(torch: Any) -> dict[str, str]:
    """The validators of the PyTorch running here, as TunableOp would write them."""
    return validator_pairs(torch.cuda.tunable.get_validators())
