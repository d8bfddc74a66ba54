// call_figures.cpp: the per-call figures of torch's table (call_figures.h).
#include "analyze/call_figures.h"

#include <utility>

#include "analyze/gpu_attribution.h"

namespace gpuprof {

CallFigures call_figures(const Recording& recording, const Timeline& timeline) {
  const size_t n = timeline.calls.size();
  const CallTree tree = build_call_tree(timeline);
  OwnFigures own;
  MemoryAttribution memory;
  if (recording.options.memory) {
    memory = attribute_memory(timeline, recording.mem_events);
    own.cpu_mem = memory.own_cpu;
    own.cuda_mem = memory.own_cuda;
  }
  if (recording.cupti_shim) {
    // A call's own GPU time: that of the activities it launched itself.
    const std::vector<int64_t> launched_by = calls_of_gpu_activities(recording, timeline, tree);
    own.gpu_ns.assign(n, 0);
    for (size_t a = 0; a < launched_by.size(); a++)
      if (launched_by[a] >= 0) own.gpu_ns[launched_by[a]] += gpu_activity_ns(recording.gpu_activities[a]);
  }
  CallFigures f = call_figures_from(timeline, recording.ops, tree, std::move(own));
  f.memory = std::move(memory);
  return f;
}

CallFigures call_figures_from(const Timeline& timeline, const std::vector<OpInfo>& ops, const CallTree& tree,
                              OwnFigures own) {
  const size_t n = timeline.calls.size();
  CallFigures f;
  // torch.profiler's EventList._remove_dup_nodes (call_tree.h): a call
  // whose only child has the same name absorbs it (aten::div_ calling
  // aten::div_ is one row entry, not two). The child's self time and self
  // memory become the parent's, and its children the parent's.
  f.folded_into = fold_same_name_calls(timeline, ops);
  if (!own.cpu_mem.empty()) {
    f.cpu_mem.assign(n, 0);
    f.cuda_mem.assign(n, 0);
    f.self_cpu_mem = std::move(own.cpu_mem);
    f.self_cuda_mem = std::move(own.cuda_mem);
    // A call's total is its own bytes plus its descendants' (children
    // complete before their parents, so one ascending pass sums them).
    for (size_t i = 0; i < n; i++) {
      f.cpu_mem[i] += f.self_cpu_mem[i];
      f.cuda_mem[i] += f.self_cuda_mem[i];
      if (int64_t p = tree.parent[i]; p >= 0) {
        f.cpu_mem[p] += f.cpu_mem[i];
        f.cuda_mem[p] += f.cuda_mem[i];
      }
    }
  }
  // GPU time: torch's _remove_dup_nodes REPLACES an absorbing call's
  // kernels with the absorbed child's ("lift kernels up"), so a folded
  // chain keeps the own GPU time of its deepest call only: the outer calls'
  // own kernels drop out of the op rows (the GPU rows still count them).
  // Calls complete innermost first, so the first absorbed call seen for a
  // chain is its deepest. A call's total is its own plus its descendants'
  // after that lifting (one ascending pass, children before parents, as
  // for memory).
  if (!own.gpu_ns.empty()) {
    const std::vector<uint64_t>& own_gpu = own.gpu_ns;
    f.self_gpu_ns = own_gpu;
    std::vector<bool> lifted(n, false);
    for (size_t i = 0; i < n; i++) {
      const size_t into = f.folded_into[i];
      if (into == i) continue;
      f.self_gpu_ns[i] = 0;
      if (!lifted[into]) {
        lifted[into] = true;
        f.self_gpu_ns[into] = own_gpu[i];
      }
    }
    f.gpu_ns.assign(n, 0);
    for (size_t i = 0; i < n; i++) {
      f.gpu_ns[i] += f.self_gpu_ns[i];
      if (int64_t p = tree.parent[i]; p >= 0) f.gpu_ns[p] += f.gpu_ns[i];
    }
    f.own_gpu_ns = std::move(own.gpu_ns);
  }
  f.self_ns.resize(n);
  for (size_t i = 0; i < n; i++) f.self_ns[i] = timeline.calls[i].compensated_self_ns();
  // Ascending: a chain's innermost folds first, its sums moving outwards.
  for (size_t i = 0; i < n; i++) {
    const size_t into = f.folded_into[i];
    if (into == i) continue;
    f.self_ns[into] += f.self_ns[i];
    f.self_ns[i] = 0;
    if (!f.self_cpu_mem.empty()) {
      f.self_cpu_mem[into] += f.self_cpu_mem[i];
      f.self_cuda_mem[into] += f.self_cuda_mem[i];
      f.self_cpu_mem[i] = f.self_cuda_mem[i] = 0;
    }
  }
  return f;
}

}  // namespace gpuprof
