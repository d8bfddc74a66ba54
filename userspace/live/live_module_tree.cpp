// live_module_tree.cpp: LiveModuleTree (live_module_tree.h).
#include "live/live_module_tree.h"

#include <algorithm>

#include "analyze/call_tree.h"

namespace gpuprof {

LiveModuleTree::LiveModuleTree() : builder_(recording_, false) {
  recording_.options.with_stack = true;
  builder_.tree().has_stacks = true;
}

LiveModuleTree::~LiveModuleTree() = default;

void LiveModuleTree::begin(const std::vector<OpInfo>& ops) { recording_.ops = ops; }

void LiveModuleTree::ops_found(uint32_t first_id, const std::vector<OpInfo>& ops) {
  recording_.ops.resize(first_id);
  recording_.ops.insert(recording_.ops.end(), ops.begin(), ops.end());
}

void LiveModuleTree::frame(uint32_t id, const std::string& name) {
  if (recording_.sample_frames.size() <= id) recording_.sample_frames.resize(id + 1);
  recording_.sample_frames[id] = name;
  names_grew_ = true;
}

void LiveModuleTree::stack(uint32_t id, const std::vector<uint32_t>& frame_ids) {
  if (recording_.sample_stacks.size() <= id) recording_.sample_stacks.resize(id + 1);
  recording_.sample_stacks[id] = frame_ids;
}

void LiveModuleTree::module_names(const std::vector<ModuleName>& names) {
  recording_.module_names.insert(recording_.module_names.end(), names.begin(), names.end());
  names_grew_ = true;
}

void LiveModuleTree::op_event(const gp_event& event, uint64_t index) {
  if (!settled_) settled_ = std::make_unique<SettledCalls>(costs_ ? &*costs_ : nullptr);
  settled_->add({&event, 1}, index);
}

// One thread's settled calls: each placed as build_module_tree places it,
// parents first; their entries' stacks are no longer needed.
void LiveModuleTree::add_forest(const Timeline& forest) {
  if (names_grew_) {
    builder_.names_grew();
    names_grew_ = false;
  }
  const CallTree calls = build_call_tree(forest);
  const std::vector<size_t> folded_into = fold_same_name_calls(forest, recording_.ops);
  std::vector<size_t> node_of_call(forest.calls.size(), 0);
  for (const std::vector<size_t>& thread : calls.threads)
    for (size_t i : thread) {
      const OpCall& call = forest.calls[i];
      std::optional<size_t> parent;
      if (calls.parent[i] >= 0) parent = node_of_call[calls.parent[i]];
      std::optional<uint32_t> stack;
      if (auto found = stack_of_entry_.find(call.entry_index); found != stack_of_entry_.end()) {
        stack = found->second;
        python_threads_.insert(call.tid);
        stack_of_entry_.erase(found);
      }
      std::optional<uint32_t> forward_stack;
      if (auto found = forward_stack_of_entry_.find(call.entry_index); found != forward_stack_of_entry_.end()) {
        forward_stack = found->second;
        forward_stack_of_entry_.erase(found);
      }
      node_of_call[i] = builder_.add_call(call, parent, stack, forward_stack, python_threads_.count(call.tid) != 0,
                                          folded_into[i] != i, {});
    }
}

void LiveModuleTree::take_settled() {
  if (settled_)
    settled_->hand_settled([](uint64_t) { return true; }, [this](const Timeline& forest) { add_forest(forest); });
}

void LiveModuleTree::roll() {
  take_settled();
  before_ = std::move(now_);
  now_ = builder_.tree();
  finish_module_tree(now_);
}

void LiveModuleTree::finish() {
  if (settled_) {
    std::move(*settled_).finish([this](const Timeline& forest) { add_forest(forest); });
    settled_.reset();
  }
  before_ = std::move(now_);
  now_ = builder_.tree();
  finish_module_tree(now_);
}

ModuleTree LiveModuleTree::since_start() const { return now_; }

ModuleTree LiveModuleTree::interval() const { return module_tree_difference(now_, before_); }

ModuleTree module_tree_difference(const ModuleTree& now, const ModuleTree& before) {
  ModuleTree out = now;
  for (size_t i = 0; i < before.nodes.size() && i < out.nodes.size(); i++) {
    ModuleNode& node = out.nodes[i];
    const ModuleNode& was = before.nodes[i];
    node.calls -= was.calls;
    node.self_ns -= was.self_ns;
    node.total_ns -= was.total_ns;
    std::unordered_map<std::string, const ModuleOpRow*> rows_before;
    for (const ModuleOpRow& row : was.ops) rows_before[row.name] = &row;
    for (ModuleOpRow& row : node.ops)
      if (auto found = rows_before.find(row.name); found != rows_before.end()) {
        row.calls -= found->second->calls;
        row.self_ns -= found->second->self_ns;
        row.total_ns -= found->second->total_ns;
      }
    std::erase_if(node.ops, [](const ModuleOpRow& row) { return row.calls == 0 && row.self_ns == 0; });
    std::stable_sort(node.ops.begin(), node.ops.end(),
                     [](const ModuleOpRow& a, const ModuleOpRow& b) { return a.self_ns > b.self_ns; });
  }
  out.ops_without_stack -= std::min(out.ops_without_stack, before.ops_without_stack);
  return out;
}

}  // namespace gpuprof
