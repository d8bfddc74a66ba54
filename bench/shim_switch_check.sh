#!/bin/bash
# The dormant CUPTI shim on a GPU machine (docs/cuda.md, "Dormant and
# active"; docs/gpu.md): run as root there with gpuprof and the shim built
# here and carried.
#
#   bench/shim_switch_check.sh BIN_DIR OUT_DIR
#
# 1. cost: the transformer training step of bench/gpu_check.py (launch
#    bound) with no profiler and with CUDA_INJECTION64_PATH set (the shim
#    dormant), alternated twice (base, dormant, base, dormant);
# 2. real CUPTI switched on and off: bench/shim_switch_job.py (matmuls) with
#    the shim, its own torch.profiler while dormant (prof1), `record -p -d 4`
#    (session A) with the job's torch.profiler inside it (prof2), then
#    `record -p -d 3` again (session B) and a last torch.profiler (prof3).
#    SHIM_CHECK_ORDER=tracer-first: session A with prof1 inside it, prof2
#    alone, session B with prof3 inside it. SHIM_CHECK_ORDER=spans-detach:
#    a 3 s profile of the job's (long1) that session A's detach cuts through,
#    prof1 alone, session B.
#    What the job's stderr, torch.profiler and both recordings say.
# A dry run where there is no GPU: SHIM_CHECK_DEVICE=cpu SHIM_CHECK_STEPS=0
# (no cost runs) PYTHON=/usr/bin/python3.
set -u
DEVICE=${SHIM_CHECK_DEVICE:-cuda}
PY=${PYTHON:-python3}
STEPS=${SHIM_CHECK_STEPS:-300}
BIN=$(realpath "$1")
OUT=$(realpath "$2")
HERE=$(dirname "$(realpath "$0")")
GP=$BIN/gpuprof
SHIM=$BIN/libgpuprof_cupti.so
mkdir -p "$OUT"
W=$(mktemp -d)
exec > >(tee "$OUT/log.txt") 2>&1
step() { echo; echo "=== $* ($(date -u +%T))"; }
wait_file() { for _ in $(seq 1200); do [ -e "$1" ] && return 0; sleep 0.05; done; echo "TIMEOUT waiting for $1"; return 1; }

step machine
nvidia-smi -L || true
$PY -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'

step cost: transformer step, $STEPS steps after 10
for run in $([ "$STEPS" = 0 ] || echo base dormant base2 dormant2); do
  mkdir -p "$W/cost/$run"
  case $run in
    base*) timeout 120 $PY "$HERE/gpu_check.py" transformer "$STEPS" "$W/cost/$run" --warmup 10 \
             --device "$DEVICE" >/dev/null ;;
    dormant*) CUDA_INJECTION64_PATH=$SHIM timeout 120 $PY "$HERE/gpu_check.py" transformer "$STEPS" \
                "$W/cost/$run" --warmup 10 --device "$DEVICE" >/dev/null 2>"$W/cost/$run/stderr" ;;
  esac
  echo "$run rc=$?"
done
[ "$STEPS" = 0 ] || $PY - "$W/cost" <<'PY'
import json, statistics, sys
med = {}
for run in ("base", "dormant", "base2", "dormant2"):
    with open(f"{sys.argv[1]}/{run}/steps.json") as f:
        data = json.load(f)
    times = data["steps"] if isinstance(data, dict) else data
    med[run] = statistics.median(times) * 1e3
    print(f"{run}: median {med[run]:.3f} ms over {len(times)} steps")
base = (med["base"] + med["base2"]) / 2
print(f"dormant / base: x{med['dormant'] / base:.4f} and x{med['dormant2'] / base:.4f} (baselines {med['base']:.3f}, {med['base2']:.3f} ms)")
PY
[ "$STEPS" = 0 ] || { echo "dormant job's stderr:"; cat "$W/cost/dormant/stderr"; }

step switching: a matmul job with the shim
J=$W/job
mkdir -p "$J"
CUDA_INJECTION64_PATH=$SHIM timeout 200 $PY "$HERE/shim_switch_job.py" "$J" "$DEVICE" 2>"$J/stderr" &
job=$!
wait_file "$J/ready" || { kill $job; exit 1; }
pid=$(cat "$J/ready")
# session NAME SECONDS PROF: `record -p -d SECONDS`, the job's torch.profiler
# (PROF) started 1 s into it.
session() {
  timeout 60 "$GP" record -p "$pid" -q -d "$2" -o "$W/$1.gpuprof" 2>"$W/$1.err" &
  local rec=$!
  for _ in $(seq 400); do grep -q '^gpuprof: tracing' "$W/$1.err" && break; sleep 0.05; done
  sleep 1
  touch "$J/$3"; wait_file "$J/$3.done"; echo "$3 (during session $1): torch.profiler GPU events $(cat "$J/$3.done")"
  wait $rec; echo "session $1 rc=$?"
}
alone() {  # PROF: the job's torch.profiler with no session attached
  touch "$J/$1"; wait_file "$J/$1.done"; echo "$1 (no session): torch.profiler GPU events $(cat "$J/$1.done")"
}
sleep 1
if [ "${SHIM_CHECK_ORDER:-}" = tracer-first ]; then
  session a 4 prof1; sleep 1; alone prof2; session b 3 prof3
elif [ "${SHIM_CHECK_ORDER:-}" = spans-detach ]; then
  # long1: 3 s of the job's profile, asked for 1 s into a 4 s session (the
  # first profile of a process takes a second or more to start): gpuprof
  # detaches in the middle of it. "EVENTS MATMULS ...": equal if it is whole.
  session a 4 long1; sleep 1; alone prof1
  timeout 60 "$GP" record -p "$pid" -q -d 2 -o "$W/b.gpuprof" 2>"$W/b.err"; echo "session b rc=$?"
else
  alone prof1; session a 4 prof2; sleep 1
  timeout 60 "$GP" record -p "$pid" -q -d 3 -o "$W/b.gpuprof" 2>"$W/b.err"; echo "session b rc=$?"
  sleep 1; alone prof3
fi
touch "$J/stop"; wait $job; echo "job rc=$?"
echo "--- job's stderr"; cat "$J/stderr"
for s in a b; do
  echo "--- session $s: gpuprof's stderr"; cat "$W/$s.err"
  echo "--- session $s: report --kernels"; "$GP" report "$W/$s.gpuprof" --kernels --row-limit 5
  echo "--- session $s: report --gpu (head)"; "$GP" report "$W/$s.gpuprof" --gpu 2>&1 | head -4
done
tar czf "$OUT/shim_switch_check.tar.gz" -C "$W" . 2>/dev/null
