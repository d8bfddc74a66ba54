// memory_attribution.h: allocator events -> bytes per op call.
//
// torch.profiler's profile_memory counts, for an op call, every tensor
// allocation (+bytes) and release (-bytes) that happened while it ran, and
// as self memory what its nested ops did not account for. gpuprof attributes
// each allocator event to the innermost op call running on the allocating
// thread at that moment (its "own" bytes); an op's total is its own plus its
// descendants', which is what torch's interval count gives on one thread.
//
// CPU releases carry no size (ProfiledCPUMemoryReporter::Delete only has the
// pointer): the size comes from the matching allocation. A release of a block
// allocated before the recording started is not counted, as torch does not
// count one allocated before its profiler started. Events outside any op
// are torch's "[memory]" events.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "op_tracer_abi.h"
#include "analyze/op_timeline.h"

namespace gpuprof {

struct MemoryPeak {
  bool seen = false;
  int64_t bytes = 0;       // CPU: net bytes allocated since the recording started; CUDA: allocator total
  uint64_t at_ns = 0;      // timestamp (CLOCK_MONOTONIC) of the event that reached it
  int64_t call = -1;       // index in Timeline::calls of the innermost op running, -1 if none
  int device_index = -1;   // CUDA only
};

struct MemoryAttribution {
  // Parallel to Timeline::calls: bytes allocated minus released by the
  // call itself (not its nested calls), and its enclosing call (-1: none).
  std::vector<int64_t> own_cpu;
  std::vector<int64_t> own_cuda;
  std::vector<int64_t> parent;
  // Events outside every op call: torch's "[memory]" rows.
  uint64_t outside_events = 0;
  int64_t outside_cpu = 0;
  int64_t outside_cuda = 0;
  // CPU releases of blocks allocated before the recording: not counted.
  uint64_t unmatched_frees = 0;
  MemoryPeak cpu_peak;
  MemoryPeak cuda_peak;
};

// What each allocator event counts for, as they come in time order across
// threads: a CPU release takes its size from its block's allocation (made
// on any thread); a release of a block allocated before the recording, or
// an event of an unknown kind, counts for nothing (nullopt; the releases
// are counted in unmatched_frees).
class AllocationSizes {
 public:
  struct Counted {
    int64_t cpu_bytes = 0;
    int64_t cuda_bytes = 0;
    bool device = false;  // a CUDA allocator event (its total: gp_mem_event::total_allocated)
  };
  std::optional<Counted> count(const gp_mem_event& e);
  uint64_t unmatched_frees() const { return unmatched_frees_; }

 private:
  std::unordered_map<uint64_t, int64_t> live_;  // CPU block -> bytes
  uint64_t unmatched_frees_ = 0;
};

// Events of one thread must be in the order they happened; threads may
// interleave. Calls are those of build_timeline().
MemoryAttribution attribute_memory(const Timeline& timeline, std::span<const gp_mem_event> events);

// The allocator events that count, in time order, their sizes resolved: a
// CPU release by its allocation's size (negative), releases of blocks
// allocated before the recording left out (as in attribute_memory).
struct CountedMemoryEvent {
  uint64_t ts_ns = 0;
  uint32_t tid = 0;
  int64_t cpu_bytes = 0;
  int64_t cuda_bytes = 0;
};
std::vector<CountedMemoryEvent> counted_memory_events(std::span<const gp_mem_event> events);

// The memory level after each counted allocator event, in time order: CPU
// tensor bytes allocated since the recording started (releases of blocks
// allocated before it are not counted, as in attribute_memory), or a CUDA
// device's allocator total.
struct MemoryLevel {
  uint64_t ts_ns = 0;
  int device_index = -1;  // -1: CPU
  int64_t bytes = 0;
};
std::vector<MemoryLevel> memory_levels(std::span<const gp_mem_event> events);

// The level after each counted event, as they come in time order (a
// running CPU level): memory_levels' rule, for a streamed read too.
class MemoryLevelFollower {
 public:
  MemoryLevel after(const gp_mem_event& e, const AllocationSizes::Counted& counted) {
    if (counted.device) return {e.ts_ns, e.device_index, static_cast<int64_t>(e.total_allocated)};
    cpu_level_ += counted.cpu_bytes;
    return {e.ts_ns, -1, cpu_level_};
  }

 private:
  int64_t cpu_level_ = 0;
};

}  // namespace gpuprof
