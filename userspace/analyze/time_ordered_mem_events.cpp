// time_ordered_mem_events.cpp: allocator events of a streamed read in
// time order (time_ordered_mem_events.h).
#include "analyze/time_ordered_mem_events.h"

namespace gpuprof {

void TimeOrderedMemEvents::add(std::span<const gp_mem_event> events, const Visit& visit) {
  for (const gp_mem_event& e : events) pending_.push({e.ts_ns, read_++, e});
  floor_.chunk_read();
  release(floor_.value(), visit);
}

void TimeOrderedMemEvents::release(uint64_t before_ns, const Visit& visit) {
  while (!pending_.empty() && pending_.top().ts_ns < before_ns) {
    const gp_mem_event e = pending_.top().event;
    pending_.pop();
    if (const std::optional<AllocationSizes::Counted> counted = sizes_.count(e)) visit(e, *counted);
  }
}

}  // namespace gpuprof
