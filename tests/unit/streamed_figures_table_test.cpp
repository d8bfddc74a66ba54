// The streamed op table with memory and GPU columns
// (analyze/streamed_figures_table.h, analyze/streamed_call_figures.h)
// against aggregate() of the same recording read whole: row for row, peaks
// and [memory] row included, on random event streams (folds, unwinding,
// catches, steps, cuts, open ranges; three threads) with allocator events
// and GPU launches stamped on the events' own moments (a call's start or
// end: the join's edges), between calls, and on a thread that runs no op;
// CPU releases on another thread than their allocation and of blocks
// allocated before the recording; GPU activities chunks after their
// launches, two per graph launch, some of launches never seen; all of it
// handed over in file order, in chunks of several sizes.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "analyze/aggregator.h"
#include "analyze/streamed_figures_table.h"
#include "probe_events.h"
#include "profile_checks.h"
#include "random_event_streams.h"
#include "recordings.h"

namespace gpuprof {
namespace {

using namespace ::gpuprof::test;

constexpr uint32_t kNoOpThread = 13;  // random_events' threads are 10 to 12

// A moment on one of the event threads or the thread without ops: often an
// event's own timestamp on its thread, else one between events.
struct Moment {
  uint64_t ts_ns;
  uint32_t tid;
};
Moment random_moment(const Recording& recording, std::mt19937& rng) {
  const gp_event& e = recording.events[rng() % recording.events.size()];
  if (rng() % 8 == 0) return {e.ts_ns + rng() % 3, kNoOpThread};
  if (rng() % 2) return {e.ts_ns, e.tid == 0 ? 10u : e.tid};  // a cut's is any thread's
  return {e.ts_ns + 1 + rng() % 20, 10 + static_cast<uint32_t>(rng() % 3)};
}

// Allocator events: CPU allocations and releases (of blocks allocated on
// any thread, and some never seen allocated), CUDA allocator events.
void add_random_memory(Recording& recording, std::mt19937& rng, size_t count) {
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
void add_random_gpu(Recording& recording, std::mt19937& rng, size_t launches) {
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
// events and launches stamped up to its last event, in chunks of their
// own; GPU activities `activity_lag` event chunks after their launches.
// hand(kind, first, count) gets each chunk, in that order.
enum class Kind { events, memory, correlations, activities };
template <typename Hand>
void in_file_order(const Recording& recording, size_t chunk, size_t activity_lag, Hand hand) {
  size_t mem = 0, corr = 0, act = 0;
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
  if (corr < recording.gpu_correlations.size())
    hand(Kind::correlations, corr, recording.gpu_correlations.size() - corr);
  if (act < recording.gpu_activities.size()) hand(Kind::activities, act, recording.gpu_activities.size() - act);
}

// What the first read notes (report_reads.cpp, StreamingCheck).
JoinBounds bounds_of(const Recording& recording, size_t chunk, size_t activity_lag) {
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
    if (kind == Kind::correlations)
      bounds.gpu_correlation_ts.push_back(
          least(recording.gpu_correlations, first, n, [](const GpuCorrelation& c) { return c.ts_ns; }));
    if (kind == Kind::activities)
      bounds.gpu_activity_correlation.push_back(
          least(recording.gpu_activities, first, n, [](const GpuActivity& a) { return a.correlation_id; }));
  });
  return bounds;
}

Profile streamed_profile(const Recording& recording, size_t chunk, size_t activity_lag, bool raw_times) {
  StreamedFiguresTable streamed(compensation_costs(recording, raw_times), raw_times, recording,
                                bounds_of(recording, chunk, activity_lag));
  // The read's own Recording, whose op table wants() sees, is moved out
  // when the read returns: finish() must not need it.
  Recording being_read = head_of(recording);
  EXPECT_TRUE(streamed.wants(being_read));
  in_file_order(recording, chunk, activity_lag, [&](Kind kind, size_t first, size_t n) {
    switch (kind) {
      case Kind::events:
        streamed.on_events(std::span<const gp_event>(recording.events).subspan(first, n), first);
        break;
      case Kind::memory:
        EXPECT_TRUE(streamed.on_mem_events(std::span<const gp_mem_event>(recording.mem_events).subspan(first, n)));
        break;
      case Kind::correlations:
        streamed.on_gpu_correlations(std::span<const GpuCorrelation>(recording.gpu_correlations).subspan(first, n));
        break;
      case Kind::activities:
        EXPECT_TRUE(streamed.on_gpu_activities(std::span<const GpuActivity>(recording.gpu_activities).subspan(first, n)));
        break;
    }
  });
  Recording returned = std::move(being_read);
  return std::move(streamed).finish(recording);
}

void expect_same_peak(const MemoryPeakInfo& streamed, const MemoryPeakInfo& whole) {
  EXPECT_EQ(streamed.seen, whole.seen);
  EXPECT_EQ(streamed.bytes, whole.bytes);
  EXPECT_EQ(streamed.at_s, whole.at_s);
  EXPECT_EQ(streamed.op, whole.op);
  EXPECT_EQ(streamed.device_index, whole.device_index);
}

TEST(StreamedFiguresTable, EqualsTheWholeAggregateWithMemoryAndGpuColumns) {
  uint64_t op_cuda_ns = 0, op_cpu_mem = 0, outside = 0, peaks_in_ops = 0;
  for (uint32_t seed = 1; seed <= 40; seed++) {
    std::mt19937 rng(seed);
    Recording recording = random_recording(seed, 3000);
    recording.probe_costs = costs_of_the_streams();
    const bool memory = seed % 3 != 0, gpu = seed % 3 != 1;
    if (memory) add_random_memory(recording, rng, 1500);
    if (gpu) add_random_gpu(recording, rng, 600);
    ring_order(recording.mem_events, rng);
    ring_order(recording.gpu_correlations, rng);
    for (bool raw : {false, true}) {
      const Profile whole = aggregate(recording, AggregateOptions{.raw_times = raw});
      for (size_t chunk : {size_t{1}, size_t{9}, size_t{400}, recording.events.size()}) {
        for (size_t lag : {size_t{0}, size_t{3}}) {
          SCOPED_TRACE("seed " + std::to_string(seed) + " chunk " + std::to_string(chunk) + " lag " +
                       std::to_string(lag) + (raw ? " raw" : ""));
          const Profile streamed = streamed_profile(recording, chunk, lag, raw);
          expect_same_profile(streamed, whole);
          expect_same_peak(streamed.cpu_memory_peak, whole.cpu_memory_peak);
          expect_same_peak(streamed.cuda_memory_peak, whole.cuda_memory_peak);
          EXPECT_EQ(streamed.memory_unmatched_frees, whole.memory_unmatched_frees);
        }
      }
      for (const OpRow& row : whole.rows) {
        if (!row.on_gpu && row.name != "[memory]") op_cuda_ns += row.self_cuda_ns;
        if (!row.on_gpu && row.name != "[memory]") op_cpu_mem += row.self_cpu_mem != 0;
        if (row.name == "[memory]") outside += row.calls;
      }
      peaks_in_ops += !whole.cpu_memory_peak.op.empty();
    }
  }
  // The streams must charge ops and leave some outside, or this proves little.
  EXPECT_GT(op_cuda_ns, 0u);
  EXPECT_GT(op_cpu_mem, 50u);
  EXPECT_GT(outside, 1000u);
  EXPECT_GT(peaks_in_ops, 5u);
}

// An activity of a launch made inside a call whose same-name parent folds
// it: torch lifts the deepest call's kernels to the row (call_figures.h);
// the launch comes in a chunk after the calls, the activity later still.
TEST(StreamedFiguresTable, AChainsKernelsAreItsDeepestCallsWhenTheyComeLate) {
  Recording recording = recording_of(ops_of_the_streams(), {op_entry(100, 9000, 0, 10), op_entry(110, 8900, 1, 10),
                                                            op_exit(190, 8900, 1, 10), op_exit(200, 9000, 0, 10),
                                                            op_entry(300, 9000, 3, 10), op_exit(400, 9000, 3, 10)});
  recording.cupti_shim = CuptiShimInfo{.state = 1};
  recording.launch_names = {"k"};
  recording.gpu_correlations = {{.ts_ns = 105, .correlation_id = 1, .tid = 10},
                                {.ts_ns = 150, .correlation_id = 2, .tid = 10},
                                {.ts_ns = 300, .correlation_id = 3, .tid = 10}};
  recording.gpu_activities = {{.start_ns = 1000, .end_ns = 1007, .correlation_id = 1},
                              {.start_ns = 1000, .end_ns = 1030, .correlation_id = 2},
                              {.start_ns = 1000, .end_ns = 1500, .correlation_id = 3}};
  const Profile whole = aggregate(recording);
  const Profile streamed = streamed_profile(recording, 1, 2, false);
  expect_same_profile(streamed, whole);
  ASSERT_EQ(streamed.rows.size(), 3u);
  EXPECT_EQ(streamed.rows[0].name, "aten::add");
  EXPECT_EQ(streamed.rows[0].self_cuda_ns, 30u);  // the inner call's kernel; the outer's own 7 ns drop out
  EXPECT_EQ(streamed.rows[1].name, "aten::mm");
  EXPECT_EQ(streamed.rows[1].self_cuda_ns, 500u);  // launched at its start
  EXPECT_EQ(streamed.rows[2].name, "k");
  EXPECT_EQ(streamed.rows[2].cuda_total_ns, 537u);
}

}  // namespace
}  // namespace gpuprof
