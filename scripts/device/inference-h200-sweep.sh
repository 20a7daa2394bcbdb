#!/bin/bash
# inference-bench's serving sweep on a GPU host, then its KV-memory figures checked
# against torch's allocator (docs/inference.md), as run through the device tool on
# nvidia-h200:  bash scripts/device/inference-h200-sweep.sh chat|long
# .whl holds `transformers serve`'s wheels and jsonschema's (the device tool's README).
set -u
export PYTHONUNBUFFERED=1
name=${1:?chat or long}
OUT=${OUT:-/tmp/inference-sweep-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir .whl/*.whl || exit 1
export PYTHONPATH=$PWD
dir="$OUT/sweep-h200-$name"
# cut short before the call's limit so that what ran still comes back; each log line
# gets the second it was written (where the time goes, when a sweep does not fit)
timeout -s INT "${LIMIT_S:-530}" python3 -m stack run inference-bench \
  --params "scripts/device/inference-h200-sweep-$name.json" --out "$dir" 2>&1 |
  while IFS= read -r line; do printf '%s %s\n' "$(date +%s)" "$line"; done >"$dir.log"
echo "stack rc=${PIPESTATUS[0]}"
grep -o '"message": *"[^"]*c=[^"]*"' "$dir.log" | tail -n 20
python3 bench/inference_kv_memory.py "$dir/result.json" >"$dir/kv-memory.json"
echo "kv rc=$?"
# what comes back: the result, the requests, the check (the device returns few files)
mkdir -p "$OUT/back" && cp "$dir/result.json" "$dir/kv-memory.json" "$dir.log" "$OUT/back/"
cp "$dir/inference-bench/requests.csv" "$OUT/back/" 2>/dev/null
find "$OUT" -mindepth 1 -maxdepth 1 ! -name back -exec rm -rf {} +
mv "$OUT/back" "$OUT/sweep-h200-$name"
