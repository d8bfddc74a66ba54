// process_event_split.cpp: a system-wide recording's events, process by process.
#include "analyze/process_event_split.h"

#include <utility>

namespace gpuprof {

ProcessEventSplit::ProcessEventSplit(std::function<RecordStream&(uint32_t pid)> stream_of, const LastPairs& last)
    : stream_of_(std::move(stream_of)),
      pairs_first_(last, [this](std::span<const gp_event> events, uint64_t first, std::span<const EventPair> pairs) {
        split(events, first, pairs);
      }) {}

ProcessEventSplit::Process& ProcessEventSplit::process(uint32_t pid) {
  auto it = processes_.find(pid);
  if (it != processes_.end()) return it->second;
  Process& p = processes_[pid];
  p.stream = &stream_of_(pid);
  // Its selection holds every CUT before its first event.
  if (!cuts_.empty()) p.stream->on_events(cuts_, 0);
  p.handed = cuts_.size();
  return p;
}

void ProcessEventSplit::hand_over_pending() {
  for (auto& [pid, p] : processes_) {
    if (p.pending.empty()) continue;
    p.stream->on_events(p.pending, p.handed);
    p.handed += p.pending.size();
    p.pending.clear();
  }
}

void ProcessEventSplit::split(std::span<const gp_event> events, uint64_t first, std::span<const EventPair> pairs) {
  ChunkPairs chunk_pairs(pairs);
  for (size_t i = 0; i < events.size(); i++) {
    const gp_event& e = events[i];
    if (e.kind != GP_EV_CUT) {
      Process& p = process(e.pid);
      chunk_pairs.hand_those_of(e, first + i, p.stream, p.handed + p.pending.size());
      p.pending.push_back(e);
      ++p.op_events;
      continue;
    }
    // Every process's events before the cut come before it.
    hand_over_pending();
    for (auto& [pid, p] : processes_) p.stream->on_events(std::span<const gp_event>(&e, 1), p.handed++);
    cuts_.push_back(e);
  }
  hand_over_pending();
}

std::map<uint32_t, uint64_t> ProcessEventSplit::op_events() const {
  std::map<uint32_t, uint64_t> out;
  for (const auto& [pid, p] : processes_) out.emplace(pid, p.op_events);
  return out;
}

}  // namespace gpuprof
