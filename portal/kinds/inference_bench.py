"""inference-bench on the job page: the model served, a row per case (mode and
concurrency) with its latency percentiles, throughputs, memory and tokens per joule, and
charts of TTFT, TPOT and output throughput against concurrency, a line per mode."""

from __future__ import annotations

import math
from typing import Any

from django.http import HttpRequest
from django.utils.safestring import SafeString

from jobs.models import Job
from portal.charts import xy_chart
from portal.kinds.base import Presenter
from stack.kinds.inference_bench import KIND

GIB = 2**30


def _number(value: Any) -> float | None:
    """A finite number, or None (absent, null, or not a number)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def figure(value: Any) -> str:
    """A figure as a table shows it: enough digits to read, blank where absent.

    1234.5 -> "1,234"; 538.17 -> "538.2"; 1.4722 -> "1.47"; 0.000854 -> "0.000854".
    """
    number = _number(value)
    if number is None:
        return ""
    size = abs(number)
    if size >= 1000:
        return f"{number:,.0f}"
    if size >= 100:
        return f"{number:.1f}"
    if size >= 1:
        return f"{number:.2f}"
    return f"{number:.3g}"


def gib(value: Any) -> str:
    """Bytes in GiB, as ``figure`` shows them; blank where absent."""
    number = _number(value)
    return "" if number is None else figure(number / GIB)


def _count(value: Any) -> str:
    """A whole number with thousands separated (205120 -> "205,120"); blank where absent."""
    number = _number(value)
    return "" if number is None else f"{round(number):,}"


def _percentile(stats: dict, metric: str, q: str) -> float | None:
    values = stats.get(metric)
    return _number(values.get(q)) if isinstance(values, dict) else None


def _cases(summary: dict) -> list[dict]:
    cases = summary.get("cases")
    return [c for c in cases if isinstance(c, dict)] if isinstance(cases, list) else []


def case_row(case: dict) -> dict[str, str]:
    """One case's figures as the table shows them (strings; blank where absent)."""
    stats = case.get("stats") if isinstance(case.get("stats"), dict) else {}
    cache = case.get("cache") if isinstance(case.get("cache"), dict) else {}
    row = {
        "mode": str(case.get("mode") or ""),
        "concurrency": str(case.get("concurrency") or ""),
        "completed": "" if stats.get("completed") is None else str(stats["completed"]),
        "failed": "" if stats.get("failed") is None else str(stats["failed"]),
        "request_throughput": figure(stats.get("request_throughput")),
        "output_throughput": figure(stats.get("output_throughput")),
        "total_token_throughput": figure(stats.get("total_token_throughput")),
        "peak_memory_gib": gib(case.get("peak_memory_bytes")),
        "kv_cache_gib": gib(cache.get("bytes")),
        "kv_cache_blocks": "" if cache.get("num_blocks") is None else str(cache["num_blocks"]),
        # how many of the workload's longest requests the allocated cache holds at once
        # (``largest_batch`` in results written before it was named ``cache_batch``)
        "cache_batch": _count(case.get("cache_batch", case.get("largest_batch"))),
        "tokens_per_joule": figure(case.get("tokens_per_joule")),
    }
    for metric, quantiles in (
        ("ttft_ms", ("p50", "p90", "p99")),
        ("tpot_ms", ("p50", "p99")),
        ("itl_ms", ("p50",)),
        ("e2el_ms", ("p50", "p99")),
    ):
        for q in quantiles:
            row[f"{metric.removesuffix('_ms')}_{q}"] = figure(_percentile(stats, metric, q))
    return row


def model_facts(summary: dict) -> dict[str, Any] | None:
    """What the page says of the model served; None when the summary names none."""
    model = summary.get("model")
    if not isinstance(model, dict):
        return None
    return {
        "name": model.get("name") or "",
        "preset": model.get("preset") or "",
        "layers": model.get("layers"),
        "parameters": _count(model.get("parameters")),
        "dtype": model.get("dtype") or "",
        "weights_gib": gib(model.get("weights_bytes")),
        "kv_bytes_per_token": _count(model.get("kv_bytes_per_token")),
        "random_weights": bool(model.get("random_weights")),
        **_room(summary.get("memory")),
    }


def _room(memory: Any) -> dict[str, str]:
    """The GPU's room for the KV cache after the weights: the largest batch of the
    workload's longest requests it holds (blank off a GPU, or in an older result)."""
    memory = memory if isinstance(memory, dict) else {}
    return {
        "largest_batch": _count(memory.get("largest_batch")),
        "free_after_weights_gib": gib(memory.get("free_after_weights_bytes")),
        "request_kv_bytes": _count(memory.get("request_kv_bytes")),
    }


def _series(cases: list[dict], metric: str, quantiles: tuple[str, ...]) -> dict:
    """(concurrency, value) per mode and percentile: "offline p50", "online p99", ..."""
    series: dict[str, list[tuple[float, float]]] = {}
    for case in cases:
        stats = case.get("stats") if isinstance(case.get("stats"), dict) else {}
        concurrency = _number(case.get("concurrency"))
        if not concurrency or concurrency <= 0:
            continue
        for q in quantiles:
            # q "": the stat is one value (a throughput), not a distribution
            value = _percentile(stats, metric, q) if q else _number(stats.get(metric))
            if value is not None:
                name = f"{case.get('mode', '?')} {q}".strip()
                series.setdefault(name, []).append((concurrency, value))
    return series


CHARTS = (
    # (title, stats key, percentiles ("" = the value itself), y axis)
    ("Time to first token (TTFT)", "ttft_ms", ("p50", "p90", "p99"), "TTFT (ms)"),
    ("Time per output token (TPOT)", "tpot_ms", ("p50", "p90", "p99"), "TPOT (ms)"),
    ("Output throughput", "output_throughput", ("",), "output tokens/s"),
)


class InferenceBenchPresenter(Presenter):
    partial = "portal/kinds/inference_bench.html"

    def context(self, job: Job, request: HttpRequest | None = None) -> dict[str, Any]:
        summary = job.summary if isinstance(job.summary, dict) else {}
        workload = summary.get("workload")
        device = summary.get("device")
        return {
            "inference_model": model_facts(summary),
            "inference_cases": [case_row(c) for c in _cases(summary)],
            "inference_workload": workload if isinstance(workload, dict) else {},
            "inference_device": device if isinstance(device, dict) else {},
            "inference_engine": " ".join(
                str(summary[k]) for k in ("engine", "engine_version") if summary.get(k)
            ),
        }

    def charts(self, job: Job) -> list[SafeString]:
        summary = job.summary if isinstance(job.summary, dict) else {}
        cases = _cases(summary)
        model = summary.get("model") if isinstance(summary.get("model"), dict) else {}
        device = summary.get("device") if isinstance(summary.get("device"), dict) else {}
        on = " · ".join(str(v) for v in (model.get("name"), device.get("name")) if v)
        charts = []
        for title, metric, quantiles, y_title in CHARTS:
            series = _series(cases, metric, quantiles)
            if series:
                charts.append(
                    xy_chart(
                        f"{title} against concurrency" + (f": {on}" if on else ""),
                        series,
                        x_title="concurrency (requests in flight)",
                        y_title=y_title,
                        log2_x=True,  # concurrencies double: 1, 2, 4 .. 64
                    )
                )
        return charts


PRESENTER = InferenceBenchPresenter(KIND)
