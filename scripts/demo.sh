#!/usr/bin/env bash
# The demo: gpuprof launches torch.profiler's recipe workload (torchvision's
# resnet18 on a batch of 5 images) and prints the operator table, sorted and
# cut as the recipe does: sort_by="cpu_time_total", row_limit=10.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh >&2
if [[ $(id -u) -ne 0 ]]; then
  echo "demo: gpuprof record needs root for BPF; run: sudo $0" >&2
  exit 1
fi
out=${GPUPROF_DEMO_OUTPUT:-build/demo.gpuprof}
exec build/gpuprof record -o "$out" --sort-by cpu_time_total --row-limit 10 \
  -- /usr/bin/python3 scripts/demo_resnet18.py
