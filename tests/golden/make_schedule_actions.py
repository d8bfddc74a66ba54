#!/usr/bin/env python3
"""Writes schedule_actions.txt: torch.profiler.schedule's action for steps
0..59 of several schedules, from torch itself (Debian's 1.13:
/usr/bin/python3 tests/golden/make_schedule_actions.py). One line per
schedule: "skip_first wait warmup active repeat: a0 a1 ... a59", each action
torch's ProfilerAction value (0 NONE, 1 WARMUP, 2 RECORD, 3 RECORD_AND_SAVE).
tests/unit/schedule_test.cpp holds gpuprof's gp_schedule_action to it."""
import pathlib
import warnings

import torch.profiler

SCHEDULES = [  # skip_first, wait, warmup, active, repeat
    (0, 1, 1, 3, 2), (0, 0, 0, 1, 0), (0, 0, 0, 4, 2), (3, 0, 2, 1, 3), (1, 1, 1, 2, 2), (0, 2, 0, 3, 0),
    (5, 4, 3, 2, 1), (0, 10, 5, 20, 0), (7, 0, 0, 1, 5), (2, 3, 0, 1, 0), (0, 0, 3, 1, 0), (59, 0, 0, 1, 1),
]
STEPS = 60


def main():
    lines = []
    for skip_first, wait, warmup, active, repeat in SCHEDULES:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "won't be using warmup"
            fn = torch.profiler.schedule(skip_first=skip_first, wait=wait, warmup=warmup, active=active,
                                         repeat=repeat)
        actions = " ".join(str(fn(step).value) for step in range(STEPS))
        lines.append(f"{skip_first} {wait} {warmup} {active} {repeat}: {actions}")
    out = pathlib.Path(__file__).with_name("schedule_actions.txt")
    out.write_text("\n".join(lines) + "\n")
    print(f"wrote {out} ({len(lines)} schedules, torch {torch.__version__})")


if __name__ == "__main__":
    main()
