#!/usr/bin/env bash
# The demo: gpuprof launches torch.profiler's recipe workload (torchvision's
# resnet18 on a batch of 5 images) with input shapes and memory recorded,
# and prints the recipe's tables: sort_by="cpu_time_total", row_limit=10;
# then grouped by input shape; then by self CPU memory; then, from a second
# recording with --with-modules, the layer table (report --modules).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh >&2
if [[ $(id -u) -ne 0 ]]; then
  echo "demo: gpuprof record needs root for BPF; run: sudo $0" >&2
  exit 1
fi
out=${GPUPROF_DEMO_OUTPUT:-build/demo.gpuprof}
build/gpuprof record -o "$out" --record-shapes --profile-memory \
  --sort-by cpu_time_total --row-limit 10 -- /usr/bin/python3 scripts/demo_resnet18.py
echo
echo "# gpuprof report $out --group-by-input-shape --sort-by cpu_time_total --row-limit 10"
build/gpuprof report "$out" --group-by-input-shape --sort-by cpu_time_total --row-limit 10
echo
echo "# gpuprof report $out --sort-by self_cpu_memory_usage --row-limit 10"
build/gpuprof report "$out" --sort-by self_cpu_memory_usage --row-limit 10
echo
# torchprof's layer table: a second recording of the same workload, with
# each op's module call (docs/modules.md).
modules_out=${out%.gpuprof}-modules.gpuprof
echo "# gpuprof record -o $modules_out --with-modules -q -- ...; gpuprof report $modules_out --modules --depth 2"
build/gpuprof record -o "$modules_out" --with-modules -q -- /usr/bin/python3 scripts/demo_resnet18.py > /dev/null
build/gpuprof report "$modules_out" --modules --depth 2
echo
echo "# gpuprof report $modules_out --modules --show-events --module-paths ResNet.layer1.0"
build/gpuprof report "$modules_out" --modules --show-events --module-paths ResNet.layer1.0
