// streamed_call_figures.cpp: forests joined with the allocator events and
// GPU activities of their moments (streamed_call_figures.h).
#include "analyze/streamed_call_figures.h"

#include <algorithm>
#include <type_traits>

#include "analyze/gpu_attribution.h"

namespace gpuprof {

StreamedCallFigures::StreamedCallFigures(const ProbeCosts* costs, const std::vector<OpInfo>& ops, bool memory,
                                         bool gpu, JoinBounds bounds, Sink sink,
                                         std::function<bool(uint64_t)> pairs_known)
    : ops_(&ops),
      memory_recorded_(memory),
      gpu_recorded_(gpu),
      bounds_(std::move(bounds)),
      sink_(std::move(sink)),
      pairs_known_(std::move(pairs_known)),
      settled_(costs),
      correlation_floor_(bounds_.gpu_correlation_ts),
      activity_floor_(bounds_.gpu_activity_correlation),
      launch_floor_(bounds_.launch_ts),
      memory_order_(bounds_.mem_event_ts) {}

void StreamedCallFigures::add_events(std::span<const gp_event> events, uint64_t first) {
  settled_.add(events, first);
  hand_forests();
}

void StreamedCallFigures::add_mem_events(std::span<const gp_mem_event> events) {
  memory_order_.add(events, [this](const gp_mem_event& e, const AllocationSizes::Counted& counted) {
    place_memory(e, counted);
  });
  hand_forests();
}

void StreamedCallFigures::add_gpu_correlations(std::span<const GpuCorrelation> correlations) {
  for (const GpuCorrelation& c : correlations) {
    if (bounds_.op_threads.contains(c.tid)) {
      threads_[c.tid].launches.push_back({c.ts_ns, c.correlation_id});
    } else {  // launched outside every op: its activities are dropped once read
      joined_.push_back({.launches = {{c.correlation_id, -1}}, .max_correlation = c.correlation_id});
    }
  }
  correlation_floor_.chunk_read();
  hand_forests();
}

void StreamedCallFigures::add_gpu_activities(std::span<const GpuActivity> activities) {
  for (const GpuActivity& a : activities) activity_ns_[a.correlation_id] += gpu_activity_ns(a);
  activity_floor_.chunk_read();
  complete_joined(/*at_end=*/false);
}

void StreamedCallFigures::add_launches(std::span<const CudaLaunch> launches) {
  if (!probe_launch_sink_) return;
  for (const CudaLaunch& l : launches) {
    const uint64_t index = probe_launches_read_++;
    if (bounds_.op_threads.contains(l.tid))
      threads_[l.tid].probe_launches.push_back({l.ts_ns, index});
    else  // outside every op
      probe_launch_sink_(index, LaunchPlace{});
  }
  launch_floor_.chunk_read();
  hand_forests();
}

// An allocator event in time order (TimeOrderedMemEvents), its size
// resolved: the peaks followed as attribute_memory does, then a moment of
// its thread.
void StreamedCallFigures::place_memory(const gp_mem_event& e, const AllocationSizes::Counted& counted) {
  const MemoryMoment m{.ts_ns = e.ts_ns, .seq = memory_released_++, .cpu_bytes = counted.cpu_bytes,
                       .cuda_bytes = counted.cuda_bytes};
  const MemoryLevel level = levels_.after(e, counted);
  if (counted.device) {
    const auto total = static_cast<int64_t>(e.total_allocated);
    if (!memory_.cuda_peak.seen || total > memory_.cuda_peak.bytes) {
      memory_.cuda_peak = {true, total, e.ts_ns, -1, e.device_index};
      cuda_peak_seq_ = m.seq;
      memory_.cuda_peak_op.reset();  // set when it is joined
    }
  } else {
    if (!memory_.cpu_peak.seen || level.bytes > memory_.cpu_peak.bytes) {
      memory_.cpu_peak = {true, level.bytes, e.ts_ns, -1, -1};
      cpu_peak_seq_ = m.seq;
      memory_.cpu_peak_op.reset();
    }
  }
  if (bounds_.op_threads.contains(e.tid)) {
    threads_[e.tid].memory.push_back(m);
  } else {  // outside every op
    ++memory_.outside_events;
    memory_.outside_cpu += m.cpu_bytes;
    memory_.outside_cuda += m.cuda_bytes;
  }
}

void StreamedCallFigures::hand_forests() {
  // A forest is whole, for the join, once every moment of its thread up to
  // its last event is read.
  settled_.hand_settled_at(
      [this](uint64_t event_index, uint64_t ts_ns) {
        return ts_ns < correlation_floor_.value() && ts_ns < memory_order_.floor() &&
               (!probe_launch_sink_ || ts_ns < launch_floor_.value()) &&
               (!pairs_known_ || pairs_known_(event_index));
      },
      [this](Timeline&& forest) { take_forest(std::move(forest)); });
  complete_joined(/*at_end=*/false);
}

void StreamedCallFigures::take_forest(Timeline forest) {
  const uint32_t tid = forest.calls.front().tid;
  uint64_t start = UINT64_MAX;
  for (const OpCall& call : forest.calls) start = std::min(start, call.start_ns);
  ThreadJoin& thread = threads_[tid];
  join(thread, thread.held ? &*thread.held : nullptr, start);  // moves the held forest out
  thread.held = std::move(forest);
}

void StreamedCallFigures::join(ThreadJoin& thread, Timeline* forest, uint64_t limit) {
  Joined joined;
  if (forest) {
    joined.forest = std::move(*forest);
    joined.tree = std::move(spare_tree_);
    build_call_tree(joined.forest, joined.tree);
  }
  const size_t n = joined.forest.calls.size();
  // The moments before `limit`, out of the thread's waiting ones.
  auto take_before = [limit](auto& moments) {
    auto later = std::stable_partition(moments.begin(), moments.end(), [limit](const auto& m) { return m.ts_ns < limit; });
    std::vector<std::remove_reference_t<decltype(moments[0])>> taken(moments.begin(), later);
    moments.erase(moments.begin(), later);
    return taken;
  };
  const std::vector<MemoryMoment> memory = take_before(thread.memory);
  const std::vector<Correlation> launches = take_before(thread.launches);
  const std::vector<Correlation> probe_launches = take_before(thread.probe_launches);
  std::vector<ThreadMoment> moments;
  moments.reserve(memory.size() + launches.size() + probe_launches.size());
  const uint32_t tid = n > 0 ? joined.forest.calls.front().tid : 0;
  for (const MemoryMoment& m : memory) moments.push_back({m.ts_ns, tid});
  for (const Correlation& c : launches) moments.push_back({c.ts_ns, tid});
  for (const Correlation& c : probe_launches) moments.push_back({c.ts_ns, tid});
  const std::vector<int64_t> calls =
      n > 0 ? innermost_calls_at(joined.forest, joined.tree, moments) : std::vector<int64_t>(moments.size(), -1);
  if (memory_recorded_) {
    joined.own.cpu_mem.assign(n, 0);
    joined.own.cuda_mem.assign(n, 0);
  }
  for (size_t k = 0; k < memory.size(); k++) {
    const MemoryMoment& m = memory[k];
    const int64_t call = calls[k];
    if (call >= 0) {
      joined.own.cpu_mem[call] += m.cpu_bytes;
      joined.own.cuda_mem[call] += m.cuda_bytes;
    } else {
      ++memory_.outside_events;
      memory_.outside_cpu += m.cpu_bytes;
      memory_.outside_cuda += m.cuda_bytes;
    }
    const std::optional<uint32_t> op =
        call >= 0 ? std::optional<uint32_t>(joined.forest.calls[call].op_id) : std::nullopt;
    if (m.seq == cpu_peak_seq_) memory_.cpu_peak_op = op;
    if (m.seq == cuda_peak_seq_) memory_.cuda_peak_op = op;
  }
  for (size_t k = 0; k < launches.size(); k++) {
    joined.launches.emplace_back(launches[k].id, calls[memory.size() + k]);
    joined.max_correlation = std::max(joined.max_correlation, launches[k].id);
  }
  const size_t probe_first = memory.size() + launches.size();
  for (size_t k = 0; k < probe_launches.size(); k++)
    probe_launch_sink_(probe_launches[k].id, LaunchPlace{&joined.forest, &joined.tree, calls[probe_first + k]});
  if (n > 0 || !joined.launches.empty()) joined_.push_back(std::move(joined));
}

// Hands on each joined forest whose GPU activities have all been read (at
// the end: every one).
void StreamedCallFigures::complete_joined(bool at_end) {
  const uint64_t floor = activity_floor_.value();
  // A thread's forests go on in their order (the module tree counts a
  // thread's module calls in it): behind one that waits, the rest wait.
  std::unordered_set<uint32_t> waiting_threads;
  size_t kept = 0;
  for (size_t k = 0; k < joined_.size(); k++) {
    Joined& j = joined_[k];
    const bool has_forest = !j.forest.calls.empty();
    const bool behind = has_forest && waiting_threads.contains(j.forest.calls.front().tid);
    if (!at_end && (behind || (!j.launches.empty() && j.max_correlation >= floor))) {
      if (has_forest) waiting_threads.insert(j.forest.calls.front().tid);
      if (kept != k) joined_[kept] = std::move(j);
      kept++;
      continue;
    }
    const size_t n = j.forest.calls.size();
    if (gpu_recorded_) j.own.gpu_ns.assign(n, 0);
    for (const auto& [id, call] : j.launches) {
      if (launch_sink_) launch_sink_(id, call >= 0 ? std::optional<uint32_t>(j.forest.calls[call].op_id) : std::nullopt);
      if (placed_sink_) placed_sink_(id, LaunchPlace{&j.forest, &j.tree, call});
      auto it = activity_ns_.find(id);
      if (it == activity_ns_.end()) continue;
      if (call >= 0 && gpu_recorded_) j.own.gpu_ns[call] += it->second;
      activity_ns_.erase(it);
    }
    if (n > 0) sink_(j.forest, call_figures_from(j.forest, *ops_, j.tree, std::move(j.own)));
    // Done with: the next forest and its tree take over the storage.
    settled_.reuse(std::move(j.forest));
    spare_tree_ = std::move(j.tree);
  }
  joined_.resize(kept);
}

Timeline StreamedCallFigures::finish(const std::vector<OpInfo>& ops) && {
  ops_ = &ops;
  memory_order_.finish([this](const gp_mem_event& e, const AllocationSizes::Counted& counted) {
    place_memory(e, counted);
  });
  memory_.unmatched_frees = memory_order_.unmatched_frees();
  Timeline counters = std::move(settled_).finish([this](Timeline&& forest) { take_forest(std::move(forest)); });
  for (auto& [tid, thread] : threads_) {
    join(thread, thread.held ? &*thread.held : nullptr, UINT64_MAX);
    thread.held.reset();
  }
  complete_joined(/*at_end=*/true);
  return counters;
}

}  // namespace gpuprof
