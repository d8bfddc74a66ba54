// stack_paths.h: the distinct paths of frames that stack sums
// (stack_sums.h) count on, as a trie, and the placing of a timeline's calls
// on their op paths: shared by the whole read (stack_sums()) and the
// streamed one (streamed_stack_sums.h), so both place a call alike.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "analyze/call_tree.h"
#include "analyze/module_names.h"
#include "analyze/op_timeline.h"
#include "analyze/stack_sums.h"
#include "record/recording.h"

namespace gpuprof {

// Distinct paths as a trie: node 0 is the root (no frame), every other
// node one frame below its parent node.
class PathTrie {
 public:
  PathTrie() : nodes_{{kNone, kNone}} {}

  uint32_t child(uint32_t parent, uint32_t frame);
  size_t size() const { return nodes_.size(); }
  // The node of node's path placed below `under` (the same frames, from
  // `under` down instead of from the root). Memoised per (under, node).
  uint32_t graft(uint32_t under, uint32_t node);
  // Frame ids from the outermost down to node.
  std::vector<uint32_t> frames_of(uint32_t node) const;

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

  uint32_t of(uint32_t op_id);
  uint32_t named(std::string_view name, FrameKind kind);
  std::vector<StackFrame> take() { return std::move(frames_); }

 private:
  static constexpr uint32_t kUnset = std::numeric_limits<uint32_t>::max();
  const std::vector<OpInfo>& ops_;
  std::vector<uint32_t> of_op_;
  std::vector<StackFrame> frames_;
  std::map<std::pair<std::string, FrameKind>, uint32_t> id_of_;
};

// The trie and frames of one recording's stacks, with its Python and kernel
// stacks (Recording::sample_stacks) appended as frames. `recording` (its
// ops, sample frames and stacks, module names) must outlive it; its events
// are not read.
class StackPaths {
 public:
  static constexpr uint32_t kUnplaced = std::numeric_limits<uint32_t>::max();

  explicit StackPaths(const Recording& recording);

  PathTrie& trie() { return trie_; }
  Frames& frames() { return frames_; }
  // The frames of sample_stacks[stack] (Python or kernel, outermost first)
  // below `node`; a stack id out of range adds none. With module attribute
  // names (record --with-modules), a module frame reads as the layer table
  // names it ("nn.Module: conv1", module_names.h).
  uint32_t append_stack(uint32_t node, uint32_t stack, FrameKind kind);
  // The same from the root, cached per stack: Python stacks repeat.
  uint32_t python_node(uint32_t stack);
  std::string_view sample_frame(uint32_t frame_id) const;

  // The path node of each call of `timeline` that stays after the fold
  // (kUnplaced for a folded one): below the node of its parent's call (the
  // call it folded into), a call without a parent below the Python stack of
  // its ENTRY (python_stack_of(entry_index), when it has one), as torch's
  // export_stacks prints it.
  std::vector<uint32_t> place_calls(const Timeline& timeline, const CallTree& tree,
                                    const std::vector<size_t>& folded_into,
                                    const std::function<std::optional<uint32_t>(uint64_t)>& python_stack_of);

  // Every path with its value (value_of_node by node, 0 past its end), the
  // frames, and the timeline's honesty counters: the StackSums of calls.
  StackSums take_sums(std::vector<uint64_t> value_of_node, const Timeline& timeline);
  // kSamples: only the paths a sample counted on, parents first, with
  // their counts (and their total), the frames and the counters.
  StackSums take_counted(const std::unordered_map<uint32_t, uint64_t>& count_of_node, const Timeline& timeline);

 private:
  const Recording& recording_;
  Frames frames_;
  PathTrie trie_;
  const ModuleNames modules_;
  const bool name_modules_;
  std::vector<uint32_t> node_of_stack_;
};

}  // namespace gpuprof
