// time_ordered_mem_events.h: the allocator events of a recording read as
// a stream (record/record_stream.h), put in time order across threads and
// MEM_EVENTS chunks (file order among equal stamps, as the whole read's
// stable sort: memory_attribution.cpp) and counted (AllocationSizes: a CPU
// release takes its size from an allocation made on any thread). An event
// is handed on once no unread chunk can hold an earlier one (the first
// read notes each chunk's earliest: UnreadFloor), so memory grows with how
// far the chunks' times overlap, not with the events. Used by the streamed
// join of calls and memory (streamed_call_figures.h) and by the streamed
// Chrome trace's memory counters (output/streamed_chrome_trace.h).
#pragma once

#include <cstdint>
#include <functional>
#include <queue>
#include <span>
#include <vector>

#include "analyze/memory_attribution.h"
#include "analyze/unread_floor.h"
#include "op_tracer_abi.h"

namespace gpuprof {

class TimeOrderedMemEvents {
 public:
  // One event that counts, in time order, with its resolved size.
  using Visit = std::function<void(const gp_mem_event& event, const AllocationSizes::Counted& counted)>;
  // chunk_earliest_ts: the earliest event of each MEM_EVENTS chunk, in
  // file order (JoinBounds::mem_event_ts).
  explicit TimeOrderedMemEvents(const std::vector<uint64_t>& chunk_earliest_ts) : floor_(chunk_earliest_ts) {}

  // One chunk's events; then every event no unread chunk can precede goes
  // to `visit`.
  void add(std::span<const gp_mem_event> events, const Visit& visit);
  // The end of the read: the rest.
  void finish(const Visit& visit) { release(UINT64_MAX, visit); }
  // The earliest moment an unread chunk can still hold.
  uint64_t floor() const { return floor_.value(); }
  // Releases of blocks allocated before the recording, so far.
  uint64_t unmatched_frees() const { return sizes_.unmatched_frees(); }

 private:
  void release(uint64_t before_ns, const Visit& visit);

  // Events read, not yet handed on: (ts, file order).
  struct Pending {
    uint64_t ts_ns;
    uint64_t order;
    gp_mem_event event;
    bool operator>(const Pending& other) const {
      return ts_ns != other.ts_ns ? ts_ns > other.ts_ns : order > other.order;
    }
  };
  UnreadFloor floor_;
  std::priority_queue<Pending, std::vector<Pending>, std::greater<Pending>> pending_;
  uint64_t read_ = 0;
  AllocationSizes sizes_;
};

}  // namespace gpuprof
