// settled_calls.cpp: completed calls held per thread until the thread is
// at rest, then handed on as a forest.
#include "analyze/settled_calls.h"

#include <algorithm>

namespace gpuprof {

SettledCalls::SettledCalls(const ProbeCosts* costs)
    : costs_(costs ? std::optional<ProbeCosts>(*costs) : std::nullopt), builder_(costs_ ? &*costs_ : nullptr) {}

void SettledCalls::note_rest(uint32_t tid, uint64_t event_index, uint64_t ts_ns) {
  const uint64_t completed = builder_.calls_completed();
  std::vector<Pending::Rest>& rests = pending_[tid].rests;
  if (!rests.empty() && rests.back().completed == completed) {
    rests.back().event_index = event_index;  // nothing completed since: the later moment serves
    rests.back().ts_ns = ts_ns;
    return;
  }
  rests.push_back({completed, event_index, ts_ns});
}

void SettledCalls::add(std::span<const gp_event> events, uint64_t first) {
  uint32_t resting_tid = 0;  // the last event's thread, when it was at rest and nothing completed since
  uint64_t resting_calls = UINT64_MAX;
  for (size_t i = 0; i < events.size(); i++) {
    const gp_event& e = events[i];
    builder_.add(e, first + i);
    if (e.kind == GP_EV_CUT) {  // every thread's frames ended at it
      take_completed();
      for (auto& [tid, pending] : pending_) note_rest(tid, first + i, e.ts_ns);
      resting_calls = UINT64_MAX;
      continue;
    }
    // A run of one thread's events at rest (outermost calls one after the
    // other) notes one moment per completed call; skip the lookups between.
    if (!builder_.at_rest(e.tid)) continue;
    const uint64_t completed = builder_.calls_completed();
    if (resting_calls == completed && resting_tid == e.tid) continue;
    note_rest(e.tid, first + i, e.ts_ns);
    resting_tid = e.tid;
    resting_calls = completed;
  }
  take_completed();
}

void SettledCalls::take_completed() {
  CompletedCalls& done = completed_;
  builder_.take_completed(done);
  // Runs of one thread's calls are the rule: its lookups are made once a run.
  Pending* pending = nullptr;
  uint32_t pending_tid = 0;
  for (size_t k = 0; k < done.calls.size(); k++) {
    const uint32_t tid = done.calls[k].tid;
    if (!pending || tid != pending_tid) {
      if (seen_thread_.emplace(tid, true).second) thread_order_.push_back(tid);
      pending = &pending_[tid];
      pending_tid = tid;
    }
    pending->calls.push_back(done.calls[k]);
    pending->child_count.push_back(done.child_count[k]);
    pending->only_child.push_back(done.only_child[k]);
    pending->index.push_back(done.first + k);
  }
}

void SettledCalls::hand_settled(const std::function<bool(uint64_t)>& ready, const Sink& sink) {
  hand_settled_at([&ready](uint64_t event_index, uint64_t) { return ready(event_index); }, sink);
}

void SettledCalls::hand_settled_at(const std::function<bool(uint64_t, uint64_t)>& ready, const Sink& sink) {
  for (auto it = pending_.begin(); it != pending_.end();) {
    Pending& pending = it->second;
    // The latest moment at rest that `ready` accepts: it accepts a prefix
    // of them (every earlier moment with a later one), found by bisection,
    // as the moments that wait for their pairs can be hundreds.
    const size_t settled = static_cast<size_t>(
        std::partition_point(pending.rests.begin(), pending.rests.end(),
                             [&](const Pending::Rest& rest) { return ready(rest.event_index, rest.ts_ns); }) -
        pending.rests.begin());
    if (settled > 0) {
      hand(pending, pending.rests[settled - 1].completed, sink);
      pending.rests.erase(pending.rests.begin(), pending.rests.begin() + static_cast<ptrdiff_t>(settled));
    }
    if (pending.calls.empty() && pending.rests.empty())
      it = pending_.erase(it);
    else
      ++it;
  }
}

void SettledCalls::reuse(Timeline&& spent) {
  forest_.calls = std::move(spent.calls);
  forest_.child_count = std::move(spent.child_count);
  forest_.only_child = std::move(spent.only_child);
}

// Hands on the thread's calls completed before call index calls_before: a
// forest whose parents and folds are all among them.
void SettledCalls::hand(Pending& pending, uint64_t calls_before, const Sink& sink) {
  const size_t n = static_cast<size_t>(
      std::lower_bound(pending.index.begin(), pending.index.end(), calls_before) - pending.index.begin());
  if (n == 0) return;
  const auto end = [n](auto& v) { return v.begin() + static_cast<ptrdiff_t>(n); };
  Timeline& forest = forest_;
  forest.only_child.assign(n, -1);
  // Where a call index sits among the pending: where a run of consecutive
  // indices puts it (one thread's calls one after another, the rule), else
  // by search.
  const uint64_t first = pending.index.front();
  const auto position = [&](uint64_t child) -> int64_t {
    if (child >= first && child - first < n && pending.index[child - first] == child)
      return static_cast<int64_t>(child - first);
    auto at = std::lower_bound(pending.index.begin(), end(pending.index), child);
    return at != end(pending.index) && *at == child ? at - pending.index.begin() : -1;
  };
  for (size_t k = 0; k < n; k++)
    if (pending.only_child[k] >= 0) forest.only_child[k] = position(static_cast<uint64_t>(pending.only_child[k]));
  pending.only_child.erase(pending.only_child.begin(), end(pending.only_child));
  pending.index.erase(pending.index.begin(), end(pending.index));
  // The calls and their child counts are most of what is pending (what
  // stays is the thread's open outermost call's): the forest takes the
  // pending vectors, and those that stay go to the forest's spare ones.
  const auto split = [n](auto& pending_items, auto& forest_items) {
    std::swap(pending_items, forest_items);
    pending_items.assign(forest_items.begin() + static_cast<ptrdiff_t>(n), forest_items.end());
    forest_items.resize(n);
  };
  split(pending.calls, forest.calls);
  split(pending.child_count, forest.child_count);
  sink(std::move(forest));
  // A sink that kept the forest moved its vectors out (it may hand them
  // back: reuse()); one that did not leaves their storage to the next.
  forest.calls.clear();
  forest.child_count.clear();
  forest.only_child.clear();
}

Timeline SettledCalls::finish(const Sink& sink) && {
  builder_.end();  // a step still open ends with its thread's last event
  take_completed();
  for (auto& [tid, pending] : pending_) hand(pending, UINT64_MAX, sink);
  pending_.clear();
  return std::move(builder_).finish();
}

}  // namespace gpuprof
