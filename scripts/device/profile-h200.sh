#!/usr/bin/env bash
# Profile on the lent NVIDIA H200 with the profile kind, as docs/profiling.md describes:
#   1. torch.matmul bf16 4096^3 under the PyTorch profiler and Nsight Compute;
#   2. a plain-PyTorch transformer block (bf16, batch 8 x 512 tokens, width 1024, 16 heads)
#      under both.
# Run from the repository root on the device: `bash scripts/device/profile-h200.sh`.
# Needs python3 with torch (CUDA build) and ncu on PATH (or in $CUDA_HOME/bin); nothing
# else: `python3 -m stack run` uses the standard library, torch and the GPU tools only
# (no Django, no jsonschema, no numpy). Writes into $OUT (default ./profile-out), at most
# 8 files, one folder deep: result.json, the trimmed trace, ncu's CSV and the log of each run.
set -euo pipefail

OUT="${OUT:-$PWD/profile-out}"
mkdir -p "$OUT"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda,
           torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU")'
command -v ncu >/dev/null && ncu --version | tail -1 || echo "ncu not on PATH"

profile() {  # NAME PARAMS_JSON
    local name="$1" params="$2" rc=0
    mkdir -p "$scratch/$name" "$OUT/$name"
    printf '%s\n' "$params" >"$scratch/$name/params.json"
    echo "== $name: $params"
    python3 -m stack run profile --params "$scratch/$name/params.json" --out "$scratch/$name/out" \
        >"$OUT/$name/events.log" 2>&1 || rc=$?
    echo "== $name: exit status $rc"
    tail -3 "$OUT/$name/events.log"
    cp "$scratch/$name/out/result.json" "$OUT/$name/result.json" 2>/dev/null || true
    cp "$scratch/$name/out/profile/trace.json" "$OUT/$name/trace.json" 2>/dev/null || true
    cp "$scratch/$name/out/profile/ncu.csv" "$OUT/$name/ncu.csv" 2>/dev/null || true
    python3 - "$OUT/$name/result.json" <<'PY' || true
import json, sys
result = json.load(open(sys.argv[1]))
summary = result["summary"]
print("status", result["status"], result["error"] or "", "| ran", summary.get("ran"),
      "| unavailable", summary.get("unavailable"), "| step ms", summary.get("step_time_ms"))
for profiler, rows in summary.get("top_kernels", {}).items():
    for row in rows[:5]:
        counters = {k: row[k] for k in ("occupancy_pct", "sm_throughput_pct",
                                         "dram_throughput_pct", "l2_hit_pct") if row[k] is not None}
        print(f"  {profiler:5} {row['share_pct']:6}% {row['calls']:4} x {row['mean_ns']:>11} ns "
              f"{row['name'][:90]} {counters}")
PY
}

# 15 MiB of trace: the device tool brings back files of at most 16 MiB.
LIMITS='"workload_timeout_s": 300, "profiler_timeout_s": 300, "trace_max_bytes": 15728640'
profile gemm-bf16-4096 \
    "{\"workload\": \"gemm\", \"m\": 4096, \"n\": 4096, \"k\": 4096, \"dtype\": \"bf16\",
      \"iterations\": 20, \"warmup\": 5, \"profilers\": [\"torch\", \"ncu\"], $LIMITS}"
profile transformer-bf16 \
    "{\"workload\": \"transformer\", \"batch\": 8, \"seq_len\": 512, \"d_model\": 1024,
      \"heads\": 16, \"dtype\": \"bf16\", \"iterations\": 10, \"warmup\": 3,
      \"profilers\": [\"torch\", \"ncu\"], $LIMITS}"
ls -la "$OUT"/*
