// streamed_stack_sums.cpp: stack_sums() as the events stream by, one
// thread's settled forest of calls at a time.
#include "analyze/streamed_stack_sums.h"

#include <algorithm>
#include <utility>

#include "analyze/call_tree.h"

namespace gpuprof {

StreamedStackSums::StreamedStackSums(const Recording& head, const ProbeCosts* costs,
                                     std::optional<uint64_t> last_entry_stack, StackMetric metric)
    : head_(head),
      metric_(metric),
      costs_(costs ? std::optional<ProbeCosts>(*costs) : std::nullopt),
      // Samples carry their own Python stacks: op calls are placed without.
      with_stack_(head.options.with_stack && metric != StackMetric::kSamples),
      last_entry_stack_(last_entry_stack),
      paths_(head),
      builder_(costs_ ? &*costs_ : nullptr) {
  if (metric_ != StackMetric::kSamples) return;
  for (size_t i = 0; i < head.samples.size(); i++) sweeps_[head.samples[i].tid].samples.push_back(i);
  for (auto& [tid, sweep] : sweeps_)
    std::stable_sort(sweep.samples.begin(), sweep.samples.end(),
                     [&](size_t a, size_t b) { return head.samples[a].ts_ns < head.samples[b].ts_ns; });
  for (const SampleKernelStack& k : head.sample_kernel_stacks) kernel_stack_of_sample_.emplace(k.sample_index, k.stack_id);
}

bool StreamedStackSums::wants(const Recording& head) {
  return head.process.pid != 0 && !head.options.memory;
}

void StreamedStackSums::note_rest(uint32_t tid, uint64_t event_index) {
  const uint64_t completed = builder_.calls_completed();
  std::vector<std::pair<uint64_t, uint64_t>>& rests = pending_[tid].rests;
  if (!rests.empty() && rests.back().first == completed) {
    rests.back().second = event_index;  // nothing completed since: the later moment serves
    return;
  }
  rests.emplace_back(completed, event_index);
}

void StreamedStackSums::on_events(std::span<const gp_event> events, uint64_t first) {
  uint32_t resting_tid = 0;  // the last event's thread, when it was at rest and nothing completed since
  uint64_t resting_calls = UINT64_MAX;
  for (size_t i = 0; i < events.size(); i++) {
    const gp_event& e = events[i];
    builder_.add(e, first + i);
    if (e.kind == GP_EV_CUT) {  // every thread's frames ended at it
      take_completed();
      for (auto& [tid, pending] : pending_) note_rest(tid, first + i);
      resting_calls = UINT64_MAX;
      continue;
    }
    // A run of one thread's events at rest (outermost calls one after the
    // other) notes one moment per completed call; skip the lookups between.
    if (!builder_.at_rest(e.tid)) continue;
    const uint64_t completed = builder_.calls_completed();
    if (resting_calls == completed && resting_tid == e.tid) continue;
    note_rest(e.tid, first + i);
    resting_tid = e.tid;
    resting_calls = completed;
  }
  take_completed();
  place_settled(false);
}

void StreamedStackSums::on_entry_stack(uint64_t event_index, uint32_t stack_id) {
  if (!with_stack_) return;  // kSamples: calls are placed without their Python stacks
  entry_stacks_.emplace(event_index, stack_id);
  last_pair_seen_ = event_index;
}

void StreamedStackSums::take_completed() {
  CompletedCalls done = builder_.take_completed();
  for (size_t k = 0; k < done.calls.size(); k++) {
    Pending& pending = pending_[done.calls[k].tid];
    pending.calls.push_back(done.calls[k]);
    pending.child_count.push_back(done.child_count[k]);
    pending.only_child.push_back(done.only_child[k]);
    pending.index.push_back(done.first + k);
  }
}

bool StreamedStackSums::pairs_known_through(uint64_t event_index) const {
  if (!with_stack_ || !last_entry_stack_) return true;
  // Pairs come in increasing event index: one of this event or a later
  // one says every pair up to it has come; past the file's last pair, that
  // one must have come.
  return last_pair_seen_ && *last_pair_seen_ >= std::min(event_index, *last_entry_stack_);
}

void StreamedStackSums::place_settled(bool all) {
  for (auto it = pending_.begin(); it != pending_.end();) {
    Pending& pending = it->second;
    if (all) {
      place(pending, UINT64_MAX);
    } else {
      // The latest moment at rest whose pairs have all come.
      size_t ready = pending.rests.size();
      while (ready > 0 && !pairs_known_through(pending.rests[ready - 1].second)) ready--;
      if (ready > 0) {
        place(pending, pending.rests[ready - 1].first);
        pending.rests.erase(pending.rests.begin(), pending.rests.begin() + static_cast<ptrdiff_t>(ready));
      }
    }
    if (pending.calls.empty() && pending.rests.empty())
      it = pending_.erase(it);
    else
      ++it;
  }
}

// Places the thread's calls completed before call index calls_before: a
// forest whose parents and folds are all among them.
void StreamedStackSums::place(Pending& pending, uint64_t calls_before) {
  const size_t n = static_cast<size_t>(
      std::lower_bound(pending.index.begin(), pending.index.end(), calls_before) - pending.index.begin());
  if (n == 0) return;
  Timeline forest;
  forest.calls.assign(pending.calls.begin(), pending.calls.begin() + static_cast<ptrdiff_t>(n));
  forest.child_count.assign(pending.child_count.begin(), pending.child_count.begin() + static_cast<ptrdiff_t>(n));
  forest.only_child.resize(n, -1);
  const auto indices_end = pending.index.begin() + static_cast<ptrdiff_t>(n);
  for (size_t k = 0; k < n; k++) {
    if (pending.only_child[k] < 0) continue;
    auto at = std::lower_bound(pending.index.begin(), indices_end, static_cast<uint64_t>(pending.only_child[k]));
    if (at != indices_end && *at == static_cast<uint64_t>(pending.only_child[k]))
      forest.only_child[k] = at - pending.index.begin();
  }
  const CallTree tree = build_call_tree(forest);
  const std::vector<size_t> folded_into = fold_same_name_calls(forest, head_.ops);
  const std::vector<uint32_t> node_of =
      paths_.place_calls(forest, tree, folded_into, [&](uint64_t entry_index) -> std::optional<uint32_t> {
        if (!with_stack_) return std::nullopt;
        auto python = entry_stacks_.find(entry_index);
        if (python == entry_stacks_.end()) return std::nullopt;
        return python->second;
      });
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
  for (size_t k = 0; k < n; k++) {
    const uint64_t value = forest.calls[k].compensated_self_ns();
    value_of_node_[node_of[folded_into[k]]] += value;
    total_ += value;
    if (with_stack_) entry_stacks_.erase(forest.calls[k].entry_index);
  }
  pending.calls.erase(pending.calls.begin(), pending.calls.begin() + static_cast<ptrdiff_t>(n));
  pending.child_count.erase(pending.child_count.begin(), pending.child_count.begin() + static_cast<ptrdiff_t>(n));
  pending.only_child.erase(pending.only_child.begin(), pending.only_child.begin() + static_cast<ptrdiff_t>(n));
  pending.index.erase(pending.index.begin(), indices_end);
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
  builder_.end();  // a step still open ends with its thread's last event
  take_completed();
  place_settled(true);
  const Timeline timeline = std::move(builder_).finish();
  if (metric_ == StackMetric::kSamples) {
    for (auto& [tid, sweep] : sweeps_) sweep_samples(sweep, std::nullopt);  // after each thread's last call
    return paths_.take_counted(count_of_node_, timeline);
  }
  StackSums out = paths_.take_sums(std::move(value_of_node_), timeline);
  out.total = total_;
  return out;
}

}  // namespace gpuprof
