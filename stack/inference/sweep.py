"""The serving sweep: load stepped up until more of it buys nothing, and the curve it draws.

A serving team asks how much one GPU serves at its latency SLO, not how fast it is at
concurrency 8. The sweep doubles the load (requests in flight, or the Poisson request
rate) and stops as soon as a step cannot tell it anything new:

- the SLO broke: fewer than ``attainment`` of the step's requests kept every bound (the
  step is kept and marked: it brackets the SLO from above). More load only adds queueing.
- throughput stopped rising: the step serves less than ``MIN_GAIN`` more than the best
  step before it, though it doubled the load. The engine is saturated; doubling again
  would spend the GPU's most expensive step on a flat curve. (The step's interval is not
  asked: a short step's is wide, and the rule would then never stop.)
- the next step would ask for more requests in flight than the workload has.

Each step is a point of the curve InferenceX draws: throughput per GPU (output tokens/s)
against tokens per second per user (1 / TPOT), each with a 95 % interval:
- throughput: batch means. The step's span (first request sent to last token) is cut
  into ``WINDOWS`` equal windows and the output tokens arriving in each counted; the
  interval is the step's throughput plus or minus Student's t on the spread of the
  middle windows' rates (the first and last hold the ramp-up and the drain, which every
  step has and which say nothing about how steady the engine ran).
- tokens/s per user: the median of the requests' 1/TPOT, with the distribution-free
  interval of order statistics (binomial ranks), as 1/TPOT is skewed.
The SLO point is the step that serves most per GPU while meeting the SLO (on the steps
tried: doubling brackets the true capacity within a factor of two of load).

``compare_at_slo`` reads two sweeps' summaries and says which GPU serves more at the SLO,
per GPU and per joule, or that the data cannot tell. docs/inference.md says every step.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Any

from stack.inference import metrics

MIN_GAIN = 0.05  # a doubling of load that buys less than this is the plateau
WINDOWS = 10
T_975_7 = 2.3646  # Student's t, 97.5 % quantile, the 8 middle windows' 7 degrees of freedom
Z_975 = 1.959964
JOULE_MARGIN = 0.10  # one energy reading per point has no interval: this stands for one
DEFAULT_ATTAINMENT = 0.9


def _interval(value: float | None, low: float | None, high: float | None) -> dict[str, Any]:
    return {"value": value, "low": low, "high": high}


def throughput_interval(
    records: list[metrics.RequestRecord], value: float, gpus: int = 1
) -> tuple[float | None, float | None]:
    """The 95 % interval of output tokens/s per GPU by batch means (module docstring);
    (None, None) when the step has too few arrivals to fill its windows."""
    done = [r for r in records if r.ok]
    arrivals: list[tuple[float, float]] = []
    for r in done:
        weight = r.tokens_out / len(r.token_times)  # a chunk may carry several tokens
        arrivals.extend((t, weight) for t in r.token_times)
    if len(arrivals) < 2 * WINDOWS:
        return None, None
    t0 = min(r.start for r in records)
    t1 = max(t for t, _ in arrivals)
    width = (t1 - t0) / WINDOWS
    if width <= 0:
        return None, None
    tokens = [0.0] * WINDOWS
    for t, weight in arrivals:
        tokens[min(int((t - t0) / width), WINDOWS - 1)] += weight
    steady = [n / width / gpus for n in tokens[1:-1]]
    half = T_975_7 * statistics.stdev(steady) / math.sqrt(len(steady))
    return max(0.0, value - half), value + half


def median_interval(values: list[float]) -> dict[str, Any]:
    """The median with its distribution-free 95 % interval (order statistics at the
    binomial ranks); no interval under 6 values, where it would span them all."""
    if not values:
        return _interval(None, None, None)
    ordered = sorted(values)
    n = len(ordered)
    value = statistics.median(ordered)
    if n < 6:
        return _interval(value, None, None)
    spread = Z_975 * math.sqrt(n) / 2
    low = max(0, math.floor(n / 2 - spread) - 1)
    high = min(n - 1, math.ceil(n / 2 + spread))
    return _interval(value, ordered[low], ordered[high])


def point(
    *,
    concurrency: int,
    rate: float | None,
    stats: dict[str, Any],
    records: list[metrics.RequestRecord],
    slo: metrics.Slo,
    attainment: float,
    gpus: int = 1,
    tokens_per_joule: float | None = None,
) -> dict[str, Any]:
    """One step of the curve from its requests (or, for a client tool's parsed file with
    no requests, from its stats alone: then without intervals)."""
    value = stats["output_throughput"] / gpus
    if records:
        low, high = throughput_interval(records, value, gpus)
        per_user = median_interval(
            [1.0 / t for r in records if r.ok and (t := r.tpot()) is not None and t > 0]
        )
    else:
        low = high = None
        tpot = (stats.get("tpot_ms") or {}).get("p50")
        per_user = _interval(1e3 / tpot if tpot else None, None, None)
    good = stats.get("goodput")  # the step's, counted once by the runner under ``slo``
    share = good.get("share") if good else None
    return {
        "concurrency": concurrency,
        "rate": rate or None,
        "throughput_per_gpu": _interval(value, low, high),
        "tokens_per_s_per_user": per_user,
        "goodput_per_gpu": good["request_goodput"] / gpus if slo and good else None,
        "slo_share": share if slo else None,
        # a client tool's parsed file has no per-request times: whether a step kept the
        # SLO is then unknown (None), not broken
        "meets_slo": (share >= attainment) if slo and share is not None else None,
        "tokens_per_joule": tokens_per_joule,
        "failed": stats.get("failed", 0),
    }


def load_text(point: dict[str, Any], load: str) -> str:
    """The load a step ran at, as every statement and page says it: "concurrency 8" or
    "2 req/s"."""
    rate = point.get("rate")
    if load == "rate" and isinstance(rate, int | float):
        return f"{rate:g} req/s"
    return f"concurrency {point.get('concurrency')}"


def stop_reason(points: list[dict[str, Any]], load: str, attainment: float) -> str | None:
    """Why the sweep should stop after its last point, or None to go on (module
    docstring): a broken SLO first, then a throughput that stopped rising."""
    last = points[-1]
    where = load_text(last, load)
    if last.get("failed"):
        return f"requests failed at {where}"
    if last["meets_slo"] is False and last["slo_share"] is not None:
        return (
            f"the SLO broke at {where}: {last['slo_share']:.0%} of requests kept it, "
            f"{attainment:.0%} needed"
        )
    if len(points) > 1:
        best = max(p["throughput_per_gpu"]["value"] for p in points[:-1])
        value = last["throughput_per_gpu"]["value"]
        if value < best * (1 + MIN_GAIN):
            return (
                f"throughput stopped rising at {where}: {value:.4g} tok/s per GPU, "
                f"not {MIN_GAIN:.0%} above the best before ({best:.4g})"
            )
    return None


def steps(start: float, end: float, cap: float | None = None) -> list[float]:
    """start, 2 x start, … up to end (end itself the last step when doubling skips it),
    none above ``cap``."""
    out: list[float] = []
    value = start
    while value < end:
        out.append(value)
        value *= 2
    out.append(end)
    return [v for v in out if cap is None or v <= cap] or [min(start, cap or start)]


@dataclass
class Sweep:
    """One mode's curve as it is measured. ``stepping`` False: the loads given all run
    (a fixed list of concurrencies), and the curve and its SLO point are still drawn."""

    mode: str
    load: str  # "concurrency" or "rate"
    slo: metrics.Slo
    attainment: float
    stepping: bool
    gpus: int = 1
    client: str | None = None  # online: what loaded the server (its timings are its own)
    points: list[dict[str, Any]] = field(default_factory=list)
    stopped: dict[str, Any] | None = None

    def add(self, p: dict[str, Any]) -> None:
        self.points.append(p)
        if self.stepping and self.stopped is None:
            reason = stop_reason(self.points, self.load, self.attainment)
            if reason:
                at = p["rate"] if self.load == "rate" else p["concurrency"]
                self.stopped = {"reason": reason, "at": at}

    @property
    def done(self) -> bool:
        return self.stopped is not None

    def end(self, reason: str) -> None:
        """The sweep ends before its rule stopped it: the loads ran out, or a step could
        not run at all (a client tool that failed)."""
        if self.stopped is None:
            self.stopped = {"reason": reason, "at": None}

    def slo_point(self) -> int | None:
        """The index of the point serving most per GPU within the SLO (without an SLO:
        the most per GPU, as a plain peak)."""
        ok = [
            i
            for i, p in enumerate(self.points)
            if not p.get("failed") and (p["meets_slo"] is None or p["meets_slo"])
        ]
        if not ok:
            return None
        return max(ok, key=lambda i: self.points[i]["throughput_per_gpu"]["value"])

    def as_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "load": self.load,
            "slo": self.slo.as_dict(),
            **({"client": self.client} if self.client else {}),
            "points": self.points,
            "stopped": self.stopped,
            "slo_point": self.slo_point(),
        }


def slo_point_of(curve: dict[str, Any]) -> dict[str, Any] | None:
    """A stored curve's SLO point; None where it names none (or a step it does not hold:
    a summary read back is not trusted to be whole)."""
    i, points = curve.get("slo_point"), curve.get("points") or []
    return points[i] if isinstance(i, int) and 0 <= i < len(points) else None


def serving_summary(
    sweeps: list[Sweep], slo: metrics.Slo, attainment: float, workload: dict[str, Any]
) -> dict[str, Any]:
    """The job summary's ``serving``: what compare_at_slo and the roadmap's gate read.
    ``slo`` is the team's; each curve says which of its bounds applied to it (offline:
    TPOT only, runner.py says why)."""
    return {
        "slo": slo.as_dict(),
        "attainment": attainment,
        "gpus": sweeps[0].gpus if sweeps else 1,
        "workload": workload,
        "curves": [s.as_dict() for s in sweeps if s.points],
    }


def _ratio(a: dict[str, Any], b: dict[str, Any]) -> tuple[float, float | None, float | None] | None:
    """a/b with a 95 % interval from the two intervals (delta method on the log, each
    interval's half-width in log space taken as 1.96 standard errors)."""
    if not a["value"] or not b["value"]:
        return None
    ratio = a["value"] / b["value"]
    if None in (a["low"], a["high"], b["low"], b["high"]) or not (a["low"] > 0 < b["low"]):
        return ratio, None, None
    se = math.hypot(
        math.log(a["high"] / a["low"]) / (2 * Z_975),
        math.log(b["high"] / b["low"]) / (2 * Z_975),
    )
    return ratio, ratio * math.exp(-Z_975 * se), ratio * math.exp(Z_975 * se)


def _by_how_much(ratio: float) -> str:
    if ratio >= 1.5:
        return f"{ratio:.2f}x"
    more = (ratio - 1) * 100
    return f"{more:.1f} % more" if more < 10 else f"{more:.0f} % more"


def _side_note(curve: dict[str, Any], slo: bool) -> str:
    """Why a curve has no SLO point, in its own terms."""
    points = curve["points"]
    failed = next((p for p in points if p.get("failed")), None)
    if failed is not None:
        return f"had failed requests at {load_text(failed, curve['load'])}"
    if not slo:
        return "served nothing"
    first = points[0] if points else None
    if first is None:
        return "has no step"
    if first["slo_share"] is None:
        return "cannot say whether it met the SLO (its client tool's file has no per-request times)"
    return (
        f"never met the SLO (at its lightest load, {load_text(first, curve['load'])}, "
        f"{first['slo_share']:.0%} of requests kept it)"
    )


def broke_after(curve: dict[str, Any]) -> dict[str, Any] | None:
    """The step right after the SLO point, where it broke the SLO: the curve's capacity at
    the SLO lies between the two (doubling's grid), so no more than this step served."""
    i = curve.get("slo_point")
    points = curve.get("points") or []
    if not isinstance(i, int) or i + 1 >= len(points) or points[i + 1]["meets_slo"] is not False:
        return None
    return points[i + 1]


def _ceiling(curve: dict[str, Any]) -> float | None:
    """The most a curve can serve at the SLO where it broke it at the step after its SLO
    point: that step's throughput (its interval's top); None where nothing caps it."""
    step = broke_after(curve)
    if step is None:
        return None
    top = step["throughput_per_gpu"]
    value = top["high"] if top["high"] is not None else top["value"]
    return value or None


def _per_gpu(
    pa: dict | None,
    pb: dict | None,
    names: tuple[str, str],
    at: str,
    curves: tuple[dict[str, Any], dict[str, Any]],
) -> dict:
    """Which serves more per GPU at the SLO. A winner needs the ratio's interval above
    (or below) 1 and, where the other curve broke the SLO at its next step, more than even
    that step served: the other's true capacity lies somewhere up to it, not at its SLO
    point (the step grid). ``grid_low``/``grid_high`` are the ratio's interval widened so;
    the winner is read from them, and the margin said is the one they guarantee (the
    roadmap's recommendation weighs the same bounds)."""
    out: dict[str, Any] = {"a": pa, "b": pb, "ratio": None, "low": None, "high": None}
    out["winner"] = out["text"] = out["grid_low"] = out["grid_high"] = None
    if pa is None or pb is None:
        return out
    ta, tb = pa["throughput_per_gpu"], pb["throughput_per_gpu"]
    ratio = _ratio(ta, tb)
    if ratio is None:
        out["text"] = "one side served no tokens"
        return out
    out["ratio"], out["low"], out["high"] = ratio
    figures = f"{ta['value']:.4g} against {tb['value']:.4g} output tok/s per GPU {at}"
    if out["low"] is None:
        why = (
            "a client tool's file carries no per-request times"
            if None in (ta["low"], tb["low"])
            else "a side's interval reaches zero: its step had too few tokens to say"
        )
        out["text"] = (
            f"{names[0]} / {names[1]} = {out['ratio']:.2f} ({figures}), but a side has no "
            f"usable interval ({why}): the data cannot tell"
        )
        return out
    top_a, top_b = (_ceiling(c) for c in curves)
    out["grid_low"] = min(out["low"], ta["low"] / top_b) if top_b else out["low"]
    out["grid_high"] = max(out["high"], top_a / tb["low"]) if top_a else out["high"]
    span = f"{out['ratio']:.2f}, 95 % interval {out['low']:.2f} to {out['high']:.2f}"
    lead = 0 if out["low"] > 1 else 1 if out["high"] < 1 else None
    if lead is None:
        out["text"] = (
            f"the data cannot tell which serves more per GPU: {names[0]} / {names[1]} = "
            f"{span} spans 1 ({figures})"
        )
        return out
    won, lost = (pa, pb) if lead == 0 else (pb, pa)
    ceiling = broke_after(curves[1 - lead])
    if ceiling is not None:
        top = ceiling["throughput_per_gpu"]
        margin = out["grid_low"] if lead == 0 else 1 / out["grid_high"]
        if margin <= 1:
            out["text"] = (
                f"the data cannot tell within the step grid: {names[1 - lead]} met the SLO at "
                f"{load_text(lost, curves[1 - lead]['load'])} and broke it at "
                f"{load_text(ceiling, curves[1 - lead]['load'])}, where it served "
                f"{top['value']:.4g} tok/s per GPU; its capacity at the SLO lies between, "
                f"and {names[lead]}'s {won['throughput_per_gpu']['value']:.4g} is inside "
                f"({names[0]} / {names[1]} at the SLO points = {span})"
            )
            return out
        out["winner"] = "ab"[lead]
        out["text"] = (
            f"{names[lead]} serves at least {_by_how_much(margin)} per GPU: more "
            f"than {names[1 - lead]} served even at "
            f"{load_text(ceiling, curves[1 - lead]['load'])}, "
            f"where it broke the SLO ({names[0]} / {names[1]} at the SLO points = {span}; "
            f"{figures})"
        )
        return out
    out["winner"] = "ab"[lead]
    by = _by_how_much(out["ratio"] if lead == 0 else 1 / out["ratio"])
    out["text"] = f"{names[lead]} serves {by} per GPU ({names[0]} / {names[1]} = {span}; {figures})"
    return out


def _per_joule(pa: dict | None, pb: dict | None, names: tuple[str, str]) -> dict:
    out: dict[str, Any] = {"a": pa, "b": pb, "ratio": None, "low": None, "high": None}
    out["winner"] = None
    ja = pa.get("tokens_per_joule") if pa else None
    jb = pb.get("tokens_per_joule") if pb else None
    if not ja or not jb:
        missing = [n for n, j, p in zip(names, (ja, jb), (pa, pb), strict=True) if p and not j]
        out["text"] = (
            f"per joule: no power reading on {' and '.join(missing)}"
            if missing
            else "per joule: nothing to compare at the SLO"
        )
        return out
    out["ratio"] = ratio = ja / jb
    figures = f"{ja:.3g} against {jb:.3g} tok/J"
    if ratio > 1 + JOULE_MARGIN:
        out["winner"] = "a"
        out["text"] = f"per joule, {names[0]} serves {_by_how_much(ratio)} ({figures})"
    elif ratio < 1 / (1 + JOULE_MARGIN):
        out["winner"] = "b"
        out["text"] = f"per joule, {names[1]} serves {_by_how_much(1 / ratio)} ({figures})"
    else:
        out["text"] = (
            f"per joule the data cannot tell: {figures} differ by less than the "
            f"{JOULE_MARGIN:.0%} a single energy reading per point is given"
        )
    return out


def compare_at_slo(
    a: dict[str, Any], b: dict[str, Any], labels: tuple[str, str] = ("A", "B")
) -> list[dict[str, Any]]:
    """Which of two sweeps (job summaries' ``serving``) serves more at the SLO, per GPU
    and per joule, one statement per mode both ran; or why the data cannot tell."""
    out: list[dict[str, Any]] = []
    curves_b = {c["mode"]: c for c in b.get("curves", [])}
    for ca in a.get("curves", []):
        cb = curves_b.get(ca["mode"])
        if cb is None:
            continue
        slo = bool(ca.get("slo", a.get("slo")))
        row: dict[str, Any] = {"mode": ca["mode"], "comparable": True}
        unlike = [
            what
            for what, x, y in (
                ("SLO", a.get("slo"), b.get("slo")),
                ("SLO attainment", a.get("attainment"), b.get("attainment")),
                ("workload", a.get("workload"), b.get("workload")),
                ("load", ca["load"], cb["load"]),
                ("client", ca.get("client"), cb.get("client")),
            )
            if x != y
        ]
        if unlike:
            row["comparable"] = False
            row["text"] = (
                f"not like for like: the two sweeps differ in {', '.join(unlike)}; "
                "run both with the same model, lengths and SLO"
            )
            row["per_gpu"] = row["per_joule"] = None
            out.append(row)
            continue
        pa, pb = slo_point_of(ca), slo_point_of(cb)
        at = "at the SLO" if slo else "at each one's peak (no SLO set)"
        row["per_gpu"] = _per_gpu(pa, pb, labels, at, (ca, cb))
        row["per_joule"] = _per_joule(pa, pb, labels)
        if pa is None and pb is None:
            row["text"] = (
                f"Neither meets the SLO at any load tried: {labels[0]} "
                f"{_side_note(ca, slo)}; {labels[1]} {_side_note(cb, slo)}."
            )
        elif pa is None or pb is None:
            won, lost = (0, 1) if pa is not None else (1, 0)
            p = pa if pa is not None else pb
            curve = cb if pa is not None else ca
            row["per_gpu"]["winner"] = "ab"[won]
            row["text"] = (
                f"Only {labels[won]} meets the SLO: "
                f"{p['throughput_per_gpu']['value']:.4g} output tok/s per GPU at "
                f"{load_text(p, ca['load'])}; {labels[lost]} {_side_note(curve, slo)}."
            )
        else:
            row["text"] = (
                f"{at[0].upper()}{at[1:]}: {row['per_gpu']['text']}; {row['per_joule']['text']}."
            )
        out.append(row)
    return out
