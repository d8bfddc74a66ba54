#!/bin/sh
# Exit probes on the stack-protector jne of every at::_ops::*::call in a real
# PyTorch loop: checks that the entry sp recomputed at the jne matches the sp
# seen by the entry probe, and prices none / entry-only / entry+jne / entry+ret.
set -e
cd "$(dirname "$0")"
make -s
LIB=/usr/lib/x86_64-linux-gnu/libtorch_cpu.so.1.13.0
[ -s build/torch_sites.txt ] || python3 epilogues.py $LIB --sites build/torch_sites.txt >/dev/null
for r in 1 2 3; do
	for m in none entry jne ret; do
		./build/probe_cost torch $m build/torch_sites.txt $LIB /usr/bin/python3 torch_workload.py ${ITERS:-2000}
	done
done
