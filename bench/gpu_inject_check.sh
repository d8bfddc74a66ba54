#!/bin/bash
# The shim's states in one running CUDA job (docs/gpu.md), on a GPU machine,
# as root, with gpuprof and its CUPTI shim built on the project's machine:
#
#   bench/gpu_inject_check.sh BIN_DIR OUT_DIR
#
# Per model, bench/gpu_inject_check.py runs its phases in one process
# started WITHOUT CUDA_INJECTION64_PATH; between them this script:
#   before dormant:        record -p --inject-cupti -d 1 (loads the shim into
#                          the running job, traces 1 s of its idle wait,
#                          detaches: the shim goes dormant);
#   before traced:         record -p attached (the recording holds the
#                          traced phase alone: the job waits idle around it);
#   before dormant_again:  that recording stopped (SIGINT);
#   before torch:          nothing (torch.profiler takes CUPTI in-process,
#                          the dormant shim holding none of it).
# OUT_DIR gets log.txt and gpu_inject_check.tar.gz; read them with
# bench/gpu_inject_compare.py. A dry run without a GPU:
# GPU_CHECK_DEVICE=cpu GPU_CHECK_STEPS=3 GPUPROF_CUPTI_LIBRARY=<stand-in>.
set -u
DEVICE=${GPU_CHECK_DEVICE:-cuda}
BIN=$(realpath "$1")
OUT=$(realpath "$2")
HERE=$(dirname "$(realpath "$0")")
GP=$BIN/gpuprof
PY=${GPU_CHECK_PYTHON:-python3}
WORK=$(mktemp -d)
mkdir -p "$OUT"
exec > >(tee "$OUT/log.txt") 2>&1

step() { echo; echo "=== $* ($(date -u +%T))"; }
wait_file() { for _ in $(seq 1200); do [ -e "$1" ] && return 0; sleep 0.1; done; echo "TIMEOUT waiting for $1"; return 1; }

step machine
uname -r; nvidia-smi -L 2>/dev/null
"$PY" -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda)'

run_model() {  # MODEL STEPS
  local model=$1 steps=$2 d=$WORK/$1
  mkdir -p "$d"
  step "$model: job started without the shim"
  timeout 400 "$PY" "$HERE/gpu_inject_check.py" "$model" "$steps" "$d" --device "$DEVICE" --warmup "${GPU_CHECK_WARMUP:-10}" &
  local job=$! pid
  for phase in base base_again dormant traced dormant_again torch; do
    if ! wait_file "$d/$phase.ready"; then kill $job; break; fi
    pid=$(cat "$d/$phase.ready")
    case $phase in
      dormant)
        step "$model: inject"
        timeout 120 "$GP" record -p "$pid" --inject-cupti -q -d 1 -o "$d/inject.gpuprof"; echo "inject rc=$?"
        grep -c gpuprof_cupti "/proc/$pid/maps" | sed 's/^/shim mappings: /' ;;
      traced)
        step "$model: record attached"
        timeout 300 "$GP" record -p "$pid" -q -o "$d/traced.gpuprof" 2>"$d/record.err" &
        recorder=$!
        for _ in $(seq 1200); do grep -q '^gpuprof: tracing ' "$d/record.err" && break; sleep 0.1; done
        cat "$d/record.err" ;;
      dormant_again)
        kill -INT $recorder; wait $recorder; echo "record rc=$?"; cat "$d/record.err"
        "$GP" report "$d/traced.gpuprof" --kernels --row-limit -1 >"$d/kernels.txt"
        "$GP" report "$d/traced.gpuprof" --sort-by self_cuda_time_total --row-limit -1 >"$d/table.txt"
        head -25 "$d/table.txt" ;;
    esac
    touch "$d/$phase.go"
  done
  wait $job; echo "job rc=$?"
}
run_model resnet18 "${GPU_CHECK_STEPS:-300}"
run_model transformer "${GPU_CHECK_STEPS:-100}"

step pack
rm -f "$WORK"/*/*.go "$WORK"/*/*.ready
tar -C "$WORK" -czf "$OUT/gpu_inject_check.tar.gz" .
ls -la "$OUT"
