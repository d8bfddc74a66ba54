// streamed_gpu_activities.cpp: GPU activities joined to their launches and
// spilled per stream in the trace's order (streamed_gpu_activities.h).
#include "output/streamed_gpu_activities.h"

#include <algorithm>
#include <iterator>

namespace gpuprof {

StreamedGpuActivities::StreamedGpuActivities(const GpuActivityBounds& bounds)
    : start_floor_(bounds.activity_start),
      activity_id_floor_(bounds.activity_correlation),
      launch_id_floor_(bounds.correlation_id),
      spills_(std::make_shared<Spills>()) {}

void StreamedGpuActivities::add_correlations(std::span<const GpuCorrelation> correlations) {
  for (const GpuCorrelation& c : correlations) launches_.try_emplace(c.correlation_id, c.ts_ns, c.tid);
  launch_id_floor_.chunk_read();
  settle(/*at_end=*/false);
}

bool StreamedGpuActivities::held_before(const Held& a, const Held& b) {
  if (gpu_trace_order(a.record.activity, b.record.activity)) return true;
  if (gpu_trace_order(b.record.activity, a.record.activity)) return false;
  return a.file_index < b.file_index;
}

void StreamedGpuActivities::add_activities(std::span<const GpuActivity> activities) {
  const size_t before = held_.size();
  held_.reserve(before + activities.size());
  for (const GpuActivity& a : activities) {
    held_.push_back(Held{.record = {.activity = a}, .file_index = read_++});
    undecided_++;
  }
  // Sorted as they are held: the new chunk alone, then merged.
  std::sort(held_.begin() + static_cast<ptrdiff_t>(before), held_.end(), held_before);
  std::inplace_merge(held_.begin(), held_.begin() + static_cast<ptrdiff_t>(before), held_.end(), held_before);
  start_floor_.chunk_read();
  activity_id_floor_.chunk_read();
  settle(/*at_end=*/false);
}

void StreamedGpuActivities::settle(bool at_end) {
  // Join first: a launch is dropped below once no unread activity can
  // need it, which an activity already read may still do.
  if (undecided_) {
    const uint64_t launch_floor = launch_id_floor_.value();
    for (Held& h : held_) {
      if (h.decided) continue;
      const uint64_t id = h.record.activity.correlation_id;
      if (auto launch = launches_.find(id); launch != launches_.end()) {
        h.record.launch_ts_ns = launch->second.first;
        h.record.launch_tid = launch->second.second;
        h.record.launch_seen = 1;
      } else if (!at_end && id >= launch_floor) {
        continue;  // its launch may still come
      }
      h.decided = true;
      undecided_--;
    }
  }
  const uint64_t activity_floor = activity_id_floor_.value();
  std::erase_if(launches_, [&](const auto& launch) { return launch.first < activity_floor; });
  // Spill, in order, what nothing unread can come before: each stream's
  // file then holds its activities in the trace's order.
  const uint64_t start_floor = at_end ? UINT64_MAX : start_floor_.value();
  // Sorted by stream first: each stream spills its own prefix.
  std::vector<Held> kept;
  for (auto it = held_.begin(); it != held_.end();) {
    const GpuActivity& first = it->record.activity;
    auto stream_end = std::find_if(it, held_.end(), [&](const Held& h) {
      return h.record.activity.device != first.device || h.record.activity.stream != first.stream;
    });
    auto ready = it;
    while (ready != stream_end && ready->decided && (at_end || ready->record.activity.start_ns < start_floor)) ++ready;
    if (ready != it) {
      SpillFile& spill = spills_->streams.try_emplace({first.device, first.stream}).first->second;
      for (auto h = it; h != ready; ++h) append_records(spill, std::span<const TraceGpuActivity>(&h->record, 1));
    }
    std::move(ready, stream_end, std::back_inserter(kept));
    it = stream_end;
  }
  held_ = std::move(kept);
}

std::function<void(const GpuActivityVisitor&)> StreamedGpuActivities::finish() {
  settle(/*at_end=*/true);
  launches_.clear();
  if (spills_->streams.empty()) return {};
  return [spills = spills_](const GpuActivityVisitor& visit) { spills->replay(visit); };
}

void StreamedGpuActivities::Spills::replay(const GpuActivityVisitor& visit) {
  for (auto& [stream, spill] : streams) read_back_records<TraceGpuActivity>(spill, visit);
}

}  // namespace gpuprof
