// gpu_time.h: where a device's time went (report --gpu, docs/gpu-time.md),
// from the CUPTI shim's activity records and the launches they are joined
// to by correlation id (GpuCorrelation): Holistic Trace Analysis' temporal
// breakdown and idle-time analysis, from gpuprof's own recording.
//
// Per device, over its window (from its first activity's start to its last
// one's end; time before and after says nothing about the GPU's use):
//   * busy: the union of its activities' intervals, every stream together;
//     idle: the rest of the window;
//   * each idle gap ends when some activity starts (the first to start at
//     the gap's end). Its launch came at L (CUPTI's API entry on the
//     launching thread):
//       - host wait: the part of the gap before L: nothing was queued, the
//         GPU waited for the CPU to launch more. Charged to what the
//         launching thread ran when the gap began: the innermost op there
//         ("[no op]" outside ops) and, with --with-stack, the innermost
//         Python frame of that op's outermost call;
//       - queued: the part after L (or all of the gap when L came before
//         it): work was launched but had not started (launch latency, a
//         wait on an event, a synchronisation, another stream);
//       - launch not seen: the gap before an activity whose launch has no
//         record (made before gpuprof attached, or lost);
//   * time by category, each the union of its activities' intervals:
//     compute (kernels not named like NCCL's), communication (kernels whose
//     name contains "nccl", any case), memcpy, memset; the categories may
//     overlap each other, so they may add up to more than busy;
//   * compute/communication overlap: the time both ran at once, as a share
//     of communication time;
//   * queue delay: per activity whose launch was seen, start - launch;
//     nearest-rank percentiles;
//   * per stream: the union of its own activities, counts and category times;
//   * kernels (and memcpy/memset kinds) by total GPU time: the sum of their
//     durations.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analyze/call_tree.h"
#include "record/recording.h"

namespace gpuprof {

struct GpuTimeByCategory {
  uint64_t compute_ns = 0;
  uint64_t communication_ns = 0;
  uint64_t memcpy_ns = 0;
  uint64_t memset_ns = 0;
  bool operator==(const GpuTimeByCategory&) const = default;
};

struct GpuStreamTime {
  uint32_t stream = 0;
  uint64_t activities = 0;
  uint64_t busy_ns = 0;  // union of its activities
  GpuTimeByCategory by_category;
  bool operator==(const GpuStreamTime&) const = default;
};

// Host-wait time charged to what the launching thread ran as a gap began.
struct GpuHostWait {
  std::string op;            // innermost op, or "[no op]"
  std::string python_frame;  // "" without --with-stack
  uint64_t wait_ns = 0;
  uint64_t gaps = 0;
  bool operator==(const GpuHostWait&) const = default;
};

struct GpuKernelTime {
  std::string name;
  uint64_t calls = 0;
  uint64_t total_ns = 0;
  bool operator==(const GpuKernelTime&) const = default;
};

// Queue delays (start - launch) of the activities whose launch was seen:
// how many, their nearest-rank p50, p90 and p99 (nearest_rank) and the
// greatest (0 when there are none).
struct QueueDelays {
  uint64_t count = 0;
  uint64_t p50_ns = 0, p90_ns = 0, p99_ns = 0, max_ns = 0;
  bool operator==(const QueueDelays&) const = default;
};

struct GpuDeviceTime {
  uint32_t device = 0;
  uint64_t window_start_ns = 0, window_end_ns = 0;  // CLOCK_MONOTONIC
  uint64_t activities = 0;
  uint64_t busy_ns = 0;
  uint64_t idle_gaps = 0;
  uint64_t host_wait_ns = 0;
  uint64_t queued_ns = 0;
  uint64_t launch_not_seen_ns = 0;
  GpuTimeByCategory by_category;
  uint64_t overlap_ns = 0;  // compute and communication at once
  QueueDelays queue_delays;
  std::vector<GpuStreamTime> streams;     // by stream id
  std::vector<GpuHostWait> host_waits;    // most wait first, then op, frame
  std::vector<GpuKernelTime> kernels;     // most time first, then name
  uint64_t window_ns() const { return window_end_ns - window_start_ns; }
  bool operator==(const GpuDeviceTime&) const = default;
};

std::vector<GpuDeviceTime> gpu_time_by_device(const Recording& recording);

// An activity's name (Recording::launch_names; "[kernel N]" past them) and
// its category: communication is a kernel whose name holds "nccl", in any
// case.
enum GpuCategory { kGpuCompute, kGpuCommunication, kGpuMemcpy, kGpuMemset, kGpuCategories };
std::string gpu_activity_name(const std::vector<std::string>& launch_names, uint32_t name_id);
GpuCategory gpu_category_of(GpuActivityKind kind, const std::string& name);

// The same in two parts, as the whole read makes it: what the GPU records
// alone give, and what the launching threads ran when the host waits
// began. (A streamed report makes the first part through sorts,
// sorted_gpu_time.h, and charges the waits as the op events come,
// streamed_host_waits.h.)
//
// What a launching thread ran at a moment: its innermost op ("[no op]"
// outside ops) and, with --with-stack, the innermost Python frame of that
// op's outermost call.
struct RunningAt {
  std::string op = "[no op]";
  std::string python_frame;
  bool operator==(const RunningAt&) const = default;
};
struct GpuTimeDraft {
  std::vector<GpuDeviceTime> devices;  // every figure but host_waits
  // Each host wait: where it began (a gap's start, on the thread that
  // launched the activity ending the gap), its device's index in devices
  // and its length.
  std::vector<ThreadMoment> moments;
  struct Wait {
    size_t device = 0;
    uint64_t wait_ns = 0;
  };
  std::vector<Wait> waits;  // parallel to moments
};
// From the recording's GPU activities, correlations and launch names.
GpuTimeDraft draft_gpu_time(const Recording& recording);
// running: what ran at each of the draft's moments.
std::vector<GpuDeviceTime> finish_gpu_time(GpuTimeDraft draft, const std::vector<RunningAt>& running);
// One device's host waits by (op, frame), listed as GpuDeviceTime lists
// them: most wait first, then op and frame.
std::vector<GpuHostWait> listed_host_waits(std::map<std::pair<std::string, std::string>, GpuHostWait> waits);
// What ran at each moment, from a recording read whole (its events and
// entry stacks).
std::vector<RunningAt> running_at(const Recording& recording, const std::vector<ThreadMoment>& moments);
// The innermost frame of sample_stacks[stack_id] ("" for none or a bad id).
std::string innermost_frame(const Recording& recording, std::optional<uint32_t> stack_id);

// Nearest-rank percentile (p in (0, 100]) of ascending values; 0 for none.
// The nearest rank of percentile p among `count` values: 1-based, in
// [1, count] (0 for none).
uint64_t nearest_rank_of(uint64_t count, double p);
uint64_t nearest_rank(const std::vector<uint64_t>& ascending, double p);
QueueDelays queue_delays_of(const std::vector<uint64_t>& ascending);

}  // namespace gpuprof
