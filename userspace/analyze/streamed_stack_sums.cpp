// streamed_stack_sums.cpp: stack_sums() as the events stream by, one
// thread's settled forest of calls at a time.
#include "analyze/streamed_stack_sums.h"

#include <algorithm>
#include <utility>

#include "analyze/call_tree.h"
#include "analyze/gpu_attribution.h"

namespace gpuprof {

StreamedStackSums::StreamedStackSums(const Recording& head, const ProbeCosts* costs,
                                     std::optional<uint64_t> last_entry_stack, StackMetric metric,
                                     const JoinBounds* bounds)
    : head_(head),
      metric_(metric),
      // Samples carry their own Python stacks: op calls are placed without.
      pairs_(head.options.with_stack && metric != StackMetric::kSamples, last_entry_stack),
      paths_(head),
      settled_(costs) {
  if (joins_by_thread(metric_) && bounds)
    figures_.emplace(
        costs, head.ops, /*memory=*/false, /*gpu=*/true, *bounds,
        [this](const Timeline& forest, const CallFigures& figures) { place(forest, &figures); },
        [this](uint64_t event_index) { return pairs_.known_through(event_index); });
  if (metric_ != StackMetric::kSamples) return;
  for (size_t i = 0; i < head.samples.size(); i++) sweeps_[head.samples[i].tid].samples.push_back(i);
  for (auto& [tid, sweep] : sweeps_)
    std::stable_sort(sweep.samples.begin(), sweep.samples.end(),
                     [&](size_t a, size_t b) { return head.samples[a].ts_ns < head.samples[b].ts_ns; });
  for (const SampleKernelStack& k : head.sample_kernel_stacks) kernel_stack_of_sample_.emplace(k.sample_index, k.stack_id);
}

bool StreamedStackSums::wants(const Recording& head) {
  return head.process.pid != 0 && (metric_ != StackMetric::kSelfCudaTime || figures_);
}

void StreamedStackSums::on_gpu_correlations(std::span<const GpuCorrelation> correlations) {
  if (figures_) figures_->add_gpu_correlations(correlations);
}

bool StreamedStackSums::on_gpu_activities(std::span<const GpuActivity> activities) {
  if (!figures_) return true;
  for (const GpuActivity& a : activities) activity_ns_ += gpu_activity_ns(a);
  figures_->add_gpu_activities(activities);
  return true;
}

void StreamedStackSums::on_events(std::span<const gp_event> events, uint64_t first) {
  if (figures_) {
    figures_->add_events(events, first);
    return;
  }
  settled_.add(events, first);
  settled_.hand_settled([this](uint64_t event_index) { return pairs_.known_through(event_index); },
                        [this](const Timeline& forest) { place(forest, nullptr); });
}

void StreamedStackSums::on_entry_stack(uint64_t event_index, uint32_t stack_id) {
  pairs_.add(event_index, stack_id);  // kSamples: none kept, calls are placed without their Python stacks
}

// Places one thread's settled forest: its calls' paths and values, and
// (kSamples) the thread's samples up to its last call.
void StreamedStackSums::place(const Timeline& forest, const CallFigures* figures) {
  const size_t n = forest.calls.size();
  const auto [tree, folded_into] = shape_.of(forest, head_.ops, figures ? &figures->folded_into : nullptr);
  const std::vector<uint32_t> node_of =
      paths_.place_calls(forest, tree, folded_into, [&](uint64_t entry_index) { return pairs_.of(entry_index); });
  if (metric_ == StackMetric::kSamples) {
    // The thread's samples before each call, then the call open (the
    // sweep of stack_sums.cpp, calls parents first).
    SampleSweep& sweep = sweeps_[forest.calls.front().tid];
    for (size_t id : tree.threads.front()) {
      const OpCall& call = forest.calls[id];
      sweep_samples(sweep, call.start_ns);
      while (!sweep.open.empty() && (sweep.open.back().end_ns < call.start_ns || sweep.open.back().depth >= call.depth))
        sweep.open.pop_back();
      const uint32_t node = node_of[folded_into[id]];
      sweep.open.push_back({call.end_ns, call.depth, node == StackPaths::kUnplaced ? 0 : node});
    }
  }
  if (value_of_node_.size() < paths_.trie().size()) value_of_node_.resize(paths_.trie().size());
  if (counts_calls_ && calls_of_node_.size() < paths_.trie().size()) calls_of_node_.resize(paths_.trie().size());
  for (size_t k = 0; k < n; k++) {
    // As stack_sums(): a call folded into its parent counts in that call.
    // kSelfCudaTime: what the call launched itself, on its fold's path
    // (gpu_attribution.h), as stack_sums() charges each activity.
    const uint64_t value = metric_ == StackMetric::kCalls          ? (folded_into[k] == k ? 1 : 0)
                           : metric_ == StackMetric::kSelfCudaTime ? figures->own_gpu_ns[k]
                                                                   : forest.calls[k].compensated_self_ns();
    value_of_node_[node_of[folded_into[k]]] += value;
    total_ += value;
    if (counts_calls_ && folded_into[k] == k) {
      calls_of_node_[node_of[k]]++;
      calls_total_++;
    }
    pairs_.forget(forest.calls[k].entry_index);
  }
}

// Counts the sweep's samples stamped before before_ns (nullopt: all that
// are left), each on the call innermost at its time.
void StreamedStackSums::sweep_samples(SampleSweep& sweep, std::optional<uint64_t> before_ns) {
  for (; sweep.next < sweep.samples.size(); sweep.next++) {
    const size_t index = sweep.samples[sweep.next];
    const uint64_t ts = head_.samples[index].ts_ns;
    if (before_ns && ts >= *before_ns) return;
    while (!sweep.open.empty() && sweep.open.back().end_ns < ts) sweep.open.pop_back();
    count_sample(index, sweep.open.empty() ? 0 : sweep.open.back().node);
  }
}

// One sample on its Python frames, the op path of its call, its native
// leaf and its kernel frames (stack_sums.h, kSamples).
void StreamedStackSums::count_sample(size_t index, uint32_t call_node) {
  const CpuSample& sample = head_.samples[index];
  PathTrie& trie = paths_.trie();
  uint32_t node = trie.graft(paths_.python_node(sample.python_stack), call_node);
  node = trie.child(node, paths_.frames().named(paths_.sample_frame(sample.frame_id), FrameKind::kNative));
  if (sample.in_kernel) {
    auto k = kernel_stack_of_sample_.find(index);
    node = k == kernel_stack_of_sample_.end()
               ? trie.child(node, paths_.frames().named("[kernel]", FrameKind::kKernel))
               : paths_.append_stack(node, k->second, FrameKind::kKernel);
  }
  ++count_of_node_[node];
}

StackSums StreamedStackSums::finish() && {
  const Timeline timeline =
      figures_ ? std::move(*figures_).finish(head_.ops)
               : std::move(settled_).finish([this](const Timeline& forest) { place(forest, nullptr); });
  if (metric_ == StackMetric::kSamples) {
    for (auto& [tid, sweep] : sweeps_) sweep_samples(sweep, std::nullopt);  // after each thread's last call
    return paths_.take_counted(count_of_node_, timeline);
  }
  StackSums out = paths_.take_sums(std::move(value_of_node_), timeline);
  out.total = total_;
  // Launched outside every op, or the launch never seen: on no path.
  if (metric_ == StackMetric::kSelfCudaTime) out.gpu_ns_outside_ops = activity_ns_ - total_;
  return out;
}

std::pair<StackSums, StackSums> StreamedStackSums::finish_with_calls() && {
  StackSums self = std::move(*this).finish();  // places the forests still held: their calls counted too
  StackSums calls = self;
  // take_sums() lists nodes 1.. in order, as calls_of_node_ numbers them.
  calls_of_node_.resize(calls.stacks.size() + 1);
  for (size_t i = 0; i < calls.stacks.size(); i++) calls.stacks[i].value = calls_of_node_[i + 1];
  calls.total = calls_total_;
  return {std::move(self), std::move(calls)};
}

}  // namespace gpuprof
