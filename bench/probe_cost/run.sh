#!/bin/sh
# Probe-cost table: one line per probe placement, medians of 3 rounds of
# 200k calls each (override with ITERS=, REPS=). Needs root.
set -e
cd "$(dirname "$0")"
make -s
P="./build/probe_cost -n ${ITERS:-200000} -r ${REPS:-3}"
T=build/target
echo "# kernel $(uname -r)"
for l in p_push p_pushbx p_nop1 p_nop5 p_nop6 p_call p_jmp8 p_jmp32 p_jcc8 p_jcc32 p_jcc8t \
         p_movrr p_movret p_lea p_subrsp p_addrsp p_test p_popbx p_pop p_ret; do
	$P $T entry $l
done
$P -f x $T entry px_nop5     # nop5 across a page boundary: not optimisable
$P -f n $T entry pn_nop5     # nop5 as the first instruction of a function
$P $T ret victim             # uretprobe (entry trap on push + return trampoline)
$P $T entry+ret victim       # entry link + return link on the same function
$P $T session victim         # one uprobe session link
$P -f n $T ret victim_nop5entry
$P -f n $T entry+ret victim_nop5entry
$P $T emulret p_ret 2>/dev/null || echo "emulret    p_ret        load refused: this kernel rejects writes to pt_regs"
$P $T write-user
