"""report --pprof (docs/pprof.md): a resnet18 recording (with --with-stack and
-F) as a pprof profile, read back by two decoders that are not gpuprof's: the
real `go tool pprof` (Debian's golang-go) and the npm pprof-format decoder
(tests/viewer/decode_pprof.mjs). Every figure is checked exactly against what
gpuprof itself prints for the same file: the table's calls and Self CPU per
op, the folded stacks of both metrics line for line, the stop line's sample
count; labels against the target; Python frames against the workload's
source."""
import ast
import re
import socket
import subprocess
from collections import defaultdict

import pytest

from conftest import (REPO_ROOT, TORCH_ENV_IDS, TORCH_ENVS, error_lines, parse_time_us, resnet_region_run,
                      run_gpuprof)
from pprof_reader import decode, per_leaf_op, table_time

SAMPLE_HZ = 199
REGION_PY = REPO_ROOT / "tests" / "workloads" / "region.py"
PYTHON_FRAME = re.compile(r"^(.*)\((-?\d+)\): (.*)$")


@pytest.fixture(scope="module", params=TORCH_ENVS, ids=TORCH_ENV_IDS)
def exported(request, tmp_path_factory):
    """(the region run, the profile as decode_pprof.mjs reads it, `go tool
    pprof -raw`'s text, report's stderr, the profile's path)."""
    with resnet_region_run(tmp_path_factory, f"pprof-{request.param}",
                           gpuprof_args=("--with-stack", "-F", str(SAMPLE_HZ)), torch_env=request.param) as run:
        out = run.record_file.parent / "run.pb.gz"
        made = run_gpuprof("report", str(run.record_file), "--pprof", str(out))
        assert made.returncode == 0, made.stderr
        assert error_lines(made.stderr) == [], made.stderr
        yield run, decode(out), go_pprof("-raw", out), made.stderr, out


def go_pprof(*args):
    # -symbolize=none: every location is symbolized already; nothing to look up.
    result = subprocess.run(["go", "tool", "pprof", "-symbolize=none", *map(str, args)], capture_output=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    return result.stdout.decode(errors="replace")


def column_sums(doc):
    sums = [0] * len(doc["sample_types"])
    for s in doc["samples"]:
        for i, v in enumerate(s["values"]):
            sums[i] += v
    return dict(zip(doc["sample_types"], sums))


def folded_frame(name):
    """folded_stacks.h's folded_frame_name, for names already valid text."""
    if not name:
        return "_"
    return "".join(":" if c == ";" else "_" if ord(c) <= 0x20 or ord(c) == 0x7F else c for c in name)


def folded_lines(record_file, *metric):
    report = run_gpuprof("report", str(record_file), "--folded", *metric)
    assert report.returncode == 0, report.stderr
    out = {}
    for line in report.stdout.splitlines():
        stack, _, value = line.rpartition(" ")
        out[stack] = int(value)
    return out


def test_go_pprof_reads_the_same_profile(exported):
    """go tool pprof -raw: the same sample types, and every column adds up to
    what the npm decoder reads."""
    _, doc, raw, _, _ = exported
    lines = raw.splitlines()
    header = lines.index("Samples:") + 1
    types = [t.replace("[dflt]", "") for t in lines[header].split()]
    assert types == doc["sample_types"], raw[:2000]
    sums = [0] * len(types)
    for line in lines[header + 1:]:
        m = re.match(r"^\s*((?:-?\d+\s+)*-?\d+): [\d ]+$", line)
        if m:
            for i, v in enumerate(m.group(1).split()):
                sums[i] += int(v)
        elif line and not line.startswith(" "):
            break  # Locations:
    assert dict(zip(types, sums)) == column_sums(doc)
    assert "Type: self_cpu" in go_pprof("-top", "-nodecount=5", exported[4]), "self_cpu is not the default type"


def test_sample_types_period_and_comment(exported):
    _, doc, _, _, _ = exported
    assert doc["sample_types"] == ["calls/count", "self_cpu/nanoseconds", "samples/count", "cpu/nanoseconds"]
    assert doc["period_type"] == "cpu/nanoseconds"
    assert doc["period"] == int(1e9 / SAMPLE_HZ)
    assert doc["comments"] == ["gpuprof: self_cpu compensated for the probes' cost (--raw-times: as measured)"]
    for s in doc["samples"]:
        assert s["values"][3] == s["values"][2] * doc["period"], s


def test_calls_and_self_cpu_per_op_are_the_tables(exported):
    """Summed by leaf op, the calls and self_cpu columns are the table's # of
    Calls and Self CPU, row for row (Self CPU as the table prints it)."""
    run, doc, _, _, _ = exported
    ops = per_leaf_op(doc)
    table = run.table.rows
    assert table, run.gpuprof.stdout()
    assert {op for op, (n, _) in ops.items() if n} == set(table), (sorted(ops), sorted(table))
    for op, row in table.items():
        calls, self_ns = ops[op]
        assert calls == row.calls, op
        assert parse_time_us(table_time(self_ns / 1000)) == row.self_cpu_us, (op, self_ns, row.self_cpu_us)


@pytest.mark.parametrize("metric", ["self_cpu_time", "samples"])
def test_stacks_are_the_folded_stacks(exported, metric):
    """Each pprof stack, root first and escaped as folded frames, is a line of
    report --folded with the same value (self time: summed per line in ns,
    then truncated to us, lines under 1 us left out, as --folded does)."""
    run, doc, _, _, _ = exported
    column = 1 if metric == "self_cpu_time" else 2
    sums = defaultdict(int)
    for s in doc["samples"]:
        if s["values"][column]:
            sums[";".join(folded_frame(f) for f in reversed(s["stack"]))] += s["values"][column]
    if metric == "self_cpu_time":
        sums = {stack: ns // 1000 for stack, ns in sums.items() if ns >= 1000}
    folded = folded_lines(run.record_file, "--metric", metric)
    assert folded, metric
    assert dict(sums) == folded
    if metric == "samples":
        assert sum(sums.values()) == run.stopped["samples"]


def test_python_frames_carry_file_and_line(exported):
    """A Python frame is a function with its file and a line: in an op
    entry's stack the function's first line (as torch's with_stack prints
    them), in a CPU sample the line it was running. The workload's resnet
    `forward` is there at its `def` line, and at lines of its body only."""
    _, doc, _, _, _ = exported
    python = [loc for loc in doc["locations"] if PYTHON_FRAME.match(loc["function"])]
    assert python
    for loc in python:
        file, line, name = PYTHON_FRAME.match(loc["function"]).groups()
        assert (loc["filename"], loc["line"], loc["name"]) == (file, int(line), name), loc
    forwards = sorted((n.lineno, n.end_lineno) for n in ast.walk(ast.parse(REGION_PY.read_text()))
                      if isinstance(n, ast.FunctionDef) and n.name == "forward")
    first, last = forwards[0]  # build()'s first model is resnet18
    seen = {loc["line"] for loc in python if loc["filename"].endswith("region.py") and loc["name"] == "forward"}
    assert first in seen and all(first <= line <= last for line in seen), (seen, forwards)


def test_native_frames_carry_their_file(exported):
    """A sample's native leaf "lib.so+0xOFF" is a location in lib.so's
    mapping at OFF; "lib.so!sym" is function sym in lib.so's mapping (named
    by its path where the recording has it: libtorch_cpu's)."""
    _, doc, _, _, _ = exported
    native = [loc for loc in doc["locations"] if loc["mapping"]]
    assert native
    for loc in native:
        file_name = loc["mapping"].rsplit("/", 1)[-1]
        if "!" in loc["function"]:
            file, symbol = loc["function"].split("!", 1)
            assert (file_name, loc["name"], loc["address"]) == (file, symbol, 0), loc
        else:
            m = re.fullmatch(r"(.+)\+0x([0-9a-f]+)", loc["function"])
            assert m and (file_name, loc["address"]) == (m.group(1), int(m.group(2), 16)), loc


def test_every_native_file_carries_its_build_id(exported):
    """Native frames are in one mapping per file (libtorch_cpu, libc, the
    Python binary, ...), named by the path the target's maps gave (from
    gpuprof's side: the chroot's included), with the GNU build id readelf -n
    reads from that file, none where it has none; `go tool pprof -raw` lists
    each so. The recording keeps them (NATIVE_FILES)."""
    run, doc, raw, _, _ = exported
    mappings = {(loc["mapping"], loc["build_id"]) for loc in doc["locations"] if loc["mapping"]}
    paths = [path for path, _ in mappings]
    assert len(paths) == len(set(paths)), sorted(mappings)  # one mapping, one build id per file
    names = {path.rsplit("/", 1)[-1] for path in paths}
    assert any(name.startswith("libtorch_cpu.so") for name in names), names
    with_id = set()
    for path, build_id in mappings:
        assert path.startswith("/"), path
        notes = subprocess.run(["readelf", "-n", path], capture_output=True, text=True, timeout=60)
        assert notes.returncode == 0, notes.stderr
        found = re.search(r"Build ID: ([0-9a-f]+)", notes.stdout)
        assert build_id == (found.group(1) if found else ""), (path, build_id)
        if build_id:
            with_id.add(path.rsplit("/", 1)[-1])
            assert re.search(rf"^\s*\d+: 0x0/0x0/0x0 {re.escape(path)} {build_id}", raw, re.M), \
                raw[raw.find("Mappings"):]
    # A mapping for every file a sample's native leaf is in, as the folded
    # stacks name them ("file!symbol" or "file+0xOFF"; not [jit] and the
    # like), and no other. Which files those are is chance: a run with 43
    # samples had them all in libtorch_cpu and mkldnn's JIT code (CI,
    # 2026-12-04), another had 2 in python3.11.
    folded = run_gpuprof("report", str(run.record_file), "--folded", "--metric", "samples")
    assert folded.returncode == 0, folded.stderr
    leaf_files = set()
    for line in folded.stdout.splitlines():
        leaf = [frame for frame in line.rsplit(" ", 1)[0].split(";") if not frame.endswith("_[k]")][-1]
        m = re.match(r"([^\[!][^!]*?)(?:!|\+0x[0-9a-f]+$)", leaf)
        if m:
            leaf_files.add(m.group(1))
    assert names == leaf_files, (names, leaf_files)
    # libtorch_cpu's among them, with its id.
    assert any(n.startswith("libtorch_cpu.so") for n in with_id), with_id


def test_every_sample_is_labelled_with_its_process(exported):
    run, doc, _, _, _ = exported
    want = {"pid": run.target.pid, "comm": run.tracing["comm"], "hostname": socket.gethostname()}
    assert all(s["labels"] == want for s in doc["samples"]), [s["labels"] for s in doc["samples"][:3]]


def test_report_says_what_it_wrote(exported):
    _, doc, _, stderr, out = exported
    m = re.search(r"^gpuprof: wrote (\S+) from \S+: (\d+) samples of (\d+) sample types, (\d+) functions, ",
                  stderr, re.M)
    assert m, stderr
    assert (m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4))) == \
        (str(out), len(doc["samples"]), len(doc["sample_types"]), len(doc["functions"]))


def test_raw_times_are_the_raw_tables(exported, tmp_path):
    """--raw-times: self_cpu as measured, the raw table's Self CPU total."""
    run, _, _, _, _ = exported
    out = tmp_path / "raw.pb"
    made = run_gpuprof("report", str(run.record_file), "--pprof", str(out), "--raw-times")
    assert made.returncode == 0, made.stderr
    raw = decode(out)
    assert raw["comments"] == ["gpuprof: self_cpu as measured"]
    table = run_gpuprof("report", str(run.record_file), "--raw-times", "--row-limit", "-1")
    total = re.search(r"^Self CPU time total: (\S+)$", table.stdout, re.M).group(1)
    assert table_time(column_sums(raw)["self_cpu/nanoseconds"] / 1000) == total


def test_pprof_refuses_other_outputs(exported):
    run, _, _, _, _ = exported
    for other in (["--folded"], ["--chrome-trace", "x.json"], ["--row-limit", "5"]):
        r = run_gpuprof("report", str(run.record_file), "--pprof", "x.pb.gz", *other)
        assert r.returncode != 0 and "excludes" in r.stderr, (other, r.stderr)
