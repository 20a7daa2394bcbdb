"""inference-bench on the pages.

The job page: the model served, a row per case (mode and concurrency) with its latency
percentiles, throughputs, memory and tokens per joule, charts of TTFT, TPOT and output
throughput against concurrency (a line per mode), and the serving curve (throughput per
GPU against tokens per second per user, the SLO point marked) beside what the
workload's KV cache needs paged and contiguous.

The compare page: the curves of the inference-bench jobs compared, overlaid, and
stack.inference.sweep.compare_at_slo's statement per mode of which serves more at the
SLO, per GPU and per joule, each job against the baseline.
"""

from __future__ import annotations

import math
from typing import Any

from django.http import HttpRequest
from django.utils.safestring import SafeString

from jobs.models import Job
from portal.charts import Curve, CurvePoint, curve_chart, xy_chart
from portal.kinds.base import Presenter
from stack.inference.sweep import compare_at_slo, load_text, slo_point_of
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


# -- the serving curve -------------------------------------------------------------------

CURVE_X = "tokens/s per user (1 / TPOT, median)"
CURVE_Y = "output tokens/s per GPU"
_SLO_BOUNDS = (("ttft_ms", "TTFT"), ("tpot_ms", "TPOT"), ("e2el_ms", "E2EL"))


def serving_of(summary: Any) -> dict[str, Any]:
    """The summary's ``serving`` (the sweep's curves), or {} where the job has none."""
    serving = summary.get("serving") if isinstance(summary, dict) else None
    if not isinstance(serving, dict) or not isinstance(serving.get("curves"), list):
        return {}
    return serving


def _curve_slo(serving: dict[str, Any], curve: dict[str, Any]) -> dict[str, Any]:
    """The bounds a curve was held to: its own (offline keeps only the TPOT bound, as
    no request waits in a queue there), else the sweep's."""
    slo = curve.get("slo", serving.get("slo"))
    return slo if isinstance(slo, dict) else {}


def slo_text(serving: dict[str, Any], curve: dict[str, Any] | None = None) -> str:
    """The SLO as a sentence: "TTFT ≤ 2,000 ms, TPOT ≤ 100 ms for 90 % of requests";
    blank without one (the curve's marked point is then simply its peak). With a
    ``curve``: the bounds that curve was held to."""
    slo = _curve_slo(serving, curve or {})
    bounds = [
        f"{name} ≤ {bound:,g} ms" for key, name in _SLO_BOUNDS if (bound := _number(slo.get(key)))
    ]
    if not bounds:
        return ""
    share = _number(serving.get("attainment"))
    return ", ".join(bounds) + (f" for {share * 100:g} % of requests" if share else "")


def _span(interval: Any) -> tuple[float | None, tuple[float, float] | None]:
    """An interval dict's value and its (low, high), None where a bound is missing."""
    interval = interval if isinstance(interval, dict) else {}
    low, high = _number(interval.get("low")), _number(interval.get("high"))
    span = (low, high) if low is not None and high is not None else None
    return _number(interval.get("value")), span


def point_text(point: dict[str, Any], load: str) -> str:
    """What hovering a point says: its load, both figures with their intervals, and
    how it stands with the SLO."""
    parts = [load_text(point, load)]
    for key, unit in (
        ("throughput_per_gpu", "tok/s per GPU"),
        ("tokens_per_s_per_user", "tok/s per user"),
    ):
        value, span = _span(point.get(key))
        bounds = f" [{figure(span[0])}, {figure(span[1])}]" if span else ""
        parts.append(f"{figure(value)}{bounds} {unit}")
    share = _number(point.get("slo_share"))
    if share is not None:
        parts.append(f"{share * 100:.0f} % of requests kept the SLO")
    if _number(point.get("tokens_per_joule")) is not None:
        parts.append(f"{figure(point['tokens_per_joule'])} tok/J")
    return ", ".join(parts)


def curves(serving: dict[str, Any], name: str = "", colour: int | None = None) -> list[Curve]:
    """The chart's curves of one job's sweep, one per mode. ``name`` prefixes each
    curve's legend (the environment, on the compare page); ``colour`` gives all of them
    one colour, the modes then told apart by a dashed online line."""
    drawn = []
    for i, curve in enumerate(c for c in serving.get("curves", []) if isinstance(c, dict)):
        marked = bool(_curve_slo(serving, curve))  # without one the marked point is a peak
        load = str(curve.get("load") or "concurrency")
        points = []
        for j, point in enumerate(p for p in curve.get("points") or [] if isinstance(p, dict)):
            y, y_span = _span(point.get("throughput_per_gpu"))
            x, x_span = _span(point.get("tokens_per_s_per_user"))
            if x is None or y is None:
                continue  # a step that served nothing has no place on the curve
            points.append(
                CurvePoint(
                    x, y, x_span, y_span, point_text(point, load),
                    marked=marked and j == curve.get("slo_point"),
                    broke=point.get("meets_slo") is False,
                )
            )  # fmt: skip
        mode = str(curve.get("mode") or "?")
        drawn.append(
            Curve(
                f"{name} {mode}".strip(),
                points,
                colour=i if colour is None else colour,
                dashed=colour is not None and mode == "online",
            )
        )
    return drawn


def serving_chart(title: str, drawn: list[Curve]) -> SafeString:
    """The curve chart with the axes every serving curve shares."""
    return curve_chart(title, drawn, x_title=CURVE_X, y_title=CURVE_Y)


def stops(serving: dict[str, Any]) -> list[dict[str, str]]:
    """Per mode: where its SLO point is and why its sweep stopped, as the page says it."""
    out = []
    for curve in serving.get("curves", []):
        if not isinstance(curve, dict):
            continue
        load = str(curve.get("load") or "concurrency")
        best = slo_point_of(curve)
        stopped = curve.get("stopped") if isinstance(curve.get("stopped"), dict) else {}
        held_to = slo_text(serving, curve)
        out.append(
            {
                "mode": str(curve.get("mode") or "?"),
                # a mode held to fewer bounds than the team's SLO says so beside its name
                "held_to": held_to if held_to != slo_text(serving) else "",
                "marked_as": "SLO point" if held_to else "peak",
                "slo_point": point_text(best, load) if best else "",
                "stopped": str(stopped.get("reason") or ""),
            }
        )
    return out


def _size(value: Any) -> str:
    """Bytes in the unit that reads best: "1.25 MiB", "384 KiB"; blank where absent."""
    number = _number(value)
    if number is None:
        return ""
    for unit, scale in (("GiB", GIB), ("MiB", 2**20), ("KiB", 2**10)):
        if number >= scale:
            return f"{figure(number / scale)} {unit}"
    return f"{figure(number)} bytes"


def kv_memory(summary: dict[str, Any]) -> dict[str, Any] | None:
    """The workload's KV cache per request, contiguous against paged, and the batch each
    allows in the GPU's free memory (blank off a GPU); None where the run has no figures."""
    memory = summary.get("memory") if isinstance(summary.get("memory"), dict) else {}
    found = memory.get("paged_vs_contiguous")
    if not isinstance(found, dict) or not isinstance(found.get("request_bytes"), dict):
        return None
    sizes = found["request_bytes"]
    batch = found.get("batch") if isinstance(found.get("batch"), dict) else {}
    longest = _count(found.get("model_max_len"))
    named = (
        ("contiguous_model_max", f"Contiguous, the model's maximum length ({longest} tokens)"),
        ("contiguous_longest", "Contiguous, the workload's longest request"),
        ("paged", f"Paged ({_count(found.get('block_size'))}-token blocks)"),
        ("exact", "Exact: the tokens each request holds"),
    )  # fmt: skip
    saving = _number(found.get("paged_saving"))
    held = [u for u in memory.get("paged_in_use") or [] if isinstance(u, dict)]
    return {
        # what the paged cache held at its fullest per offline case, beside a contiguous
        # cache's reservation for as many requests in flight (runner.paged_in_use)
        "in_use": [
            {
                "concurrency": _count(u.get("concurrency")),
                "blocks": _count(u.get("peak_blocks")),
                "paged": _size(u.get("paged_bytes")),
                "longest": _size(u.get("contiguous_longest_bytes")),
                "model_max": _size(u.get("contiguous_model_max_bytes")),
            }
            for u in held
        ],
        "rows": [
            {
                "key": key,
                "what": what,
                "bytes": _size(sizes.get(key)),
                "batch": _count(batch.get(key)),
            }
            for key, what in named
            if key in sizes
        ],
        "saving": f"{saving * 100:.0f} %" if saving is not None else "",
        "any_batch": any(_number(batch.get(key)) is not None for key, _ in named),
    }


def _environment_name(job: Job) -> str:
    """A job's machine as the compare page names it: its GPU model, else the device the
    run served on (a CPU run has no GPU)."""
    env = job.environment
    if env is not None and env.gpu_model:
        return str(env.gpu_model)
    device = (job.summary or {}).get("device") if isinstance(job.summary, dict) else None
    return str(device.get("name") or "no GPU") if isinstance(device, dict) else "no GPU"


def environment_names(jobs: list[Job]) -> list[str]:
    """Each job named by its environment ("H200", "MI300X"); two jobs on one kind of
    machine are told apart by their numbers ("H200 #12", "H200 #14")."""
    names = [_environment_name(job) for job in jobs]
    return [
        f"{name} #{job.pk}" if names.count(name) > 1 else name
        for name, job in zip(names, jobs, strict=True)
    ]


def _statement(row: dict[str, Any]) -> dict[str, Any]:
    """One compare_at_slo statement as the page prints it: its sentence, then the per
    GPU and per joule readings the sentence does not already say."""
    text = str(row.get("text") or "")
    details = []
    for key, what in (("per_gpu", "per GPU"), ("per_joule", "per joule")):
        part = row.get(key)
        said = part.get("text") if isinstance(part, dict) else None
        if said and said not in text:
            details.append({"what": what, "text": said, "winner": part.get("winner") or ""})
    per_gpu = row.get("per_gpu") if isinstance(row.get("per_gpu"), dict) else {}
    return {
        "mode": row.get("mode"),
        "comparable": bool(row.get("comparable")),
        "text": text,
        "details": details,
        "winner": per_gpu.get("winner") or "",
    }


CHARTS = (
    # (title, stats key, percentiles ("" = the value itself), y axis)
    ("Time to first token (TTFT)", "ttft_ms", ("p50", "p90", "p99"), "TTFT (ms)"),
    ("Time per output token (TPOT)", "tpot_ms", ("p50", "p90", "p99"), "TPOT (ms)"),
    ("Output throughput", "output_throughput", ("",), "output tokens/s"),
)


class InferenceBenchPresenter(Presenter):
    partial = "portal/kinds/inference_bench.html"
    compare_partial = "portal/kinds/inference_bench_compare.html"

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
            "serving": self._serving(job, summary),
            "kv_memory": kv_memory(summary),
        }

    def _serving(self, job: Job, summary: dict) -> dict[str, Any] | None:
        """The job page's serving curve, its SLO and where each mode stopped."""
        serving = serving_of(summary)
        drawn = curves(serving)
        if not any(c.points for c in drawn):
            return None
        return {
            "chart": serving_chart(f"Serving curve: job #{job.pk}", drawn),
            "slo": slo_text(serving),
            "stops": stops(serving),
        }

    def compare_context(self, jobs: list[Job]) -> dict[str, Any] | None:
        """The compare page's serving section: the sweeps' curves overlaid, a colour per
        environment, and each job's statements at the SLO against the first (the
        baseline). None when fewer than two of the jobs ran a sweep."""
        swept = [(job, serving_of(job.summary)) for job in jobs]
        swept = [(job, serving) for job, serving in swept if serving.get("curves")]
        if len(swept) < 2:
            return None
        names = environment_names([job for job, _ in swept])
        (base, base_serving), base_name = swept[0], names[0]
        drawn = [
            curve
            for i, ((_, serving), name) in enumerate(zip(swept, names, strict=True))
            for curve in curves(serving, name, colour=i)
        ]
        comparisons = [
            {
                "job": job,
                "name": name,
                "base": base,
                "base_name": base_name,
                "statements": [
                    _statement(row)
                    for row in compare_at_slo(serving, base_serving, (name, base_name))
                ],
            }
            for (job, serving), name in zip(swept[1:], names[1:], strict=True)
        ]
        return {
            "chart": serving_chart("Serving curves at the SLO", drawn),
            "jobs": [
                {"job": job, "name": name, "slo": slo_text(serving)}
                for (job, serving), name in zip(swept, names, strict=True)
            ],
            "comparisons": comparisons,
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
