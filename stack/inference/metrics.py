"""Per-request latencies and a run's throughputs, as ``vllm bench serve`` defines them.

For one request sent at ``start`` whose output tokens arrived at ``token_times``:
- TTFT: first token's arrival - start.
- E2EL: last token's arrival - start (the request's whole latency).
- TPOT: (E2EL - TTFT) / (output tokens - 1): time per output token after the first;
  none for a one-token output.
- ITL: each gap between successive arrivals. A streamed chunk that carries several
  tokens is one arrival, as in vLLM (its gap is one ITL sample, the tokens are counted).
A run's request throughput is completed requests / duration; output throughput is the
completed requests' output tokens / duration; total token throughput adds their input
tokens. Percentiles are linear interpolation between order statistics (numpy's default,
which vLLM calls). MLPerf Inference's server scenario reports the same TTFT and TPOT
(its "time per output token" also leaves the first token out). docs/inference.md.

Where these differ from vLLM's ``calculate_metrics``, and why:
- output tokens without the server's count are one per arrival; vLLM re-tokenizes the
  text (its tokenizer is not in a job image). Every server this job drives says its count.
- only events with text are arrivals (client.py says why): vLLM's ITL list would hold
  one more gap, to the server's empty closing event.
- the duration ends at the last token, not when the last stream closed or a failed
  request gave up (vLLM's ``benchmark_duration`` waits for every request): the
  throughputs are those of the tokens, unaffected by a straggler's failure.
- no standard deviations; percentiles and means are vLLM's.
"""

from __future__ import annotations

import itertools
import math
import statistics
from dataclasses import dataclass, field
from typing import Any

PERCENTILES = (50, 90, 99)
LATENCIES = ("ttft_ms", "tpot_ms", "itl_ms", "e2el_ms")


@dataclass
class RequestRecord:
    """What one request did: when it was sent, when its tokens came, how many."""

    start: float
    input_len: int
    token_times: list[float] = field(default_factory=list)
    output_len: int | None = None  # the server's count (usage) where it gave one
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and bool(self.token_times)

    @property
    def tokens_out(self) -> int:
        """Output tokens: the server's count when it said one, else one per arrival (a
        count of 0 beside arrivals is no count, as vLLM takes a falsy one)."""
        return self.output_len if self.output_len else len(self.token_times)

    def ttft(self) -> float:
        return self.token_times[0] - self.start

    def e2el(self) -> float:
        return self.token_times[-1] - self.start

    def tpot(self) -> float | None:
        n = self.tokens_out
        return (self.e2el() - self.ttft()) / (n - 1) if n > 1 else None

    def itls(self) -> list[float]:
        times = self.token_times
        return [b - a for a, b in itertools.pairwise(times)]


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile with linear interpolation (numpy.percentile's default)."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("no values")
    rank = (len(ordered) - 1) * q / 100.0
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def distribution(values: list[float]) -> dict[str, float | None]:
    """mean, p50, p90, p99 of the values (None each when there are none)."""
    if not values:
        return {"mean": None, **{f"p{q}": None for q in PERCENTILES}}
    return {
        "mean": statistics.fmean(values),
        **{f"p{q}": percentile(values, q) for q in PERCENTILES},
    }


def request_samples(records: list[RequestRecord]) -> dict[str, list[float]]:
    """The four latencies in milliseconds: one sample per completed request (ITL: per gap)."""
    done = [r for r in records if r.ok]
    tpots = [t for t in (r.tpot() for r in done) if t is not None]
    return {
        "ttft_ms": [r.ttft() * 1e3 for r in done],
        "tpot_ms": [t * 1e3 for t in tpots],
        "itl_ms": [gap * 1e3 for r in done for gap in r.itls()],
        "e2el_ms": [r.e2el() * 1e3 for r in done],
    }


def summarize(records: list[RequestRecord], duration_s: float) -> dict[str, Any]:
    """The run's stats: counts, throughputs and each latency's distribution.

    ``duration_s`` is the benchmark's wall time from the first request sent to the last
    answer (vLLM's ``benchmark_duration``), not the sum of the requests' latencies.
    """
    done = [r for r in records if r.ok]
    samples = request_samples(records)
    input_tokens = sum(r.input_len for r in done)
    output_tokens = sum(r.tokens_out for r in done)
    per_s = 1.0 / duration_s if duration_s > 0 else 0.0
    return {
        "completed": len(done),
        "failed": len(records) - len(done),
        "duration_s": duration_s,
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "request_throughput": len(done) * per_s,
        "output_throughput": output_tokens * per_s,
        "total_token_throughput": (input_tokens + output_tokens) * per_s,
        **{name: distribution(values) for name, values in samples.items()},
    }


@dataclass(frozen=True)
class Slo:
    """A team's latency bounds in milliseconds; 0 leaves a bound unset."""

    ttft_ms: float = 0.0
    tpot_ms: float = 0.0
    e2el_ms: float = 0.0

    def __bool__(self) -> bool:
        return any((self.ttft_ms, self.tpot_ms, self.e2el_ms))

    def met_by(self, record: RequestRecord) -> bool:
        """Whether a completed request kept every bound set. A one-token answer has no
        TPOT and keeps a TPOT bound, as in vLLM (its TPOT is 0 there)."""
        if not record.ok:
            return False
        tpot = record.tpot()
        return (
            (not self.ttft_ms or record.ttft() * 1e3 <= self.ttft_ms)
            and (not self.tpot_ms or tpot is None or tpot * 1e3 <= self.tpot_ms)
            and (not self.e2el_ms or record.e2el() * 1e3 <= self.e2el_ms)
        )

    def as_dict(self) -> dict[str, float]:
        return {k: v for k, v in vars(self).items() if v}


def goodput(records: list[RequestRecord], duration_s: float, slo: Slo) -> dict[str, Any]:
    """Requests that kept the SLO per second of the run: ``vllm bench serve --goodput``'s
    ``request_goodput`` (MLPerf's server scenario likewise counts only what meets its
    TTFT and TPOT bounds). Failed requests never count."""
    good = sum(1 for r in records if slo.met_by(r))
    return {
        "slo": slo.as_dict(),
        "good": good,
        "share": good / len(records) if records else None,
        "request_goodput": good / duration_s if duration_s > 0 else 0.0,
    }
