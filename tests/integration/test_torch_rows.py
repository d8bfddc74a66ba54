"""Every row torch.profiler prints, not only aten ops: record_function ranges
(the recipe's model_inference, the optimizers' Optimizer.step#X.step), the
autograd engine's rows and the backward nodes', the kernels' own ranges
(detach), on torch 1.13 and 2.6.

Each workload (tests/workloads/region.py) runs its region under
torch.profiler while gpuprof records it: every row of torch's
key_averages() must be in gpuprof's table with the same # of Calls, nothing
more; and in gpuprof's Chrome trace every call must sit under the same
parent as in torch's own event tree (which ops sit under which range or
node), pair for pair.
"""
import collections
import itertools
import json

import pytest

from conftest import TORCH_ENVS, describe_count_diff, region_run, run_gpuprof

WORKLOADS = ["recipe", "mlp_sgd", "mlp_adam", "transformer_train", "range_exception"]


@pytest.fixture(scope="module", params=list(itertools.product(WORKLOADS, TORCH_ENVS)),
                ids=lambda p: f"{p[0]}-{p[1]}")
def rows_run(request, tmp_path_factory):
    workload, torch_env = request.param
    with region_run(tmp_path_factory, f"rows-{workload}-{torch_env}", workload=workload,
                    torch_env=torch_env) as run:
        run.workload = workload
        yield run


def folded_pairs(events):
    """(name, parent name) of every call, after torch's fold: a call whose only
    child has its own name is one call (EventList._remove_dup_nodes)."""
    by_thread = collections.defaultdict(list)
    for e in events:
        by_thread[e["tid"]].append(e)
    pairs = collections.Counter()
    for calls in by_thread.values():
        calls.sort(key=lambda e: (e["ts"], -e["dur"]))
        parent = {}
        children = collections.defaultdict(list)
        stack = []
        for i, e in enumerate(calls):
            while stack and calls[stack[-1]]["ts"] + calls[stack[-1]]["dur"] <= e["ts"]:
                stack.pop()
            parent[i] = stack[-1] if stack else None
            if stack:
                children[stack[-1]].append(i)
            stack.append(i)
        folded = {i for i in children if len(children[i]) == 1 and calls[children[i][0]]["name"] == calls[i]["name"]}

        def visible_parent(i):
            p = parent[i]
            while p is not None and p in folded:
                p = parent[p]
            return p
        for i, e in enumerate(calls):
            if i in folded:
                continue
            p = visible_parent(i)
            pairs[(e["name"], calls[p]["name"] if p is not None else None)] += 1
    return pairs


def test_every_row_of_torchs_table_with_its_calls(rows_run):
    torch_calls = {name: v["count"] for name, v in rows_run.torch_ops.items()}
    gp_calls = rows_run.table.calls()
    not_aten = {name for name in torch_calls if not name.startswith("aten::")}
    assert not_aten, f"{rows_run.workload}: torch printed only aten rows: {torch_calls}"
    assert gp_calls == torch_calls, (
        f"rows differ from torch.profiler's table (only differing rows shown):\n"
        f"{describe_count_diff(gp_calls, torch_calls)}\n{rows_run.table.text}")
    assert rows_run.stopped["lost"] == 0, rows_run.gpuprof.stderr()


def test_every_call_under_the_same_parent_as_in_torch(rows_run, tmp_path):
    trace = tmp_path / "trace.json"
    made = run_gpuprof("report", rows_run.record_file, "--chrome-trace", trace)
    assert made.returncode == 0, made.stderr
    ours = folded_pairs([e for e in json.loads(trace.read_text())["traceEvents"] if e.get("ph") == "X"])
    theirs = collections.Counter((name, parent) for name, parent, _thread, _start, _end
                                 in json.loads((rows_run.workdir / "torch_tree.json").read_text()))
    only_ours, only_theirs = ours - theirs, theirs - ours
    assert not only_ours and not only_theirs, (
        f"{rows_run.workload}: (call, parent) pairs differ\nonly gpuprof: {sorted(only_ours.items())}\n"
        f"only torch: {sorted(only_theirs.items())}")


USER_RANGES = ("model_inference", "Optimizer.step#", "Optimizer.zero_grad#", "will_fail")


def test_user_ranges_are_annotations_in_the_trace(rows_run, tmp_path):
    trace = tmp_path / "trace.json"
    assert run_gpuprof("report", rows_run.record_file, "--chrome-trace", trace).returncode == 0
    events = [e for e in json.loads(trace.read_text())["traceEvents"] if e.get("ph") == "X"]
    user = [e for e in events if e["name"].startswith(USER_RANGES)]
    assert user and all(e["cat"] == "user_annotation" for e in user), user[:3]
    assert all(e["cat"] == "cpu_op" for e in events if e not in user)
    if rows_run.workload == "recipe":
        # The recipe's whole forward pass sits inside its range.
        assert [e["name"] for e in user] == ["model_inference"]
        start, end = user[0]["ts"], user[0]["ts"] + user[0]["dur"]
        convs = [e for e in events if e["name"] == "aten::conv2d"]
        assert len(convs) == 20 and all(start <= e["ts"] and e["ts"] + e["dur"] <= end for e in convs)
