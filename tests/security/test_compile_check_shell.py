"""compile-check: nothing a team names reaches hipcc's shell (red team finding).

hipcc (Debian's hipcc.pl) joins its arguments into one string for ``system()``. It
shell-escapes each argument, except one that ends in ``.a`` or ``.lo`` (taken for a static
library: run through ``ar xv`` in backticks and passed on unescaped). ``-D`` values and
``include_dirs`` may hold ``$( )``, spaces and ``;``, so an allowlisted
``-DX=$(cmd).a`` runs ``cmd`` and ``-DA=1 -include FILE -DB=.a`` smuggles a refused
``-include`` past the allowlist. Seen live: ``-DX=$(id >&2).a`` printed the sandbox's
``uid=...`` into the job's diagnostics. A folder of the upload named ``x$(cmd).a``,
given as include_dirs or path, did the same with no flag at all.

Now: -D values and folder names are held to safe characters, refused at submit and in the
runner, and hipcc_argv refuses any argument hipcc would not escape (source files whose
names hipcc would misread are skipped with a warning).
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from jobs.models import Job
from stack.events import Emitter
from stack.kinds.compile_check import UnsafeArgument, hipcc_argv, run
from stack.runtime import RunContext
from stack.tools import which
from tests.factories import make_project

needs_hipcc = pytest.mark.skipif(which("hipcc") is None, reason="hipcc is not installed")


def _ctx(tmp_path: Path, files: dict[str, str]) -> RunContext:
    src = tmp_path / "work" / "src"
    for name, text in files.items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text(text)
    (tmp_path / "out").mkdir()
    return RunContext(out=tmp_path / "out", emit=Emitter(io.StringIO()), work=tmp_path / "work")


@needs_hipcc
def test_a_define_ending_in_dot_a_runs_no_shell_command(tmp_path):
    marker = tmp_path / "ran"
    ctx = _ctx(tmp_path, {"k.hip": "int x;\n"})
    params = {"targets": ["gfx90a"], "hipify": False, "extra_flags": [f"-DX=$(touch {marker}).a"]}
    run(params, ctx)
    assert not marker.exists(), "a -D value ran a shell command through hipcc"


@needs_hipcc
def test_a_define_cannot_smuggle_a_refused_flag(tmp_path):
    secret = tmp_path / "secret.h"
    secret.write_text("#error SMUGGLED_INCLUDE_WAS_READ\n")
    ctx = _ctx(tmp_path, {"k.hip": "int x;\n"})
    flag = f"-DA=1 -include {secret} -DB=.a"
    result = run({"targets": ["gfx90a"], "hipify": False, "extra_flags": [flag]}, ctx)
    log_file = ctx.out / "compile" / "hipcc.log"
    log = log_file.read_text() if log_file.exists() else ""
    assert "SMUGGLED_INCLUDE_WAS_READ" not in log
    # A -D value with a space is refused outright (it was meant to pass as one argument):
    assert result.status == "errored"
    assert result.error == f"extra_flags: not allowed: {flag}"


@needs_hipcc
def test_a_folder_of_the_tree_named_like_a_library_runs_no_shell_command(tmp_path):
    marker = tmp_path / "ran"
    folder = f"inc$(touch {marker}).a"
    ctx = _ctx(tmp_path, {"k.hip": "int x;\n", f"{folder}/h.h": "\n"})
    run({"targets": ["gfx90a"], "hipify": False, "include_dirs": [folder]}, ctx)
    assert not marker.exists(), "an include folder's name ran a shell command through hipcc"


@needs_hipcc
def test_a_path_parameter_named_like_a_library_runs_no_shell_command(tmp_path):
    marker = tmp_path / "ran"
    folder = f"sub$(touch {marker}).a"
    ctx = _ctx(tmp_path, {f"{folder}/k.hip": "int x;\n"})
    run({"targets": ["gfx90a"], "hipify": False, "path": folder}, ctx)
    assert not marker.exists(), "the path parameter's folder ran a shell command through hipcc"


@needs_hipcc
def test_the_runner_names_a_folder_it_will_not_hand_to_hipcc(tmp_path):
    ctx = _ctx(tmp_path, {"k.hip": "int x;\n", "inc.a/h.h": "\n"})
    result = run({"targets": ["gfx90a"], "hipify": False, "include_dirs": ["inc.a"]}, ctx)
    assert result.status == "errored"
    assert result.error.startswith("include_dirs: 'inc.a' must be a folder of the tree")


@needs_hipcc
@pytest.mark.process
def test_a_source_whose_name_hipcc_reads_as_its_option_is_skipped_not_compiled(tmp_path):
    # trixie's hipcc takes "--hip-path=" anywhere in any argument for where its clang is
    ctx = _ctx(tmp_path, {"ok.hip": "int x;\n", "x--hip-path=evil/k.hip": "int y;\n"})
    result = run({"targets": ["gfx90a"], "hipify": False}, ctx)
    assert result.status == "succeeded", result.error
    assert result.summary["files"] == 1
    assert result.summary["skipped_files"] == ["x--hip-path=evil/k.hip"]


@pytest.mark.parametrize(
    ("where", "value", "why"),
    [
        ("flag", "-DX=$(id).a", "ends in .a or .lo"),
        ("flag", "-DX=y.LO", "ends in .a or .lo"),
        ("flag", "-DX=a b", "would not escape"),
        ("include", "/t/inc$(id)", "would not escape"),
        ("include", "/t/--rocm-path=.", "its own option"),
        ("output", '/o/"$(id)".o', "would not escape"),
        ("target", "gfx90a\nid", "control character"),
        ("source", "/t/lib.a", "ends in .a or .lo"),
        ("source", "/t/--hip-path=x/k.hip", "its own option"),
        ("flag", "@/t/options", "response file"),
    ],
)
def test_hipcc_argv_refuses_what_hipcc_would_run_through_its_shell(where, value, why):
    args = {"source": "/t/k.hip", "target": "gfx90a", "output": "/o/k.o", "include": "/t"}
    flags = ["-O2"]
    if where == "flag":
        flags = [value]
    else:
        args[where] = value
    with pytest.raises(UnsafeArgument, match=why):
        hipcc_argv(
            "hipcc", args["source"], args["target"], args["output"], [args["include"]], flags
        )


def test_hipcc_argv_passes_a_source_name_that_hipcc_escapes():
    argv = hipcc_argv("hipcc", "/t/a b$(c).hip", "gfx90a", "/o/k.o", ["/t"], ["-DN=4"])
    assert "/t/a b$(c).hip" in argv


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("params", "field", "message"),
    [
        ({"extra_flags": ["-DX=$(id >&2).a"]}, "extra_flags.0", "'-DX=$(id >&2).a' not allowed"),
        ({"extra_flags": ["-DA=1 -include /etc/hostname -DB=.a"]}, "extra_flags.0", "not allowed"),
        ({"include_dirs": ["inc$(id).a"]}, "include_dirs.0", "'inc$(id).a' must be a folder"),
        ({"path": "sub.a"}, "path", "not ending in .a or .lo"),
        ({"path": "sub\n"}, "path", "must be a folder of the tree"),
    ],
)
def test_submit_refuses_flags_and_folders_hipcc_would_hand_to_a_shell(
    api, team, params, field, message
):
    project = make_project(team)
    response = api.post(
        "/api/v1/jobs/",
        {"kind": "compile-check", "project": project.pk, "params": params},
        format="json",
    )
    assert response.status_code == 400, response.content
    said = " ".join(response.json()["params"])
    assert f"{field}: " in said and message in said, said
    assert Job.objects.count() == 0
