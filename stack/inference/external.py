"""Online load from a well-kept client instead of rocpath's own: guidellm, or vLLM's
``vllm bench serve``, run against the job's server; what the tool saves is read back by
parsers.py into the same stats and samples as client.py's records give.

Why drive them: their numbers are the ones serving teams already quote and trust, and
a result that says "guidellm 0.8.1 measured this" needs no argument about how the
client timed a token. rocpath's client stays for job images that have neither.

The argv builders are pure functions (tested flag by flag); the runs go through
stack.tools.run_tool (a time limit, the tool killed past it, dies with the job). Each
tool's stdout and stderr are written next to its result file as an artifact.

Standard library only: this module runs inside job containers.
"""

from __future__ import annotations

import importlib.util
import math
import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stack.inference import parsers
from stack.inference.prompts import Lengths
from stack.tools import ToolMissing, ToolTimeout, run_tool

CLIENTS = ("auto", "rocpath", "guidellm", "vllm")
GUIDELLM = "guidellm"
VLLM = "vllm"
ROCPATH = "rocpath"

# Where each tool comes from, for the message when a job asks for one that is absent
# (registered with the kind: Kind.install_hints -> stack.tools.INSTALL_HINTS).
INSTALL_HINTS = {
    GUIDELLM: "pip install guidellm (PyPI; tested with 0.8.1) into the job image, "
    "so that `guidellm` is on PATH",
    VLLM: "pip install vllm (PyPI; a CUDA or ROCm build) into the job image, so that "
    "`vllm bench serve` runs",
}


class ClientMissing(RuntimeError):
    """A client the job named is not installed; the message says where to get it."""


@dataclass(frozen=True)
class Load:
    """One online case as a client tool is asked to send it."""

    base_url: str  # http://127.0.0.1:PORT
    model: str  # the served folder: the server's model name and the tokenizer's place
    concurrency: int
    requests: int
    input: Lengths
    output: Lengths
    seed: int
    rate: float = 0.0  # requests/s; 0: all at once, bounded by concurrency
    notes: list[str] = field(default_factory=list, compare=False)


def find_guidellm() -> str | None:
    """guidellm's executable on PATH, or None."""
    return shutil.which(GUIDELLM)


def find_vllm() -> list[str] | None:
    """How to start vLLM's CLI: ``vllm`` on PATH, else its module where vllm imports."""
    exe = shutil.which(VLLM)
    if exe:
        return [exe]
    try:
        if importlib.util.find_spec("vllm") is not None:
            return [sys.executable, "-m", "vllm.entrypoints.cli.main"]
    except (ImportError, ValueError):
        pass
    return None


def resolve_client(wanted: str) -> str:
    """The client that will load the server: auto prefers guidellm, then vLLM, then
    rocpath's own. A tool named outright and absent raises ClientMissing (the job
    asked for that tool's numbers; another's would be a silent substitute)."""
    if wanted not in CLIENTS:
        raise ValueError(f"unknown client {wanted!r}; one of {CLIENTS}")
    if wanted == ROCPATH:
        return ROCPATH
    found = {GUIDELLM: find_guidellm() is not None, VLLM: find_vllm() is not None}
    if wanted == "auto":
        return next((name for name in (GUIDELLM, VLLM) if found[name]), ROCPATH)
    if not found[wanted]:
        where = "guidellm on PATH" if wanted == GUIDELLM else "vllm on PATH nor importable"
        raise ClientMissing(
            f"client {wanted!r} was asked for and {wanted} is not installed in the job "
            f"image (no {where}); install it: {INSTALL_HINTS[wanted]}"
        )
    return wanted


# ---------------------------------------------------------------- guidellm


def _guidellm_lengths(name: str, lengths: Lengths) -> tuple[list[str], str | None]:
    """guidellm's synthetic_text keys for one length distribution, and a note when they
    do not give the same distribution.

    guidellm draws a length from a normal (mean, stdev) clipped to [min, max]: a fixed
    length maps exactly; uniform and lognormal are given their own mean, stdev and
    bounds, so guidellm's draws match their first two moments and range, not their shape.
    """
    if lengths.dist == "fixed":
        return [f"{name}={max(1, lengths.mean)}"], None
    low, high = lengths.bounds()
    if lengths.dist == "uniform":
        mean = (low + high) / 2
        stdev = (high - low) / math.sqrt(12)
    else:  # lognormal with median `mean`, clipped (the clipping is ignored here)
        s2 = lengths.sigma**2
        mean = max(1, lengths.mean) * math.exp(s2 / 2)
        stdev = mean * math.sqrt(math.exp(s2) - 1)
        mean = min(high, max(low, mean))
    keys = [
        f"{name}={round(mean)}",
        f"{name}_stdev={max(1, round(stdev))}",
        f"{name}_min={low}",
        f"{name}_max={high}",
    ]
    note = (
        f"guidellm drew its own {name.split('_')[0]} lengths: a normal with the "
        f"{lengths.label()} distribution's mean and stdev, clipped to [{low}, {high}]"
    )
    return keys, note


def guidellm_argv(exe: str, load: Load, output: Path) -> list[str]:
    """``guidellm run`` (0.8 CLI) for one case: the concurrent profile at the case's
    concurrency (or a Poisson profile at its rate), stopped after the job's request
    count, synthetic text of the job's lengths tokenized by the served folder's own
    tokenizer (nothing downloaded), the report written as JSON to ``output``.

    Output lengths go as the backend's ``max_tokens``, not as the data's
    ``output_tokens``: with those guidellm adds vLLM's ``ignore_eos`` field, which
    ``transformers serve`` refuses (HTTP 422, unexpected field). So every request asks
    for the same count, as rocpath's client does for a fixed length; a spread of output
    lengths is sent as its mean, with a note. Appends to ``load.notes`` what does not
    map exactly.
    """
    data = ["kind=synthetic_text"]
    keys, note = _guidellm_lengths("prompt_tokens", load.input)
    data += keys
    if note:
        load.notes.append(note)
    max_tokens = max(1, load.output.mean)
    if load.output.dist != "fixed":
        low, high = load.output.bounds()
        max_tokens = round((low + high) / 2) if load.output.dist == "uniform" else max_tokens
        load.notes.append(
            f"guidellm asked every request for {max_tokens} output tokens (the "
            f"{load.output.label()} spread cannot reach transformers serve through guidellm)"
        )
    if load.rate:
        profile = f"kind=poisson,rate={load.rate:g},max_concurrency={load.concurrency}"
    else:
        profile = f"kind=concurrent,streams={load.concurrency}"
    return [
        exe,
        "run",
        "--backend",
        f"kind=openai_http,target={load.base_url},model={load.model},"
        f"request_format=/v1/completions,http2=false,max_tokens={max_tokens}",
        "--profile",
        profile,
        "--constraint",
        f"kind=max_requests,count={load.requests}",
        "--tokenizer",
        f"kind=hf_auto,model={load.model}",
        "--data",
        ",".join(data),
        "--seed",
        f"kind=static,value={load.seed}",
        "--output",
        f"kind=json,path={output}",
        "--disable-console-interactive",
    ]


# ---------------------------------------------------------------- vllm bench serve


def vllm_argv(cli: list[str], load: Load, result_dir: Path, result_filename: str) -> list[str]:
    """``vllm bench serve`` for one case (flags of vllm/benchmarks/serve.py and
    datasets.py): the random dataset at the job's lengths, EOS ignored so every request
    runs its output length, every latency's p50/p90/p99, per-request data saved.

    vLLM's random dataset draws uniformly on [len x (1 - r), len x (1 + r)] with one
    ratio r for input and output: a fixed input and output map exactly; otherwise the
    midpoints and the input's ratio are passed and a note says so (``load.notes``).
    """
    in_len, out_len, ratio = load.input.mean, load.output.mean, 0.0
    if load.input.dist != "fixed" or load.output.dist != "fixed":
        spread = load.input if load.input.dist != "fixed" else load.output
        low, high = spread.bounds()
        mid = (low + high) / 2
        ratio = round(min(1.0, (high - low) / 2 / mid), 4) if mid else 0.0
        if load.input.dist != "fixed":
            in_len = round(sum(load.input.bounds()) / 2)
        if load.output.dist != "fixed":
            out_len = round(sum(load.output.bounds()) / 2)
        load.notes.append(
            f"vllm bench serve drew its own lengths: uniform within +-{ratio:g} of "
            f"{in_len} input and {out_len} output tokens (one ratio for both)"
        )
    argv = [
        *cli,
        "bench",
        "serve",
        "--backend",
        "openai",
        "--base-url",
        load.base_url,
        "--endpoint",
        "/v1/completions",
        "--model",
        load.model,
        "--tokenizer",
        load.model,
        "--dataset-name",
        "random",
        "--random-input-len",
        str(in_len),
        "--random-output-len",
        str(out_len),
        "--random-range-ratio",
        f"{ratio:g}",
        "--num-prompts",
        str(load.requests),
        "--max-concurrency",
        str(load.concurrency),
        "--request-rate",
        f"{load.rate:g}" if load.rate else "inf",
        "--seed",
        str(load.seed),
        "--ignore-eos",
        "--percentile-metrics",
        "ttft,tpot,itl,e2el",
        "--metric-percentiles",
        "50,90,99",
        "--disable-tqdm",
        "--save-result",
        "--save-detailed",
        "--result-dir",
        str(result_dir),
        "--result-filename",
        result_filename,
    ]
    return argv


# ---------------------------------------------------------------- running


@dataclass
class Outcome:
    """One case's numbers as the tool measured them, and what it left behind."""

    tool: str
    tool_version: str | None
    stats: dict[str, Any]
    samples: dict[str, list[float]]
    result_file: Path
    log_file: Path


def _env() -> dict[str, str]:
    """The job's environment, offline: the tools load the tokenizer from the folder."""
    return {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "PYTHONUNBUFFERED": "1",
    }


def run_client(tool: str, load: Load, out_dir: Path, timeout_s: float) -> Outcome:
    """Run ``tool`` for one case, its result and transcript under ``out_dir``; the
    record parsed from its result file. RuntimeError (with the tool's last words) when
    it fails, times out or writes nothing readable."""
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = f"{tool}-c{load.concurrency}"
    result = out_dir / f"{stem}.json"
    log = out_dir / f"{stem}.log"
    if tool == GUIDELLM:
        exe = find_guidellm()
        if exe is None:
            raise ClientMissing(f"guidellm is not installed: {INSTALL_HINTS[GUIDELLM]}")
        argv = guidellm_argv(exe, load, result)
    elif tool == VLLM:
        cli = find_vllm()
        if cli is None:
            raise ClientMissing(f"vllm is not installed: {INSTALL_HINTS[VLLM]}")
        argv = vllm_argv(cli, load, out_dir, result.name)
    else:
        raise ValueError(f"not an external client: {tool!r}")
    try:
        ran = run_tool(argv, timeout_s, env=_env(), cwd=out_dir)
    except ToolTimeout as exc:
        log.write_text(f"$ {' '.join(argv)}\n# timed out\n{exc.stdout}\n{exc.stderr}")
        raise RuntimeError(f"{tool} ran past the case limit of {timeout_s:g} s") from exc
    except ToolMissing as exc:
        raise ClientMissing(f"{tool} could not be started: {exc}") from exc
    log.write_text(ran.transcript())
    if not ran.ok:
        tail = "\n".join((ran.stderr or ran.stdout).strip().splitlines()[-8:])
        raise RuntimeError(f"{tool} exited with status {ran.returncode}:\n{tail}")
    try:
        records = parsers.parse_file(result)
    except parsers.ParseError as exc:
        raise RuntimeError(f"{tool} wrote no readable result: {exc}") from exc
    record = records[-1]
    return Outcome(
        record["tool"], record["tool_version"], record["stats"], record["samples"], result, log
    )
