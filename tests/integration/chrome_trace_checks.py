"""Structural checks of a Chrome trace (the Trace Event Format), as viewers
rely on them; the same rules as tests/unit/chrome_trace_test.cpp."""
import collections


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
            slices[key].append((e["ts"], e["ts"] + e["dur"]))
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
            if open_ends and end > open_ends[-1] + 1e-9:
                problems.append(f"slice [{ts}, {end}] on {key} overlaps its parent's end {open_ends[-1]}")
            open_ends.append(end)
    for pid, tid in sorted(used):
        if (pid, tid) not in named_threads:
            problems.append(f"thread {pid}/{tid} has no name")
        if pid not in named_processes:
            problems.append(f"process {pid} has no name")
    return problems
