#!/usr/bin/env python3
"""Classify the return paths of every at::_ops::<op>::call in libtorch_cpu.

For each function: its `ret`s, and for each ret whether a stack-protector check
(`sub %fs:0x28,%reg` + `jne`) sits on the straight-line path before it with no
jump landing between that jne and the ret (then the jne is an emulated-probe
site every normal return passes through). Also reports the sp at that jne
relative to the entry sp (pushes + `sub $N,%rsp` of the prologue), tail jumps
out of the body, and the other jcc/jmp between the last call and the ret.

  epilogues.py [LIB] [--show NAME ...]
"""
import re, subprocess, sys, collections

LIB = "/usr/lib/x86_64-linux-gnu/libtorch_cpu.so.1.13.0"
args = sys.argv[1:]
if args and not args[0].startswith("--"):
    LIB = args.pop(0)
show = set(args[1:]) if args[:1] == ["--show"] else set()
# --sites FILE: write "name entry jne ret fp entry_sp_offset" per covered function

syms = []
for line in subprocess.run(["nm", "-D", "--defined-only", "-S", LIB], capture_output=True,
                           text=True).stdout.splitlines():
    p = line.split()
    if len(p) == 4 and re.match(r"_ZN2at4_ops\d+\w+4callE", p[3]):
        m = re.match(r"_ZN2at4_ops(\d+)", p[3])
        n = int(m.group(1)); name = p[3][m.end():m.end() + n]
        syms.append((int(p[0], 16), int(p[1], 16), name))
syms.sort()
lo, hi = syms[0][0], syms[-1][0] + syms[-1][1]
out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", "--start-address=%#x" % lo,
                      "--stop-address=%#x" % hi, LIB], capture_output=True, text=True).stdout
insns = {}
rx = re.compile(r"^\s*([0-9a-f]+):\s+(\S+)\s*(.*)$")
for line in out.splitlines():
    m = rx.match(line)
    if m:
        insns[int(m.group(1), 16)] = (m.group(2), m.group(3))
addrs = sorted(insns)
import bisect

def body(start, size):
    i = bisect.bisect_left(addrs, start)
    res = []
    while i < len(addrs) and addrs[i] < start + size:
        res.append((addrs[i],) + insns[addrs[i]]); i += 1
    return res

def target(ops):
    m = re.match(r"([0-9a-f]+)", ops)
    return int(m.group(1), 16) if m else None

sites = open(sys.argv[sys.argv.index("--sites") + 1], "w") if "--sites" in sys.argv else None
stats = collections.Counter()
windows = []  # (first byte after the canary jne, the ret): nothing may jump in here
sp_hist = collections.Counter()
for start, size, name in syms:
    b = body(start, size)
    # prologue frame size
    frame = 0
    for a, mn, ops in b[:16]:
        if mn == "push": frame += 8
        elif mn == "sub" and ops.endswith(",%rsp") and ops.startswith("$"):
            frame += int(ops[1:].split(",")[0], 16); break
        elif mn in ("call", "ret") or mn.startswith("j"): break
    fp = any(mn == "mov" and ops == "%rsp,%rbp" for a, mn, ops in b[:4])
    pushes_before_rbp = 0
    for a, mn, ops in b[:8]:
        if mn == "push" and ops == "%rbp": break
        if mn == "push": pushes_before_rbp += 1
    jump_targets = set()
    tail = []
    for a, mn, ops in b:
        if mn.startswith("j") or mn == "call":
            t = target(ops)
            if mn.startswith("j") and t is not None:
                if start <= t < start + size: jump_targets.add(t)
                else: tail.append((a, mn, t))
            if mn.startswith("j") and t is None and "*" in ops: tail.append((a, mn, ops))
    rets = [i for i, (a, mn, ops) in enumerate(b) if mn.startswith("ret")]
    stats["functions"] += 1
    stats["rets=%d" % len(rets)] += 1
    if tail: stats["has jumps leaving the body (cold/tail)"] += 1
    if any("*" in str(t[2]) for t in tail): stats["has indirect jmp"] += 1
    all_ok = bool(rets)
    for ri in rets:
        # walk back to the canary jne
        j = ri - 1; found = None; between = []
        while j >= 0 and ri - j < 40:
            a, mn, ops = b[j]
            if mn in ("jne", "jnz") and j >= 1 and "%fs:0x28" in b[j - 1][2]:
                found = j; break
            if mn == "call" or mn.startswith("ret") or mn == "jmp": break
            between.append((a, mn, ops)); j -= 1
        if found is None:
            all_ok = False; continue
        land = [a for a, _, _ in b[found + 1:ri + 1] if a in jump_targets]
        if land: all_ok = False
        windows.append((b[found][0] + 1, b[ri][0], name))
        if sites is not None and len(rets) == 1 and not land:
            # entry sp = rbp + 8 (+8 per push before push %rbp) or sp + frame
            off = 8 + 8 * pushes_before_rbp if fp else frame
            sites.write("%s %#x %#x %#x %d %#x\n" % (name, start, b[found][0], b[ri][0], fp, off))
    key = "every ret behind its own canary jne, no jump lands in between" if all_ok else "NOT covered"
    stats[key] += 1
    if all_ok: sp_hist[frame] += 1
    if all_ok: stats["  of which rbp-framed (entry sp = rbp+8 at the jne)" if fp else "  of which sp-framed (entry sp = sp+frame at the jne)"] += 1
    if name in show or (not all_ok and stats[key] <= 5 and show == {"*"}):
        print("==== %s  %#x size %#x  frame %#x  rets %d" % (name, start, size, frame, len(rets)))
        lastcall = max([i for i, (a, mn, o) in enumerate(b[:rets[-1]]) if mn == "call"] or [0]) if rets else 0
        for a, mn, ops in b[lastcall:rets[-1] + 1 if rets else len(b)]:
            print("   %x: %-6s %s%s" % (a, mn, ops[:70], "   <= jump target" if a in jump_targets else ""))
for k, v in sorted(stats.items()): print("%-62s %d" % (k, v))
print("frame sizes (entry_sp - sp at the canary jne) of covered functions, top 10:",
      ", ".join("%#x:%d" % kv for kv in sp_hist.most_common(10)))

if "--all-jumps" in sys.argv:
    # Any direct jmp/jcc/call anywhere in .text (cold parts included) whose
    # target lies after a canary jne and up to its ret would bypass the jne.
    windows.sort()
    starts = [w[0] for w in windows]
    p = subprocess.Popen("objdump -d --no-show-raw-insn -j .text %s | grep -P '\\t(j[a-z]+|call) +[0-9a-f]+ <'" % LIB,
                         shell=True, stdout=subprocess.PIPE, text=True)
    n = bad = 0
    for line in p.stdout:
        m = re.match(r"\s*([0-9a-f]+):\s+(\S+)\s+([0-9a-f]+) <", line)
        if not m: continue
        n += 1
        t = int(m.group(3), 16)
        i = bisect.bisect_right(starts, t) - 1
        if i >= 0 and windows[i][0] <= t <= windows[i][1]:
            bad += 1
            print("jump into epilogue window:", line.strip()[:120], windows[i][2])
    print("direct branches scanned in all of .text: %d; landing between a canary jne and its ret: %d" % (n, bad))
