"""The tune-gemm kind through ``python -m stack run tune-gemm`` on this CPU-only machine:
TunableOp is inert here and the job says so, with nothing tuned or timed; without
hipblaslt-bench the job fails naming where to get it; bad shapes are refused."""

import importlib.util
import json

import pytest
from stack_helpers import run_stack

from stack.contract import validate_result

pytestmark = pytest.mark.process

BF16 = [{"precision": "bf16", "m": 64, "n": 64, "k": 64}]


def tune(tmp_path, env, params):
    (tmp_path / "params.json").write_text(json.dumps({"environment": False, **params}))
    out = tmp_path / "out"
    args = ["run", "tune-gemm", "--params", str(tmp_path / "params.json"), "--out", str(out)]
    proc = run_stack(args, env=env, timeout=180)
    document = json.loads((out / "result.json").read_text())
    validate_result(document)
    return proc, document


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="PyTorch is not installed")
def test_on_the_cpu_tunableop_is_inert_and_the_job_fails_saying_so(tmp_path, bare_env):
    proc, document = tune(tmp_path, bare_env, {"shapes": BF16})
    assert proc.returncode == 1 and document["status"] == "failed"
    assert "TunableOp is inert on the CPU, so nothing was tuned" in document["error"]
    assert document["measurements"] == [] and document["artifacts"] == []
    assert document["summary"]["shapes"][0]["m"] == 64


def test_without_hipblaslt_bench_the_job_fails_naming_where_to_get_it(tmp_path, bare_env):
    _, document = tune(tmp_path, bare_env, {"method": "hipblaslt-bench", "shapes": BF16})
    assert document["status"] == "failed"
    assert "hipblaslt-bench" in document["error"] and "/opt/rocm/bin" in document["error"]


def test_no_shapes_and_an_untuned_text_without_gemms_are_refused(tmp_path, bare_env):
    _, document = tune(tmp_path, bare_env, {})
    assert document["status"] == "errored" and document["error"].startswith("shapes:")
    _, document = tune(tmp_path, bare_env, {"untuned": "Validator,PT_VERSION,2.6.0\n"})
    assert document["error"] == "untuned: no TunableOp GEMM line in the text"
