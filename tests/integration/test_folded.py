"""`gpuprof report --folded` on a real resnet18 forward pass (docs/folded.md).

The recipe region of test_fidelity.py is recorded once (attach, default exit
mode); its folded stacks are checked against the table gpuprof printed for the
same recording: line format, totals, per-op self time, the conv2d path.

flamegraph.pl is not a Debian package (and is not vendored here), so it does
not run in this test: the lines are checked against the input rules of
flamegraph.pl and speedscope instead (their line regexes, ported below).
"""
import re
import shlex
from collections import Counter

import pytest

from conftest import GPUPROF, REPO_ROOT, error_lines, resnet_region_run, run_gpuprof, run_program, torch_table_name

CONV_PATH = "aten::conv2d;aten::convolution;aten::_convolution;aten::mkldnn_convolution"
# A folded line as gpuprof writes it: frames without spaces or ';' inside,
# joined by ';', one space, a positive integer.
LINE_RE = re.compile(r"^[^ ;]+(;[^ ;]+)* [1-9]\d*$")
# flamegraph.pl (brendangregg/FlameGraph): a line is `(.*)\s+?(\d+(?:\.\d*)?)$`;
# if the stack part again ends in whitespace and a number, that number is the
# first column of a differential pair. speedscope's collapsed-stack importer:
# /^(.*) (\d+)$/, frames split on ';'.
FLAMEGRAPH_RE = re.compile(r"^(.*)\s+?(\d+(?:\.\d*)?)$")
SPEEDSCOPE_RE = re.compile(r"^(.*) (\d+)$")


@pytest.fixture(scope="module")
def folded_run(tmp_path_factory):
    with resnet_region_run(tmp_path_factory, "folded") as run:
        assert run.stopped["lost"] == 0, run.gpuprof.stderr()
        report = run_gpuprof("report", run.record_file, "--folded")
        context = f"exit {report.returncode}\nstderr:\n{report.stderr}\nstdout (head):\n{report.stdout[:3000]}"
        assert report.returncode == 0, context
        assert error_lines(report.stderr) == [], context
        yield run, report


def folded_lines(report):
    lines = report.stdout.splitlines()
    assert lines, f"no folded lines:\n{report.stderr}"
    return lines


def parse_line(line):
    stack, _, value = line.rpartition(" ")
    return stack, int(value)


def test_every_line_is_a_folded_stack(folded_run):
    _, report = folded_run
    lines = folded_lines(report)
    assert report.stdout.endswith("\n")
    bad = [line for line in lines if not LINE_RE.match(line)]
    assert not bad, f"lines not of the folded form: {bad[:10]}"
    stacks = [parse_line(line)[0] for line in lines]
    # Sorted by stack in byte order (the same as sorting the lines: ' ' sorts
    # before every byte a frame may hold), each stack once.
    assert stacks == sorted(stacks, key=lambda s: s.encode()), "stacks not in byte order"
    assert len(set(stacks)) == len(stacks), [s for s, n in Counter(stacks).items() if n > 1][:10]
    # Exactly the stack and count flamegraph.pl and speedscope would read.
    for line in lines:
        stack, value = parse_line(line)
        fg = FLAMEGRAPH_RE.match(line)
        assert fg and fg.groups() == (stack, str(value)), line
        assert not FLAMEGRAPH_RE.match(fg.group(1)), f"flamegraph.pl would read a differential count: {line}"
        ss = SPEEDSCOPE_RE.match(line)
        assert ss and ss.groups() == (stack, str(value)), line


def printed_precision_us(time_us):
    """The step of a time as the table prints it: 3 decimals of us, ms or s."""
    return 1e3 if time_us >= 1e6 else 1.0 if time_us >= 1e3 else 1e-3


def stacks_left_out(report):
    """The number of stacks under 1 us that report --folded says it left out."""
    m = re.search(r"^gpuprof: (\d+) stacks left out: their calls add up to under 1 us", report.stderr, re.M)
    return int(m.group(1)) if m else 0


def test_values_add_up_to_the_tables_self_cpu_total(folded_run):
    run, report = folded_run
    lines = folded_lines(report)
    total_us = sum(parse_line(line)[1] for line in lines)
    table_us = run.table.self_cpu_total_us
    # Each stack's nanoseconds are truncated to whole microseconds once, and
    # stacks under 1 us are left out: under 1 us each. The table's total is
    # rounded to 3 decimals of its unit.
    precision = printed_precision_us(table_us)
    slack = len(lines) + stacks_left_out(report)
    print(f"folded total {total_us} us over {len(lines)} stacks ({stacks_left_out(report)} left out); "
          f"table Self CPU time total {table_us} us")
    assert table_us - slack - precision <= total_us <= table_us + precision, (
        f"folded values add up to {total_us} us, the table's total is {table_us} us "
        f"({len(lines)} lines, {stacks_left_out(report)} stacks left out)")


def test_leaves_add_up_to_each_rows_self_cpu(folded_run):
    run, report = folded_run
    per_leaf, lines_per_leaf = Counter(), Counter()
    for line in folded_lines(report):
        stack, value = parse_line(line)
        leaf = torch_table_name(stack.rsplit(";", 1)[-1])
        per_leaf[leaf] += value
        lines_per_leaf[leaf] += 1
    left_out = stacks_left_out(report)
    off = []
    for name, row in run.table.rows.items():
        precision = printed_precision_us(row.self_cpu_us)
        got = per_leaf.get(name, 0)
        if not (row.self_cpu_us - lines_per_leaf[name] - left_out - precision <= got
                <= row.self_cpu_us + precision):
            off.append(f"  {name}: table {row.self_cpu_us} us, folded leaves {got} us "
                       f"({lines_per_leaf[name]} stacks)")
    unknown = sorted(set(per_leaf) - set(run.table.rows))
    assert not unknown, f"leaf frames that are no row of the table: {unknown}"
    assert not off, "self time per op differs between the table and the folded leaves:\n" + "\n".join(off)


def test_every_frame_is_a_table_row(folded_run):
    run, report = folded_run
    frames = {frame for line in folded_lines(report) for frame in parse_line(line)[0].split(";")}
    missing = sorted(f for f in frames if torch_table_name(f) not in run.table.rows)
    assert not missing, f"frames that are no row of the table: {missing}"


def test_convolution_path(folded_run):
    _, report = folded_run
    stacks = {parse_line(line)[0]: parse_line(line)[1] for line in folded_lines(report)}
    assert CONV_PATH in stacks, "\n".join(s for s in stacks if "conv" in s)
    # resnet18's convolutions are its heaviest ops.
    assert stacks[CONV_PATH] == max(stacks.values()), stacks[CONV_PATH]
    # No same-name frames from only children: torch's fold applies.
    assert not any("aten::conv2d;aten::conv2d" in s for s in stacks)


@pytest.mark.parametrize("args,message", [
    (("--metric", "samples"), r"^gpuprof: error: --metric samples: \S+ has no CPU samples: record with -F HZ"),
    (("--metric", "self_cuda_time"), r"^gpuprof: error: --metric self_cuda_time: \S+ has no GPU times: the "
                                     r"target did not have gpuprof's CUPTI shim loaded"),
    (("--metric", "bogus"), r"^gpuprof: error: unknown --metric 'bogus'"),
    (("--sort-by", "count"), r"^gpuprof: error: --sort-by excludes --folded"),
    (("--group-by-input-shape",), r"^gpuprof: error: --group-by-input-shape excludes --folded"),
], ids=["samples", "self_cuda_time", "unknown-metric", "sort-by", "group-by-input-shape"])
def test_refused_options(folded_run, args, message):
    run, _ = folded_run
    result = run_gpuprof("report", run.record_file, "--folded", *args)
    assert result.returncode == 2, result
    assert result.stdout == "", result.stdout
    assert len(result.stderr.splitlines()) == 1 and re.match(message, result.stderr), result.stderr


def test_metric_self_cpu_time_is_the_default(folded_run):
    run, report = folded_run
    explicit = run_gpuprof("report", run.record_file, "--folded", "--metric", "self_cpu_time")
    assert explicit.returncode == 0, explicit.stderr
    assert explicit.stdout == report.stdout


def doc_example(doc, heading):
    """The first code block under `heading` in docs/DOC: [(command, its
    output lines)], a command being a `$ ` line and its `\\` continuations."""
    text = (REPO_ROOT / "docs" / doc).read_text()
    section = text.split(f"\n{heading}\n", 1)[1].split("\n## ", 1)[0]
    block = section.split("```\n", 2)[1]
    commands = []
    continued = False
    for line in block.splitlines():
        if continued:
            commands[-1][0] += " " + line.strip()
        elif line.startswith("$ "):
            commands.append([line[2:], []])
        else:
            commands[-1][1].append(line)
        continued = commands[-1][0].endswith("\\")
        if continued:
            commands[-1][0] = commands[-1][0][:-1].rstrip()
    return [(command, output) for command, output in commands]


def doc_command_argv(command, tmp_path):
    """A docs command line as run here: (argv, environment). Its leading
    VAR=VALUE words are the environment, `sudo -E` is dropped (the tests run
    as root), `gpuprof` is build/gpuprof, build/... paths are the repository's,
    and the record file is under tmp_path."""
    words = shlex.split(command)
    env = {}
    while "=" in words[0]:
        name, _, value = words.pop(0).partition("=")
        env[name] = value
    if words[:2] == ["sudo", "-E"]:
        words = words[2:]

    def here(word):
        if word == "gpuprof":
            return str(GPUPROF)
        if word.startswith("build/"):
            return str(REPO_ROOT / word)
        return str(tmp_path / word) if word.endswith(".gpuprof") else word
    return [here(w) for w in words], {name: here(value) for name, value in env.items()}


def test_self_cuda_time_example_of_the_docs_is_a_real_run(tmp_path):
    # docs/folded.md's --metric self_cuda_time example: its two commands run
    # here (the stand-in CUPTI plants the GPU times, so the output is exact)
    # print exactly the doc's lines: stdout, then report's stderr lines.
    (record, _), (report, shown) = doc_example("folded.md", "## The value: `--metric self_cuda_time`")
    argv, env = doc_command_argv(record, tmp_path)
    assert argv[1] == "record", record
    made = run_program(*argv, env=env)
    assert made.returncode == 0, made.stderr
    argv, env = doc_command_argv(report, tmp_path)
    assert argv[1:3] == ["report", str(tmp_path / "run.gpuprof")], report
    result = run_program(*argv, env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() + result.stderr.splitlines() == shown, result
