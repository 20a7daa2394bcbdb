#!/bin/bash
# inference-bench through a real Celery worker on a GPU host (docs/inference.md), as run
# through the device tool on nvidia-h200:  bash scripts/device/inference-h200-worker.sh
# The embedded defaults (SQLite, filesystem broker), the local executor, one worker
# process; a job submitted with `manage.py submit --wait` asking for one NVIDIA GPU:
# Llama-3-8B shape, offline and online. Wheels (the device tool's README): .whl holds
# `transformers serve`'s (fastapi, uvicorn, openai, pydantic, ...), .whl-web the web and
# worker side: `pip download --only-binary=:all: --python-version 3.12 --platform
# manylinux_2_28_x86_64 ... -r requirements.txt` less numpy, scipy, weasyprint,
# gunicorn, psycopg and docker (not needed or already there), less what .whl has.
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/inference-worker-out}; mkdir -p "$OUT"
# transformers serve's own needs go into the interpreter's environment: the local executor
# gives a job a clean environment (no PYTHONPATH), and the job starts the server.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir .whl/*.whl || exit 1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl-web/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD DJANGO_SETTINGS_MODULE=config.settings.base ROCPATH_EXECUTOR=local
export ROCPATH_VAR_DIR=/tmp/rocpath-var; rm -rf "$ROCPATH_VAR_DIR"
python3 manage.py migrate --no-input >/dev/null || exit 1
python3 manage.py bootstrap_demo >/dev/null || exit 1
python3 -m celery -A config worker -c 1 -n infer@%h --loglevel INFO --logfile "$OUT/worker.log" &
worker=$!
# A GPU job is refused until a worker has announced its GPUs: wait for that line.
for _ in $(seq 600); do grep -q " announced: " "$OUT/worker.log" 2>/dev/null && break; sleep 0.2; done
python3 manage.py submit inference-bench --user demo --timeout 900 --wait \
  --hardware '{"gpu_vendor": "nvidia", "gpu_count": 1}' \
  --params @scripts/device/inference-h200-worker.json >"$OUT/submit.log" 2>&1
echo "submit rc=$?"
python3 manage.py shell -c '
import json
from jobs.models import Job
job = Job.objects.get()
cases = [{k: c.get(k) for k in ("mode", "concurrency", "peak_memory_bytes", "tokens_per_joule")}
         | {k: c["stats"][k] for k in ("completed", "failed", "output_throughput")}
         | {"ttft_p50_ms": c["stats"]["ttft_ms"]["p50"], "tpot_p50_ms": c["stats"]["tpot_ms"]["p50"]}
         for c in (job.summary or {}).get("cases", [])]
print(json.dumps({"job": job.pk, "status": job.status, "error": job.error,
                  "worker": job.worker, "executor": job.executor,
                  "measurements": job.measurements.count(),
                  "model": (job.summary or {}).get("model"), "cases": cases}, indent=1))
' | tee "$OUT/inference-h200-worker.json"
kill "$worker"; wait "$worker" 2>/dev/null
tail -n 5 "$OUT/submit.log"
