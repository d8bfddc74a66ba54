// recordings.h: building Recordings (ops and probe events) for the unit tests.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "record/recording.h"

namespace gpuprof::test {

// An op table entry with no symbol.
inline OpInfo op(std::string name, std::string overload = "") {
  return OpInfo{.name = std::move(name), .overload = std::move(overload), .symbol = ""};
}

// A complete recording of these ops and events.
inline Recording recording_of(std::vector<OpInfo> ops, std::vector<gp_event> events) {
  Recording recording;
  recording.ops = std::move(ops);
  recording.events = std::move(events);
  recording.complete = true;
  return recording;
}

// A GPU activity record of the CUPTI shim (a kernel unless said).
inline GpuActivity gpu_activity(uint64_t correlation, uint64_t start, uint64_t end, uint32_t name_id,
                                GpuActivityKind kind = GpuActivityKind::kernel) {
  GpuActivity a;
  a.correlation_id = correlation;
  a.start_ns = start;
  a.end_ns = end;
  a.name_id = name_id;
  a.kind = kind;
  return a;
}

}  // namespace gpuprof::test
