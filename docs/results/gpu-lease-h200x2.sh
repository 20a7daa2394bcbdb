#!/bin/bash
# GPU leases on a host with 2 GPUs (docs/containers.md, "One job per GPU"), as run
# through the device tool on nvidia-h200-x2:  bash docs/results/gpu-lease-h200x2.sh
# Three blas-bench jobs, each asking for one NVIDIA GPU, go through a real Celery
# worker with three processes (more than the host has GPUs), on the embedded
# defaults (SQLite, filesystem broker) and the local executor. Expected: two run at
# once, each on its own GPU; the third waits, saying for which jobs, then runs on the
# GPU freed first. The Django side comes as wheels in .whl (README of the device tool):
# `pip download --no-deps --only-binary=:all: --python-version 3.12 --platform
# manylinux_2_28_x86_64 -d .whl` of requirements.txt's web/worker packages at their
# pins and what they need beyond the machine's image (kombu's amqp, vine, billiard,
# tzlocal; click-*; asgiref, sqlparse; jsonschema's referencing, rpds-py; pygal's
# importlib-metadata and lazy-importer; ...).
set -u
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
OUT=${OUT:-/tmp/gpu-lease-out}; mkdir -p "$OUT"
[ -n "${SKIP_WHEELS:-}" ] || python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir .whl/*.whl || exit 1
export DJANGO_SETTINGS_MODULE=config.settings.base ROCPATH_EXECUTOR=local
export ROCPATH_VAR_DIR=/tmp/rocpath-var; rm -rf "$ROCPATH_VAR_DIR"
nvidia-smi --query-gpu=index,uuid,name --format=csv,noheader | tee "$OUT/gpus.csv"
python3 manage.py migrate --no-input >/dev/null || exit 1
python3 manage.py bootstrap_demo >/dev/null || exit 1
python3 -m celery -A config worker -c 3 -n lease@%h --loglevel INFO --logfile "$OUT/worker.log" &
worker=$!
sleep 10
for i in 1 2 3; do
  python3 manage.py submit blas-bench --user demo --timeout 300 --wait \
    --hardware '{"gpu_vendor": "nvidia", "gpu_count": 1}' \
    --params @docs/results/gpu-lease-params.json >"$OUT/submit-$i.log" 2>&1 &
  sleep 0.5
done
wait $(jobs -p | grep -v "^$worker$")
python3 manage.py shell -c '
import json
from jobs.models import GpuLease, Job
jobs = []
for job in Job.objects.order_by("pk"):
    torch = ((job.summary or {}).get("backends") or {}).get("torch") or {}
    best = job.measurements.filter(case__m=8192, metric="throughput").first()
    jobs.append({
        "job": job.pk, "status": job.status, "error": job.error,
        "started_at": job.started_at.isoformat() if job.started_at else None,
        "finished_at": job.finished_at.isoformat() if job.finished_at else None,
        "device_uuid": (torch.get("device") or {}).get("uuid"),
        "telemetry_command": (torch.get("telemetry") or {}).get("command"),
        "bf16_8192_tflops": best.value if best else None,
        "gpu_events": [e.message for e in job.events.all() if "GPU" in e.message],
    })
print(json.dumps({"jobs": jobs, "leases_left": GpuLease.objects.count()}, indent=1))
' | tee "$OUT/gpu-lease-h200x2.json"
kill "$worker"; wait "$worker" 2>/dev/null
for f in "$OUT"/submit-*.log; do tail -n 3 "$f"; done
