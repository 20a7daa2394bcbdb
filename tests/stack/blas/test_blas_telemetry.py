"""GPU telemetry: nvidia-smi lines, amd-smi / rocm-smi JSON, per-case windows and flags."""

import json
import time

import pytest
from stack_helpers import make_tool

from stack.blas import samples, telemetry
from tests.waits import START_S, wait_until


def _stamp(t):
    return time.strftime("%Y/%m/%d %H:%M:%S", time.localtime(t)) + f".{int(t % 1 * 1000):03d}"


def test_nvidia_line_with_timestamp_and_reasons():
    now = time.time()
    sample = samples.parse_nvidia_line(f"{_stamp(now)}, 1755, 3201, 699.10, 63, 0x0000000000000004")
    assert sample.t == pytest.approx(now, abs=0.002)
    assert (sample.sm_clock_mhz, sample.mem_clock_mhz, sample.power_w) == (1755, 3201, 699.1)
    assert sample.temperature_c == 63 and sample.reasons == ["sw_power_cap"]


def test_nvidia_line_odd_values():
    assert samples.parse_nvidia_line("not, a, data, line") is None
    sample = samples.parse_nvidia_line("garbage, 1980, [N/A], [N/A], 40, 0x1", fallback_t=5.0)
    assert sample.t == 5.0 and sample.power_w is None and sample.reasons == ["gpu_idle"]
    assert samples.decode_reasons(0x44) == ["sw_power_cap", "hw_thermal_slowdown"]
    assert samples.decode_reasons(0x1000) == ["0x1000"]
    assert samples.decode_reasons(0) == []


AMD_SMI_7 = {
    "gpu_data": [
        {
            "gpu": 0,
            "power": {
                "socket_power": {"value": 712, "unit": "W"},
                "gfx_voltage": {"value": 850, "unit": "mV"},
                "throttle_status": "THROTTLED",
            },
            "clock": {
                "gfx_0": {"clk": {"value": 1893, "unit": "MHz"}, "max_clk": {"value": 2100}},
                "mem_0": {"clk": {"value": 1300, "unit": "MHz"}},
            },
            "temperature": {
                "edge": {"value": 51, "unit": "C"},
                "hotspot": {"value": 78, "unit": "C"},
            },
        }
    ]
}
AMD_SMI_6 = [
    {
        "gpu": 0,
        "power": {"average_socket_power": 402, "throttle_status": "UNTHROTTLED"},
        "clock": {"gfx_0": {"clk": 2100}, "mem_0": {"clk": 1300}},
        "temperature": {"edge": 40, "hotspot": 55, "mem": 50},
    }
]
ROCM_SMI = {
    "card0": {
        "Average Graphics Package Power (W)": "302.0",
        "sclk clock speed:": "(1700Mhz)",
        "mclk clock speed:": "(1600Mhz)",
        "Temperature (Sensor edge) (C)": "45.0",
        "Temperature (Sensor junction) (C)": "61.0",
    }
}


@pytest.mark.parametrize(
    ("payload", "clock", "mem", "power", "temp", "throttled"),
    [
        (AMD_SMI_7, 1893, 1300, 712, 78, True),
        (AMD_SMI_6, 2100, 1300, 402, 55, False),
        (ROCM_SMI, 1700, 1600, 302, 61, False),
    ],
)
def test_amd_json_shapes(payload, clock, mem, power, temp, throttled):
    text = "WARNING: User is missing the following required groups: render\n" + json.dumps(payload)
    sample = samples.parse_amd_json(text, 1.0)
    assert (sample.sm_clock_mhz, sample.mem_clock_mhz) == (clock, mem)
    assert (sample.power_w, sample.temperature_c) == (power, temp)
    assert ("throttled" in sample.reasons) is throttled


def test_amd_json_garbage():
    assert samples.parse_amd_json("ERROR: no GPU", 0.0) is None
    assert samples.parse_amd_json("[]", 0.0) is None


def _samples(clocks, reasons=(), step=1.0):
    return [
        samples.Sample(
            t=i * step, sm_clock_mhz=c, power_w=600.0, temperature_c=60.0, reasons=list(reasons)
        )
        for i, c in enumerate(clocks)
    ]


def test_window_summary_flags_throttling_and_unsteady_clocks():
    steady = samples.summarize_window(_samples([1980, 1980, 1965], ["gpu_idle"]))
    assert not steady["throttled"] and not steady["clock_unstable"]
    assert steady["sm_clock_mhz"] == {"median": 1980, "min": 1965, "max": 1980}
    capped = samples.summarize_window(_samples([1980, 1500, 1530], ["sw_power_cap"]))
    assert capped["throttled"] and capped["throttle_reasons"] == ["sw_power_cap"]
    assert capped["clock_unstable"] and capped["clock_spread"] == pytest.approx(480 / 1980)


def test_window_picks_the_samples_of_a_case_or_the_nearest_one():
    sampler = telemetry.Sampler(100)
    for sample in _samples([1000, 1100, 1200, 1300, 1400], step=0.1):
        sampler._add(sample)
    assert [s.sm_clock_mhz for s in sampler.window(0.1, 0.31)] == [1100, 1200, 1300]
    # a case shorter than the interval gets the nearest sample...
    assert [s.sm_clock_mhz for s in sampler.window(0.24, 0.245)] == [1200]
    # ...but not one from long before or after it
    assert sampler.window(10.0, 11.0) == []
    assert sampler.csv_text().count("\n") == 6


FAKE_NVIDIA_SMI = r"""
args = sys.argv[1:]
query = next(a for a in args if a.startswith("--query-gpu="))
if "clocks_throttle_reasons" in query:
    print('Field "clocks_throttle_reasons.active" is not a valid field to query.')
    sys.exit(2)
if any(a == "--id=GPU-refused" for a in args):
    print("No devices were found"); sys.exit(6)
loop = "-lms" in args
i = 0
while True:
    now = time.time()
    stamp = time.strftime("%Y/%m/%d %H:%M:%S", time.localtime(now)) + ".%03d" % int(now % 1 * 1000)
    print(f"{stamp}, {1980 - 100 * (i % 2)}, 3201, {600 + i}, 60, 0x4", flush=i % 5 == 0)
    if not loop:
        break
    i += 1
    time.sleep(0.02)
"""


@pytest.mark.process
def test_nvidia_smi_sampler_against_a_fake_driver(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    make_tool(bin_dir, "nvidia-smi", FAKE_NVIDIA_SMI)
    monkeypatch.setenv("PATH", str(bin_dir))
    sampler = telemetry.make_sampler("nvidia", 0, "GPU-refused", 20)
    sampler.start()
    t0 = time.time()
    assert wait_until(lambda: len(sampler.samples) >= 5, START_S)  # the fake tool started twice
    t1 = time.time()
    sampler.stop()
    info = sampler.describe()
    # the old field name was refused, and so was the UUID: index 0 and the new name were used
    assert "clocks_event_reasons.active" in info["command"] and "--id=0" in info["command"]
    assert info["error"] is None and info["samples"] >= 5
    window = samples.summarize_window(sampler.window(t0, t1))
    assert window["throttled"] and window["sm_clock_mhz"]["min"] == 1880


def test_samplers_without_tools_say_why(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("ROCM_PATH", str(tmp_path / "no-rocm"))
    assert "nvidia-smi not found" in telemetry.make_sampler("nvidia", 0, None, 100).error
    assert "amd-smi nor rocm-smi" in telemetry.make_sampler("amd", 0, None, 100).error
    cpu = telemetry.make_sampler(None, 0, None, 100)
    assert cpu.source == "none" and "CPU run" in cpu.error


@pytest.mark.process
def test_amd_smi_polling_sampler_against_a_fake_tool(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    body = f"import json\nprint(json.dumps({AMD_SMI_7!r}))"
    make_tool(bin_dir, "amd-smi", body)
    monkeypatch.setenv("PATH", str(bin_dir))
    sampler = telemetry.make_sampler("amd", 0, None, 200)
    assert sampler.source == "amd-smi" and "metric" in sampler.command
    sampler.start()
    assert wait_until(lambda: sampler.samples, START_S)
    sampler.stop()
    assert sampler.samples and sampler.samples[0].power_w == 712


def test_a_job_shown_only_its_leased_gpu_samples_that_gpu_by_its_host_number(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    make_tool(bin_dir, "amd-smi", "print('{}')")
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setenv("ROCR_VISIBLE_DEVICES", "2,3")  # device 1 in the job is the host's 3
    sampler = telemetry.make_sampler("amd", 1, None, 200)
    assert " metric -g 3 " in sampler.command
    assert telemetry.host_gpu_index("nvidia", 0, {"CUDA_VISIBLE_DEVICES": "5"}) == 5
    assert telemetry.host_gpu_index("nvidia", 0, {"CUDA_VISIBLE_DEVICES": "GPU-ab12"}) == 0
    assert telemetry.host_gpu_index("amd", 2, {}) == 2


def test_a_case_s_telemetry_measurements_use_the_window_summary_s_median():
    from stack.blas.records import measurements_for, summary_row
    from stack.blas.results import CaseResult
    from stack.blas.stats import Timing

    result = CaseResult(
        family="gemm",
        backend="torch",
        case={"backend": "torch", "precision": "bf16", "m": 64, "n": 64, "k": 64},
        timing=Timing([1e-3] * 3, 1, 3, "cv", 0.0, 1.0),
        work=2.0 * 64**3,
    )
    window = _samples([1500, 1600, 0, 1700, 1900])
    window[2].sm_clock_mhz = float("nan")  # an unreadable value is no reading
    result.telemetry = samples.summarize_window(window)
    assert "reasons" not in result.telemetry
    clock = next(m for m in measurements_for(result) if m.metric == "sm_clock")
    # four readings: the median is the mean of the middle two, not the upper one
    assert clock.value == 1650 and clock.samples == [1500, 1600, 1700, 1900]
    assert clock.value == summary_row(result, 0.02)["telemetry"]["sm_clock_mhz"]["median"]
