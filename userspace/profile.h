// profile.h: the aggregated profile that every output is a pure function of.
//
// Built in one pass over a Recording by aggregate() (aggregator.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gpuprof {

// One row of torch.profiler's key_averages(): all calls of one op name
// (overloads together, as torch groups them).
struct OpRow {
  std::string name;           // "aten::conv2d"
  uint64_t calls = 0;         // completed calls, including unwound ones
  uint64_t cpu_total_ns = 0;  // sum of call durations (nested same-name calls count each)
  uint64_t self_cpu_ns = 0;   // cpu_total minus time in ops nested on the same thread
  uint64_t unwound_calls = 0;  // calls that ended by exception unwinding
  bool operator==(const OpRow&) const = default;
};

struct Profile {
  std::vector<OpRow> rows;  // one per op name; aggregate() sorts them by name
  uint64_t self_cpu_total_ns = 0;  // sum of self_cpu_ns over rows

  // Honesty counters, printed under the table when non-zero.
  uint64_t calls_unwound = 0;        // frames ended by exception unwinding
  uint64_t exits_without_entry = 0;  // ops already running when recording began
  uint64_t calls_open_at_end = 0;    // ops still running when recording stopped (not counted)
  uint64_t events_lost = 0;          // copied from RecordStats
  uint64_t events_unknown_kind = 0;  // events of a kind this build does not know; ignored
  uint32_t threads = 0;              // threads that ran traced ops
};

}  // namespace gpuprof
