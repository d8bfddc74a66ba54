// streamed_module_tree.cpp: build_module_tree() as the events stream by,
// one thread's settled forest of calls at a time.
#include "analyze/streamed_module_tree.h"

#include <utility>
#include <vector>

#include "analyze/call_tree.h"

namespace gpuprof {

StreamedModuleTree::StreamedModuleTree(const Recording& head, const ProbeCosts* costs,
                                       std::optional<uint64_t> last_entry_stack,
                                       std::optional<uint64_t> last_backward_stack)
    : head_(head),
      entry_pairs_(true, last_entry_stack),
      backward_pairs_(true, last_backward_stack),
      settled_(costs),
      builder_(head, /*keep_calls=*/false) {
  builder_.tree().has_stacks = head.options.with_stack;
}

bool StreamedModuleTree::wants(const Recording& head) {
  return head.options.with_stack && head.process.pid != 0 && !head.options.memory;
}

void StreamedModuleTree::on_events(std::span<const gp_event> events, uint64_t first) {
  settled_.add(events, first);
  settled_.hand_settled([this](uint64_t event_index) { return ready(event_index); },
                        [this](const Timeline& forest) { place(forest); });
}

void StreamedModuleTree::on_entry_stack(uint64_t event_index, uint32_t stack_id) {
  entry_pairs_.add(event_index, stack_id);
}

void StreamedModuleTree::on_backward_stack(uint64_t event_index, uint32_t stack_id) {
  backward_pairs_.add(event_index, stack_id);
}

void StreamedModuleTree::hold(uint32_t tid, const OpCall& call, bool outermost, bool folded) {
  auto [found, first] = held_.try_emplace(tid);
  if (first) held_order_.push_back(tid);
  Held& held = found->second;
  if (outermost) {
    held.calls.outermost++;
    held.calls.self_ns += call.compensated_ns();
  }
  const std::string& name = op_table_name(head_.ops, call.op_id);
  auto [it, inserted] = held.row_of.try_emplace(name, held.calls.rows.size());
  if (inserted) held.calls.rows.push_back({name, 0, 0, 0, {}});
  ModuleOpRow& row = held.calls.rows[it->second];
  row.self_ns += call.compensated_self_ns();
  if (!folded) {
    row.calls++;
    row.total_ns += call.compensated_ns();
  }
}

// Places one thread's settled forest as build_module_tree places its
// calls, parents first; its entries' pairs are then no longer needed.
void StreamedModuleTree::place(const Timeline& forest) {
  const uint32_t tid = forest.calls.front().tid;
  std::vector<std::optional<uint32_t>> stacks(forest.calls.size());
  bool any_stack = false;
  for (size_t i = 0; i < forest.calls.size(); i++) {
    stacks[i] = entry_pairs_.of(forest.calls[i].entry_index);
    any_stack = any_stack || stacks[i].has_value();
  }
  // The whole read asks whether the thread has a stack at any entry: one in
  // this forest says yes for the calls held before it too.
  if (any_stack && python_threads_.insert(tid).second) {
    if (auto held = held_.find(tid); held != held_.end()) {
      builder_.add_held_calls(held->second.calls, /*python_thread=*/true);
      held_.erase(held);
    }
    std::erase(held_order_, tid);
  }
  const bool python_thread = python_threads_.count(tid) != 0;
  const CallTree tree = build_call_tree(forest);
  const std::vector<size_t> folded_into = fold_same_name_calls(forest, head_.ops);
  std::vector<std::optional<size_t>> node_of_call(forest.calls.size());  // nullopt: held
  for (const std::vector<size_t>& thread : tree.threads)
    for (size_t i : thread) {
      const OpCall& call = forest.calls[i];
      const int64_t parent = tree.parent[i];
      const std::optional<uint32_t> stack = stacks[i];
      const bool folded = folded_into[i] != i;
      const bool held = parent >= 0 ? !node_of_call[parent]
                                    : !python_thread && !stack && !is_autograd_engine_call(head_, call);
      if (held) {
        hold(tid, call, parent < 0, folded);
        continue;
      }
      node_of_call[i] = builder_.add_call(call, parent >= 0 ? node_of_call[parent] : std::nullopt, stack,
                                          backward_pairs_.of(call.entry_index), python_thread, folded, {});
    }
  for (const OpCall& call : forest.calls) {
    entry_pairs_.forget(call.entry_index);
    backward_pairs_.forget(call.entry_index);
  }
}

ModuleTree StreamedModuleTree::finish() && {
  std::move(settled_).finish([this](const Timeline& forest) { place(forest); });
  // Threads that never had a stack, in the order their first call was held.
  for (uint32_t tid : held_order_) builder_.add_held_calls(held_.at(tid).calls, /*python_thread=*/false);
  held_.clear();
  builder_.end_threads();
  ModuleTree tree = std::move(builder_.tree());
  finish_module_tree(tree);
  return tree;
}

}  // namespace gpuprof
