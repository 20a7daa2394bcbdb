#!/bin/bash
# The H200 validation of blas-bench (docs/blas-bench.md), as run through the
# device tool:  bash docs/results/h200-validation.sh   ($OUT: where results go)
# Steps (STEPS picks some): probe, the interleaved cross-check (the job vs
# Triton's do_bench and torch.utils.benchmark), the full sweep, a cold-cache
# sweep, and a job with corrupt_output (it must end failed). Each step has its
# own time limit so that one slow step cannot starve the others.
set -u
STEPS=${STEPS:-probe cross sweep cold corrupt}
W=/tmp/rocpath-h200; rm -rf "$W"; mkdir -p "$W"
OUT=${OUT:-$W/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
has() { case " $STEPS " in *" $1 "*) return 0;; esac; return 1; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv
python3 -c "import sys, torch, triton; print(sys.version.split()[0], torch.__version__, torch.version.cuda, triton.__version__)"
if has probe; then
  timeout 50 python3 -m stack run probe --out "$W/probe" >"$W/probe.events" 2>"$W/probe.err"; echo "probe rc=$?"
  cp "$W/probe/result.json" "$OUT/probe-h200.json"
fi
if has cross; then
  timeout "${CROSS_S:-230}" python3 -m stack.blas.crosscheck run --out "$W/cross" --rounds "${ROUNDS:-3}" --size 8192 --bandwidth-mib 1024; echo "crosscheck rc=$?"
  [ -f "$W/cross/crosscheck.json" ] || python3 -m stack.blas.crosscheck compare --out "$W/cross"
  cp "$W/cross/crosscheck.json" "$OUT/crosscheck-h200.json"
fi
if has sweep; then
  timeout "${SWEEP_S:-210}" python3 -m stack run blas-bench --params docs/results/blas-bench-h200-params.json --out "$W/bench" >"$W/bench.events" 2>"$W/bench.err"; echo "sweep rc=$?"
  cp "$W/bench/result.json" "$OUT/blas-bench-h200.json"
  cp "$W/bench/blas-bench/telemetry-nvidia-smi.csv" "$OUT/telemetry-h200.csv"
fi
if has cold; then
  timeout 40 python3 -m stack run blas-bench --params docs/results/blas-bench-h200-cold-params.json --out "$W/cold" >"$W/cold.events" 2>"$W/cold.err"; echo "cold rc=$?"
  cp "$W/cold/result.json" "$OUT/blas-bench-h200-cold.json"
fi
if has corrupt; then
  timeout 40 python3 -m stack run blas-bench --params docs/results/blas-bench-h200-corrupt-params.json --out "$W/corrupt" >"$W/corrupt.events" 2>"$W/corrupt.err"; echo "corrupt rc=$? (1 expected: the check must fail)"
  cp "$W/corrupt/result.json" "$OUT/blas-bench-h200-corrupt.json"
fi
(cd "$W" && tar czf "$OUT/logs.tgz" --exclude='*.csv' --exclude='probe' ./*.err ./*.events cross 2>/dev/null)
[ -f "$W/bench/result.json" ] && python3 -m stack.blas.report "$W/bench/result.json" | cut -c1-220 | head -150
