// stack_sums.cpp: op paths of the timeline's calls, summed per path.
#include "analyze/stack_sums.h"

#include <algorithm>
#include <limits>
#include <map>
#include <string_view>
#include <unordered_map>

#include "analyze/aggregator.h"
#include "analyze/call_tree.h"
#include "analyze/module_names.h"
#include "analyze/gpu_attribution.h"
#include "analyze/op_timeline.h"

namespace gpuprof {
namespace {

// Distinct op paths as a trie: node 0 is the root (no frame), every other
// node one frame below its parent node.
class PathTrie {
 public:
  PathTrie() : nodes_{{kNone, kNone}} {}

  uint32_t child(uint32_t parent, uint32_t frame) {
    const uint64_t key = (static_cast<uint64_t>(parent) << 32) | frame;
    auto [it, inserted] = child_of_.try_emplace(key, static_cast<uint32_t>(nodes_.size()));
    if (inserted) nodes_.push_back({parent, frame});
    return it->second;
  }
  size_t size() const { return nodes_.size(); }

  // The node of node's path placed below `under` (the same frames, from
  // `under` down instead of from the root). Memoised per (under, node).
  uint32_t graft(uint32_t under, uint32_t node) {
    if (under == 0 || node == 0) return under == 0 ? node : under;
    const uint64_t key = (static_cast<uint64_t>(under) << 32) | node;
    if (auto it = graft_of_.find(key); it != graft_of_.end()) return it->second;
    const Node n = nodes_[node];
    const uint32_t out = child(graft(under, n.parent), n.frame);
    graft_of_.emplace(key, out);
    return out;
  }

  // Frame ids from the outermost down to node.
  std::vector<uint32_t> frames_of(uint32_t node) const {
    std::vector<uint32_t> chain;
    for (; node != 0; node = nodes_[node].parent) chain.push_back(nodes_[node].frame);
    return {chain.rbegin(), chain.rend()};
  }

 private:
  static constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();
  struct Node {
    uint32_t parent;
    uint32_t frame;
  };
  std::vector<Node> nodes_;
  std::unordered_map<uint64_t, uint32_t> child_of_;
  std::unordered_map<uint64_t, uint32_t> graft_of_;
};

// Frame ids: op frames by op id (overloads of one op, one name, share a
// frame, as they share a table row; an op id outside the op table gets the
// table's "<unknown op N>"), other frames by name and kind.
class Frames {
 public:
  explicit Frames(const std::vector<OpInfo>& ops) : ops_(ops), of_op_(ops.size(), kUnset) {}

  uint32_t of(uint32_t op_id) {
    if (op_id < of_op_.size()) {
      if (of_op_[op_id] == kUnset) of_op_[op_id] = named(ops_[op_id].name, FrameKind::kOp);
      return of_op_[op_id];
    }
    return named(op_display_name(ops_, op_id), FrameKind::kOp);
  }
  uint32_t named(std::string_view name, FrameKind kind) {
    auto [it, inserted] = id_of_.try_emplace({std::string(name), kind}, static_cast<uint32_t>(frames_.size()));
    if (inserted) frames_.push_back({std::string(name), kind});
    return it->second;
  }
  std::vector<StackFrame> take() { return std::move(frames_); }

 private:
  static constexpr uint32_t kUnset = std::numeric_limits<uint32_t>::max();
  const std::vector<OpInfo>& ops_;
  std::vector<uint32_t> of_op_;
  std::vector<StackFrame> frames_;
  std::map<std::pair<std::string, FrameKind>, uint32_t> id_of_;
};

}  // namespace

StackSums stack_sums(const Recording& recording, StackMetric metric, bool raw_times) {
  const Timeline timeline = build_timeline(recording.events, compensation_costs(recording, raw_times));
  const CallTree tree = build_call_tree(timeline);
  const std::vector<size_t> folded_into = fold_same_name_calls(timeline, recording.ops);
  const auto& calls = timeline.calls;

  // The path node of each call that stays after the fold. A thread's calls
  // come parents first, and the call a call folds into is its ancestor, so
  // both are placed before they are needed. The parent of a call may itself
  // be folded: the path continues from the call it folded into.
  constexpr uint32_t kUnplaced = std::numeric_limits<uint32_t>::max();
  Frames frames(recording.ops);
  PathTrie trie;
  auto sample_frame = [&](uint32_t frame_id) -> std::string_view {
    return frame_id < recording.sample_frames.size() ? recording.sample_frames[frame_id]
                                                     : std::string_view("[unknown]");
  };
  // A stack's frames (Python or kernel, outermost first) below `node`;
  // kNoPythonStack (any id out of range) adds none.
  // With module attribute names (record --with-modules), a module frame
  // reads as the layer table names it ("nn.Module: conv1", module_names.h).
  const ModuleNames modules(recording);
  const bool name_modules = modules.has_attribute_names();
  auto append_stack = [&](uint32_t node, uint32_t stack, FrameKind kind) -> uint32_t {
    if (stack >= recording.sample_stacks.size()) return node;
    uint32_t parent_module = kNoModuleFrame;
    for (uint32_t f : recording.sample_stacks[stack]) {
      if (name_modules && kind == FrameKind::kPython && modules.is_module_frame(f)) {
        const std::string name = std::string(kModuleFramePrefix) + modules.name(parent_module, f).first;
        node = trie.child(node, frames.named(name, kind));
        parent_module = f;
        continue;
      }
      node = trie.child(node, frames.named(sample_frame(f), kind));
    }
    return node;
  };
  // The same from the root, cached per stack: Python stacks repeat.
  std::vector<uint32_t> node_of_stack(recording.sample_stacks.size(), kUnplaced);
  auto python_node = [&](uint32_t stack) -> uint32_t {
    if (stack >= recording.sample_stacks.size()) return 0;
    if (node_of_stack[stack] == kUnplaced) node_of_stack[stack] = append_stack(0, stack, FrameKind::kPython);
    return node_of_stack[stack];
  };
  // record --with-stack, self_cpu_time: an outermost op call hangs under
  // the Python stack of its ENTRY (what torch's export_stacks prints), its
  // nested calls under it as before. Samples carry their own Python frames,
  // grafted above the op path below.
  std::unordered_map<uint64_t, uint32_t> stack_of_entry;
  if (metric != StackMetric::kSamples)
    for (const EntryStack& e : recording.entry_stacks) stack_of_entry.emplace(e.event_index, e.stack_id);
  std::vector<uint32_t> node_of(calls.size(), kUnplaced);
  for (const std::vector<size_t>& ids : tree.threads) {
    for (size_t id : ids) {
      if (folded_into[id] != id) continue;
      uint32_t above = 0;
      if (const int64_t parent = tree.parent[id]; parent >= 0) {
        above = node_of[folded_into[static_cast<size_t>(parent)]];
        if (above == kUnplaced) above = 0;  // not reached: parents come first
      } else if (auto python = stack_of_entry.find(calls[id].entry_index); python != stack_of_entry.end()) {
        above = python_node(python->second);
      }
      node_of[id] = trie.child(above, frames.of(calls[id].op_id));
    }
  }

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
        node = trie.graft(python_node(sample.python_stack), node);
        node = trie.child(node, frames.named(sample_frame(sample.frame_id), FrameKind::kNative));
        if (sample.in_kernel) {
          auto k = kernel_stack_of_sample.find(order[at]);
          node = k == kernel_stack_of_sample.end() ? trie.child(node, kernel) : append_stack(node, k->second, FrameKind::kKernel);
        }
        ++count_of_node[node];
      }
    }
    std::vector<uint32_t> nodes;
    for (const auto& [node, count] : count_of_node) nodes.push_back(node);
    std::sort(nodes.begin(), nodes.end());  // parents first: a node is numbered after its parent
    for (uint32_t node : nodes) {
      out.stacks.push_back({trie.frames_of(node), count_of_node[node]});
      out.total += count_of_node[node];
    }
    out.frames = frames.take();
    out.calls_unwound = timeline.calls_unwound;
    out.exits_without_entry = timeline.exits_without_entry;
    out.calls_open_at_end = timeline.calls_open_at_end;
    return out;
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
  for (uint32_t node = 1; node < trie.size(); node++) out.stacks.push_back({trie.frames_of(node), self_ns[node]});
  out.frames = frames.take();
  out.calls_unwound = timeline.calls_unwound;
  out.exits_without_entry = timeline.exits_without_entry;
  out.calls_open_at_end = timeline.calls_open_at_end;
  out.calls_shorter_than_probes = timeline.calls_shorter_than_probes;
  return out;
}

}  // namespace gpuprof
