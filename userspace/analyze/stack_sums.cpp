// stack_sums.cpp: op paths of the timeline's calls, summed per path (the
// paths themselves: stack_paths.h).
#include "analyze/stack_sums.h"

#include <algorithm>
#include <limits>
#include <map>
#include <string_view>
#include <unordered_map>

#include "analyze/aggregator.h"
#include "analyze/call_tree.h"
#include "analyze/gpu_attribution.h"
#include "analyze/op_timeline.h"
#include "analyze/stack_paths.h"

namespace gpuprof {

StackSums stack_sums(const Recording& recording, StackMetric metric, bool raw_times) {
  const Timeline timeline = build_timeline(recording.events, compensation_costs(recording, raw_times));
  const CallTree tree = build_call_tree(timeline);
  const std::vector<size_t> folded_into = fold_same_name_calls(timeline, recording.ops);
  const auto& calls = timeline.calls;

  StackPaths paths(recording);
  PathTrie& trie = paths.trie();
  Frames& frames = paths.frames();
  // record --with-stack, self_cpu_time: an outermost op call hangs under
  // the Python stack of its ENTRY (what torch's export_stacks prints), its
  // nested calls under it as before. Samples carry their own Python frames,
  // grafted above the op path below.
  std::unordered_map<uint64_t, uint32_t> stack_of_entry;
  if (metric != StackMetric::kSamples)
    for (const EntryStack& e : recording.entry_stacks) stack_of_entry.emplace(e.event_index, e.stack_id);
  const std::vector<uint32_t> node_of =
      paths.place_calls(timeline, tree, folded_into, [&](uint64_t entry_index) -> std::optional<uint32_t> {
        auto python = stack_of_entry.find(entry_index);
        if (python == stack_of_entry.end()) return std::nullopt;
        return python->second;
      });
  constexpr uint32_t kUnplaced = StackPaths::kUnplaced;

  StackSums out;
  if (metric == StackMetric::kSamples) {
    // Each sample: its Python frames (outermost first) when recorded, then
    // the op path of the innermost call running on its thread at its time
    // (the same sweep as memory attribution), then its native leaf, then
    // "[kernel]" when it interrupted the thread in the kernel.
    std::unordered_map<uint32_t, const std::vector<size_t>*> calls_of_tid;
    for (const std::vector<size_t>& ids : tree.threads)
      if (!ids.empty()) calls_of_tid[calls[ids.front()].tid] = &ids;
    std::vector<size_t> order(recording.samples.size());
    for (size_t i = 0; i < order.size(); i++) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      const CpuSample& x = recording.samples[a];
      const CpuSample& y = recording.samples[b];
      return x.tid != y.tid ? x.tid < y.tid : x.ts_ns < y.ts_ns;
    });
    std::unordered_map<uint32_t, uint64_t> count_of_node;
    const uint32_t kernel = frames.named("[kernel]", FrameKind::kKernel);
    std::unordered_map<uint64_t, uint32_t> kernel_stack_of_sample;
    for (const SampleKernelStack& k : recording.sample_kernel_stacks)
      kernel_stack_of_sample.emplace(k.sample_index, k.stack_id);
    size_t at = 0;
    while (at < order.size()) {
      const uint32_t tid = recording.samples[order[at]].tid;
      auto it = calls_of_tid.find(tid);
      const std::vector<size_t>* ids = it == calls_of_tid.end() ? nullptr : it->second;
      std::vector<size_t> open;  // calls holding the sweep point, innermost last
      size_t next_call = 0;
      for (; at < order.size() && recording.samples[order[at]].tid == tid; at++) {
        const CpuSample& sample = recording.samples[order[at]];
        while (ids && next_call < ids->size() && calls[(*ids)[next_call]].start_ns <= sample.ts_ns) {
          const size_t id = (*ids)[next_call++];
          while (!open.empty() && (calls[open.back()].end_ns < calls[id].start_ns ||
                                   calls[open.back()].depth >= calls[id].depth))
            open.pop_back();
          open.push_back(id);
        }
        while (!open.empty() && calls[open.back()].end_ns < sample.ts_ns) open.pop_back();
        uint32_t node = open.empty() ? 0 : node_of[folded_into[open.back()]];
        if (node == kUnplaced) node = 0;
        node = trie.graft(paths.python_node(sample.python_stack), node);
        node = trie.child(node, frames.named(paths.sample_frame(sample.frame_id), FrameKind::kNative));
        if (sample.in_kernel) {
          auto k = kernel_stack_of_sample.find(order[at]);
          node = k == kernel_stack_of_sample.end() ? trie.child(node, kernel) : paths.append_stack(node, k->second, FrameKind::kKernel);
        }
        ++count_of_node[node];
      }
    }
    return paths.take_counted(count_of_node, timeline);
  }
  std::vector<uint64_t> self_ns(trie.size(), 0);  // or calls
  if (metric == StackMetric::kSelfCudaTime) {
    // Each activity goes to the call that launched it, as in the table and
    // report --kernels (gpu_attribution.h).
    const std::vector<int64_t> launcher = calls_of_gpu_activities(recording, timeline, tree);
    for (size_t i = 0; i < recording.gpu_activities.size(); i++) {
      const uint64_t ns = gpu_activity_ns(recording.gpu_activities[i]);
      if (launcher[i] < 0) {  // launched outside ops, or its launch not seen
        out.gpu_ns_outside_ops += ns;
        continue;
      }
      self_ns[node_of[folded_into[static_cast<size_t>(launcher[i])]]] += ns;
      out.total += ns;
    }
  } else {
    for (size_t i = 0; i < calls.size(); i++) {
      const uint64_t value = metric == StackMetric::kCalls ? (folded_into[i] == i ? 1 : 0)
                                                           : calls[i].compensated_self_ns();
      self_ns[node_of[folded_into[i]]] += value;
      out.total += value;
    }
  }
  const uint64_t total = out.total, gpu_ns_outside_ops = out.gpu_ns_outside_ops;
  out = paths.take_sums(std::move(self_ns), timeline);
  out.total = total;
  out.gpu_ns_outside_ops = gpu_ns_outside_ops;
  return out;
}

}  // namespace gpuprof
