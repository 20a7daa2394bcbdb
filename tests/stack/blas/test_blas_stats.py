"""The statistics and the adaptive repetition loop, on a fake clock (no real timing)."""

import pytest

from stack.blas.bench import rotate
from stack.blas.precisions import PRECISIONS, gemm_flops, get
from stack.blas.stats import LoopSettings, adaptive_loop, summarize


def test_summarize():
    s = summarize([1.0, 2.0, 3.0, 4.0])
    assert (s.n, s.median, s.mean, s.minimum, s.maximum) == (4, 2.5, 2.5, 1.0, 4.0)
    assert s.cv == pytest.approx(s.stdev / 2.5)
    assert summarize([5.0]).cv == 0.0
    with pytest.raises(ValueError):
        summarize([])


class FakeDevice:
    """time_blocks on a fake clock: each call takes per_call(i) seconds."""

    def __init__(self, per_call):
        self.now = 0.0
        self.calls = 0
        self.per_call = per_call
        self.batches = []

    def clock(self):
        return self.now

    def time_blocks(self, inner, count):
        self.batches.append((inner, count))
        out = []
        for _ in range(count):
            t = 0.0
            for _ in range(inner):
                t += self.per_call(self.calls)
                self.calls += 1
            self.now += t
            out.append(t)
        return out


def run(device, **settings):
    return adaptive_loop(device.time_blocks, LoopSettings(**settings), clock=device.clock)


def test_a_steady_operation_stops_on_cv_after_the_minimum_time():
    dev = FakeDevice(lambda i: 1e-3)
    t = run(dev, warmup_s=0.01, min_reps=10, min_time_s=0.05, target_cv=0.01, budget_s=1)
    assert t.stop_reason == "cv"
    assert len(t.samples_s) >= 10
    assert sum(t.samples_s) * t.inner >= 0.05 - 1e-9
    assert t.warmup_calls >= 10  # warm-up ran for warmup_s, in batches
    assert all(s == pytest.approx(1e-3) for s in t.samples_s)


def test_a_timing_s_summary_is_computed_once():
    t = run(FakeDevice(lambda i: 1e-3), warmup_s=0.01, min_reps=5, min_time_s=0.0)
    assert t.summary is t.summary and t.summary == summarize(t.samples_s)


def test_blocks_are_sized_so_short_calls_are_timed_in_groups():
    dev = FakeDevice(lambda i: 1e-6)
    t = run(dev, warmup_s=0.001, min_sample_s=1e-3, min_reps=5, min_time_s=0.0)
    assert t.inner in (1000, 1001)  # ceil(1e-3 / 1e-6) with float rounding
    assert t.samples_s[0] == pytest.approx(1e-6)


def test_samples_come_in_back_to_back_batches():
    dev = FakeDevice(lambda i: 1e-3)
    run(dev, warmup_s=0.0, warmup_min_calls=1, min_reps=10, min_time_s=0.2, budget_s=1)
    sampling = [count for inner, count in dev.batches[1:] if inner == 1]
    assert max(sampling) >= 10  # about 50 ms of calls per batch, not one sample per sync


def test_a_noisy_operation_runs_to_its_budget():
    dev = FakeDevice(lambda i: 1e-3 if i % 2 else 2e-3)
    t = run(dev, warmup_s=0.0, min_reps=4, min_time_s=0.0, target_cv=0.01, budget_s=0.1)
    assert t.stop_reason == "budget"
    assert t.summary.cv > 0.2


def test_max_reps_caps_the_samples():
    dev = FakeDevice(lambda i: 1e-3 if i % 2 else 3e-3)
    t = run(dev, warmup_s=0.0, min_reps=2, max_reps=7, min_time_s=0.0, budget_s=100)
    assert (t.stop_reason, len(t.samples_s)) == ("max_reps", 7)


def test_rotate_takes_the_input_sets_in_turn():
    def only():
        return "x"

    assert rotate([only]) is only  # one set: no wrapper on the timed path
    call = rotate([lambda: 0, lambda: 1, lambda: 2])
    assert [call() for _ in range(7)] == [0, 1, 2, 0, 1, 2, 0]


def test_loop_settings_read_the_job_params():
    s = LoopSettings.from_params({"case_budget_s": 7, "min_sampling_s": 0.3, "target_cv": 0.05})
    assert (s.budget_s, s.min_time_s, s.target_cv) == (7.0, 0.3, 0.05)


def test_precision_table():
    assert list(PRECISIONS) == ["fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8"]
    assert get("int8").unit == "TOPS" and get("bf16").unit == "TFLOP/s"
    assert get("int8").tolerance(8192) == 0.0
    # lower precision, looser tolerance; bigger k, looser tolerance
    tols = [get(p).tolerance(4096) for p in ("fp64", "fp32", "tf32", "bf16", "fp8")]
    assert tols == sorted(tols)
    assert get("fp32").tolerance(8192) > get("fp32").tolerance(64)
    assert get("bf16").footprint_bytes(8192, 8192, 8192) == 3 * 8192 * 8192 * 2
    assert get("fp8").footprint_bytes(10, 10, 10) == 10 * 10 * (1 + 1 + 2)
    assert gemm_flops(2, 3, 4, 5) == 240
    with pytest.raises(KeyError, match="known"):
        get("fp4")
