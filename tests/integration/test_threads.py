"""Every thread is traced, each with its own op nesting.

threads_region.py runs a different op mix in each of 3 Python threads plus
the main thread, concurrently; gpuprof is attached around the region as in
test_fidelity. torch.profiler in torch 1.13 records only the thread that
enabled it, so each thread runs its own torch.profiler and the workload
sums the four profiles. Each op mix belongs to one thread, so equal per-op
counts mean every thread was seen; intact per-thread nesting means no call
was closed as unwound (there are no exceptions here), none was left open and
no exit went unmatched.
"""
import json

import pytest

from conftest import RECORD_VARIANTS, counter_notes, describe_count_diff, run_profiled_region


@pytest.mark.parametrize("variant", RECORD_VARIANTS)
def test_threads_call_counts_match_torch_profiler(procs, workdir, tmp_path, variant, torch_env):
    # With shapes, four threads probing at once share the BPF side's per-CPU
    # scratch under preemption (op_tracer.bpf.c): counts must not suffer.
    exit_mode, record_args = RECORD_VARIANTS[variant]
    run = run_profiled_region(procs, "threads_region.py", workdir, tmp_path / "threads.gpuprof",
                              gpuprof_args=record_args, torch_env=torch_env)
    assert run.tracing["exit_mode"] == exit_mode, run.gpuprof.stderr()
    assert run.stopped["lost"] == 0, run.gpuprof.stderr()

    torch_calls = {name: v["count"] for name, v in run.torch_ops.items()}
    # The op mixes avoid ops that torch's table folds into a same-name parent
    # (test_fidelity covers that): here the table counts are the raw counts.
    raw = json.loads((workdir / "torch_raw_counts.json").read_text())
    assert {k: v for k, v in raw.items() if k in torch_calls} == torch_calls, (
        f"workload precondition: torch's table and raw counts differ:\n"
        f"{describe_count_diff(torch_calls, raw)}")
    for op in ("aten::linear", "aten::matmul", "aten::log_softmax", "aten::gelu", "aten::conv2d",
               "aten::max_pool2d"):
        assert torch_calls.get(op) == 150, (op, torch_calls)  # one per iteration of one thread

    gp_calls = run.table.calls()
    gp_calls.pop("[memory]", None)  # allocations outside ops (--profile-memory): no op of torch's
    assert gp_calls == torch_calls, (
        "per-op call counts differ between gpuprof and torch.profiler (only differing ops shown):\n"
        f"{describe_count_diff(gp_calls, torch_calls)}\n{run.table.text}")
    # Nesting kept per thread: nothing unwound, nothing open, no orphan exit.
    # No call unwound, left open or unmatched (samples in code without a
    # symbol are noted with -F: not about nesting).
    nesting_notes = [n for n in counter_notes(run.table) if "without a symbol" not in n]
    assert nesting_notes == [], "\n".join(run.table.notes)
