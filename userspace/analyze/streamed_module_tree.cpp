// streamed_module_tree.cpp: build_module_tree() as the events stream by,
// one thread's settled forest of calls at a time.
#include "analyze/streamed_module_tree.h"

#include <utility>
#include <vector>

#include "analyze/call_tree.h"

namespace gpuprof {

StreamedModuleTree::StreamedModuleTree(const Recording& head, const ProbeCosts* costs,
                                       std::optional<uint64_t> last_entry_stack,
                                       std::optional<uint64_t> last_backward_stack, const JoinBounds* bounds)
    : head_(head),
      entry_pairs_(true, last_entry_stack),
      backward_pairs_(true, last_backward_stack),
      settled_(costs),
      gpu_(joins_by_thread(head)),
      builder_(head, /*keep_calls=*/false) {
  builder_.tree().has_stacks = head.options.with_stack;
  builder_.tree().gpu_recorded = gpu_;
  if (gpu_ && bounds)
    figures_.emplace(
        costs, head.ops, /*memory=*/false, /*gpu=*/true, *bounds,
        [this](const Timeline& forest, const CallFigures& figures) { place(forest, &figures); },
        [this](uint64_t event_index) { return ready(event_index); });
}

void StreamedModuleTree::on_gpu_correlations(std::span<const GpuCorrelation> correlations) {
  if (figures_) figures_->add_gpu_correlations(correlations);
}

bool StreamedModuleTree::on_gpu_activities(std::span<const GpuActivity> activities) {
  if (!figures_) return false;
  figures_->add_gpu_activities(activities);
  return true;
}

bool StreamedModuleTree::wants(const Recording& head) {
  // The head it was made for: a recording's, or one process's selection of
  // a system-wide one (analyze/chosen_processes_stream.h).
  return head.options.with_stack && head_.process.pid != 0 && !head.options.memory && (!gpu_ || figures_);
}

void StreamedModuleTree::on_events(std::span<const gp_event> events, uint64_t first) {
  if (figures_) {
    figures_->add_events(events, first);
    return;
  }
  settled_.add(events, first);
  settled_.hand_settled([this](uint64_t event_index) { return ready(event_index); },
                        [this](const Timeline& forest) { place(forest, nullptr); });
}

void StreamedModuleTree::on_entry_stack(uint64_t event_index, uint32_t stack_id) {
  entry_pairs_.add(event_index, stack_id);
}

void StreamedModuleTree::on_backward_stack(uint64_t event_index, uint32_t stack_id) {
  backward_pairs_.add(event_index, stack_id);
}

void StreamedModuleTree::hold(uint32_t tid, const OpCall& call, bool outermost, bool folded,
                              const ModuleCallFigures& figures) {
  auto [found, first] = held_.try_emplace(tid);
  if (first) held_order_.push_back(tid);
  Held& held = found->second;
  if (outermost) {
    held.calls.outermost++;
    held.calls.self_ns += call.compensated_ns();
    held.calls.self_cuda_ns += figures.gpu_ns;
  }
  const std::string& name = op_table_name(head_.ops, call.op_id);
  auto [it, inserted] = held.row_of.try_emplace(name, held.calls.rows.size());
  if (inserted) held.calls.rows.push_back({name, 0, 0, 0, {}});
  ModuleOpRow& row = held.calls.rows[it->second];
  row.self_ns += call.compensated_self_ns();
  row.figures.self_cuda_ns += figures.self_gpu_ns;
  if (!folded) {
    row.calls++;
    row.total_ns += call.compensated_ns();
    row.figures.cuda_ns += figures.gpu_ns;
  }
}

// Places one thread's settled forest as build_module_tree places its
// calls, parents first, taking its entries' pairs (no longer needed after).
void StreamedModuleTree::place(const Timeline& forest, const CallFigures* figures) {
  const uint32_t tid = forest.calls.front().tid;
  std::vector<std::optional<uint32_t>>& stacks = stacks_;
  stacks.resize(forest.calls.size());
  bool any_stack = false;
  for (size_t i = 0; i < forest.calls.size(); i++) {
    uint32_t stack_id;
    if (entry_pairs_.take(forest.calls[i].entry_index, stack_id)) {  // read here alone
      stacks[i] = stack_id;
      any_stack = true;
    } else {
      stacks[i].reset();
    }
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
  const auto [tree, folded_into] = shape_.of(forest, head_.ops, figures ? &figures->folded_into : nullptr);
  std::vector<std::optional<size_t>>& node_of_call = node_of_call_;  // nullopt: held
  node_of_call.assign(forest.calls.size(), std::nullopt);
  for (const std::vector<size_t>& thread : tree.threads)
    for (size_t i : thread) {
      const OpCall& call = forest.calls[i];
      const int64_t parent = tree.parent[i];
      const std::optional<uint32_t> stack = stacks[i];
      const bool folded = folded_into[i] != i;
      const bool held = parent >= 0 ? !node_of_call[parent]
                                    : !python_thread && !stack && !is_autograd_engine_call(head_, call);
      const std::optional<uint32_t> forward_stack = backward_pairs_.take(call.entry_index);
      ModuleCallFigures call_figures;
      if (figures) call_figures.gpu_ns = figures->gpu_ns[i], call_figures.self_gpu_ns = figures->self_gpu_ns[i];
      if (held) {
        hold(tid, call, parent < 0, folded, call_figures);
        continue;
      }
      node_of_call[i] = builder_.add_call(call, parent >= 0 ? node_of_call[parent] : std::nullopt, stack,
                                          forward_stack, python_thread, folded, call_figures);
    }
}

ModuleTree StreamedModuleTree::finish() && {
  if (figures_)
    std::move(*figures_).finish(head_.ops);
  else
    std::move(settled_).finish([this](const Timeline& forest) { place(forest, nullptr); });
  // Threads that never had a stack, in the order their first call was held.
  for (uint32_t tid : held_order_) builder_.add_held_calls(held_.at(tid).calls, /*python_thread=*/false);
  held_.clear();
  builder_.end_threads();
  ModuleTree tree = std::move(builder_.tree());
  finish_module_tree(tree);
  return tree;
}

}  // namespace gpuprof
