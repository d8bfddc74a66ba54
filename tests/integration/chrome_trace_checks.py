"""Structural checks of a Chrome trace (the Trace Event Format), as viewers
rely on them; the same rules as tests/unit/chrome_trace_test.cpp."""
import bisect
import collections
import gzip
import json
import re
from pathlib import Path

from conftest import run_gpuprof


def x_events(doc, cat):
    return [e for e in doc["traceEvents"] if e["ph"] == "X" and e.get("cat") == cat]


def structural_problems(doc):
    """A list of what is wrong (empty when nothing is): required fields,
    complete events nested per thread, one start and one end per flow,
    defined stack frames, named processes and threads."""
    problems = []
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        return ["no traceEvents array"]
    frames = doc.get("stackFrames", {})
    for fid, frame in frames.items():
        if not isinstance(frame.get("name"), str):
            problems.append(f"stack frame {fid} has no name")
        if "parent" in frame and frame["parent"] not in frames:
            problems.append(f"stack frame {fid} has an unknown parent")
    named_processes, named_threads, used = set(), set(), set()
    slices = collections.defaultdict(list)
    flows = collections.defaultdict(lambda: [0, 0])
    for e in doc["traceEvents"]:
        ph = e.get("ph")
        if not ph or not isinstance(e.get("pid"), int) or not isinstance(e.get("tid"), int) or \
                not isinstance(e.get("name"), str):
            problems.append(f"event without ph, pid, tid or name: {e}")
            continue
        key = (e["pid"], e["tid"])
        if ph == "M":
            if e["name"] == "process_name":
                named_processes.add(e["pid"])
            elif e["name"] == "thread_name":
                named_threads.add(key)
            continue
        if not isinstance(e.get("ts"), (int, float)):
            problems.append(f"event without ts: {e}")
            continue
        if ph != "C":
            used.add(key)
        if "sf" in e and e["sf"] not in frames:
            problems.append(f"unknown sf: {e}")
        if ph == "X":
            if not isinstance(e.get("dur"), (int, float)) or e["dur"] < 0 or "cat" not in e:
                problems.append(f"bad complete event: {e}")
                continue
            # In integer ns (gpuprof writes us with 3 decimals): in floats,
            # ts + dur of a slice ending where the next begins came out
            # 1e-11 past the next one's ts, and nested it wrongly.
            start = round(e["ts"] * 1000)
            slices[key].append((start, start + round(e["dur"] * 1000)))
        elif ph in ("s", "f"):
            flows[e.get("id")][0 if ph == "s" else 1] += 1
            if ph == "f" and e.get("bp") != "e":
                problems.append(f"flow end without bp e: {e}")
        elif ph == "i":
            if e.get("s") != "t":
                problems.append(f"instant event not thread-scoped: {e}")
        elif ph != "C":
            problems.append(f"unexpected ph: {e}")
    for fid, (starts, ends) in flows.items():
        if starts != 1 or ends != 1:
            problems.append(f"flow {fid}: {starts} s and {ends} f events")
    for key, spans in slices.items():
        open_ends = []
        for ts, end in sorted(spans, key=lambda s: (s[0], -s[1])):
            while open_ends and open_ends[-1] <= ts and not (open_ends[-1] == ts and end == ts):
                open_ends.pop()
            if open_ends and end > open_ends[-1]:
                problems.append(f"slice [{ts / 1000}, {end / 1000}] on {key} overlaps its parent's end "
                                f"{open_ends[-1] / 1000}")
            open_ends.append(end)
    for pid, tid in sorted(used):
        if (pid, tid) not in named_threads:
            problems.append(f"thread {pid}/{tid} has no name")
        if pid not in named_processes:
            problems.append(f"process {pid} has no name")
    return problems


# --------------------------------------------------------------------------
# Reading a trace exactly: times in nanoseconds, events compared by content.


def ns(us):
    """A trace time (microseconds, written exactly to the nanosecond) in ns."""
    return round(us * 1000)


def span_ns(e):
    """[start, end] of an event in ns since the recording started (end ==
    start for instants and counters)."""
    start = ns(e["ts"])
    return start, start + ns(e.get("dur", 0))


def time_zero_ns(doc):
    """The CLOCK_MONOTONIC instant (ns) a trace's timestamps count from (otherData)."""
    m = re.search(r"CLOCK_MONOTONIC (\d+) ns", doc["otherData"]["time zero"])
    assert m, doc["otherData"]
    return int(m.group(1))


def frame_chain(doc, sf):
    """The names of a stack, outermost first, from an event's sf."""
    frames = doc["stackFrames"]
    names = []
    while sf:
        names.append(frames[sf]["name"])
        sf = frames[sf].get("parent")
    return tuple(reversed(names))


def canonical(doc, e, without_call=False):
    """An event as comparable text: its stack by frame names (sf ids are
    numbered per trace), optionally without args.call (the call's index among
    its recording's events: renumbered when a recording is cut to some
    processes)."""
    e = dict(e)
    if "sf" in e:
        e["sf"] = frame_chain(doc, e["sf"])
    if without_call and "call" in e.get("args", {}):
        e["args"] = {k: v for k, v in e["args"].items() if k != "call"}
    return json.dumps(e, sort_keys=True)


def trace_events(doc, keep=lambda e: True, without_call=False):
    """The events other than track metadata for which keep(e) holds, as a
    multiset of canonical() texts."""
    return collections.Counter(canonical(doc, e, without_call) for e in doc["traceEvents"]
                               if e["ph"] != "M" and keep(e))


def track_names(doc, keep=lambda e: True):
    """{(M name, pid, tid): name} of the process_name and thread_name events."""
    return {(e["name"], e["pid"], e["tid"]): e["args"]["name"] for e in doc["traceEvents"]
            if e["ph"] == "M" and e["name"] in ("process_name", "thread_name") and keep(e)}


def tracks_of(doc, keep, always_pids=()):
    """The track names a cut of `doc` must carry: its threads that have a
    kept event (counters sit on no thread track) and their processes."""
    threads = {(e["pid"], e["tid"]) for e in doc["traceEvents"] if e["ph"] not in ("M", "C") and keep(e)}
    pids = {pid for pid, _ in threads} | set(always_pids)
    return track_names(doc, lambda m: (m["pid"], m["tid"]) in threads if m["name"] == "thread_name"
                       else m["pid"] in pids)


def in_time_range(from_ns=None, until_ns=None):
    """--time-range's rule (userspace/output/chrome_trace.cpp, overlaps()): an event
    is kept when its [start, end] meets [from, until], both ends included; an
    open side has no bound. (Not for flows: an arrow goes with its GPU
    activity, whose span its "f" event does not carry.)"""
    def keep(e):
        start, end = span_ns(e)
        return (from_ns is None or end >= from_ns) and (until_ns is None or start <= until_ns)
    return keep


def op_calls(doc):
    """The complete events of op calls (record_function ranges included)."""
    return [e for e in doc["traceEvents"] if e["ph"] == "X" and e.get("cat") in ("cpu_op", "user_annotation")]


def module_calls(doc):
    """The complete events of module calls (recordings with Python stacks)."""
    return [e for e in doc["traceEvents"] if e["ph"] == "X" and e.get("cat") == "python_function"]


def calls_under(doc, pattern):
    """--ops's rule: the calls whose name `pattern` matches (searched) and
    every call nested in one of them on its thread; as ids of events.
    gpuprof nests by depth (userspace/analyze/call_tree.cpp), this by time: they
    differ only for a zero-length call at the very nanosecond its sibling
    ends, which entry and exit probes a few hundred ns apart never make.
    (gpuprof matches a --schedule step frame by its op's name, not by its
    "ProfilerStep#N": not for recordings with steps.)
    Calls of a thread nest or follow each other, so a call lies inside a
    matched call exactly when it lies inside the outermost matched call
    that starts last at or before it: found by bisection, for traces of
    hundreds of thousands of calls."""
    calls = op_calls(doc)
    matched = collections.defaultdict(list)
    for c in calls:
        if re.search(pattern, c["name"]):
            matched[c["tid"]].append(span_ns(c))
    outermost = {}
    for tid, spans in matched.items():
        kept = []
        for start, end in sorted(spans, key=lambda s: (s[0], -s[1])):
            if not (kept and kept[-1][0] <= start and end <= kept[-1][1]):
                kept.append((start, end))
        outermost[tid] = ([start for start, _ in kept], kept)
    kept_ids = set()
    for c in calls:
        if c["tid"] not in outermost:
            continue
        starts, spans = outermost[c["tid"]]
        start, end = span_ns(c)
        i = bisect.bisect_right(starts, start) - 1
        if i >= 0 and end <= spans[i][1]:
            kept_ids.add(id(c))
    return kept_ids


def innermost_call(doc, e):
    """The innermost call of e's thread whose [start, end] holds e's time
    (both ends included; userspace/analyze/call_tree.h innermost_calls_at), or None."""
    ts = ns(e["ts"])
    holding = [c for c in op_calls(doc) if c["tid"] == e["tid"] and span_ns(c)[0] <= ts <= span_ns(c)[1]]
    # Nested calls: the innermost started last (and, starting together, ends first).
    return max(holding, key=lambda c: (span_ns(c)[0], -span_ns(c)[1]), default=None)


GPU_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")


def under_ops(doc, pattern):
    """What --ops PATTERN keeps of `doc`: the calls of calls_under(), the
    samples and CUDA launches whose innermost call is one of them, every
    counter (memory levels are process-wide). GPU activities and their flows
    go by the launch that their correlation id names, which a trace does not
    hold: this rule refuses a trace that has them."""
    assert not any(e["ph"] in ("s", "f") or e.get("cat") in GPU_CATEGORIES for e in doc["traceEvents"]), \
        "under_ops() has no rule for GPU activities and flows"
    kept = calls_under(doc, pattern)

    def keep(e):
        if e["ph"] == "C":
            return True
        if e["ph"] == "X" and e.get("cat") != "cuda_runtime":
            return id(e) in kept
        inner = innermost_call(doc, e)  # a sample, or a launch (an instant on its thread)
        return inner is not None and id(inner) in kept
    return keep


def trace_stats(doc):
    """What `gpuprof: wrote OUT from FILE: ...` must count in doc (every
    event, metadata included)."""
    events = doc["traceEvents"]
    return {"events": len(events), "calls": len(op_calls(doc)), "modules": len(module_calls(doc)),
            "samples": sum(e["ph"] == "i" for e in events),
            "gpu": sum(e["ph"] == "X" and e.get("cat") in GPU_CATEGORIES for e in events),
            "flows": sum(e["ph"] == "s" for e in events), "counters": sum(e["ph"] == "C" for e in events)}


WROTE_RE = re.compile(
    r"^gpuprof: wrote (?P<out>.+) from (?P<input>.+): (?P<events>\d+) trace events \((?P<calls>\d+) op calls, "
    r"(?P<modules>\d+) module calls, (?P<samples>\d+) samples, (?P<gpu>\d+) GPU activities, (?P<flows>\d+) flows, (?P<counters>\d+) counter "
    r"values\)(?P<size>, [\d.]+ [kM]B)?$", re.M)


def wrote_line(stderr):
    """The `gpuprof: wrote OUT from FILE: N trace events (...)` line: (OUT,
    FILE, its counts as trace_stats() names them, its size text or None)."""
    m = WROTE_RE.search(stderr)
    assert m, f"no 'gpuprof: wrote' line in:\n{stderr}"
    counts = {k: int(m.group(k)) for k in ("events", "calls", "modules", "samples", "gpu", "flows", "counters")}
    return m.group("out"), m.group("input"), counts, m.group("size")


def export_chrome_trace(record_file, out, *args):
    """report --chrome-trace OUT: the trace, and the run; its `wrote` line
    must name OUT and count exactly what the trace holds."""
    result = run_gpuprof("report", str(record_file), "--chrome-trace", str(out), *args)
    assert result.returncode == 0, result.stderr
    opener = gzip.open if str(out).endswith(".gz") else open
    with opener(out, "rt", encoding="utf-8") as f:
        doc = json.load(f)
    written, source, counts, size = wrote_line(result.stderr)
    assert (written, source, counts, size) == (str(out), str(record_file), trace_stats(doc), size_text(out)), \
        result.stderr
    return doc, result


def size_text(path):
    """How a `wrote` line gives the size of the file at `path`."""
    on_disk = Path(path).stat().st_size
    return f", {on_disk / 1e3:.1f} kB" if on_disk < 1e6 else f", {on_disk / 1e6:.1f} MB"
