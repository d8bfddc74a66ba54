// sorted_gpu_time.h: report --gpu's draft (gpu_time.h's draft_gpu_time) of
// the GPU records as a read hands them over, without holding them: memory
// grows with the devices, streams, kernel names and host waits, not with the
// activities or the launches.
//
// Two external sorts (base/external_sort.h) stand for the whole read's
// lookups and sorts:
//  1. the CUPTI correlations (the launches) and the activities together, by
//     correlation id, each id's launches before its activities: each
//     activity is joined to its id's first launch in file order, as the
//     whole read's lookup does;
//  2. the joined activities by device, start and correlation id: one pass
//     over them merges each device's busy time (all streams, each stream,
//     each category) as the intervals come in start order, and ends an idle
//     gap at the first activity in that order that starts where the gap
//     ends, as the whole read does.
// Each device's queue delays go through a third sort of their own, for the
// exact nearest-rank percentiles. The host waits' moments (one per gap with
// a wait) go to a sort of their own, for the second read to place
// (streamed_host_waits.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "analyze/gpu_time.h"
#include "analyze/streamed_host_waits.h"
#include "base/external_sort.h"
#include "record/recording.h"

namespace gpuprof {

class SortedGpuTime {
 public:
  // run_bytes: the memory of each sort's run (tests make it small, so that
  // the runs are merged).
  explicit SortedGpuTime(size_t run_bytes = kSortRunBytes);
  // In file order, as a read hands them (record_stream.h).
  void add_correlations(std::span<const GpuCorrelation> correlations);
  void add_activities(std::span<const GpuActivity> activities);
  // draft_gpu_time's draft, its host waits' moments put in `moments`
  // instead of its own; launch_names: Recording::launch_names. Once.
  GpuTimeDraft finish(const std::vector<std::string>& launch_names, HostWaitMoments& moments) &&;
  // How many runs of the first sort went to temporary files (tests).
  size_t spilled_runs() const { return by_correlation_.spilled_runs(); }

  // A launch or an activity, keyed by its correlation id (the first sort).
  struct ByCorrelation {
    uint64_t correlation_id = 0;
    uint64_t start_ns = 0;  // an activity's start; a launch's moment
    uint64_t end_ns = 0;    // an activity's
    uint32_t device = 0, stream = 0, name_id = 0;
    uint32_t tid = 0;   // a launch's thread
    uint16_t kind = 0;  // an activity's GpuActivityKind
    bool activity = false;  // else a launch
  };
  struct CorrelationOrder {
    bool operator()(const ByCorrelation& a, const ByCorrelation& b) const {
      return a.correlation_id != b.correlation_id ? a.correlation_id < b.correlation_id : a.activity < b.activity;
    }
  };
  // An activity joined to its launch (the second sort).
  struct Joined {
    uint64_t start_ns = 0, end_ns = 0, correlation_id = 0;
    uint64_t launch_ns = 0;  // its launch's moment, when seen
    uint32_t device = 0, stream = 0, name_id = 0;
    uint32_t launch_tid = 0;
    uint16_t kind = 0;
    bool launch_seen = false;
  };
  struct TimeOrder {
    bool operator()(const Joined& a, const Joined& b) const {
      if (a.device != b.device) return a.device < b.device;
      if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
      return a.correlation_id < b.correlation_id;
    }
  };

 private:
  size_t run_bytes_;
  ExternalSort<ByCorrelation, CorrelationOrder> by_correlation_;
  // Each device's first activity's start in file order: a device whose
  // activities CUPTI could not time has its window there.
  std::map<uint32_t, uint64_t> first_start_;
};

}  // namespace gpuprof
