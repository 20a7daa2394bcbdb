"""The serving sweep on crafted request streams: when it stops, what it counts as good,
and what it says when two environments' curves are set side by side.

A crafted stream is a closed-loop server: ``concurrency`` slots, started evenly over one
request's time, each sending its next request when the last one's final token arrives.
Every token after the first takes ``tpot x (1 + concurrency / knee)`` seconds, as a
batch's step grows with the batch: throughput rises with load, less and less."""

from __future__ import annotations

import random

import pytest

from stack.inference import metrics, sweep
from stack.inference.runner import load_steps

SLO = metrics.Slo(ttft_ms=2000, tpot_ms=100)


def stream(
    concurrency: int,
    *,
    tpot: float = 0.02,
    knee: int = 8,
    ttft: float = 0.05,
    tokens: int = 32,
    waves: int = 20,
    jitter: float = 0.0,
    seed: int = 0,
) -> tuple[list[metrics.RequestRecord], float]:
    rng = random.Random(seed)
    per_token = tpot * (1 + concurrency / knee)
    records = []
    for slot in range(concurrency):
        t = slot / concurrency * (ttft + (tokens - 1) * per_token)
        for _ in range(waves):
            gap = per_token * (1 + rng.uniform(-jitter, jitter))
            first = t + ttft
            times = [first + k * gap for k in range(tokens)]
            records.append(metrics.RequestRecord(start=t, input_len=64, token_times=times))
            t = times[-1]
    end = max(r.token_times[-1] for r in records)
    return records, end


def step(concurrency: int, slo=SLO, attainment=0.9, tpj=None, **kw) -> dict:
    records, duration = stream(concurrency, **kw)
    stats = metrics.summarize(records, duration)
    if slo:
        stats["goodput"] = metrics.goodput(records, duration, slo)
    return sweep.point(
        concurrency=concurrency,
        rate=None,
        stats=stats,
        records=records,
        slo=slo,
        attainment=attainment,
        tokens_per_joule=tpj,
    )


def run_sweep(loads, slo=SLO, attainment=0.9, **kw) -> sweep.Sweep:
    s = sweep.Sweep("online", "concurrency", slo, attainment, stepping=True)
    for c in loads:
        if s.done:
            break
        s.add(step(c, slo, attainment, **kw))
    s.end("its last step ran")
    return s


def test_the_sweep_stops_at_the_first_doubling_that_buys_less_than_five_percent():
    lenient = metrics.Slo(ttft_ms=2000, tpot_ms=1000)
    s = run_sweep([1, 2, 4, 8, 16, 32, 64, 128, 256], slo=lenient, tpot=0.005, knee=2)
    assert [p["concurrency"] for p in s.points] == [1, 2, 4, 8, 16, 32, 64]
    assert s.stopped["at"] == 64 and s.stopped["reason"].startswith(
        "throughput stopped rising at concurrency 64"
    )
    tp = [p["throughput_per_gpu"]["value"] for p in s.points]
    assert tp[-1] / tp[-2] < 1.05 < tp[-2] / tp[-3]
    assert s.as_dict()["slo_point"] == 6  # the plateau's top still counts


def test_the_sweep_stops_at_the_first_step_that_breaks_the_slo_and_keeps_the_one_before():
    # TPOT 20 ms x (1 + c/4): 60 ms at 8 in flight, 100.000...1 ms at 16.
    s = run_sweep([1, 2, 4, 8, 16, 32], tpot=0.02, knee=4)
    assert [p["concurrency"] for p in s.points] == [1, 2, 4, 8, 16]
    assert s.stopped["reason"].startswith("the SLO broke at concurrency 16: 19% of requests")
    assert s.as_dict()["slo_point"] == 3  # concurrency 8: the most served within the SLO
    assert s.points[3]["meets_slo"] and s.points[4]["meets_slo"] is False


def test_a_listed_set_of_loads_runs_whole_and_still_marks_its_slo_point():
    s = sweep.Sweep("online", "concurrency", SLO, 0.9, stepping=False)
    for c in (1, 4, 16, 64):
        s.add(step(c, tpot=0.02, knee=4))
    s.end("every load listed ran")
    assert len(s.points) == 4 and s.stopped == {"reason": "every load listed ran", "at": None}
    assert s.as_dict()["slo_point"] == 1


def test_goodput_counts_only_requests_that_kept_every_bound():
    records, duration = stream(4, tpot=0.02)
    late = records[:10]
    for r in late:  # TTFT 2.5 s: over the 2 s bound
        r.token_times = [t + 2.45 for t in r.token_times]
    records[10].error, records[10].token_times = "reset by peer", []
    duration = max(r.token_times[-1] for r in records if r.ok)
    good = metrics.goodput(records, duration, SLO)
    assert good["good"] == len(records) - 11 == 69
    assert good["share"] == pytest.approx(69 / 80)
    assert good["request_goodput"] == pytest.approx(69 / duration)
    stats = metrics.summarize(records, duration)
    stats["goodput"] = good
    p = sweep.point(concurrency=4, rate=None, stats=stats, records=records, slo=SLO, attainment=0.9)
    assert p["goodput_per_gpu"] == good["request_goodput"]
    assert p["meets_slo"] is False  # 69 of 80 kept it: 86 % < 90 %
    lenient = sweep.point(
        concurrency=4, rate=None, stats=stats, records=records, slo=SLO, attainment=0.85
    )
    assert lenient["meets_slo"] is True


def test_without_an_slo_the_points_carry_no_slo_figures_and_the_peak_is_the_point():
    s = run_sweep([1, 2, 4, 8, 16], slo=metrics.Slo())
    assert all(p["meets_slo"] is None and p["goodput_per_gpu"] is None for p in s.points)
    best = max(range(len(s.points)), key=lambda i: s.points[i]["throughput_per_gpu"]["value"])
    assert s.as_dict()["slo_point"] == best


def test_tokens_per_user_is_the_median_of_one_over_tpot_with_an_interval_around_it():
    p = step(4, tpot=0.025, knee=8, jitter=0.2, seed=3)  # 37.5 ms a token, +-20 %
    user = p["tokens_per_s_per_user"]
    assert user["low"] < user["value"] < user["high"]
    assert user["value"] == pytest.approx(1 / 0.0375, rel=0.05)


def _serving(s: sweep.Sweep, slo=SLO, workload=None) -> dict:
    return sweep.serving_summary([s], slo, 0.9, workload or {"model": "llama-3-8b"})


def test_a_gpu_that_serves_twice_as_much_at_the_slo_is_named_with_its_interval():
    fast = _serving(run_sweep([1, 2, 4, 8, 16, 32], tpot=0.01, knee=16, tpj=4.0))
    slow = _serving(run_sweep([1, 2, 4, 8, 16, 32], tpot=0.02, knee=16, tpj=2.0))
    (row,) = sweep.compare_at_slo(fast, slow, ("H200", "MI300X"))
    assert row["comparable"]
    per_gpu = row["per_gpu"]
    assert per_gpu["winner"] == "a"
    assert per_gpu["low"] < per_gpu["ratio"] < per_gpu["high"] and per_gpu["low"] > 1
    assert row["text"].startswith("At the SLO: H200 serves")
    assert row["per_joule"]["winner"] == "a" and row["per_joule"]["ratio"] == pytest.approx(2)
    (mirror,) = sweep.compare_at_slo(slow, fast, ("MI300X", "H200"))
    assert mirror["per_gpu"]["winner"] == "b" and "H200 serves" in mirror["text"]


def test_two_gpus_within_each_others_intervals_are_a_tie_the_data_cannot_tell():
    a = _serving(run_sweep([1, 2, 4, 8, 16], jitter=0.3, seed=1, tpj=3.0))
    b = _serving(run_sweep([1, 2, 4, 8, 16], jitter=0.3, seed=2, tpj=3.1))
    (row,) = sweep.compare_at_slo(a, b, ("H200", "MI300X"))
    assert row["per_gpu"]["winner"] is None
    assert row["per_gpu"]["low"] < 1 < row["per_gpu"]["high"]
    assert "the data cannot tell which serves more per GPU" in row["text"]
    assert row["per_joule"]["winner"] is None and "per joule the data cannot tell" in row["text"]


def test_curves_that_never_meet_the_slo_say_so_and_name_no_winner():
    strict = metrics.Slo(ttft_ms=2000, tpot_ms=5)
    a = _serving(run_sweep([1, 2, 4], slo=strict), slo=strict)
    b = _serving(run_sweep([1, 2, 4], slo=strict, tpot=0.004), slo=strict)
    c = _serving(run_sweep([1, 2, 4], slo=strict, tpot=0.03), slo=strict)
    assert a["curves"][0]["slo_point"] is None and len(a["curves"][0]["points"]) == 1
    (neither,) = sweep.compare_at_slo(a, c, ("H200", "MI300X"))
    assert neither["per_gpu"]["winner"] is None
    assert neither["text"].startswith("Neither meets the SLO at any load tried")
    assert "at its lightest load, concurrency 1, 0% of requests kept it" in neither["text"]
    (one,) = sweep.compare_at_slo(a, b, ("H200", "MI300X"))
    assert one["per_gpu"]["winner"] == "b" and one["text"].startswith("Only MI300X meets")


def test_sweeps_of_different_workloads_are_not_compared():
    a = _serving(run_sweep([1, 2]), workload={"model": "llama-3-8b", "input": "fixed:512"})
    b = _serving(run_sweep([1, 2]), workload={"model": "llama-3-8b", "input": "fixed:2048"})
    (row,) = sweep.compare_at_slo(a, b)
    assert not row["comparable"] and "differ in workload" in row["text"]


def _params(**kw) -> dict:
    base = {
        "modes": ["offline", "online"],
        "concurrency": [1, 8],
        "requests": 100,
        "request_rate": 0,
        "sweep": "none",
        "sweep_max_concurrency": 256,
        "sweep_max_rate": 64,
    }
    return {**base, **kw}


def test_the_loads_are_the_listed_ones_or_doublings_never_above_the_requests():
    assert load_steps(_params())["offline"] == [(1, 0.0), (8, 0.0)]
    steps = load_steps(_params(sweep="concurrency", concurrency=[2]))
    assert [c for c, _ in steps["offline"]] == [2, 4, 8, 16, 32, 64, 100]
    rate = load_steps(_params(sweep="rate", request_rate=2.5, sweep_max_rate=16))
    assert rate["online"] == [(8, 2.5), (8, 5.0), (8, 10.0), (8, 16)]
    assert [c for c, _ in rate["offline"]] == [1, 2, 4, 8, 16, 32, 64, 100]


def test_a_win_across_the_step_grid_is_claimed_only_past_what_the_other_served_when_it_broke():
    # A: 20 ms x (1 + c/8) a token, meets TPOT <= 64 ms up to 16 in flight. B: 7.5 % slower
    # a token: it met at 8 and broke at 16, so its capacity lies between the two.
    slo = metrics.Slo(ttft_ms=2000, tpot_ms=64)
    a = run_sweep([1, 2, 4, 8, 16, 32], slo=slo, tpot=0.02, knee=8)
    b = run_sweep([1, 2, 4, 8, 16, 32], slo=slo, tpot=0.0215, knee=8)
    assert (a.slo_point(), b.slo_point()) == (4, 3)  # concurrency 16 and 8
    (row,) = sweep.compare_at_slo(_serving(a, slo), _serving(b, slo), ("H200", "MI300X"))
    assert row["per_gpu"]["winner"] == "a" and row["per_gpu"]["ratio"] > 1.4
    # not the 1.44x between the SLO points: past the most B served, even breaking the SLO
    assert "H200 serves at least 7.1 % more per GPU" in row["text"]
    assert "than MI300X served even at concurrency 16, where it broke the SLO" in row["text"]


def test_a_lead_inside_the_others_step_bracket_is_one_the_data_cannot_tell():
    # A meets TPOT <= 35 ms at 4 in flight (133 tok/s) and breaks at 8 (200 tok/s); B's SLO
    # point serves 160 tok/s: more than A's SLO point, less than A served at 8.
    slo = metrics.Slo(ttft_ms=2000, tpot_ms=35)
    a = run_sweep([1, 2, 4, 8, 16], slo=slo, tpot=0.02, knee=8)
    b = run_sweep([1, 2, 4, 8, 16], slo=slo, tpot=0.014, knee=5.09)
    (row,) = sweep.compare_at_slo(_serving(a, slo), _serving(b, slo), ("H200", "MI300X"))
    assert row["per_gpu"]["winner"] is None and row["per_gpu"]["high"] < 1
    assert (
        "the data cannot tell within the step grid: H200 met the SLO at concurrency 4"
        in (row["text"])
    )


def test_a_client_tools_steps_without_request_times_neither_meet_nor_break_the_slo():
    records, duration = stream(4)
    stats = metrics.summarize(records, duration)  # a parsed file: stats, no requests
    s = sweep.Sweep("online", "concurrency", SLO, 0.9, stepping=True)
    s.add(sweep.point(concurrency=4, rate=None, stats=stats, records=[], slo=SLO, attainment=0.9))
    assert s.points[0]["meets_slo"] is None and not s.done
    (row,) = sweep.compare_at_slo(_serving(s), _serving(run_sweep([1, 2])))
    assert "no usable interval (a client tool's file carries no per-request times)" in row["text"]


def test_a_curve_that_failed_requests_says_so_not_that_it_never_met_the_slo():
    s = sweep.Sweep("online", "concurrency", SLO, 0.9, stepping=True)
    records, duration = stream(1)
    records[0].error, records[0].token_times = "no answer before the case's time limit", []
    stats = metrics.summarize(records, duration)
    s.add(
        sweep.point(concurrency=1, rate=None, stats=stats, records=records, slo=SLO, attainment=0.9)
    )
    assert s.stopped["reason"] == "requests failed at concurrency 1"
    (row,) = sweep.compare_at_slo(_serving(s), _serving(run_sweep([1, 2])), ("A", "B"))
    assert "A had failed requests at concurrency 1" in row["text"]
