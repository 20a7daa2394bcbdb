#!/usr/bin/env bash
# blas-bench's inputs on the lent NVIDIA H200 (issue 15), two measurements:
#   1. the crosscheck: the real job (default inputs, normal, drawn in each precision) against
#      an independent reference (Triton do_bench, torch.utils.benchmark) with full-entropy
#      inputs of its own, every precision at 8192^3, interleaved rounds;
#   2. what the data does to throughput: the same job with inputs normal, uniform,
#      small-int and zeros, rounds interleaved, at 8192^3 for fp64 bf16 fp16 fp8 int8.
# Run from the repository root on the device: `bash scripts/device/blas-inputs-h200.sh`.
# Needs python3 with torch (CUDA build), Triton for do_bench. Writes into $OUT.
set -euo pipefail
OUT="${OUT:-$PWD/blas-inputs-out}"
ROUNDS="${ROUNDS:-2}"
mkdir -p "$OUT"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda,
           torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU")'

python3 -m stack.blas.crosscheck run --out "$scratch/crosscheck" --rounds "$ROUNDS" --size 8192
cp "$scratch/crosscheck/crosscheck.json" "$OUT/crosscheck.json"

for round in $(seq 1 "$ROUNDS"); do
    order="normal uniform small-int zeros"
    [ $((round % 2)) -eq 0 ] && order="zeros small-int uniform normal"
    for inputs in $order; do
        name="$inputs-$round"
        cat >"$scratch/$name.json" <<JSON
{"families": ["gemm"], "backends": ["torch"], "device": "cuda", "sizes": [8192],
 "precisions": ["fp64", "bf16", "fp16", "fp8", "int8"], "inputs": "$inputs",
 "environment": false, "case_budget_s": 1.5}
JSON
        echo "== $name"
        python3 -m stack run blas-bench --params "$scratch/$name.json" --out "$scratch/$name" \
            >"$scratch/$name.log" 2>&1 || { tail -20 "$scratch/$name.log"; }
        cp "$scratch/$name/result.json" "$scratch/inputs-$name.json"
    done
done

python3 - "$scratch" "$OUT" <<'PY'
import glob, json, statistics, sys
scratch, out = sys.argv[1], sys.argv[2]
rates: dict = {}
runs = []
for path in sorted(glob.glob(f"{scratch}/inputs-*.json")):
    doc = json.load(open(path))
    runs.append({"file": path.rsplit("/", 1)[-1], "status": doc["status"], "error": doc["error"],
                 "throughput": [m for m in doc["measurements"] if m["metric"] == "throughput"],
                 "tables": doc["summary"].get("tables", {}).get("gemm")})
    for m in doc["measurements"]:
        if m["metric"] == "throughput":
            key = (m["case"]["precision"], m["case"]["inputs"])
            rates.setdefault(key, []).append(m["value"])
table = {}
for (precision, inputs), values in sorted(rates.items()):
    table.setdefault(precision, {})[inputs] = statistics.median(values)
for precision, row in table.items():
    normal = row.get("normal")
    cells = [f"{k} {v:.1f}" + (f" ({(v / normal - 1) * 100:+.1f} %)" if normal and k != "normal" else "")
             for k, v in row.items()]
    print(f"{precision:5}", " | ".join(cells))
json.dump({"median_rate": table, "runs": runs}, open(f"{out}/inputs.json", "w"), indent=1)
PY
ls -la "$OUT"
