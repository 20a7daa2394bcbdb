"""Readers of LLM serving benchmark results written by other tools, into rocpath's record.

Teams often already have numbers from ``vllm bench serve --save-result`` (or the
older ``benchmarks/benchmark_serving.py``) and from guidellm's ``benchmarks.json``.
Each function here turns one of those documents into the same normalized record,
so a result can be compared with rocpath's own runs without re-measuring:

    {"tool", "tool_version",
     "case": {"model", "concurrency", "request_rate", "input_len_mean", "output_len_mean"},
     "stats": {"completed", "failed", "duration_s", "input_tokens", "output_tokens",
               "request_throughput", "output_throughput", "total_token_throughput",
               "ttft_ms"|"tpot_ms"|"itl_ms"|"e2el_ms": {"mean", "p50", "p90", "p99"}},
     "samples": {"ttft_ms", "tpot_ms", "itl_ms", "e2el_ms": [per-request values]}}

Latencies are milliseconds, throughputs requests/s and tokens/s. ``stats`` holds what
the tool itself reported; a number the file does not carry (a percentile that was not
asked for, a metric that was not selected) is None, never estimated. ``samples`` are
recomputed from the file's per-request data with vLLM's definitions (TTFT; TPOT =
(latency - TTFT) / (output_len - 1) for output_len > 1; ITL = every gap between
streamed chunks; E2EL = latency), and are empty lists where the file has none.

Standard library only: this module runs inside job containers. Key names follow
vLLM's ``vllm/benchmarks/serve.py`` and ``benchmarks/benchmark_serving.py`` and
guidellm 0.8.1's report schema (see tests/stack/inference/fixtures/README.md).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from stack.parsers import ParseError as _StackParseError

__all__ = ["ParseError", "parse_file", "parse_guidellm", "parse_vllm_bench_serve"]

VLLM_TOOL = "vllm-bench-serve"
GUIDELLM_TOOL = "guidellm"

# Keys every vLLM result of a generation benchmark carries, in every version read.
_VLLM_SIGNATURE = ("duration", "completed", "total_input_tokens", "request_throughput")
_METRICS = ("ttft", "tpot", "itl", "e2el")


class ParseError(_StackParseError):
    """The document is not a result of a known tool, or is truncated or malformed.

    A subclass of stack.parsers.ParseError (itself a ValueError), so callers that
    already catch the parsers' error catch this one too.
    """


# ---------------------------------------------------------------- checked access


def _number(value: Any, key: str) -> float:
    """A finite float; bools, strings, NaN and infinities are refused by key name."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ParseError(f"{key}: expected a number, got {type(value).__name__} {value!r:.60}")
    number = float(value)
    if not math.isfinite(number):
        raise ParseError(f"{key}: expected a finite number, got {value!r}")
    return number


def _integer(value: Any, key: str) -> int:
    """A non-negative int (a float with no fraction is accepted: JSON writers differ)."""
    number = _number(value, key)
    if not number.is_integer() or number < 0:
        raise ParseError(f"{key}: expected a non-negative whole number, got {value!r}")
    return int(number)


def _required(doc: dict[str, Any], key: str, where: str = "") -> Any:
    if key not in doc:
        raise ParseError(f"{where}{key}: missing (the file looks truncated or is not this tool's)")
    return doc[key]


def _mapping(value: Any, key: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ParseError(f"{key}: expected an object, got {type(value).__name__}")
    return value


def _sequence(value: Any, key: str) -> list[Any]:
    if not isinstance(value, list):
        raise ParseError(f"{key}: expected a list, got {type(value).__name__}")
    return value


def _optional_number(value: Any, key: str) -> float | None:
    return None if value is None else _number(value, key)


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _empty_samples() -> dict[str, list[float]]:
    return {f"{metric}_ms": [] for metric in _METRICS}


def _record(
    tool: str,
    version: str | None,
    case: dict[str, Any],
    stats: dict[str, Any],
    samples: dict[str, list[float]],
) -> dict[str, Any]:
    return {"tool": tool, "tool_version": version, "case": case, "stats": stats, "samples": samples}


# ---------------------------------------------------------------- vLLM


def _vllm_summary(doc: dict[str, Any], metric: str) -> dict[str, float | None]:
    """mean/p50/p90/p99 of one metric as vLLM wrote them, None where it did not.

    vLLM writes mean_/median_/std_ always for a selected metric and p{N}_ only for the
    --metric-percentiles asked (default 99); an unselected metric (e2el by default)
    has no keys at all. median is numpy's median, which is its 50th percentile.
    """
    mean = _optional_number(doc.get(f"mean_{metric}_ms"), f"mean_{metric}_ms")
    median_key = f"p50_{metric}_ms" if f"p50_{metric}_ms" in doc else f"median_{metric}_ms"
    return {
        "mean": mean,
        "p50": _optional_number(doc.get(median_key), median_key),
        "p90": _optional_number(doc.get(f"p90_{metric}_ms"), f"p90_{metric}_ms"),
        "p99": _optional_number(doc.get(f"p99_{metric}_ms"), f"p99_{metric}_ms"),
    }


def _vllm_samples(doc: dict[str, Any], completed: int, failed: int) -> dict[str, list[float]]:
    """Per-request ms values from ttfts/itls/output_lens/latencies/errors, successes only.

    These lists hold one entry per request sent, failures included (ttft 0.0, no gaps,
    output_len 0). A request succeeded when its error is empty and it got a first
    chunk (ttft > 0): vLLM marks success only after a first chunk. Newer vLLM keeps
    ``latencies`` even without --save-detailed; older files lack it, and then latency
    is TTFT plus the gaps, which is how vLLM measures it (start to last chunk).
    """
    samples = _empty_samples()
    ttfts = doc.get("ttfts")
    if ttfts is None:
        latencies = doc.get("latencies")
        # Only latencies (no --save-detailed): usable when no request failed, since
        # nothing else says which entries are failures.
        if latencies is not None and failed == 0:
            values = _sequence(latencies, "latencies")
            samples["e2el_ms"] = [
                _number(v, f"latencies[{i}]") * 1000 for i, v in enumerate(values)
            ]
        return samples
    ttfts = _sequence(ttfts, "ttfts")
    n = len(ttfts)
    lists: dict[str, list[Any] | None] = {}
    for key in ("itls", "output_lens", "errors", "latencies"):
        value = doc.get(key)
        if value is None:
            lists[key] = None
            continue
        lists[key] = _sequence(value, key)
        if len(lists[key]) != n:
            raise ParseError(f"{key}: has {len(lists[key])} entries, ttfts has {n}")
    for key in ("itls", "output_lens"):
        if lists[key] is None:
            raise ParseError(f"{key}: missing while ttfts is present (a truncated file?)")
    itls, output_lens = lists["itls"], lists["output_lens"]
    errors, latencies = lists["errors"], lists["latencies"]
    assert itls is not None and output_lens is not None
    ok_count = 0
    for i in range(n):
        ttft = _number(ttfts[i], f"ttfts[{i}]")
        gaps = [_number(g, f"itls[{i}]") for g in _sequence(itls[i], f"itls[{i}]")]
        out_len = _integer(output_lens[i], f"output_lens[{i}]")
        error = errors[i] if errors is not None else ""
        if error not in (None, "") and not isinstance(error, str):
            raise ParseError(f"errors[{i}]: expected a string, got {type(error).__name__}")
        if error or ttft <= 0:
            continue
        ok_count += 1
        if latencies is not None:
            latency = _number(latencies[i], f"latencies[{i}]")
        else:
            latency = ttft + sum(gaps)
        samples["ttft_ms"].append(ttft * 1000)
        samples["itl_ms"].extend(g * 1000 for g in gaps)
        samples["e2el_ms"].append(latency * 1000)
        if out_len > 1:
            samples["tpot_ms"].append((latency - ttft) / (out_len - 1) * 1000)
    if ok_count != completed:
        raise ParseError(
            f"ttfts/errors: {ok_count} requests look successful but completed says {completed}"
        )
    return samples


def parse_vllm_bench_serve(doc: dict[str, Any]) -> dict[str, Any]:
    """One record from a ``vllm bench serve --save-result`` (or benchmark_serving.py) JSON.

    Accepts both the current layout (vllm/benchmarks/serve.py: ``failed``,
    ``latencies``, per-request lists only with --save-detailed) and the older
    benchmarks/benchmark_serving.py one (no ``failed``; per-request lists always
    kept). The file names no vLLM version, so tool_version is None.
    """
    doc = _mapping(doc, "document")
    duration = _number(_required(doc, "duration"), "duration")
    if duration <= 0:
        raise ParseError(f"duration: expected a positive number of seconds, got {duration}")
    completed = _integer(_required(doc, "completed"), "completed")
    input_tokens = _integer(_required(doc, "total_input_tokens"), "total_input_tokens")
    output_tokens = _integer(_required(doc, "total_output_tokens"), "total_output_tokens")
    throughputs = {
        key: _number(_required(doc, key), key)
        for key in ("request_throughput", "output_throughput", "total_token_throughput")
    }
    if "failed" in doc:
        failed = _integer(doc["failed"], "failed")
    elif isinstance(doc.get("ttfts"), list):
        # benchmark_serving.py wrote no "failed": one ttfts entry per request sent.
        failed = max(len(doc["ttfts"]) - completed, 0)
    else:
        raise ParseError("failed: missing, and no per-request ttfts to count failures from")

    model = doc.get("model_id")
    if model is not None and not isinstance(model, str):
        raise ParseError(f"model_id: expected a string, got {type(model).__name__}")
    concurrency = doc.get("max_concurrency")
    concurrency = None if concurrency is None else _integer(concurrency, "max_concurrency")
    rate = doc.get("request_rate")
    # vLLM writes the string "inf" for "all requests at once": no rate to report.
    request_rate = None if rate in (None, "inf") else _number(rate, "request_rate")

    case = {
        "model": model,
        "concurrency": concurrency,
        "request_rate": request_rate,
        "input_len_mean": input_tokens / completed if completed else None,
        "output_len_mean": output_tokens / completed if completed else None,
    }
    stats: dict[str, Any] = {
        "completed": completed,
        "failed": failed,
        "duration_s": duration,
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        **throughputs,
    }
    for metric in _METRICS:
        stats[f"{metric}_ms"] = _vllm_summary(doc, metric)
    samples = _vllm_samples(doc, completed, failed)
    return _record(VLLM_TOOL, None, case, stats, samples)


# ---------------------------------------------------------------- guidellm


def _distribution(metrics: dict[str, Any], name: str, where: str, scale: float = 1.0) -> dict:
    """mean/p50/p90/p99 of the successful requests of one StatusDistributionSummary."""
    key = f"{where}.{name}"
    summary = _mapping(_required(metrics, name, f"{where}."), key)
    successful = _mapping(_required(summary, "successful", f"{key}."), f"{key}.successful")
    key = f"{key}.successful"
    percentiles = _mapping(_required(successful, "percentiles", f"{key}."), f"{key}.percentiles")
    out = {"mean": _number(_required(successful, "mean", f"{key}."), f"{key}.mean") * scale}
    for p in ("p50", "p90", "p99"):
        value = percentiles.get(p)
        out[p] = None if value is None else _number(value, f"{key}.percentiles.{p}") * scale
    return out


def _guidellm_samples(requests: Any, where: str) -> dict[str, list[float]]:
    """Per-request ms values from the successful GenerativeRequestStats kept in the report.

    guidellm keeps (a sample of) the requests with their computed fields; it keeps no
    per-chunk timestamps, so ITL samples stay empty. TPOT uses vLLM's definition from
    the request's latency and TTFT (guidellm's own per-request inter_token_latency_ms
    ends at the last token rather than at the response's end: a few microseconds less).
    """
    samples = _empty_samples()
    if requests is None:
        return samples
    requests = _mapping(requests, where)
    successful = requests.get("successful")
    if successful is None:
        return samples
    for i, req in enumerate(_sequence(successful, f"{where}.successful")):
        key = f"{where}.successful[{i}]"
        req = _mapping(req, key)
        latency_s = _optional_number(req.get("request_latency"), f"{key}.request_latency")
        ttft = _optional_number(req.get("time_to_first_token_ms"), f"{key}.time_to_first_token_ms")
        out_len = req.get("output_tokens")
        out_len = None if out_len is None else _integer(out_len, f"{key}.output_tokens")
        if ttft is not None:
            samples["ttft_ms"].append(ttft)
        if latency_s is not None:
            latency = latency_s * 1000
            samples["e2el_ms"].append(latency)
            if ttft is not None and out_len is not None and out_len > 1:
                samples["tpot_ms"].append((latency - ttft) / (out_len - 1))
    return samples


def _guidellm_case(config: dict[str, Any], metrics: dict[str, Any], where: str) -> dict:
    """Model, concurrency and rate from a benchmark's own config (its strategy)."""
    backend = config.get("backend")
    model = backend.get("model") if isinstance(backend, dict) else None
    if model is not None and not isinstance(model, str):
        raise ParseError(f"{where}.config.backend.model: expected a string")
    strategy = config.get("strategy")
    strategy = strategy if isinstance(strategy, dict) else {}
    kind = strategy.get("type_")
    concurrency: int | None = None
    if strategy.get("streams") is not None:
        concurrency = _integer(strategy["streams"], f"{where}.config.strategy.streams")
    elif kind == "synchronous":
        concurrency = 1
    elif strategy.get("max_concurrency") is not None:
        concurrency = _integer(
            strategy["max_concurrency"], f"{where}.config.strategy.max_concurrency"
        )
    rate = strategy.get("rate")
    request_rate = None if rate is None else _number(rate, f"{where}.config.strategy.rate")
    prompt = _distribution(metrics, "prompt_token_count", f"{where}.metrics")
    output = _distribution(metrics, "output_token_count", f"{where}.metrics")
    return {
        "model": model,
        "concurrency": concurrency,
        "request_rate": request_rate,
        "input_len_mean": prompt["mean"],
        "output_len_mean": output["mean"],
    }


def _token_sum(metrics: dict[str, Any], name: str, where: str) -> int:
    """Total tokens of the successful requests (a distribution's total_sum)."""
    key = f"{where}.{name}"
    summary = _mapping(_required(metrics, name, f"{where}."), key)
    successful = _mapping(_required(summary, "successful", f"{key}."), f"{key}.successful")
    total = _required(successful, "total_sum", f"{key}.successful.")
    return round(_number(total, f"{key}.successful.total_sum"))


def _guidellm_benchmark(bench: Any, index: int, version: str | None) -> dict[str, Any]:
    where = f"benchmarks[{index}]"
    bench = _mapping(bench, where)
    metrics = _mapping(_required(bench, "metrics", f"{where}."), f"{where}.metrics")
    config = _mapping(bench.get("config") or {}, f"{where}.config")
    duration = _number(_required(bench, "duration", f"{where}."), f"{where}.duration")
    if duration <= 0:
        raise ParseError(f"{where}.duration: expected a positive number of seconds")
    totals_key = f"{where}.metrics.request_totals"
    totals = _mapping(_required(metrics, "request_totals", f"{where}.metrics."), totals_key)
    completed = _integer(
        _required(totals, "successful", f"{totals_key}."), f"{totals_key}.successful"
    )
    failed = _integer(_required(totals, "errored", f"{totals_key}."), f"{totals_key}.errored")
    m = f"{where}.metrics"
    stats: dict[str, Any] = {
        "completed": completed,
        # Incomplete requests (cut off when the benchmark stopped) are neither.
        "failed": failed,
        "duration_s": duration,
        "input_tokens": _token_sum(metrics, "prompt_token_count", m),
        "output_tokens": _token_sum(metrics, "output_token_count", m),
        # guidellm's rate distributions have mean = successful count / measured duration,
        # which is vLLM's definition of these three throughputs.
        "request_throughput": _distribution(metrics, "requests_per_second", m)["mean"],
        "output_throughput": _distribution(metrics, "output_tokens_per_second", m)["mean"],
        "total_token_throughput": _distribution(metrics, "tokens_per_second", m)["mean"],
        "ttft_ms": _distribution(metrics, "time_to_first_token_ms", m),
        # guidellm's per-request inter_token_latency_ms is (last token - first token) /
        # (output tokens - 1): vLLM's TPOT. (guidellm's time_per_output_token_ms counts
        # the first token's wait too, so it is not mapped.) guidellm weights requests by
        # output tokens - 1, which equals vLLM's mean when output lengths are equal.
        "tpot_ms": _distribution(metrics, "inter_token_latency_ms", m),
        # guidellm keeps no per-gap timings: no distribution of single gaps to report.
        "itl_ms": {"mean": None, "p50": None, "p90": None, "p99": None},
        "e2el_ms": _distribution(metrics, "request_latency", m, scale=1000.0),
    }
    case = _guidellm_case(config, metrics, where)
    samples = _guidellm_samples(bench.get("requests"), f"{where}.requests")
    return _record(GUIDELLM_TOOL, version, case, stats, samples)


def parse_guidellm(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """One record per benchmark of a guidellm ``benchmarks.json`` (GenerativeBenchmarksReport).

    A sweep or a list of concurrencies gives several benchmarks in one file; each has
    its own strategy, so each becomes its own record.
    """
    doc = _mapping(doc, "document")
    benchmarks = _sequence(_required(doc, "benchmarks"), "benchmarks")
    if not benchmarks:
        raise ParseError("benchmarks: empty (the run produced no benchmark)")
    metadata = doc.get("metadata")
    version = metadata.get("guidellm_version") if isinstance(metadata, dict) else None
    if version is not None and not isinstance(version, str):
        raise ParseError("metadata.guidellm_version: expected a string")
    return [_guidellm_benchmark(bench, i, version) for i, bench in enumerate(benchmarks)]


# ---------------------------------------------------------------- files


def _is_guidellm(doc: dict[str, Any]) -> bool:
    if not isinstance(doc.get("benchmarks"), list):
        return False
    metadata = doc.get("metadata")
    if isinstance(metadata, dict) and "guidellm_version" in metadata:
        return True
    return any(
        isinstance(b, dict) and b.get("type_") == "generative_benchmark" for b in doc["benchmarks"]
    )


def _is_vllm(doc: dict[str, Any]) -> bool:
    # Two of the signature keys: a file cut short still says which tool wrote it.
    return sum(key in doc for key in (*_VLLM_SIGNATURE, "model_id", "tokenizer_id")) >= 2


def _documents(text: str, path: Path) -> list[Any]:
    """Every JSON document in the file: vLLM's --append-result puts one per line."""
    decoder = json.JSONDecoder()
    docs: list[Any] = []
    pos = 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            break
        try:
            doc, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            raise ParseError(
                f"{path}: not valid JSON ({exc.msg} at line {exc.lineno} "
                f"column {exc.colno}; truncated?)"
            ) from exc
        docs.append(doc)
    if not docs:
        raise ParseError(f"{path}: empty file")
    return docs


def parse_file(path: str | Path) -> list[dict[str, Any]]:
    """Records from a result file, whichever of the two tools wrote it.

    Raises ParseError for a file that is not JSON, or whose documents are neither a
    vLLM bench serve result nor a guidellm report, rather than guessing.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ParseError(f"{path}: cannot read ({exc})") from exc
    records: list[dict[str, Any]] = []
    for i, doc in enumerate(_documents(text, path)):
        if not isinstance(doc, dict):
            raise ParseError(f"{path}: document {i} is a {type(doc).__name__}, not an object")
        if _is_guidellm(doc):
            records.extend(parse_guidellm(doc))
        elif _is_vllm(doc):
            records.append(parse_vllm_bench_serve(doc))
        else:
            raise ParseError(
                f"{path}: document {i} is neither a vllm bench serve result (keys such as "
                f"{', '.join(_VLLM_SIGNATURE)}) nor a guidellm report (benchmarks with "
                "metadata.guidellm_version)"
            )
    return records
