"""Red team: an allowed compile-check flag must reach hipcc as one argument, never a shell.

hipcc (Debian's hipcc.pl) joins its arguments into one string for ``system()``. It
shell-escapes each argument, except one that ends in ``.a`` or ``.lo`` (taken for a static
library: run through ``ar xv`` in backticks and passed on unescaped). ``-D`` values and
``include_dirs`` may hold ``$( )``, spaces and ``;``, so an allowlisted
``-DX=$(cmd).a`` runs ``cmd`` and ``-DA=1 -include FILE -DB=.a`` smuggles a refused
``-include`` past the allowlist. Seen live: ``-DX=$(id >&2).a`` printed the sandbox's
``uid=...`` into the job's diagnostics.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from stack.events import Emitter
from stack.kinds.compile_check import run
from stack.runtime import RunContext
from stack.tools import which

pytestmark = pytest.mark.skipif(which("hipcc") is None, reason="hipcc is not installed")


def _ctx(tmp_path: Path, files: dict[str, str]) -> RunContext:
    src = tmp_path / "work" / "src"
    for name, text in files.items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text(text)
    (tmp_path / "out").mkdir()
    return RunContext(out=tmp_path / "out", emit=Emitter(io.StringIO()), work=tmp_path / "work")


def test_a_define_ending_in_dot_a_runs_no_shell_command(tmp_path):
    marker = tmp_path / "ran"
    ctx = _ctx(tmp_path, {"k.hip": "int x;\n"})
    params = {"targets": ["gfx90a"], "hipify": False, "extra_flags": [f"-DX=$(touch {marker}).a"]}
    run(params, ctx)
    assert not marker.exists(), "a -D value ran a shell command through hipcc"


def test_a_define_cannot_smuggle_a_refused_flag(tmp_path):
    secret = tmp_path / "secret.h"
    secret.write_text("#error SMUGGLED_INCLUDE_WAS_READ\n")
    ctx = _ctx(tmp_path, {"k.hip": "int x;\n"})
    flag = f"-DA=1 -include {secret} -DB=.a"
    result = run({"targets": ["gfx90a"], "hipify": False, "extra_flags": [flag]}, ctx)
    log = (ctx.out / "compile" / "hipcc.log").read_text()
    assert "SMUGGLED_INCLUDE_WAS_READ" not in log
    assert result.status == "succeeded", result.error


def test_a_folder_of_the_tree_named_like_a_library_runs_no_shell_command(tmp_path):
    marker = tmp_path / "ran"
    folder = f"inc$(touch {marker}).a"
    ctx = _ctx(tmp_path, {"k.hip": "int x;\n", f"{folder}/h.h": "\n"})
    run({"targets": ["gfx90a"], "hipify": False, "include_dirs": [folder]}, ctx)
    assert not marker.exists(), "an include folder's name ran a shell command through hipcc"


def test_a_path_parameter_named_like_a_library_runs_no_shell_command(tmp_path):
    marker = tmp_path / "ran"
    folder = f"sub$(touch {marker}).a"
    ctx = _ctx(tmp_path, {f"{folder}/k.hip": "int x;\n"})
    run({"targets": ["gfx90a"], "hipify": False, "path": folder}, ctx)
    assert not marker.exists(), "the path parameter's folder ran a shell command through hipcc"
