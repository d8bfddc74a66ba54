// stack_paths.cpp: the trie of stack paths and the placing of calls on it.
#include "analyze/stack_paths.h"

#include <algorithm>

#include "analyze/aggregator.h"

namespace gpuprof {

uint32_t PathTrie::child(uint32_t parent, uint32_t frame) {
  const uint64_t key = (static_cast<uint64_t>(parent) << 32) | frame;
  auto [it, inserted] = child_of_.try_emplace(key, static_cast<uint32_t>(nodes_.size()));
  if (inserted) nodes_.push_back({parent, frame});
  return it->second;
}

uint32_t PathTrie::graft(uint32_t under, uint32_t node) {
  if (under == 0 || node == 0) return under == 0 ? node : under;
  const uint64_t key = (static_cast<uint64_t>(under) << 32) | node;
  if (auto it = graft_of_.find(key); it != graft_of_.end()) return it->second;
  const Node n = nodes_[node];
  const uint32_t out = child(graft(under, n.parent), n.frame);
  graft_of_.emplace(key, out);
  return out;
}

std::vector<uint32_t> PathTrie::frames_of(uint32_t node) const {
  std::vector<uint32_t> chain;
  for (; node != 0; node = nodes_[node].parent) chain.push_back(nodes_[node].frame);
  return {chain.rbegin(), chain.rend()};
}

uint32_t Frames::of(uint32_t op_id) {
  if (op_id < of_op_.size()) {
    if (of_op_[op_id] == kUnset) of_op_[op_id] = named(ops_[op_id].name, FrameKind::kOp);
    return of_op_[op_id];
  }
  return named(op_display_name(ops_, op_id), FrameKind::kOp);
}

uint32_t Frames::named(std::string_view name, FrameKind kind) {
  auto [it, inserted] = id_of_.try_emplace({std::string(name), kind}, static_cast<uint32_t>(frames_.size()));
  if (inserted) frames_.push_back({std::string(name), kind});
  return it->second;
}

StackPaths::StackPaths(const Recording& recording)
    : recording_(recording),
      frames_(recording.ops),
      modules_(recording),
      name_modules_(modules_.has_attribute_names()),
      node_of_stack_(recording.sample_stacks.size(), kUnplaced) {}

std::string_view StackPaths::sample_frame(uint32_t frame_id) const {
  return frame_id < recording_.sample_frames.size() ? recording_.sample_frames[frame_id]
                                                    : std::string_view("[unknown]");
}

uint32_t StackPaths::append_stack(uint32_t node, uint32_t stack, FrameKind kind) {
  if (stack >= recording_.sample_stacks.size()) return node;
  uint32_t parent_module = kNoModuleFrame;
  for (uint32_t f : recording_.sample_stacks[stack]) {
    if (name_modules_ && kind == FrameKind::kPython && modules_.is_module_frame(f)) {
      const std::string name = std::string(kModuleFramePrefix) + modules_.name(parent_module, f).first;
      node = trie_.child(node, frames_.named(name, kind));
      parent_module = f;
      continue;
    }
    node = trie_.child(node, frames_.named(sample_frame(f), kind));
  }
  return node;
}

uint32_t StackPaths::python_node(uint32_t stack) {
  if (stack >= recording_.sample_stacks.size()) return 0;
  if (node_of_stack_[stack] == kUnplaced) node_of_stack_[stack] = append_stack(0, stack, FrameKind::kPython);
  return node_of_stack_[stack];
}

std::vector<uint32_t> StackPaths::place_calls(
    const Timeline& timeline, const CallTree& tree, const std::vector<size_t>& folded_into,
    const std::function<std::optional<uint32_t>(uint64_t)>& python_stack_of) {
  // A thread's calls come parents first, and the call a call folds into is
  // its ancestor, so both are placed before they are needed. The parent of
  // a call may itself be folded: the path continues from the call it folded
  // into.
  const auto& calls = timeline.calls;
  std::vector<uint32_t> node_of(calls.size(), kUnplaced);
  for (const std::vector<size_t>& ids : tree.threads) {
    for (size_t id : ids) {
      if (folded_into[id] != id) continue;
      uint32_t above = 0;
      if (const int64_t parent = tree.parent[id]; parent >= 0) {
        above = node_of[folded_into[static_cast<size_t>(parent)]];
        if (above == kUnplaced) above = 0;  // not reached: parents come first
      } else if (python_stack_of) {
        if (const std::optional<uint32_t> python = python_stack_of(calls[id].entry_index)) above = python_node(*python);
      }
      node_of[id] = trie_.child(above, frames_.of(calls[id].op_id));
    }
  }
  return node_of;
}

StackSums StackPaths::take_counted(const std::unordered_map<uint32_t, uint64_t>& count_of_node,
                                   const Timeline& timeline) {
  std::vector<uint32_t> nodes;
  for (const auto& [node, count] : count_of_node) nodes.push_back(node);
  std::sort(nodes.begin(), nodes.end());  // parents first: a node is numbered after its parent
  StackSums out;
  for (uint32_t node : nodes) {
    const uint64_t count = count_of_node.at(node);
    out.stacks.push_back({trie_.frames_of(node), count});
    out.total += count;
  }
  out.frames = frames_.take();
  out.counters = timeline.counters;
  out.counters.calls_shorter_than_probes = 0;  // samples are not compensated
  return out;
}

StackSums StackPaths::take_sums(std::vector<uint64_t> value_of_node, const Timeline& timeline) {
  StackSums out;
  value_of_node.resize(trie_.size());
  for (uint32_t node = 1; node < trie_.size(); node++) out.stacks.push_back({trie_.frames_of(node), value_of_node[node]});
  out.frames = frames_.take();
  out.counters = timeline.counters;
  return out;
}

}  // namespace gpuprof
