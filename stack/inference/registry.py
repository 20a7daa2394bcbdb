"""The model registry: names an operator gave to model folders on a worker.

A job names a registered model; it never names a path. The operator puts each model's
folder (config.json, weights, tokenizer: what ``save_pretrained`` writes) under the
worker's model root (ROCPATH_MODEL_ROOT), either as ``<root>/<name>/`` or under another
path given in ``<root>/models.json`` (``{"name": "relative/path"}``). Whatever the name
or the file says, the folder it resolves to, links followed, must lie inside the root:
a registry that could be talked into another directory would hand a job any file the
worker can read. Links inside the folder are not followed here: a sandbox or container
gets the folder bound in, where a link resolves in the job's own view of the filesystem,
not the worker's (an unsandboxed job reads what the worker can anyway). The folder is
checked when the job starts; one the operator swaps after that is the operator's (the
root is theirs alone to write).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"
INDEX_NAME = "models.json"
# Where the job finds the model: WORK/model, mounted read-only by the executor.
INPUT_FOLDER = "model"


class RegistryError(ValueError):
    """A registered model that cannot be used, and why."""


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def resolve(root: str | Path | None, name: str) -> Path:
    """The folder registered as ``name`` under ``root``; RegistryError saying why not."""
    if not root:
        raise RegistryError("this worker has no model registry (set ROCPATH_MODEL_ROOT)")
    if not re.match(NAME_PATTERN, name or "") or ".." in name:
        raise RegistryError(f"{name!r} is not a model name (letters, digits, '.', '_', '-')")
    base = Path(root).resolve()
    relative = name
    index = base / INDEX_NAME
    if index.is_file():
        try:
            entries = json.loads(index.read_text())
        except ValueError as exc:
            raise RegistryError(f"{index} is not JSON: {exc}") from None
        if isinstance(entries, dict) and isinstance(entries.get(name), str):
            relative = entries[name]
    folder = (base / relative).resolve()
    if not _inside(folder, base):
        raise RegistryError(f"model {name!r} resolves outside the model root; refused")
    if not (folder / "config.json").is_file():
        raise RegistryError(f"no registered model {name!r} (no {name}/config.json in the root)")
    return folder


def names(root: str | Path | None) -> list[str]:
    """Every name that resolves, for listing."""
    if not root or not Path(root).is_dir():
        return []
    base = Path(root)
    found = {p.name for p in base.iterdir() if p.is_dir()}
    index = base / INDEX_NAME
    if index.is_file():
        try:
            entries = json.loads(index.read_text())
            found |= set(entries) if isinstance(entries, dict) else set()
        except ValueError:
            pass
    usable = []
    for name in sorted(found):
        try:
            resolve(root, name)
        except RegistryError:
            continue
        usable.append(name)
    return usable
