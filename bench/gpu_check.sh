#!/bin/bash
# gpuprof on a GPU machine (docs/gpu.md): one script, run as root there,
# with gpuprof and its CUPTI shim built on the project's machine and carried.
#
#   bench/gpu_check.sh BIN_DIR OUT_DIR
#
# BIN_DIR holds gpuprof and libgpuprof_cupti.so; OUT_DIR gets log.txt and
# gpu_check.tar.gz (the recordings, gpuprof's reports, torch.profiler's
# figures of the same steps, every run's step times). For each model of
# bench/gpu_check.py, runs in turn:
#   base      no profiler;
#   dormant   CUDA_INJECTION64_PATH set to the shim, no gpuprof attached;
#   gpuprof   the same, and `gpuprof record -p` attached after the warm-up
#             (the recording holds the timed steps alone);
#   sampling  `gpuprof record -p --no-ops -F 99` (CPU samples, no op probes);
#   torch     torch.profiler (CPU + CUDA activities) around the timed steps;
#   base2     no profiler again (drift between the first and last runs).
# Each step's time is wall time to torch.cuda.synchronize(); compare runs of
# one call only. docs/gpu.md reads the results (bench/gpu_compare.py).
# A dry run where there is no GPU: GPU_CHECK_DEVICE=cpu GPU_CHECK_STEPS=1
# GPU_CHECK_WARMUP=1.
set -u
DEVICE=${GPU_CHECK_DEVICE:-cuda}
BIN=$(realpath "$1")
OUT=$(realpath "$2")
HERE=$(dirname "$(realpath "$0")")
GP=$BIN/gpuprof
SHIM=$BIN/libgpuprof_cupti.so
WORK=$(mktemp -d)
mkdir -p "$OUT"
exec > >(tee "$OUT/log.txt") 2>&1

step() { echo; echo "=== $* ($(date -u +%T))"; }

step machine
uname -r
nvidia-smi -L
python3 -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0))'
ls -la /sys/kernel/btf/vmlinux
cat /proc/sys/kernel/perf_event_paranoid
find / -xdev -name 'libcupti.so*' 2>/dev/null | head -5

step calibrate
timeout 60 "$GP" calibrate -n 2 || echo "CALIBRATE FAILED rc=$?"

step smoke: launch mode, a 10-matmul command
timeout 120 "$GP" record -q -o "$WORK/smoke.gpuprof" -- python3 -c \
  'import torch; x = torch.rand(1000, 1000, device="'$DEVICE'"); [x @ x for _ in range(10)]; torch.cuda.synchronize()'
echo "rc=$?"
"$GP" report "$WORK/smoke.gpuprof" --kernels --row-limit 10
"$GP" report "$WORK/smoke.gpuprof" --sort-by self_cuda_time_total --row-limit 8

step "smoke: Python stacks and CPU samples (-F 99 --with-stack)"
timeout 120 "$GP" record -q -F 99 --with-stack -o "$WORK/stacks.gpuprof" -- python3 -c \
  'import torch; x = torch.rand(1000, 1000, device="'$DEVICE'")
def f(n):
    return [x @ x for _ in range(n)]
f(2000); torch.cuda.synchronize()'
echo "rc=$?"
"$GP" report "$WORK/stacks.gpuprof" --folded | awk '{print $NF "\t" $0}' | sort -rn | head -5
"$GP" report "$WORK/stacks.gpuprof" --folded --metric samples | awk '{print $NF "\t" $0}' | sort -rn | head -5

run_model() {  # MODEL STEPS
  local model=$1 steps=$2 d
  for run in base dormant gpuprof sampling torch base2; do
    d=$WORK/$model/$run
    mkdir -p "$d"
    step "$model $run"
    case $run in
      base|base2) timeout 300 python3 "$HERE/gpu_check.py" "$model" "$steps" "$d" --device "$DEVICE" --warmup "${GPU_CHECK_WARMUP:-10}" ;;
      dormant) CUDA_INJECTION64_PATH=$SHIM timeout 300 python3 "$HERE/gpu_check.py" "$model" "$steps" "$d" --device "$DEVICE" --warmup "${GPU_CHECK_WARMUP:-10}" ;;
      sampling)  # CPU samples alone (--no-ops -F 99): no op probes
        timeout 300 python3 "$HERE/gpu_check.py" "$model" "$steps" "$d" --device "$DEVICE" --warmup "${GPU_CHECK_WARMUP:-10}" --handshake &
        local sampled=$!
        for _ in $(seq 600); do [ -e "$d/ready" ] && break; sleep 0.1; done
        timeout 300 "$GP" record -p "$(cat "$d/ready")" -q --no-ops -F 99 -o "$d/run.gpuprof" 2>"$d/record.err" &
        local sampler=$!
        for _ in $(seq 600); do grep -q '^gpuprof: ' "$d/record.err" && break; sleep 0.1; done
        sleep 0.5
        touch "$d/go"
        wait $sampled; echo "target rc=$?"
        wait $sampler; echo "record rc=$?"
        cat "$d/record.err"
        ;;
      torch) timeout 300 python3 "$HERE/gpu_check.py" "$model" "$steps" "$d" --device "$DEVICE" --warmup "${GPU_CHECK_WARMUP:-10}" --torch-profiler ;;
      gpuprof)
        CUDA_INJECTION64_PATH=$SHIM timeout 300 python3 "$HERE/gpu_check.py" "$model" "$steps" "$d" --device "$DEVICE" --warmup "${GPU_CHECK_WARMUP:-10}" --handshake &
        local target=$!
        for _ in $(seq 600); do [ -e "$d/ready" ] && break; sleep 0.1; done
        timeout 300 "$GP" record -p "$(cat "$d/ready")" -q -o "$d/run.gpuprof" 2>"$d/record.err" &
        local recorder=$!
        for _ in $(seq 600); do grep -q '^gpuprof: tracing ' "$d/record.err" && break; sleep 0.1; done
        touch "$d/go"
        wait $target; echo "target rc=$?"
        wait $recorder; echo "record rc=$?"
        cat "$d/record.err"
        "$GP" report "$d/run.gpuprof" --kernels --row-limit -1 >"$d/kernels.txt"
        "$GP" report "$d/run.gpuprof" --launches --row-limit -1 >"$d/launches.txt"
        "$GP" report "$d/run.gpuprof" --sort-by self_cuda_time_total --row-limit -1 >"$d/table.txt"
        "$GP" report "$d/run.gpuprof" --sort-by self_cuda_time_total --row-limit -1 --raw-times >"$d/table-raw.txt"
        "$GP" report "$d/run.gpuprof" --row-limit -1 >"$d/table-cpu.txt"
        head -30 "$d/table.txt"
        ;;
    esac
  done
}
run_model resnet18 "${GPU_CHECK_STEPS:-200}"
run_model transformer "${GPU_CHECK_STEPS:-60}"

step pack
rm -f "$WORK"/*/*/go
tar -C "$WORK" -czf "$OUT/gpu_check.tar.gz" .
ls -la "$OUT"
