from jobs.models import Measurement
from portal.kinds.blas_bench import gemm_charts
from tests.factories import make_job


def _m(job, metric, value, **case):
    return Measurement.objects.create(
        job=job,
        benchmark="gemm",
        case=case,
        metric=metric,
        unit="TFLOP/s",
        value=value,
        better="higher",
    )


def test_gemm_charts_draw_throughput_and_pct_of_peak_per_backend_and_precision(team):
    job = make_job(team, kind="blas-bench", status="succeeded")
    for n, v in ((1024, 90.0), (4096, 600.0), (8192, 780.0)):
        _m(job, "throughput", v, m=n, n=n, k=n, backend="torch", precision="bf16")
        _m(job, "pct_of_peak", v / 989.4 * 100, m=n, n=n, k=n, backend="torch", precision="bf16")
    _m(job, "throughput", 50.0, m=8192, n=8192, k=8192, backend="torch", precision="fp32")
    _m(job, "time", 1.2, m=8192, n=8192, k=8192, backend="torch", precision="fp32")
    charts = gemm_charts(Measurement.objects.filter(job=job))
    assert len(charts) == 2
    assert "torch bf16" in charts[0] and "torch fp32" in charts[0]
    assert "% of peak" in charts[1]


def test_no_gemm_measurements_draw_no_chart(team):
    job = make_job(team, kind="noop", status="succeeded")
    Measurement.objects.create(
        job=job, benchmark="noop", metric="sleep_s", unit="s", value=0.1, better="lower"
    )
    assert gemm_charts(Measurement.objects.filter(job=job)) == []
