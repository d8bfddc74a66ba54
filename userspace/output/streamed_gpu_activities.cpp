// streamed_gpu_activities.cpp: GPU activities joined to their launches and
// spilled per stream in the trace's order (streamed_gpu_activities.h).
#include "output/streamed_gpu_activities.h"

#include <cstdint>
#include <tuple>

namespace gpuprof {

StreamedGpuActivities::StreamedGpuActivities(const GpuActivityBounds& bounds)
    : start_floor_(bounds.activity_start),
      activity_id_floor_(bounds.activity_correlation),
      launch_id_floor_(bounds.correlation_id),
      spills_(std::make_shared<Spills>()) {}

void StreamedGpuActivities::join(Held& held, uint64_t launch_ts_ns, uint32_t launch_tid) {
  held.record.launch_ts_ns = launch_ts_ns;
  held.record.launch_tid = launch_tid;
  held.record.launch_seen = 1;
  held.decided = true;
}

void StreamedGpuActivities::add_correlations(std::span<const GpuCorrelation> correlations) {
  for (const GpuCorrelation& c : correlations) {
    if (!launches_.try_emplace(c.correlation_id, c.ts_ns, c.tid).second) continue;  // the first is the arrow's
    // The activities read before it: joined now.
    auto [first, last] = undecided_.equal_range(c.correlation_id);
    for (auto it = first; it != last; ++it) join(*it->second, c.ts_ns, c.tid);
    undecided_.erase(first, last);
  }
  launch_id_floor_.chunk_read();
  settle(/*at_end=*/false);
}

void StreamedGpuActivities::add_activities(std::span<const GpuActivity> activities) {
  for (const GpuActivity& a : activities) {
    Held& held = held_[{a.device, a.stream}]
                     .try_emplace(OrderKey{a.start_ns, UINT64_MAX - a.end_ns, read_++}, Held{.record = {.activity = a}})
                     .first->second;
    if (by_launching_call_) {
      held.keep = Keep::undecided;
      keep_undecided_.emplace(a.correlation_id, &held);
    }
    if (auto launch = launches_.find(a.correlation_id); launch != launches_.end())
      join(held, launch->second.first, launch->second.second);
    else
      undecided_.emplace(a.correlation_id, &held);
  }
  start_floor_.chunk_read();
  activity_id_floor_.chunk_read();
  settle(/*at_end=*/false);
}

void StreamedGpuActivities::keep_launched_by(uint64_t correlation_id,
                                             std::optional<std::pair<uint64_t, uint64_t>> call_span) {
  auto [first, last] = keep_undecided_.equal_range(correlation_id);
  for (auto it = first; it != last; ++it) {
    Held& held = *it->second;
    held.keep = call_span ? Keep::yes : Keep::no;
    if (call_span) std::tie(held.record.call_start_ns, held.record.call_end_ns) = *call_span;
  }
  keep_undecided_.erase(first, last);
  settle(/*at_end=*/false);
}

void StreamedGpuActivities::settle(bool at_end) {
  // No unread launch can have these ids: no arrow (and with --ops no call,
  // so not kept).
  const auto unjoined_end = at_end ? undecided_.end() : undecided_.lower_bound(launch_id_floor_.value());
  for (auto it = undecided_.begin(); it != unjoined_end; ++it) {
    it->second->decided = true;
    if (by_launching_call_) {
      it->second->keep = Keep::no;
      keep_undecided_.erase(it->first);
    }
  }
  undecided_.erase(undecided_.begin(), unjoined_end);
  // No unread activity can need these launches.
  launches_.erase(launches_.begin(), launches_.lower_bound(activity_id_floor_.value()));
  // Spill, in order, what nothing unread can come before: each stream's
  // file then holds its activities in the trace's order.
  const uint64_t start_floor = at_end ? UINT64_MAX : start_floor_.value();
  for (auto& [stream, held] : held_) {
    auto ready = held.begin();
    while (ready != held.end() && ready->second.decided && ready->second.keep != Keep::undecided &&
           (at_end || std::get<0>(ready->first) < start_floor))
      ++ready;
    if (ready == held.begin()) continue;
    SpillFile& spill = spills_->streams.try_emplace(stream).first->second;
    for (auto h = held.begin(); h != ready; ++h)
      if (h->second.keep == Keep::yes) append_records(spill, std::span<const TraceGpuActivity>(&h->second.record, 1));
    held.erase(held.begin(), ready);
  }
}

std::function<void(const GpuActivityVisitor&)> StreamedGpuActivities::finish() {
  // --ops: an activity no launch placed (its launch's thread never ran an
  // op, say) was launched outside every kept call.
  for (auto& [id, held] : keep_undecided_) held->keep = Keep::no;
  keep_undecided_.clear();
  settle(/*at_end=*/true);
  launches_.clear();
  if (spills_->streams.empty()) return {};
  return [spills = spills_](const GpuActivityVisitor& visit) { spills->replay(visit); };
}

void StreamedGpuActivities::Spills::replay(const GpuActivityVisitor& visit) {
  for (auto& [stream, spill] : streams) read_back_records<TraceGpuActivity>(spill, visit);
}

}  // namespace gpuprof
