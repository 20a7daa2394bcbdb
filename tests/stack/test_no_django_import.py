"""stack/ must import without Django, and the run path without jsonschema or heavy modules."""

import json
import os
import pkgutil
import subprocess
import sys

import pytest
from stack_helpers import REPO_ROOT

import stack
from tests.waits import START_S

pytestmark = pytest.mark.process


def python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO_ROOT,
        env=dict(os.environ, PYTHONPATH=str(REPO_ROOT)),
        capture_output=True,
        text=True,
        timeout=START_S,
        check=True,
    )


def all_stack_modules() -> list[str]:
    names = ["stack"]
    for info in pkgutil.walk_packages(stack.__path__, "stack."):
        if info.name != "stack.__main__":
            names.append(info.name)
    return names


def test_every_stack_module_imports_without_django():
    modules = all_stack_modules()
    assert "stack.kinds.probe" in modules and "stack.probe.gpu_tools" in modules
    assert "stack.parsers.rocminfo" in modules
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "print('django' in sys.modules, sorted(m for m in sys.modules if m.startswith('django')))"
    )
    assert python(code).stdout.strip() == "False []"


def test_running_a_noop_job_imports_neither_jsonschema_nor_heavy_modules(tmp_path):
    code = (
        "import sys, json\n"
        "from stack.cli import main\n"
        f"code = main(['run', 'noop', '--out', {str(tmp_path / 'out')!r}])\n"
        "heavy = ['django', 'jsonschema', 'argparse', 'subprocess', 'ctypes', 'platform']\n"
        "sys.stderr.write(json.dumps([code, [m for m in heavy if m in sys.modules]]))\n"
    )
    code_and_loaded = json.loads(python(code).stderr.strip().splitlines()[-1])
    assert code_and_loaded == [0, []]
