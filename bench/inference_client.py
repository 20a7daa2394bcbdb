"""The inference client's own overhead: rocpath's streaming client against a bare reader.

inference-bench's figures are only as good as the client that times them: if it cannot
keep up, or stamps a token late, the server looks slower than it is. The goal (issue):
against a fake streaming server on 127.0.0.1 that answers at once, the client sustains
>= 500 streamed requests/s on one core and adds < 1 ms to TTFT at p50, as a ratio against
``vllm bench serve``'s client where it runs. vLLM cannot be installed here (its wheel and
torch are far too large for this machine), so the anchor is a bare asyncio reader: one
keep-alive connection per request in flight, the same request bytes, and reads stamped
with perf_counter until the first token's event (the first blank line of the stream)
and the stream's end (the chunked terminator), with no SSE or JSON parsing. What
rocpath's client costs beyond that floor is what it adds.

The fake server (bench/streaming_server.py) runs in a separate process pinned to the
second core; both clients run in this process, pinned to the first: the claim is "on one
core". Two measurements, interleaved A B A B in every round because this machine is noisy:

1. throughput: ``--requests`` requests of ``--tokens`` tokens, ``--concurrency`` in
   flight, all sent at once, server gap 0: requests/s and streamed tokens/s;
2. TTFT: concurrency 1, server TTFT 0 and a small fixed gap (so the first token comes in
   a read of its own): TTFT p50 / p90; the difference of the p50s is what the client adds.

Prints a table and writes JSON (default docs/results/inference/client-overhead-DATE.json).

    .venv/bin/python bench/inference_client.py --rounds 3
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from stack.inference import client  # noqa: E402
from stack.inference.metrics import percentile  # noqa: E402

MODEL = "fake/overhead"
PROMPT = list(range(16, 48))  # 32 token ids, as inference-bench sends them
TTFT_GAP_S = 0.002  # the TTFT phase's server gap: the first token is read alone
TTFT_TOKENS = 2
GOAL_REQ_S = 500.0
GOAL_TTFT_ADDED_MS = 1.0


# --- the server process ---------------------------------------------------------------


def serve(gap_s: float, cpu: int | None) -> None:
    """The fake server, in its own process: prints its port, serves until stdin closes."""
    from bench.streaming_server import StreamingServer

    if cpu is not None:
        os.sched_setaffinity(0, {cpu})

    async def main() -> None:
        server = StreamingServer(ttft_s=0.0, gap_s=gap_s)
        await server.start()
        print(server.port, flush=True)
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, sys.stdin.read)  # returns at EOF: the parent's end
        await server.stop()

    asyncio.run(main())


@dataclass
class ServerProcess:
    """A fake server in a child process pinned to ``cpu``; its CPU time is read from /proc."""

    gap_s: float
    cpu: int | None
    proc: subprocess.Popen | None = None
    port: int = 0

    def __enter__(self) -> ServerProcess:
        command = [sys.executable, str(Path(__file__).resolve()), "--serve", str(self.gap_s)]
        if self.cpu is not None:
            command += ["--serve-cpu", str(self.cpu)]
        self.proc = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        line = self.proc.stdout.readline() if self.proc.stdout else ""
        if not line.strip().isdigit():
            self.__exit__()
            raise RuntimeError(f"the fake server did not start: {line!r}")
        self.port = int(line)
        return self

    def cpu_s(self) -> float:
        """User + system CPU seconds the server has used so far."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def __exit__(self, *exc: object) -> None:
        if self.proc is None:
            return
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


# --- the two clients --------------------------------------------------------------------


def request_bytes(target: client.Target, max_tokens: int) -> bytes:
    """The bytes rocpath's client writes for one request: client.request_bytes itself."""
    return client.request_bytes(target, PROMPT, max_tokens)


@dataclass
class Outcome:
    """One client's run: per request, TTFT and tokens; failures; wall and CPU time."""

    ttfts: list[float] = field(default_factory=list)  # seconds, completed requests
    tokens: int = 0
    completed: int = 0
    failed: int = 0
    wall_s: float = 0.0
    cpu_s: float = 0.0
    server_cpu_s: float = 0.0


async def bare_reader(target: client.Target, n: int, concurrency: int, max_tokens: int) -> Outcome:
    """The anchor: ``concurrency`` keep-alive connections, each writing the request and
    reading until the chunked terminator; TTFT at the read that holds the first event's end.
    """
    payload = request_bytes(target, max_tokens)
    out = Outcome()
    left = [n]

    async def worker() -> None:
        reader, writer = await asyncio.open_connection(target.host, target.port)
        try:
            while left[0] > 0:
                left[0] -= 1
                buffer = b""
                first = 0.0
                start = time.perf_counter()
                writer.write(payload)
                while True:
                    data = await reader.read(65536)
                    if not data:
                        out.failed += 1
                        return
                    buffer += data
                    if not first and b"\n\n" in buffer:
                        first = time.perf_counter()
                    if buffer.endswith(b"\r\n0\r\n\r\n"):
                        break
                out.ttfts.append(first - start)
                out.tokens += buffer.count(b"data: ") - 2  # less the usage event and [DONE]
                out.completed += 1
        finally:
            writer.close()

    await asyncio.gather(*(worker() for _ in range(min(concurrency, n))))
    out.failed += left[0] if left[0] > 0 else 0
    return out


async def rocpath_client(
    target: client.Target, n: int, concurrency: int, max_tokens: int
) -> Outcome:
    """rocpath's client as inference-bench drives it: run_load, every request at once."""
    records, _ = await client.run_load(
        target, [PROMPT] * n, [len(PROMPT)] * n, [max_tokens] * n, concurrency=concurrency
    )
    out = Outcome()
    for record in records:
        if record.ok:
            out.completed += 1
            out.ttfts.append(record.ttft())
            out.tokens += record.tokens_out
        else:
            out.failed += 1
    return out


CLIENTS = {"rocpath": rocpath_client, "bare": bare_reader}


def measure(name: str, server: ServerProcess, n: int, concurrency: int, max_tokens: int) -> Outcome:
    """One client's run against ``server``, with wall time, this process's CPU time and the
    server's CPU time around it (a server near 100 % busy would be the bottleneck)."""
    target = client.Target("127.0.0.1", server.port, MODEL)
    server_before, cpu_before = server.cpu_s(), time.process_time()
    began = time.perf_counter()
    out = asyncio.run(CLIENTS[name](target, n, concurrency, max_tokens))
    out.wall_s = time.perf_counter() - began
    out.cpu_s = time.process_time() - cpu_before
    out.server_cpu_s = server.cpu_s() - server_before
    return out


def throughput_row(out: Outcome) -> dict[str, Any]:
    return {
        "completed": out.completed,
        "failed": out.failed,
        "tokens": out.tokens,
        "wall_s": out.wall_s,
        "requests_per_s": out.completed / out.wall_s,
        "tokens_per_s": out.tokens / out.wall_s,
        "client_cpu_ms_per_request": out.cpu_s * 1e3 / max(out.completed, 1),
        "server_cpu_busy": out.server_cpu_s / out.wall_s,
        # Well under 100 % for both: something else had the cores (this machine is shared).
        "client_cpu_busy": out.cpu_s / out.wall_s,
    }


def ttft_row(out: Outcome) -> dict[str, Any]:
    ms = [t * 1e3 for t in out.ttfts]
    return {
        "completed": out.completed,
        "failed": out.failed,
        "tokens": out.tokens,
        "wall_s": out.wall_s,
        "ttft_p50_ms": percentile(ms, 50) if ms else None,
        "ttft_p90_ms": percentile(ms, 90) if ms else None,
        "ttft_mean_ms": statistics.fmean(ms) if ms else None,
        "client_cpu_ms_per_request": out.cpu_s * 1e3 / max(out.completed, 1),
    }


# --- the run ----------------------------------------------------------------------------


def machine() -> dict[str, Any]:
    """What the figures depend on: cores, CPU model, Python, load when the run began."""
    model = ""
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    nproc = subprocess.run(["nproc"], capture_output=True, text=True, check=False).stdout
    return {
        "nproc": int(nproc.strip() or 0),
        "cpu_model": model,
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "load_average_at_start": list(os.getloadavg()),
    }


def cores() -> tuple[int | None, int | None]:
    """(clients' core, server's core): the first two this process may use; one core
    shared by both where there is only one."""
    allowed = sorted(os.sched_getaffinity(0))
    if not allowed:
        return None, None
    return allowed[0], allowed[1] if len(allowed) > 1 else allowed[0]


def medians(rows: list[dict[str, Any]], keys: list[str]) -> dict[str, float | None]:
    """Each key's median over the rounds (None where a round had none)."""
    result: dict[str, float | None] = {}
    for key in keys:
        values = [row[key] for row in rows if row[key] is not None]
        result[key] = statistics.median(values) if values else None
    return result


def run(
    requests: int, concurrency: int, tokens: int, rounds: int, ttft_requests: int
) -> dict[str, Any]:
    """Both measurements, ``rounds`` times, each round rocpath then the bare reader."""
    client_core, server_core = cores()
    facts = machine()
    rows: dict[str, dict[str, list[dict[str, Any]]]] = {
        "throughput": {name: [] for name in CLIENTS},
        "ttft": {name: [] for name in CLIENTS},
    }
    allowed = os.sched_getaffinity(0)
    if client_core is not None:
        os.sched_setaffinity(0, {client_core})
    try:
        with (
            ServerProcess(0.0, server_core) as at_once,
            ServerProcess(TTFT_GAP_S, server_core) as gapped,
        ):
            for name in CLIENTS:  # warm-up, not kept: first connections, code paths, caches
                measure(name, at_once, min(200, requests), concurrency, tokens)
                measure(name, gapped, min(50, ttft_requests), 1, TTFT_TOKENS)
            for i in range(rounds):
                for name in CLIENTS:
                    row = throughput_row(measure(name, at_once, requests, concurrency, tokens))
                    rows["throughput"][name].append({"round": i + 1, **row})
                for name in CLIENTS:
                    row = ttft_row(measure(name, gapped, ttft_requests, 1, TTFT_TOKENS))
                    rows["ttft"][name].append({"round": i + 1, **row})
                report_round(i + 1, rows)
    finally:
        os.sched_setaffinity(0, allowed)  # a caller in-process (the test) gets its cores back
    tput_keys = [
        "requests_per_s",
        "tokens_per_s",
        "client_cpu_ms_per_request",
        "client_cpu_busy",
        "server_cpu_busy",
    ]
    ttft_keys = ["ttft_p50_ms", "ttft_p90_ms", "ttft_mean_ms", "client_cpu_ms_per_request"]
    med = {
        "throughput": {n: medians(r, tput_keys) for n, r in rows["throughput"].items()},
        "ttft": {n: medians(r, ttft_keys) for n, r in rows["ttft"].items()},
    }
    ours_tput, bare_tput = med["throughput"]["rocpath"], med["throughput"]["bare"]
    ours_ttft, bare_ttft = med["ttft"]["rocpath"], med["ttft"]["bare"]
    added = (
        ours_ttft["ttft_p50_ms"] - bare_ttft["ttft_p50_ms"]
        if ours_ttft["ttft_p50_ms"] is not None and bare_ttft["ttft_p50_ms"] is not None
        else None
    )
    # The same difference round by round (each round's pair ran back to back).
    added_by_round = [
        a["ttft_p50_ms"] - b["ttft_p50_ms"]
        for a, b in zip(rows["ttft"]["rocpath"], rows["ttft"]["bare"], strict=True)
        if a["ttft_p50_ms"] is not None and b["ttft_p50_ms"] is not None
    ]
    ratios = {
        "requests_per_s": ours_tput["requests_per_s"] / bare_tput["requests_per_s"],
        "tokens_per_s": ours_tput["tokens_per_s"] / bare_tput["tokens_per_s"],
        # The bare reader can be held back by the server (one Python core of its own):
        # client CPU per request is the comparison that no server limit blurs.
        "client_cpu_per_request": ours_tput["client_cpu_ms_per_request"]
        / bare_tput["client_cpu_ms_per_request"],
        "ttft_p50": ours_ttft["ttft_p50_ms"] / bare_ttft["ttft_p50_ms"]
        if bare_ttft["ttft_p50_ms"]
        else None,
    }
    return {
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": facts,
        "load_average_at_end": list(os.getloadavg()),
        "pinning": {"clients_core": client_core, "server_core": server_core},
        "anchor": (
            "a bare asyncio reader (vllm bench serve's client was not run: vLLM cannot be "
            "installed on this machine)"
        ),
        "workload": {
            "throughput": {
                "requests": requests,
                "concurrency": concurrency,
                "max_tokens": tokens,
                "server_ttft_s": 0.0,
                "server_gap_s": 0.0,
            },
            "ttft": {
                "requests": ttft_requests,
                "concurrency": 1,
                "max_tokens": TTFT_TOKENS,
                "server_ttft_s": 0.0,
                "server_gap_s": TTFT_GAP_S,
            },
            "prompt_tokens": len(PROMPT),
            "rounds": rounds,
        },
        "rounds": rows,
        "medians": med,
        "ratios_rocpath_over_bare": ratios,
        "ttft_p50_added_ms": added,
        "ttft_p50_added_ms_by_round": added_by_round,
        "goals": {
            "requests_per_s_at_least_500": ours_tput["requests_per_s"] >= GOAL_REQ_S,
            "ttft_p50_added_under_1_ms": added is not None and added < GOAL_TTFT_ADDED_MS,
        },
    }


def report_round(i: int, rows: dict[str, dict[str, list[dict[str, Any]]]]) -> None:
    for name in CLIENTS:
        t, f = rows["throughput"][name][-1], rows["ttft"][name][-1]
        print(
            f"round {i} {name:8} {t['requests_per_s']:8.0f} req/s {t['tokens_per_s']:9.0f} tok/s"
            f"  cpu {t['client_cpu_ms_per_request']:.3f} ms/req  busy: client "
            f"{t['client_cpu_busy']:.0%} server {t['server_cpu_busy']:.0%}"
            f"  | TTFT p50 {f['ttft_p50_ms']:.3f} ms p90 {f['ttft_p90_ms']:.3f} ms"
            f"  ({t['failed'] + f['failed']} failed)",
            flush=True,
        )


def table(result: dict[str, Any]) -> str:
    med = result["medians"]
    lines = [
        "| client | req/s | tokens/s | client CPU / req | TTFT p50 | TTFT p90 |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name in CLIENTS:
        t, f = med["throughput"][name], med["ttft"][name]
        lines.append(
            f"| {name} | {t['requests_per_s']:.0f} | {t['tokens_per_s']:.0f} | "
            f"{t['client_cpu_ms_per_request']:.3f} ms | {f['ttft_p50_ms']:.3f} ms | "
            f"{f['ttft_p90_ms']:.3f} ms |"
        )
    ratios = result["ratios_rocpath_over_bare"]
    lines.append(
        f"ratio rocpath / bare: req/s {ratios['requests_per_s']:.3f}, client CPU / req "
        f"{ratios['client_cpu_per_request']:.3f}, "
        f"TTFT p50 {ratios['ttft_p50']:.3f}; TTFT p50 added "
        f"{result['ttft_p50_added_ms']:.3f} ms; goals {result['goals']}"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=4000, help="throughput requests")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--tokens", type=int, default=16, help="max_tokens, throughput")
    parser.add_argument("--ttft-requests", type=int, default=2000, help="TTFT phase requests")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--serve", type=float, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--serve-cpu", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve is not None:
        serve(args.serve, args.serve_cpu)
        return 0
    result = run(args.requests, args.concurrency, args.tokens, args.rounds, args.ttft_requests)
    today = datetime.datetime.now(datetime.UTC).date()
    out = args.out or ROOT / "docs/results/inference" / f"client-overhead-{today}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(table(result))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
