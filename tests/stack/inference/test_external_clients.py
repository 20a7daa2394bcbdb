"""inference-bench's online cases loaded by guidellm or ``vllm bench serve``: the argv
each is given, the real guidellm end to end where it is installed, and what a job says
when the tool it names is absent."""

import json
import os
import shutil
from pathlib import Path

import pytest
from stack_helpers import run_stack

from stack.contract import validate_result
from stack.inference import external
from stack.inference.prompts import Lengths

GVENV_BIN = Path("/tmp/gvenv/bin")


def _load(**kw):
    base = {
        "base_url": "http://127.0.0.1:8123",
        "model": "/tmp/served",
        "concurrency": 2,
        "requests": 8,
        "input": Lengths("fixed", 16),
        "output": Lengths("fixed", 4),
        "seed": 3,
    }
    return external.Load(**{**base, **kw})


def test_guidellm_argv_asks_for_the_case_exactly():
    load = _load()
    argv = external.guidellm_argv("/x/guidellm", load, Path("/out/guidellm-c2.json"))
    assert argv == [
        "/x/guidellm",
        "run",
        "--backend",
        "kind=openai_http,target=http://127.0.0.1:8123,model=/tmp/served,"
        "request_format=/v1/completions,http2=false,max_tokens=4",
        "--profile",
        "kind=concurrent,streams=2",
        "--constraint",
        "kind=max_requests,count=8",
        "--tokenizer",
        "kind=hf_auto,model=/tmp/served",
        "--data",
        "kind=synthetic_text,prompt_tokens=16",
        "--seed",
        "kind=static,value=3",
        "--output",
        "kind=json,path=/out/guidellm-c2.json",
        "--disable-console-interactive",
    ]
    assert load.notes == []


def test_guidellm_gets_mean_stdev_and_bounds_for_a_spread_and_the_job_says_so():
    load = _load(input=Lengths("uniform", 32, low=8, high=48), rate=5.0)
    argv = external.guidellm_argv("g", load, Path("r.json"))
    data = argv[argv.index("--data") + 1]
    assert data == (
        "kind=synthetic_text,prompt_tokens=28,prompt_tokens_stdev=12,"
        "prompt_tokens_min=8,prompt_tokens_max=48"
    )
    assert argv[argv.index("--profile") + 1] == "kind=poisson,rate=5,max_concurrency=2"
    assert len(load.notes) == 1 and "guidellm drew its own prompt lengths" in load.notes[0]


def test_vllm_argv_uses_bench_serve_flags():
    argv = external.vllm_argv(["vllm"], _load(), Path("/out"), "vllm-c2.json")
    assert argv == [
        "vllm",
        "bench",
        "serve",
        "--backend",
        "openai",
        "--base-url",
        "http://127.0.0.1:8123",
        "--endpoint",
        "/v1/completions",
        "--model",
        "/tmp/served",
        "--tokenizer",
        "/tmp/served",
        "--dataset-name",
        "random",
        "--random-input-len",
        "16",
        "--random-output-len",
        "4",
        "--random-range-ratio",
        "0",
        "--num-prompts",
        "8",
        "--max-concurrency",
        "2",
        "--request-rate",
        "inf",
        "--seed",
        "3",
        "--ignore-eos",
        "--percentile-metrics",
        "ttft,tpot,itl,e2el",
        "--metric-percentiles",
        "50,90,99",
        "--disable-tqdm",
        "--save-result",
        "--save-detailed",
        "--result-dir",
        "/out",
        "--result-filename",
        "vllm-c2.json",
    ]


def test_vllm_spread_maps_to_one_range_ratio_with_a_note():
    load = _load(input=Lengths("uniform", 32, low=8, high=48))
    argv = external.vllm_argv(["vllm"], load, Path("/o"), "f.json")
    assert argv[argv.index("--random-input-len") + 1] == "28"
    assert argv[argv.index("--random-range-ratio") + 1] == "0.7143"
    assert "vllm bench serve drew its own lengths" in load.notes[0]


def test_a_named_client_that_is_absent_says_how_to_install_it(monkeypatch):
    monkeypatch.setattr(external, "find_vllm", lambda: None)
    monkeypatch.setattr(external, "find_guidellm", lambda: None)
    with pytest.raises(external.ClientMissing, match=r"vllm.*pip install vllm"):
        external.resolve_client("vllm")
    with pytest.raises(external.ClientMissing, match=r"guidellm.*pip install guidellm"):
        external.resolve_client("guidellm")
    assert external.resolve_client("auto") == "rocpath"
    monkeypatch.setattr(external, "find_vllm", lambda: ["vllm"])
    assert external.resolve_client("auto") == "vllm"
    monkeypatch.setattr(external, "find_guidellm", lambda: "/g")
    assert external.resolve_client("auto") == "guidellm"
    assert external.resolve_client("rocpath") == "rocpath"


# ---------------------------------------------------------------- jobs on the CPU

SMALL = {
    "model": "tiny-llama",
    "device": "cpu",
    "modes": ["online"],
    "requests": 8,
    "input_dist": "fixed",
    "input_len": 16,
    "output_len": 4,
    "concurrency": [2],
    "warmup_requests": 1,
    "environment": False,
}


def _path_without(*tools: str) -> str:
    """PATH with every folder holding one of ``tools`` left out."""
    keep = []
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        if not any(os.path.exists(os.path.join(folder, t)) for t in tools):
            keep.append(folder)
    return os.pathsep.join(keep)


def _job(tmp_path, path: str, **params):
    pytest.importorskip("transformers")
    (tmp_path / "p.json").write_text(json.dumps({**SMALL, **params}))
    out = tmp_path / "out"
    repo = Path(__file__).resolve().parents[3]
    env = dict(os.environ, PYTHONPATH=str(repo), PATH=path)
    done = run_stack(
        ["run", "inference-bench", "--params", str(tmp_path / "p.json"), "--out", str(out)],
        env=env,
        timeout=600,
    )
    assert (out / "result.json").exists(), done.stderr[-3000:]
    return json.loads((out / "result.json").read_text()), done, out


def _guidellm_bin() -> Path | None:
    if (GVENV_BIN / "guidellm").exists():
        return GVENV_BIN
    found = shutil.which("guidellm")
    return Path(found).parent if found else None


@pytest.mark.process
@pytest.mark.skipif(
    _guidellm_bin() is None, reason="guidellm is not installed (/tmp/gvenv/bin or PATH)"
)
def test_the_real_guidellm_loads_the_server_and_its_own_file_gives_the_stats(tmp_path):
    path = os.pathsep.join([str(_guidellm_bin()), _path_without("vllm")])
    result, done, out = _job(tmp_path, path, client="guidellm")
    assert result["status"] == "succeeded", (result["error"], done.stderr[-3000:])
    validate_result(result)
    summary = result["summary"]
    assert summary["client"] == "guidellm" and summary["client_version"]
    (case,) = summary["cases"]
    assert case["mode"] == "online" and case["client"] == "guidellm"
    stats = case["stats"]
    assert stats["completed"] == 8 and stats["failed"] == 0
    assert 0 < stats["ttft_ms"]["p50"] <= stats["e2el_ms"]["p50"]
    assert stats["itl_ms"]["p50"] is None  # guidellm keeps no per-gap timings
    # the stats are guidellm's own, read back from the file it wrote
    saved = out / "inference-bench" / "client" / "guidellm-c2.json"
    report = json.loads(saved.read_text())
    assert report["metadata"]["guidellm_version"] == summary["client_version"]
    bench = report["benchmarks"][0]["metrics"]
    assert stats["ttft_ms"]["mean"] == bench["time_to_first_token_ms"]["successful"]["mean"]
    assert stats["output_tokens"] == 32  # 8 requests x 4 tokens, EOS ignored
    assert "$ " in (out / "inference-bench" / "client" / "guidellm-c2.log").read_text()
    paths = {a["path"] for a in result["artifacts"]}
    assert {
        "inference-bench/client/guidellm-c2.json",
        "inference-bench/client/guidellm-c2.log",
    } <= paths
    ttft = next(m for m in result["measurements"] if m["metric"] == "ttft_p50")
    assert ttft["case"]["client"] == "guidellm" and len(ttft["samples"]) == 8


@pytest.mark.process
def test_vllm_asked_for_and_absent_fails_the_online_case_naming_vllm(tmp_path):
    pytest.importorskip("transformers")
    if external.find_vllm() is not None:
        pytest.skip("vllm is installed here")
    result, done, _ = _job(tmp_path, _path_without("vllm"), client="vllm")
    assert result["status"] in ("errored", "failed"), done.stderr[-2000:]
    assert "vllm" in result["error"] and "pip install vllm" in result["error"]
    assert result["summary"]["cases"] == []


@pytest.mark.process
def test_auto_without_either_tool_uses_rocpaths_client_and_says_so(tmp_path):
    pytest.importorskip("transformers")
    if external.find_vllm() is not None:
        pytest.skip("vllm is installed here")
    result, done, _ = _job(tmp_path, _path_without("vllm", "guidellm"), client="auto")
    assert result["status"] == "succeeded", (result["error"], done.stderr[-2000:])
    assert result["summary"]["client"] == "rocpath"
    (case,) = result["summary"]["cases"]
    assert case["client"] == "rocpath" and case["stats"]["completed"] == 8
    assert all("client" not in m["case"] for m in result["measurements"])


@pytest.mark.process
def test_a_sweep_whose_client_tool_fails_stops_instead_of_doubling_the_load(tmp_path):
    pytest.importorskip("transformers")
    tools = tmp_path / "bin"
    tools.mkdir()
    broken = tools / "guidellm"
    broken.write_text("#!/bin/sh\necho 'guidellm: cannot reach the server' >&2\nexit 3\n")
    broken.chmod(0o755)
    path = os.pathsep.join([str(tools), _path_without("guidellm")])
    result, done, _ = _job(tmp_path, path, client="guidellm", concurrency=[1], sweep="concurrency",
                           sweep_max_concurrency=8)  # fmt: skip
    assert result["status"] in ("errored", "failed"), done.stderr[-2000:]
    # one step tried, not four: more load does not mend a failing tool
    assert result["error"].count("(guidellm): guidellm exited with status 3") == 1
    assert "online c=1 (guidellm)" in result["error"]
