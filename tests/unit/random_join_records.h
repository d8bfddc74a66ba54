// Allocator events and GPU launches and activities for the streamed
// outputs that join them to calls (analyze/streamed_call_figures.h), on
// random_event_streams.h's recordings: stamped on the events' own moments
// (a call's start or end: the join's edges), between calls, and on a thread
// that runs no op; CPU releases on another thread than their allocation and
// of blocks allocated before the recording; GPU activities chunks after
// their launches, two per graph launch, some of launches never seen; and
// all of it handed over in a file's order, with the bounds the first read
// notes.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "analyze/streamed_call_figures.h"
#include "record/recording.h"

namespace gpuprof::test {

inline constexpr uint32_t kNoOpThread = 13;  // random_events' threads are 10 to 12

// A moment on one of the event threads or the thread without ops: often an
// event's own timestamp on its thread, else one between events.
struct Moment {
  uint64_t ts_ns;
  uint32_t tid;
};
inline Moment random_moment(const Recording& recording, std::mt19937& rng) {
  const gp_event& e = recording.events[rng() % recording.events.size()];
  if (rng() % 8 == 0) return {e.ts_ns + rng() % 3, kNoOpThread};
  if (rng() % 2) return {e.ts_ns, e.tid == 0 ? 10u : e.tid};  // a cut's is any thread's
  return {e.ts_ns + 1 + rng() % 20, 10 + static_cast<uint32_t>(rng() % 3)};
}

// Allocator events: CPU allocations and releases (of blocks allocated on
// any thread, and some never seen allocated), CUDA allocator events.
inline void add_random_memory(Recording& recording, std::mt19937& rng, size_t count) {
  recording.options.memory = true;
  std::vector<uint64_t> live;
  uint64_t next_block = 0x10000;
  for (size_t i = 0; i < count; i++) {
    const Moment m = random_moment(recording, rng);
    gp_mem_event e{};
    e.ts_ns = m.ts_ns;
    e.tid = m.tid;
    const unsigned what = rng() % 10;
    if (what < 5) {
      e.kind = GP_MEM_CPU_ALLOC;
      e.addr = next_block += 64;
      e.bytes = 16 + static_cast<int64_t>(rng() % 4096);
      live.push_back(e.addr);
    } else if (what < 8) {
      e.kind = GP_MEM_CPU_FREE;
      if (!live.empty() && rng() % 6) {
        const size_t k = rng() % live.size();
        e.addr = live[k];
        live.erase(live.begin() + static_cast<ptrdiff_t>(k));
      } else {
        e.addr = 0xdead0000 + rng() % 64;  // allocated before the recording
      }
    } else {
      e.kind = GP_MEM_DEVICE;
      e.device_index = static_cast<int32_t>(rng() % 2);
      e.bytes = static_cast<int64_t>(rng() % 8192) - 4096;
      e.total_allocated = rng() % 100000;
    }
    recording.mem_events.push_back(e);
  }
}

// GPU launches (correlation ids rising) and their activities: none (lost),
// one, or two (a graph); and activities of launches no correlation names.
inline void add_random_gpu(Recording& recording, std::mt19937& rng, size_t launches) {
  recording.cupti_shim = CuptiShimInfo{.shim_path = "libgpuprof_cupti.so", .state = 1};
  recording.launch_names = {"kernel_a", "kernel_b", "Memcpy HtoD (Pageable -> Device)"};
  for (size_t i = 0; i < launches; i++) {
    const Moment m = random_moment(recording, rng);
    const uint64_t id = 100 + i;
    recording.gpu_correlations.push_back({.ts_ns = m.ts_ns, .correlation_id = id, .tid = m.tid});
    const unsigned activities = rng() % 7 == 0 ? 0 : rng() % 4 == 0 ? 2 : 1;
    for (unsigned a = 0; a < activities; a++) {
      const uint64_t start = m.ts_ns + 5000 + rng() % 1000;
      recording.gpu_activities.push_back({.start_ns = start, .end_ns = start + 1 + rng() % 900, .correlation_id = id,
                                          .name_id = static_cast<uint32_t>(rng() % 3)});
    }
    if (rng() % 50 == 0) {
      recording.gpu_activities.push_back({.start_ns = 7, .end_ns = 70, .correlation_id = 1'000'000 + i, .name_id = 0});
    }
  }
}

// The launch probes' CUDA launches (LAUNCHES chunks), at random moments in
// time order, each thread's apart, kernels of three names on two streams.
inline void add_random_launches(Recording& recording, std::mt19937& rng, size_t count) {
  if (recording.launch_names.empty()) recording.launch_names = {"kernel_a", "kernel_b", "kernel_c"};
  recording.cuda_runtime.emplace();
  for (size_t i = 0; i < count; i++) {
    const Moment m = random_moment(recording, rng);
    CudaLaunch l{.ts_ns = m.ts_ns, .function = 0x1000 + rng() % 3, .stream = rng() % 2 ? 0x77u : 0u,
                 .tid = m.tid, .api = GP_LAUNCH_KERNEL, .name_id = static_cast<uint32_t>(rng() % 3)};
    l.grid[0] = 1 + static_cast<uint32_t>(rng() % 64);
    l.block[0] = 128;
    recording.launches.push_back(l);
  }
  std::stable_sort(recording.launches.begin(), recording.launches.end(),
                   [](const CudaLaunch& a, const CudaLaunch& b) { return a.ts_ns < b.ts_ns; });
}

// The moment order of a ring: sorted by time, then a few neighbours swapped
// across threads (another CPU's record a little late), each thread's own
// records kept in their order.
template <typename Record>
void ring_order(std::vector<Record>& records, std::mt19937& rng) {
  std::stable_sort(records.begin(), records.end(), [](const Record& a, const Record& b) { return a.ts_ns < b.ts_ns; });
  for (size_t i = 1; i < records.size(); i++)
    if (records[i - 1].tid != records[i].tid && rng() % 5 == 0) std::swap(records[i - 1], records[i]);
}

// A file's order: after each chunk of `chunk` events, the allocator
// events, launch probes' launches and GPU launches stamped up to its last
// event, in chunks of their own; GPU activities `activity_lag` event
// chunks after their launches. hand(kind, first, count) gets each chunk,
// in that order.
enum class Kind { events, memory, launches, correlations, activities };
template <typename Hand>
void in_file_order(const Recording& recording, size_t chunk, size_t activity_lag, Hand hand) {
  size_t mem = 0, probe = 0, corr = 0, act = 0;
  std::vector<size_t> correlations_at;  // correlations given after each events chunk
  auto moments_until = [](const auto& records, size_t from, uint64_t until_ns) {
    size_t n = from;
    while (n < records.size() && records[n].ts_ns <= until_ns) n++;
    return n;
  };
  auto activities_until = [&](size_t correlations) {
    // The activities of the first `correlations` launches (ids from 100), and
    // those of unseen launches among them.
    const uint64_t below = correlations < recording.gpu_correlations.size()
                               ? recording.gpu_correlations[correlations].correlation_id
                               : UINT64_MAX;
    size_t n = act;
    while (n < recording.gpu_activities.size() &&
           (recording.gpu_activities[n].correlation_id < below || recording.gpu_activities[n].correlation_id >= 1'000'000))
      n++;
    return n;
  };
  for (size_t at = 0; at < recording.events.size(); at += chunk) {
    const size_t n = std::min(chunk, recording.events.size() - at);
    hand(Kind::events, at, n);
    const uint64_t last = recording.events[at + n - 1].ts_ns;
    // Memory events in pieces of up to 5, correlations in one piece.
    const size_t mem_end = moments_until(recording.mem_events, mem, last);
    for (; mem < mem_end; mem += std::min<size_t>(5, mem_end - mem)) hand(Kind::memory, mem, std::min<size_t>(5, mem_end - mem));
    const size_t probe_end = moments_until(recording.launches, probe, last);
    if (probe_end > probe) hand(Kind::launches, probe, probe_end - probe);
    probe = probe_end;
    const size_t corr_end = moments_until(recording.gpu_correlations, corr, last);
    if (corr_end > corr) hand(Kind::correlations, corr, corr_end - corr);
    corr = corr_end;
    correlations_at.push_back(corr);
    if (correlations_at.size() > activity_lag) {
      const size_t act_end = activities_until(correlations_at[correlations_at.size() - 1 - activity_lag]);
      if (act_end > act) hand(Kind::activities, act, act_end - act);
      act = act_end;
    }
  }
  if (mem < recording.mem_events.size()) hand(Kind::memory, mem, recording.mem_events.size() - mem);
  if (probe < recording.launches.size()) hand(Kind::launches, probe, recording.launches.size() - probe);
  if (corr < recording.gpu_correlations.size())
    hand(Kind::correlations, corr, recording.gpu_correlations.size() - corr);
  if (act < recording.gpu_activities.size()) hand(Kind::activities, act, recording.gpu_activities.size() - act);
}

// What the first read notes (report_reads.cpp, StreamingCheck).
inline JoinBounds bounds_of(const Recording& recording, size_t chunk, size_t activity_lag) {
  JoinBounds bounds;
  for (const gp_event& e : recording.events) bounds.op_threads.insert(e.tid);
  auto least = [](const auto& records, size_t first, size_t n, auto key) {
    uint64_t least = UINT64_MAX;
    for (size_t i = first; i < first + n; i++) least = std::min<uint64_t>(least, key(records[i]));
    return least;
  };
  in_file_order(recording, chunk, activity_lag, [&](Kind kind, size_t first, size_t n) {
    if (kind == Kind::memory)
      bounds.mem_event_ts.push_back(least(recording.mem_events, first, n, [](const gp_mem_event& e) { return e.ts_ns; }));
    if (kind == Kind::launches)
      bounds.launch_ts.push_back(least(recording.launches, first, n, [](const CudaLaunch& l) { return l.ts_ns; }));
    if (kind == Kind::correlations) {
      bounds.gpu_correlation_ts.push_back(
          least(recording.gpu_correlations, first, n, [](const GpuCorrelation& c) { return c.ts_ns; }));
      bounds.gpu_correlation_id.push_back(
          least(recording.gpu_correlations, first, n, [](const GpuCorrelation& c) { return c.correlation_id; }));
    }
    if (kind == Kind::activities) {
      bounds.gpu_activity_correlation.push_back(
          least(recording.gpu_activities, first, n, [](const GpuActivity& a) { return a.correlation_id; }));
      bounds.gpu_activity_start.push_back(
          least(recording.gpu_activities, first, n, [](const GpuActivity& a) { return a.start_ns; }));
    }
  });
  return bounds;
}

// Hands the recording's events and records to a stream in in_file_order,
// each events chunk's ENTRY_STACKS, BACKWARD_STACKS and ENTRY_SHAPES pairs
// after `pair_delay` more events chunks (the rest at the end).
template <class Stream>
void feed_with_records(Stream& streamed, const Recording& recording, size_t chunk, size_t activity_lag,
                       size_t pair_delay = 0) {
  size_t pairs = 0, backward_pairs = 0, shape_pairs = 0;
  std::vector<uint64_t> chunk_ends;
  auto give_pairs = [&](uint64_t before) {
    for (; pairs < recording.entry_stacks.size() && recording.entry_stacks[pairs].event_index < before; pairs++)
      streamed.on_entry_stack(recording.entry_stacks[pairs].event_index, recording.entry_stacks[pairs].stack_id);
    const std::vector<EntryStack>& backward = recording.backward_stacks;
    for (; backward_pairs < backward.size() && backward[backward_pairs].event_index < before; backward_pairs++)
      streamed.on_backward_stack(backward[backward_pairs].event_index, backward[backward_pairs].stack_id);
    const std::vector<EntryShapes>& shapes = recording.entry_shapes;
    for (; shape_pairs < shapes.size() && shapes[shape_pairs].event_index < before; shape_pairs++)
      streamed.on_entry_shape(shapes[shape_pairs].event_index, shapes[shape_pairs].shape_id);
  };
  in_file_order(recording, chunk, activity_lag, [&](Kind kind, size_t first, size_t n) {
    switch (kind) {
      case Kind::events:
        streamed.on_events(std::span<const gp_event>(recording.events).subspan(first, n), first);
        chunk_ends.push_back(first + n);
        if (chunk_ends.size() > pair_delay) give_pairs(chunk_ends[chunk_ends.size() - 1 - pair_delay]);
        break;
      case Kind::memory:
        EXPECT_TRUE(streamed.on_mem_events(std::span<const gp_mem_event>(recording.mem_events).subspan(first, n)));
        break;
      case Kind::launches:
        EXPECT_TRUE(streamed.on_launches(std::span<const CudaLaunch>(recording.launches).subspan(first, n)));
        break;
      case Kind::correlations:
        streamed.on_gpu_correlations(std::span<const GpuCorrelation>(recording.gpu_correlations).subspan(first, n));
        break;
      case Kind::activities:
        EXPECT_TRUE(streamed.on_gpu_activities(std::span<const GpuActivity>(recording.gpu_activities).subspan(first, n)));
        break;
    }
  });
  give_pairs(UINT64_MAX);
}

}  // namespace gpuprof::test
