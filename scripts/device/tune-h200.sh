#!/usr/bin/env bash
# Diff, capture/replay and tune on the lent NVIDIA H200, as docs/profiling.md describes:
#   1. profile torch.matmul 4096^3 in bf16 and in fp16 (PyTorch profiler and ncu) and diff
#      the two profiles: the GEMM kernel named, by how much, how sure;
#   2. profile a plain-PyTorch transformer block (bf16) with record_shapes, list the GEMM
#      shapes it ran (python3 -m stack shapes) and replay exactly those with blas-bench;
#   3. tune those shapes (and a 4096^3 bf16 GEMM) with TunableOp (tune-gemm), before and
#      after timed interleaved, blas-bench's way.
# Run from the repository root on the device: `bash scripts/device/tune-h200.sh`.
# Needs python3 with torch (CUDA build), ncu on PATH (or in $CUDA_HOME/bin) for step 1;
# nothing else (`python3 -m stack` uses the standard library, torch and the GPU tools).
# Writes into $OUT (default ./tune-out), at most 8 files, one folder deep.
# SMALL=1 shrinks every size (a rehearsal on a CPU: `SMALL=1 bash scripts/device/tune-h200.sh`).
set -euo pipefail

if [ "${SMALL:-0}" = 1 ]; then N=256 B=2 S=64 D=128 H=4; else N=4096 B=8 S=512 D=1024 H=16; fi

OUT="${OUT:-$PWD/tune-out}"
mkdir -p "$OUT/diff" "$OUT/replay" "$OUT/tune"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda,
           torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU")'
command -v ncu >/dev/null && ncu --version | tail -1 || echo "ncu not on PATH"

job() {  # KIND NAME PARAMS_JSON: run one job; its result.json at $scratch/NAME/out
    local kind="$1" name="$2" params="$3" rc=0
    mkdir -p "$scratch/$name"
    printf '%s\n' "$params" >"$scratch/$name/params.json"
    echo "== $kind $name: $params"
    python3 -m stack run "$kind" --params "$scratch/$name/params.json" \
        --out "$scratch/$name/out" >"$scratch/$name/events.log" 2>&1 || rc=$?
    echo "== $kind $name: exit status $rc"
    tail -3 "$scratch/$name/events.log"
    python3 - "$scratch/$name/out/result.json" <<'PY' || true
import json, sys
result = json.load(open(sys.argv[1]))
print("status", result["status"], "|", result["error"] or "")
PY
}

LIMITS='"workload_timeout_s": 300, "profiler_timeout_s": 300, "trace_max_bytes": 4194304'

# 1. bf16 against fp16, the same GEMM: which kernel, how much slower or faster, how sure.
for dtype in bf16 fp16; do
    job profile "gemm-$dtype" \
        "{\"workload\": \"gemm\", \"m\": $N, \"n\": $N, \"k\": $N, \"dtype\": \"$dtype\",
          \"iterations\": 30, \"warmup\": 5, \"profilers\": [\"torch\", \"ncu\"], $LIMITS}"
    cp "$scratch/gemm-$dtype/out/result.json" "$OUT/diff/gemm-$dtype.json" || true
done
for profiler in torch ncu; do
    echo "== diff bf16 -> fp16 ($profiler)"
    if ! python3 -m stack diff "$OUT/diff/gemm-bf16.json" "$OUT/diff/gemm-fp16.json" \
        --profiler "$profiler" >"$scratch/diff-$profiler.json" 2>"$scratch/diff.err"; then
        head -1 "$scratch/diff.err"
        continue
    fi
    python3 - "$scratch/diff-$profiler.json" <<'PY' || true
import json, sys
diff = json.load(open(sys.argv[1]))
print("step", diff["baseline_step_ns"], "->", diff["current_step_ns"], "ns",
      f"({diff['step_change_pct']:+.2f} %)")
for k in diff["kernels"]:
    print(f"  {k['verdict']:9} sure={k['sure']!s:5} {k['matched']:7} {k['change_pct']}% "
          f"[{k['low_pct']}, {k['high_pct']}] {k['baseline_ns']} -> {k['current_ns']} ns "
          f"{(k['baseline_name'] or '')[:60]} -> {k['name'][:60]} {k['counters']}")
print("regression:", diff["regression"])
print("improvement:", diff["improvement"])
PY
done
cp "$scratch/diff-torch.json" "$OUT/diff/diff-torch.json" || true

# 2. The transformer block's GEMM shapes, captured from its profile, replayed by blas-bench.
job profile transformer-bf16 \
    "{\"workload\": \"transformer\", \"batch\": $B, \"seq_len\": $S, \"d_model\": $D,
      \"heads\": $H, \"dtype\": \"bf16\", \"iterations\": 10, \"warmup\": 3,
      \"profilers\": [\"torch\"], \"record_shapes\": true, $LIMITS}"
cp "$scratch/transformer-bf16/out/result.json" "$OUT/replay/transformer-profile.json" || true
python3 -m stack shapes "$OUT/replay/transformer-profile.json" >"$scratch/shapes.json" || true
python3 - "$scratch/shapes.json" "$scratch/replay-params.json" <<'PY' || true
import json, sys
found = json.load(open(sys.argv[1]))
for row in found["shapes"]:
    print(f"  shape {row['precision']} {row['transa']}{row['transb']} m={row['m']} n={row['n']} "
          f"k={row['k']} batch={row['batch']} x{row['calls']}")
params = found["replay"]["params"][0]
params.update(min_sampling_s=0.3, case_budget_s=2.0, telemetry=False)
json.dump(params, open(sys.argv[2], "w"))
print("replay params:", json.dumps(params))
PY
job blas-bench replay-bf16 "$(cat "$scratch/replay-params.json")"
cp "$scratch/replay-bf16/out/result.json" "$OUT/replay/blas-bench-replay.json" || true
python3 - "$OUT/replay/transformer-profile.json" "$OUT/replay/blas-bench-replay.json" <<'PY' || true
import json, sys
profile, bench = (json.load(open(p)) for p in sys.argv[1:3])
for row in profile["summary"]["top_kernels"]["torch"][:5]:
    print(f"  profile {row['calls']:3} x {row['mean_ns']:>10} ns {row['name'][:80]}")
for m in bench["measurements"]:
    if m["metric"] in ("time", "tflops"):
        c = m["case"]
        print(f"  replay  {c['precision']} {c['transa']}{c['transb']} {c['m']}x{c['n']}x{c['k']}"
              f" {m['metric']} {m['value']:.4g} {m['unit']}")
PY

# 3. TunableOp on those shapes and a 4096^3 bf16 GEMM; before/after interleaved.
python3 - "$scratch/shapes.json" "$scratch/tune-params.json" "$N" <<'PY' || true
import json, sys
shapes = [{k: r[k] for k in ("precision", "m", "n", "k", "batch", "transa", "transb")}
          for r in json.load(open(sys.argv[1]))["shapes"]]
n = int(sys.argv[3])
shapes.append({"precision": "bf16", "m": n, "n": n, "k": n})
json.dump({"shapes": shapes, "rounds": 3, "verbose": 3}, open(sys.argv[2], "w"))
PY
job tune-gemm tune-bf16 "$(cat "$scratch/tune-params.json")"
cp "$scratch/tune-bf16/out/result.json" "$OUT/tune/result.json" || true
cp "$scratch/tune-bf16/out/tune/tunableop_results.csv" "$OUT/tune/" 2>/dev/null || true
cp "$scratch/tune-bf16/out/tune/tunableop.log" "$OUT/tune/" 2>/dev/null || true
python3 - "$OUT/tune/result.json" <<'PY' || true
import json, sys
summary = json.load(open(sys.argv[1]))["summary"]
print("solutions", summary.get("solutions"), "| single candidate", summary.get("single_candidate"))
print(summary.get("single_candidate_note") or "")
print("validators", (summary.get("tuned_file") or {}).get("validators"))
for s in summary.get("speedups") or []:
    print(f"  {s['shape']}: speedup {s['speedup']} [{s['low']}, {s['high']}]")
PY
ls -la "$OUT"/*
