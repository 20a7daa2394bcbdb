"""In the job's container: run with a registered tuned file only if it fits this stack.

The server hands a job its tuned file as the input folder ``WORK/tunableop`` (the file and
a manifest of the validators it was tuned with, jobs.services.tuned_files). Before the
kind's runner starts, the stack CLI asks the PyTorch that runs here for its validators
(the very check TunableOp would do, but said aloud): when every one matches, TunableOp's
variables are set so the runner and its children use the file; when one does not, the
file is not applied, and the job's log and summary say why. PyTorch itself would drop a
mismatching file with a warning few read.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from stack.tune import registry


def apply_from_work(work: Path) -> dict[str, Any] | None:
    """Apply ``work/tunableop`` if there is one; what happened (None: no tuned input)."""
    folder = work / registry.INPUT_FOLDER
    manifest_path = folder / registry.MANIFEST_NAME
    if not manifest_path.is_file():
        return None
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return {"applied": False, "reasons": [f"the tuned file's manifest is unreadable: {exc}"]}
    validators = manifest.get("validators") if isinstance(manifest.get("validators"), dict) else {}
    stack, arch, why = _live_stack()
    if why:
        return {"applied": False, "reasons": [why], "tuned_file_id": manifest.get("tuned_file_id")}
    found = registry.check(
        validators, stack, gpu_arch=manifest.get("gpu_arch") or None, stack_arch=arch
    )
    report = {
        "applied": found.applicable,
        "status": found.status,
        "reasons": found.reasons,
        "tuned_file_id": manifest.get("tuned_file_id"),
    }
    if found.applicable:
        os.environ.update(registry.tunableop_env(str(folder / registry.FILE_NAME)))
    return report


def _live_stack() -> tuple[dict[str, str | None], str | None, str | None]:
    """This PyTorch's validators and GPU architecture, or why they cannot be had."""
    try:
        import torch
    except ImportError:
        return {}, None, "PyTorch is not installed here: TunableOp cannot run"
    if not torch.cuda.is_available() or not hasattr(torch._C, "_cuda_tunableop_get_validators"):
        return {}, None, "no GPU with TunableOp here: the tuned file cannot apply"
    live: dict[str, str | None] = dict(registry.live_validators(torch))
    props = torch.cuda.get_device_properties(0)
    if getattr(torch.version, "hip", None):
        arch = str(getattr(props, "gcnArchName", "") or "") or None
    else:
        arch = f"sm_{props.major}{props.minor}"
    return live, arch, None
