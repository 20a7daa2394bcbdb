"""A kind is one place: no generic module names a kind (or a benchmark) as a string.

A kind is its module under stack/kinds (registered in stack/kinds/__init__.py) and, if
its pages show something special, its presenter under portal/kinds (registered in
portal/kinds/__init__.py) with its partials under templates/portal/kinds. Everything
else asks the Kind (``param_caps``, ``project_defaults``, ``default_image``, …) or the
presenter, so a new kind touches its own modules and two registry lines, and no
``if kind == …`` grows in generic code (docs/architecture.md, "Adding a kind").

Python is read as code (ast: string constants, docstrings and comments excluded, so
prose may name a kind); templates as text (a quoted name).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from stack.blas.schema import FAMILIES
from stack.kinds import KINDS

ROOT = Path(__file__).resolve().parent.parent

GENERIC = ("jobs", "teams", "portal", "config")
PER_KIND = ("portal/kinds",)  # the presenters
TEMPLATES = "templates"
PER_KIND_TEMPLATES = ("templates/portal/kinds",)  # the presenters' partials

# Every kind, and the benchmarks blas-bench stores its measurements under.
NAMES = sorted({*KINDS, *FAMILIES})

# (path, name): why this generic file names it. Each must still be found, so that one
# no longer needed is taken out of this list.
DELIBERATE = {
    ("templates/portal/api_token.html", "probe"): (
        "an example request on the token page; probe is the kind that needs nothing"
    ),
}


def _under(path: str, folders: tuple[str, ...]) -> bool:
    return any(path == f or path.startswith(f + "/") for f in folders)


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def _quoted(name: str) -> re.Pattern[str]:
    return re.compile(rf"""["']{re.escape(name)}["']""")


def named_in_python(path: Path) -> list[tuple[int, str]]:
    """(line, name) of each string constant that is a name, or quotes one."""
    tree = ast.parse(path.read_text(), str(path))
    skip = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Constant) or not isinstance(node.value, str):
            continue
        if id(node) in skip:
            continue
        for name in NAMES:
            if node.value == name or _quoted(name).search(node.value):
                found.append((node.lineno, name))
    return found


def named_in_template(path: Path) -> list[tuple[int, str]]:
    found = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        found += [(number, name) for name in NAMES if _quoted(name).search(line)]
    return found


def findings() -> dict[tuple[str, str], list[int]]:
    """(path, name) -> the lines of each generic file that names a kind or benchmark."""
    found: dict[tuple[str, str], list[int]] = {}
    for top in GENERIC:
        for path in sorted((ROOT / top).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if _under(rel, PER_KIND) or "/migrations/" in rel:
                continue
            for line, name in named_in_python(path):
                found.setdefault((rel, name), []).append(line)
    for path in sorted((ROOT / TEMPLATES).rglob("*.html")):
        rel = path.relative_to(ROOT).as_posix()
        if _under(rel, PER_KIND_TEMPLATES):
            continue
        for line, name in named_in_template(path):
            found.setdefault((rel, name), []).append(line)
    return found


def test_no_generic_module_or_template_names_a_kind_or_a_benchmark():
    found = findings()
    named = [
        f"{path}:{line}: {name!r}"
        for (path, name), lines in sorted(found.items())
        if (path, name) not in DELIBERATE
        for line in lines
    ]
    assert not named, (
        "generic code names a kind; ask its Kind or its presenter instead "
        "(docs/architecture.md, 'Adding a kind'):\n" + "\n".join(named)
    )


def test_each_deliberate_exception_is_still_needed_and_names_a_registered_kind():
    found = findings()
    stale = [f"{path}: {name!r}" for path, name in DELIBERATE if (path, name) not in found]
    assert not stale, "no longer named there; take it out of DELIBERATE:\n" + "\n".join(stale)
    assert all(name in NAMES for _, name in DELIBERATE)


def test_the_check_sees_a_kind_named_in_code_and_not_in_prose(tmp_path):
    module = tmp_path / "m.py"
    module.write_text(
        '"""The compile-check kind, named in prose."""\n'
        "# if kind == 'compile-check' in a comment\n"
        "def f(kind):\n"
        '    """Says "noop" in a docstring."""\n'
        '    return kind == "compile-check" or \'{"kind": "probe"}\'\n'
    )
    assert sorted(named_in_python(module)) == [(5, "compile-check"), (5, "probe")]
    template = tmp_path / "t.html"
    template.write_text('{% if kind == "compile-check" %}\nthe compile-check kind\n')
    assert named_in_template(template) == [(1, "compile-check")]
