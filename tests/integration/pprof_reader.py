"""A pprof profile read by the npm pprof-format decoder
(tests/viewer/decode_pprof.mjs): the exact figures of a recording, in ns, for
tests that compare gpuprof's printed tables with them."""
import json
import subprocess
from collections import defaultdict
from pathlib import Path

VIEWER = Path(__file__).resolve().parent.parent / "viewer"


def decode(profile):
    """The profile as decode_pprof.mjs prints it (names resolved)."""
    assert (VIEWER / "node_modules" / "pprof-format").is_dir(), \
        "tests/viewer/node_modules missing: run scripts/setup.sh (npm ci --prefix tests/viewer)"
    result = subprocess.run(["node", str(VIEWER / "decode_pprof.mjs"), str(profile)], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def per_leaf_op(doc):
    """{op: (calls, self_cpu ns)} summed over the stacks each op ends."""
    calls, self_ns = defaultdict(int), defaultdict(int)
    for s in doc["samples"]:
        if s["values"][0] or s["values"][1]:
            calls[s["stack"][0]] += s["values"][0]
            self_ns[s["stack"][0]] += s["values"][1]
    return {op: (calls[op], self_ns[op]) for op in calls}


def table_time(us):
    """A time as gpuprof's tables print it (torch's _format_time)."""
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"
