"""The inference-bench job: each mode x concurrency is a case; each case's latencies,
throughputs, memory and energy become measurements (docs/inference.md).

Order of work: fingerprint the machine, pick the device and dtype, make the prompts
(seeded), start the GPU telemetry sampler, then the offline cases on one model in this
process, freed before the online cases start their server.
"""

from __future__ import annotations

import csv
import functools
import gc
import io
import itertools
import math
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stack.inference import client as client_module
from stack.inference import external, metrics, models, offline, online, presets, registry
from stack.inference import sweep as sweep_module
from stack.inference.prompts import Lengths, make_prompts, output_lengths
from stack.runtime import Artifact, Measurement, RunContext, RunResult

BENCHMARK = "inference"
ENGINE = "transformers-cb"
# The most per-request (and per-gap) samples a measurement carries; more add nothing to a
# comparison and only weigh on the database.
MAX_SAMPLES = 4096
# Where a client tool's result files and transcripts go, under the job's OUT.
CLIENT_DIR = "inference-bench/client"
GIB = 2**30


@dataclass
class Device:
    kind: str  # "cuda" or "cpu"
    vendor: str | None
    uuid: str | None
    name: str


def pick_device(wanted: str, environment: dict[str, Any] | None) -> Device:
    """The GPU torch sees (CUDA or ROCm builds alike), unless the params ask for the CPU."""
    import torch

    if wanted != "cpu" and torch.cuda.is_available():
        gpus = (environment or {}).get("gpus") or []
        first = gpus[0] if gpus else {}
        vendor = "amd" if getattr(torch.version, "hip", None) else "nvidia"
        return Device("cuda", vendor, first.get("uuid"), torch.cuda.get_device_name(0))
    if wanted == "cuda":
        raise RuntimeError("device 'cuda' was asked and torch sees no GPU")
    return Device("cpu", None, None, "cpu")


def dtype_name(wanted: str, device: Device) -> str:
    """auto: bfloat16 on a GPU (what serving stacks run), float32 on a CPU."""
    if wanted != "auto":
        return wanted
    return "bfloat16" if device.kind == "cuda" else "float32"


def _lengths(params: dict[str, Any], prefix: str) -> Lengths:
    return Lengths(
        params[f"{prefix}_dist"],
        params[f"{prefix}_len"],
        low=params.get(f"{prefix}_min") or 1,
        high=params.get(f"{prefix}_max") or 0,
    )


def _energy(window: list[Any], t0: float, t1: float) -> float | None:
    """Joules over [t0, t1]: the power samples integrated (trapezoids, the edges held at
    the nearest reading); None without two readings."""
    points = sorted((s.t, s.power_w) for s in window if s.power_w is not None)
    if not points or t1 <= t0:
        return None
    if len(points) == 1:
        return points[0][1] * (t1 - t0)
    points = [(t0, points[0][1]), *[p for p in points if t0 < p[0] < t1], (t1, points[-1][1])]
    return sum((b[0] - a[0]) * (a[1] + b[1]) / 2 for a, b in itertools.pairwise(points))


def _measurements(
    case: dict[str, Any],
    stats: dict[str, Any],
    samples: dict[str, list[float]],
    extra: dict[str, Any],
) -> list[Measurement]:
    out: list[Measurement] = []

    def add(
        metric: str, unit: str, value: float | None, better: str, values: list[float] = ()
    ) -> None:  # type: ignore[assignment]
        if value is not None and math.isfinite(value):
            out.append(
                Measurement(
                    BENCHMARK,
                    metric,
                    unit,
                    float(value),
                    list(values)[:MAX_SAMPLES],
                    dict(case),
                    better,
                )
            )

    for name in metrics.LATENCIES:
        dist = stats[name]
        base = name.removesuffix("_ms")
        add(f"{base}_p50", "ms", dist["p50"], "lower", samples[name])
        add(f"{base}_p90", "ms", dist["p90"], "lower")
        add(f"{base}_p99", "ms", dist["p99"], "lower")
    add("request_throughput", "req/s", stats["request_throughput"], "higher")
    add("output_throughput", "tok/s", stats["output_throughput"], "higher")
    add("total_token_throughput", "tok/s", stats["total_token_throughput"], "higher")
    if stats.get("goodput"):
        add("request_goodput", "req/s", stats["goodput"]["request_goodput"], "higher")
    if extra.get("peak_memory_bytes") is not None:
        add("peak_memory", "GiB", extra["peak_memory_bytes"] / GIB, "lower")
    if extra.get("tokens_per_joule") is not None:
        add("tokens_per_joule", "tok/J", extra["tokens_per_joule"], "higher")
    return out


def _request_rows(
    mode: str, concurrency: int, records: list[metrics.RequestRecord]
) -> list[list[Any]]:
    rows = []
    for i, r in enumerate(records):
        ok = r.ok
        tpot = r.tpot() if ok else None
        rows.append(
            [
                mode,
                concurrency,
                i,
                r.input_len,
                r.tokens_out if ok else 0,
                f"{r.ttft() * 1e3:.3f}" if ok else "",
                f"{tpot * 1e3:.3f}" if tpot is not None else "",
                f"{r.e2el() * 1e3:.3f}" if ok else "",
                r.error or "",
            ]
        )
    return rows


def run(params: dict[str, Any], ctx: RunContext) -> RunResult:
    """The whole job; see the module docstring."""
    from stack.blas import samples as telemetry_samples
    from stack.blas import telemetry
    from stack.blas.setup import fingerprint

    log = ctx.emit.log
    artifacts: list[Artifact] = []
    environment = None
    if params.get("environment", True):
        ctx.emit.progress(1, "fingerprinting the machine (probe)")
        environment, probe_artifacts, env_error = fingerprint(ctx)
        artifacts.extend(probe_artifacts)
        if env_error:
            log(f"environment fingerprint failed: {env_error}", level="warning")
    try:
        import torch
        import transformers
    except ImportError as exc:
        return RunResult(
            status="errored",
            environment=environment,
            error=f"inference-bench needs torch and transformers in the job image: {exc}",
        )
    engine_version = transformers.__version__  # the offline engine's and the server's
    try:
        device = pick_device(params["device"], environment)
    except RuntimeError as exc:
        return RunResult(status="errored", environment=environment, error=str(exc))
    dtype = dtype_name(params["dtype"], device)

    if params.get("registered_model"):
        folder = ctx.work / registry.INPUT_FOLDER
        if not (folder / "config.json").is_file():
            return RunResult(
                status="errored",
                environment=environment,
                error=(
                    f"registered model {params['registered_model']!r} did not reach the job "
                    "(no WORK/model/config.json): the worker resolves it from ROCPATH_MODEL_ROOT"
                ),
            )
        spec = models.ModelSpec(params["registered_model"], path=folder)
    else:
        spec = models.ModelSpec(params["model"], preset=params["model"], layers=params["layers"])
    config = spec.config()
    kv_per_token = presets.kv_bytes_per_token(config, dtype)
    weights = presets.parameter_count(config) if spec.random_weights else None

    n = params["requests"]
    input_lengths, output_lens = _lengths(params, "input"), _lengths(params, "output")
    prompts = make_prompts(n, input_lengths, int(config["vocab_size"]), params["seed"])
    max_tokens = output_lengths(n, output_lens, params["seed"])
    warm = make_prompts(
        params["warmup_requests"],
        Lengths("fixed", 16),
        int(config["vocab_size"]),
        params["seed"] + 99,
    )
    longest = max(len(p) for p in prompts) + max(max_tokens)
    block = params["block_size"]
    num_blocks, batch_tokens = params["num_blocks"], params["max_batch_tokens"]
    # transformers' own default fills 90 % of the free GPU memory with cache (58 GB for a
    # 4-layer Llama-3-8B on an H200, and twice that taken from the allocator) and on a CPU
    # zeroes as much host RAM for minutes. A benchmark needs room for its largest batch of
    # its longest request; the most that would fit is reported apart (largest_batch).
    loads = load_steps(params)
    most = max(c for mode_loads in loads.values() for c, _ in mode_loads)
    num_blocks = num_blocks or most * math.ceil(longest / block) + 1
    if device.kind == "cpu":
        batch_tokens = batch_tokens or 512
    graphs = bool(params["cuda_graphs"]) and device.kind == "cuda"
    per_request_blocks = math.ceil(longest / block)
    room: dict[str, Any] = {}

    sampler = telemetry.make_sampler(device.vendor, 0, device.uuid, 100)
    sampler.start()
    cases: list[dict[str, Any]] = []
    measurements: list[Measurement] = []
    request_rows: list[list[Any]] = []
    errors: list[str] = []
    steps = sum(len(loads[mode]) for mode in params["modes"])
    done_steps = 0

    slo = metrics.Slo(params["slo_ttft_ms"], params["slo_tpot_ms"], params["slo_e2el_ms"])
    # Offline, every request is handed over at once: its TTFT and E2EL are mostly its wait
    # for a slot in the batch, which no user sees. As in MLPerf's offline scenario, no
    # latency but the per-token one is bounded there.
    slos = {"online": slo, "offline": metrics.Slo(tpot_ms=slo.tpot_ms)}
    attainment = params["slo_attainment"]
    sweeps = {
        mode: sweep_module.Sweep(
            mode,
            "rate" if mode == "online" and params["sweep"] == "rate" else "concurrency",
            slos[mode],
            attainment,
            stepping=params["sweep"] != "none",
        )
        for mode in params["modes"]
    }

    def record(
        mode: str,
        concurrency: int,
        records: list[metrics.RequestRecord],
        duration: float,
        t0: float,
        t1: float,
        extra: dict[str, Any],
        measured: external.Outcome | None = None,
        rate: float = 0.0,
    ) -> None:
        """One case's stats, measurements and log line; ``measured`` is a client tool's
        own numbers (parsed from its file), else they come from ``records``."""
        nonlocal done_steps
        if measured is not None:
            stats, samples = measured.stats, measured.samples
        else:
            stats, samples = metrics.summarize(records, duration), metrics.request_samples(records)
            if slos[mode]:
                stats["goodput"] = metrics.goodput(records, duration, slos[mode])
        window = sampler.window(t0, t1)
        energy = _energy(window, t0, t1)
        if energy:
            extra["energy_j"] = energy
            extra["tokens_per_joule"] = (stats["input_tokens"] + stats["output_tokens"]) / energy
        extra["telemetry"] = (
            {
                k: v
                for k, v in telemetry_samples.summarize_window(window).items()
                if not k.endswith("_samples")
            }
            if window
            else None
        )
        case = {
            "mode": mode,
            "engine": ENGINE,
            "model": spec.name,
            "dtype": dtype,
            "input": input_lengths.label(),
            "output": output_lens.label(),
            "concurrency": concurrency,
        }
        if mode == "online" and rate:
            case["rate"] = rate
        if mode == "online" and client != external.ROCPATH:
            # Only another client's cases carry the key in their measurements: rocpath's
            # keep the identity they always had, so earlier runs still compare.
            case["client"] = client
        if mode == "online":
            extra["client"] = client
        measurements.extend(_measurements(case, stats, samples, extra))
        sweeps[mode].add(
            sweep_module.point(
                concurrency=concurrency,
                rate=rate,
                stats=stats,
                records=records,
                slo=slos[mode],
                attainment=attainment,
                tokens_per_joule=extra.get("tokens_per_joule"),
            )
        )
        request_rows.extend(_request_rows(mode, concurrency, records))
        cases.append({**case, "stats": stats, **extra})
        done_steps += 1
        failed = stats["failed"]
        log(
            f"{mode} c={concurrency}: {stats['completed']} done, {failed} failed, "
            f"TTFT p50 {stats['ttft_ms']['p50'] or 0:.1f} ms, "
            f"TPOT p50 {stats['tpot_ms']['p50'] or 0:.2f} ms, "
            f"{stats['output_throughput']:.1f} tok/s"
        )
        if failed:
            first = next((r.error for r in records if not r.ok), f"see {client}'s output")
            sent = len(records) or stats["completed"] + failed
            errors.append(f"{mode} c={concurrency}: {failed} of {sent} requests failed ({first})")
        ctx.emit.progress(5 + 90 * done_steps // steps, f"{mode} concurrency {concurrency} done")

    torch_dtype = getattr(torch, dtype)
    server_log = None
    client = external.ROCPATH  # settled when the online cases start
    client_version: str | None = None
    client_notes: set[str] = set()
    client_files: list[Path] = []
    try:
        if "offline" in params["modes"]:
            import torch

            ctx.emit.progress(3, f"building {spec.name} on {device.name}")
            model = models.build_model(
                spec, device.kind, torch_dtype, params["attn_implementation"]
            )
            if weights is None:
                weights = sum(p.numel() for p in model.parameters())
            cuda = device.kind == "cuda"
            if cuda:
                room["free_after_weights_bytes"] = torch.cuda.mem_get_info()[0]
            engine = functools.partial(
                offline.run_case,
                model,
                block_size=block,
                num_blocks=num_blocks,
                max_batch_tokens=batch_tokens,
                timeout_s=params["case_timeout_s"],
                cuda=cuda,
                cuda_graphs=graphs,
            )
            if warm:
                engine(warm, [4] * len(warm), concurrency=len(warm))
            for concurrency, _ in loads["offline"]:
                if sweeps["offline"].done:
                    break
                if cuda:
                    torch.cuda.synchronize()
                    torch.cuda.reset_peak_memory_stats()
                # the energy's window is the duration's: from the first request added
                # to the last token, not the engine's set-up (its cache, its graphs'
                # warm-up), which on the H200 drew more energy than the requests did
                began: list[float] = []
                records, duration, cache = engine(
                    prompts, max_tokens, concurrency=concurrency,
                    on_start=lambda marks=began: marks.append(time.time()),
                )  # fmt: skip
                t0 = began[0]
                t1 = t0 + duration
                extra: dict[str, Any] = {"cache": cache.as_dict()}
                if cache.tokens:
                    extra["cache_batch"] = (cache.num_blocks or 0) // per_request_blocks
                extra["peak_memory_bytes"] = torch.cuda.max_memory_allocated() if cuda else None
                record("offline", concurrency, records, duration, t0, t1, extra)
            del model, engine  # the partial holds the model too: free both before the server
            gc.collect()
            if device.kind == "cuda":
                torch.cuda.empty_cache()
        if "online" in params["modes"]:
            # Which client loads the server is settled before the server starts: a tool
            # asked for by name and absent fails the online cases without one.
            client = external.resolve_client(params.get("client", "auto"))
            sweeps["online"].client = client
            ctx.emit.progress(50, f"starting transformers serve (load from {client})")
            scratch = tempfile.TemporaryDirectory(prefix="rocpath-served-")  # WORK is read-only
            served = spec.path or models.write_served_folder(spec, Path(scratch.name), dtype)
            settings = online.ServerSettings(
                device="cuda" if device.kind == "cuda" else "cpu",
                dtype=dtype,
                attn=params["attn_implementation"],
                block_size=block,
                num_blocks=num_blocks,
                max_batch_tokens=batch_tokens,
                start_timeout_s=params["server_start_timeout_s"],
                cuda_graphs=graphs,
            )
            server_log = ctx.out / "inference-bench" / "server.log"
            server_log.parent.mkdir(parents=True, exist_ok=True)
            texts = (
                [models.prompt_text(p) for p in prompts]
                if spec.random_weights
                else _decoded(served, prompts)
            )
            warm_texts = [models.prompt_text(p) for p in warm]
            # The server (a child) inherits this process's open-file limit: one socket per
            # request in flight on each side.
            client_module.raise_fd_limit(most)
            with online.serving(served, settings, server_log) as target:
                if warm_texts:
                    online.run_case(
                        target,
                        warm_texts,
                        [len(p) for p in warm],
                        [4] * len(warm),
                        concurrency=len(warm),
                        rate=0.0,
                        seed=params["seed"],
                        timeout_s=params["case_timeout_s"],
                    )
                for concurrency, rate in loads["online"]:
                    if sweeps["online"].done:
                        break
                    server = {
                        "server": "transformers serve",
                        "server_version": engine_version,
                    }
                    t0 = time.time()
                    if client != external.ROCPATH:
                        load = external.Load(
                            f"http://{target.host}:{target.port}",
                            str(served),
                            concurrency,
                            n,
                            input_lengths,
                            output_lens,
                            params["seed"],
                            rate,
                        )
                        try:
                            outcome = external.run_client(
                                client, load, ctx.out / CLIENT_DIR, params["case_timeout_s"]
                            )
                        except RuntimeError as exc:
                            # What the tool printed is kept even when it failed.
                            client_files.extend(
                                sorted((ctx.out / CLIENT_DIR).glob(f"{client}-c{concurrency}.*"))
                            )
                            errors.append(f"online c={concurrency} ({client}): {exc}")
                            log(errors[-1], level="error")
                            if sweeps["online"].stepping:  # more load will not fix the tool
                                sweeps["online"].end(
                                    f"{client} failed at concurrency {concurrency}"
                                )
                            continue
                        finally:
                            client_notes.update(load.notes)
                        client_files.extend([outcome.result_file, outcome.log_file])
                        client_version = outcome.tool_version
                        server["client_version"] = outcome.tool_version
                        record(
                            "online", concurrency, [], 0.0, t0, time.time(), server, outcome, rate
                        )
                        continue
                    records, duration = online.run_case(
                        target,
                        texts,
                        [len(p) for p in prompts],
                        max_tokens,
                        concurrency=concurrency,
                        rate=rate,
                        seed=params["seed"],
                        timeout_s=params["case_timeout_s"],
                    )
                    t1 = time.time()
                    record("online", concurrency, records, duration, t0, t1, server, rate=rate)
    except online.ServerError as exc:
        errors.append(str(exc))
    except external.ClientMissing as exc:
        errors.append(f"online: {exc}")
    finally:
        sampler.stop()
    for mode, sweep in sweeps.items():
        concurrency, rate = loads[mode][-1]
        last = sweep_module.load_text({"concurrency": concurrency, "rate": rate}, sweep.load)
        sweep.end(f"its last step ran ({last})" if sweep.stepping else "every load listed ran")

    if server_log is not None and server_log.exists():
        artifacts.append(
            Artifact("inference-bench/server.log", "text/plain", "the server's output")
        )
    for path in client_files:
        if path.exists():
            json_file = path.suffix == ".json"
            artifacts.append(
                Artifact(
                    f"{CLIENT_DIR}/{path.name}",
                    "application/json" if json_file else "text/plain",
                    f"{client}'s own result file, as it wrote it"
                    if json_file
                    else f"{client}'s command line, stdout and stderr",
                )
            )
    text = io.StringIO()
    writer = csv.writer(text)
    writer.writerow(
        [
            "mode",
            "concurrency",
            "request",
            "input_tokens",
            "output_tokens",
            "ttft_ms",
            "tpot_ms",
            "e2el_ms",
            "error",
        ]
    )
    writer.writerows(request_rows)
    artifacts.append(
        ctx.write_artifact(
            "inference-bench/requests.csv",
            text.getvalue(),
            "text/csv",
            "every request: its tokens in and out, TTFT, TPOT, E2EL",
        )
    )
    if sampler.samples:
        artifacts.append(
            ctx.write_artifact(
                f"inference-bench/telemetry-{sampler.source}.csv",
                sampler.csv_text(),
                "text/csv",
                f"GPU clocks, power and temperature from {sampler.source}",
            )
        )

    # a contiguous cache reserves the model's context for every request
    model_max_len = int(config.get("max_position_embeddings") or longest)
    summary = {
        "engine": ENGINE,
        "engine_version": engine_version,
        "device": {"kind": device.kind, "name": device.name, "vendor": device.vendor},
        "model": {
            "name": spec.name,
            "preset": spec.preset,
            "layers": int(config["num_hidden_layers"]),
            "random_weights": spec.random_weights,
            "parameters": weights,
            "dtype": dtype,
            "weights_bytes": weights * presets.DTYPE_BYTES[dtype] if weights else None,
            "kv_bytes_per_token": kv_per_token,
        },
        "memory": {
            **_room(room, kv_per_token, per_request_blocks * block),
            "paged_vs_contiguous": paged_vs_contiguous(
                [len(p) + m for p, m in zip(prompts, max_tokens, strict=True)],
                block,
                model_max_len,
                kv_per_token,
                room.get("free_after_weights_bytes"),
            ),
            "paged_in_use": paged_in_use(cases, kv_per_token, model_max_len, longest),
        },
        "workload": {
            "requests": n,
            "input": input_lengths.label(),
            "output": output_lens.label(),
            "seed": params["seed"],
            "request_rate": params["request_rate"] or None,
        },
        "cases": cases,
        "serving": sweep_module.serving_summary(
            [sweeps[mode] for mode in params["modes"]],
            slo,
            attainment,
            {
                "model": spec.name,
                "dtype": dtype,
                "input": input_lengths.label(),
                "output": output_lens.label(),
                "requests": n,
                "request_rate": params["request_rate"] or None,
            },
        ),
        "telemetry": sampler.describe(),
        "errors": errors,
    }
    if "online" in params["modes"]:
        summary["client"] = client
        summary["client_version"] = client_version
        if client_notes:
            summary["client_notes"] = sorted(client_notes)
    if spec.random_weights:
        summary["note"] = (
            "random weights from the preset's config: a serving stack's speed "
            "and memory follow the model's shapes, not its weights' values"
        )
    if not cases:
        return RunResult(
            status="errored",
            environment=environment,
            summary=summary,
            artifacts=artifacts,
            error="; ".join(errors) or "no case ran",
        )
    status = "failed" if errors else "succeeded"
    return RunResult(
        status=status,
        environment=environment,
        measurements=measurements,
        summary=summary,
        artifacts=artifacts,
        error="; ".join(errors)[:2000] if errors else None,
    )


def load_steps(params: dict[str, Any]) -> dict[str, list[tuple[int, float]]]:
    """Each mode's (concurrency, request rate) steps, in order: the listed concurrencies,
    or a sweep's doublings (stack/inference/sweep.py), never more in flight than the
    workload's requests."""
    listed = params["concurrency"]
    requests = params["requests"]
    out: dict[str, list[tuple[int, float]]] = {}
    for mode in params["modes"]:
        if params["sweep"] == "none":
            out[mode] = [(c, params["request_rate"] if mode == "online" else 0.0) for c in listed]
        elif params["sweep"] == "rate" and mode == "online":
            rates = sweep_module.steps(params["request_rate"], params["sweep_max_rate"])
            out[mode] = [(min(max(listed), requests), r) for r in rates]
        else:
            end = min(params["sweep_max_concurrency"], requests)
            found = sweep_module.steps(min(listed), end, cap=requests)
            rate = params["request_rate"] if mode == "online" else 0.0
            out[mode] = [(int(c), rate) for c in found]
    return out


def _room(room: dict[str, Any], kv_per_token: int, request_tokens: int) -> dict[str, Any]:
    """How many of the workload's longest requests the KV cache could hold at once on this
    GPU: 90 % of the memory free after the weights (the engine's own default share) over
    one request's cache. The serving team's batch ceiling; None off a GPU."""
    free = room.get("free_after_weights_bytes")
    per_request = kv_per_token * request_tokens
    return {
        "free_after_weights_bytes": free,
        "request_kv_bytes": per_request,
        "largest_batch": batch_in(free, per_request),
    }


# The share of the memory free after the weights a KV cache may take: transformers' own
# default (max_memory_percent 0.9 without logit processors).
KV_SHARE = 0.9


def batch_in(free: int | None, per_request: float) -> int | None:
    """How many requests of ``per_request`` KV bytes fit in KV_SHARE of ``free`` (None off
    a GPU, where nothing says what is free)."""
    return int(int(KV_SHARE * free) // per_request) if free else None


def paged_vs_contiguous(
    lengths: list[int], block: int, max_len: int, kv_per_token: int, free: int | None
) -> dict[str, Any]:
    """The PagedAttention claim for this workload: a contiguous cache reserves each
    request's maximum length up front (the model's context, or at best the workload's
    longest request), a paged one holds the blocks each request fills. Per request on
    average, and the batch each allows in 90 % of the memory free after the weights (None
    off a GPU). The lengths are prompt + output tokens, each request's whole context."""
    mean_blocks = sum(math.ceil(n / block) for n in lengths) / len(lengths)
    per_request = {
        "contiguous_model_max": kv_per_token * max_len,
        "contiguous_longest": kv_per_token * max(lengths),
        "paged": kv_per_token * block * mean_blocks,
        "exact": kv_per_token * sum(lengths) / len(lengths),
    }
    return {
        "model_max_len": max_len,
        "block_size": block,
        "request_bytes": per_request,
        "batch": {k: batch_in(free, v) for k, v in per_request.items()},
        "paged_saving": 1 - per_request["paged"] / per_request["contiguous_model_max"],
    }


def paged_in_use(
    cases: list[dict[str, Any]], kv_per_token: int, max_len: int, longest: int
) -> list[dict[str, Any]]:
    """What the paged cache held at its fullest in each offline case (blocks the engine
    had handed out, polled), beside what a contiguous cache reserves for as many requests
    in flight: the PagedAttention claim measured, not computed from lengths."""
    out = []
    for case in cases:
        cache = case.get("cache") or {}
        peak, block = cache.get("peak_blocks_in_use"), cache.get("block_size")
        if case["mode"] != "offline" or not peak or not block:
            continue
        per_token = cache.get("engine_kv_bytes_per_token") or kv_per_token
        in_flight = case["concurrency"]
        out.append(
            {
                "concurrency": in_flight,
                "peak_blocks": peak,
                "paged_bytes": peak * block * per_token,
                "contiguous_model_max_bytes": in_flight * max_len * per_token,
                "contiguous_longest_bytes": in_flight * longest * per_token,
            }
        )
    return out


def _decoded(folder: Any, prompts: list[list[int]]) -> list[str]:
    """A registered model's prompts as text through its own tokenizer (the server counts
    the tokens it got; its usage event's count is the one kept)."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    return [tokenizer.decode(p) for p in prompts]
