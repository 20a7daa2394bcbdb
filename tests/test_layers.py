"""The apps stand in layers, and the imports say so.

stack → teams → jobs → results → roadmap → portal, lowest first: a module imports its
own layer and those below it, never one above (what a lower layer must tell a higher
one goes through a signal sent after commit, or a task queued by name). The Django
project's foundation (settings, env helpers, the Celery app and its ``queue_task``) is
below every app; ``config.urls`` and ``config.api_router`` compose the apps, above all
of them. stack is plain Python: it runs inside the job's container, where Django is not.

Every import counts, function-level ones included: a late import hides a cycle from
Python, not from the layering.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# What each layer may import of ours, besides itself.
LAYERS: dict[str, set[str]] = {
    "stack": set(),
    "teams": {"stack"},
    "jobs": {"teams", "stack"},
    "results": {"jobs", "teams", "stack"},
    "roadmap": {"results", "jobs", "teams", "stack"},
    "portal": {"roadmap", "results", "jobs", "teams", "stack"},
}
OURS = {*LAYERS, "config", "tests", "bench"}
# The project's foundation: any app may use it, and it uses nothing of the apps.
FOUNDATION = ("config", "config.env", "config.settings", "config.celery")
# Composition: imports every app (urls, the API router, the servers' entry points).
TOP = ("config.urls", "config.api_router", "config.wsgi", "config.asgi")
NOT_IN_STACK = {"django", "rest_framework", "celery", "kombu", "drf_spectacular"}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path) -> list[tuple[int, str]]:
    """(line, absolute module) of every import in the file, at any depth."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            found.append((node.lineno, target))
            # `from config import celery` names a module, not only a package.
            found += [
                (node.lineno, f"{target}.{alias.name}")
                for alias in node.names
                if is_module(f"{target}.{alias.name}")
            ]
    return found


def is_module(name: str) -> bool:
    path = ROOT.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def is_within(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def layer_of(module: str) -> str:
    if is_within(module, TOP):
        return "top"
    if is_within(module, FOUNDATION):
        return "foundation"
    return module.split(".")[0]


def allowed(importer: str, imported: str) -> bool:
    """Whether module ``importer`` may import module ``imported`` (both absolute)."""
    if imported.split(".")[0] not in OURS:
        return True
    source, target = layer_of(importer), layer_of(imported)
    if source == "top" or source == target:
        return True
    if source == "stack":
        return False  # not even the foundation: it is Django's
    if target == "foundation":
        return True
    if source == "foundation":
        return False
    return target in LAYERS.get(source, set())


def modules() -> list[Path]:
    roots = [*LAYERS, "config"]
    return sorted(p for r in roots if (ROOT / r).is_dir() for p in (ROOT / r).rglob("*.py"))


def layer_breaches() -> list[str]:
    breaches = []
    for path in modules():
        importer = module_name(path)
        for line, imported in imports_of(path):
            if importer.split(".")[0] == "stack" and imported.split(".")[0] in NOT_IN_STACK:
                breaches.append(f"{path.relative_to(ROOT)}:{line} imports {imported} (stack)")
            elif not allowed(importer, imported):
                breaches.append(f"{path.relative_to(ROOT)}:{line} imports {imported}")
    return breaches


def test_no_module_imports_a_layer_above_its_own() -> None:
    breaches = layer_breaches()
    assert not breaches, "imports against the layers:\n" + "\n".join(breaches)


def test_every_app_of_the_layers_that_exists_is_read() -> None:
    read = {module_name(p).split(".")[0] for p in modules()}
    assert {"stack", "teams", "jobs", "portal", "config"} <= read


@pytest.mark.parametrize(
    ("importer", "imported", "ok"),
    [
        ("jobs.services", "portal.models", False),
        ("jobs.services", "teams.models", True),
        ("teams.sources", "jobs.tasks", False),
        ("teams.sources", "config.celery", True),
        ("stack.kinds.probe", "config.env", False),
        ("config.celery", "jobs.tasks", False),
        ("config.api_router", "portal.api", True),
        ("portal.views", "jobs.services", True),
        ("results.compare", "roadmap.phases", False),
        ("roadmap.phases", "results.compare", True),
    ],
)
def test_the_rule_reads_as_the_layers_say(importer: str, imported: str, ok: bool) -> None:
    assert allowed(importer, imported) is ok
