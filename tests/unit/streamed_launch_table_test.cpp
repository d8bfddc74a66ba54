// report --launches of a recording read as a stream (output/
// streamed_launch_table.h) against summarize_launches() of the same
// recording read whole: the same rows, counts and configurations, on random
// event streams of three threads with CUDA launches stamped on the events'
// own moments (the join's edges), between calls and on a thread without
// ops, handed over in LAUNCHES chunks after the events they follow (a
// ring's order: neighbours of other threads a little late), in chunks of
// every size; and what it leaves to the whole read.
#include "output/streamed_launch_table.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "analyze/chosen_processes_stream.h"
#include "analyze/process_filter.h"
#include "random_event_streams.h"
#include "random_join_records.h"
#include "recordings.h"

namespace gpuprof {
namespace {

using namespace ::gpuprof::test;

// A recording of `seed`'s events with `count` launches: three kernels by
// name (one the probes could not name), each API, two grids, two streams.
Recording recording_with_launches(uint32_t seed, size_t length, size_t count) {
  Recording recording = random_recording(seed, length);
  recording.cuda_runtime = CudaRuntimeInfo{.libcudart_path = "/usr/lib/libcudart.so.12", .entry_points = 5,
                                           .launches_lost = 3};
  recording.launch_names = {"void k::scale<float>(float*, int)", "k::reduce", "[unknown kernel 0x4242]"};
  std::mt19937 rng(seed * 7 + 1);
  for (size_t i = 0; i < count; i++) {
    const Moment m = random_moment(recording, rng);
    CudaLaunch l;
    l.ts_ns = m.ts_ns;
    l.tid = m.tid;
    l.name_id = static_cast<uint32_t>(rng() % 3);
    l.api = static_cast<uint16_t>(GP_LAUNCH_KERNEL + rng() % 3);
    l.grid[0] = 1 + rng() % 2;
    l.block[0] = 128;
    l.stream = rng() % 2 ? 0 : 0x52;
    recording.launches.push_back(l);
  }
  ring_order(recording.launches, rng);
  return recording;
}

// The streamed summary: after each chunk of `chunk` events, the launches
// stamped up to its last event, in LAUNCHES chunks of up to `per_chunk`
// (the rest at the end), with the bounds the first read notes; the GPU
// activities (when the recording has some) at the end. nullopt: the table
// declined the recording (read whole).
// chosen: a record -a recording's processes, through ChosenProcessesStream.
// cupti_names: the names a read of the launches and GPU records gives
// (report_reads.cpp, for a recording that needs_cupti_names).
std::optional<LaunchSummary> try_streamed_summary(const Recording& recording, size_t chunk, size_t per_chunk,
                                                  const std::set<uint32_t>* chosen = nullptr,
                                                  std::optional<StreamedLaunchTable::CuptiNames> cupti_names = {}) {
  std::vector<std::pair<size_t, size_t>> launch_chunks;  // (first, count), in file order
  std::vector<size_t> after_events;                       // launch chunks given after each events chunk
  size_t given = 0;
  for (size_t at = 0; at < recording.events.size(); at += chunk) {
    const uint64_t last = recording.events[std::min(at + chunk, recording.events.size()) - 1].ts_ns;
    size_t end = given;
    while (end < recording.launches.size() && recording.launches[end].ts_ns <= last) end++;
    for (; given < end; given += std::min(per_chunk, end - given))
      launch_chunks.push_back({given, std::min(per_chunk, end - given)});
    after_events.push_back(launch_chunks.size());
  }
  for (; given < recording.launches.size(); given += std::min(per_chunk, recording.launches.size() - given))
    launch_chunks.push_back({given, std::min(per_chunk, recording.launches.size() - given)});
  JoinBounds bounds;
  for (const gp_event& e : recording.events) bounds.op_threads.insert(e.tid);
  for (const auto& [first, n] : launch_chunks) {
    uint64_t least = UINT64_MAX;
    for (size_t i = first; i < first + n; i++) {
      least = std::min(least, recording.launches[i].ts_ns);
      const CudaLaunch& l = recording.launches[i];
      if (l.api == GP_LAUNCH_KERNEL || l.api == GP_LAUNCH_KERNEL_EXC) bounds.kernel_launch_names.insert(l.name_id);
    }
    bounds.launch_ts.push_back(least);
  }
  Recording head = head_of(recording);
  head.streamed_gpu_activities = recording.gpu_activities.size();  // the first read counts them
  auto table = [&](const Recording& of, const LastPairs&) {
    return std::make_unique<StreamedLaunchTable>(of, bounds, std::move(cupti_names));  // one table
  };
  std::unique_ptr<RecordStream> stream;
  if (chosen)
    stream = std::make_unique<ChosenProcessesStream>(head, *chosen, LastPairs{}, table);
  else
    stream = table(head, {});
  RecordStream& streamed = *stream;
  if (!streamed.wants(head)) return std::nullopt;
  const std::span<const CudaLaunch> launches(recording.launches);
  size_t handed = 0;
  for (size_t at = 0, k = 0; at < recording.events.size(); at += chunk, k++) {
    const size_t n = std::min(chunk, recording.events.size() - at);
    streamed.on_events(std::span<const gp_event>(recording.events).subspan(at, n), at);
    for (; handed < after_events[k]; handed++)
      EXPECT_TRUE(streamed.on_launches(launches.subspan(launch_chunks[handed].first, launch_chunks[handed].second)));
  }
  for (; handed < launch_chunks.size(); handed++)
    EXPECT_TRUE(streamed.on_launches(launches.subspan(launch_chunks[handed].first, launch_chunks[handed].second)));
  if (!recording.gpu_activities.empty()) {
    EXPECT_TRUE(streamed.on_gpu_activities(recording.gpu_activities));
  }
  auto& launch_table = dynamic_cast<StreamedLaunchTable&>(chosen ? dynamic_cast<ChosenProcessesStream&>(streamed).finished_inner()
                                                                 : streamed);
  return std::move(launch_table).finish(head);
}

LaunchSummary streamed_summary(const Recording& recording, size_t chunk, size_t per_chunk,
                               const std::set<uint32_t>* chosen = nullptr,
                               std::optional<StreamedLaunchTable::CuptiNames> cupti_names = {}) {
  std::optional<LaunchSummary> summary =
      try_streamed_summary(recording, chunk, per_chunk, chosen, std::move(cupti_names));
  EXPECT_TRUE(summary.has_value());
  return summary.value_or(LaunchSummary{});
}

void expect_same(const LaunchSummary& streamed, const LaunchSummary& whole) {
  EXPECT_EQ(streamed.traced, whole.traced);
  EXPECT_EQ(streamed.libcudart_path, whole.libcudart_path);
  EXPECT_EQ(streamed.launches, whole.launches);
  EXPECT_EQ(streamed.outside_ops, whole.outside_ops);
  EXPECT_EQ(streamed.named_by_cupti, whole.named_by_cupti);
  EXPECT_EQ(streamed.lost, whole.lost);
  EXPECT_EQ(streamed.rows, whole.rows);
}

TEST(StreamedLaunchTable, CountsTheWholeReadsRowsOnRandomStreams) {
  size_t outside = 0, in_ops = 0, mixed = 0;
  for (uint32_t seed = 1; seed <= 20; seed++) {
    const Recording recording = recording_with_launches(seed, 3000, 800);
    const LaunchSummary whole = summarize_launches(recording);
    ASSERT_EQ(whole.launches, 800u);
    outside += whole.outside_ops;
    in_ops += whole.launches - whole.outside_ops;
    for (const LaunchRow& row : whole.rows) mixed += row.grid == "mixed" || row.stream == "mixed";
    for (size_t chunk : {size_t{1}, size_t{7}, size_t{500}, recording.events.size()})
      for (size_t per_chunk : {size_t{1}, size_t{13}, size_t{1000}}) {
        SCOPED_TRACE("seed " + std::to_string(seed) + " chunk " + std::to_string(chunk) + " launches per chunk " +
                     std::to_string(per_chunk));
        expect_same(streamed_summary(recording, chunk, per_chunk), whole);
      }
  }
  // Launches in ops and outside them (between calls, on the thread
  // without ops), and rows whose launches differ, or the test proves little.
  EXPECT_GT(outside, 1000u);
  EXPECT_GT(in_ops, 5000u);
  EXPECT_GT(mixed, 20u);
}

// With the CUPTI shim's GPU activities, a recording whose runtime launches
// all have names streams (its GPU records dropped: summarize_launches names
// none from them); one with a launch the probes could not name is declined
// (read whole: CUPTI names it), as is one whose second read brings such a
// launch or GPU activities the first read did not see.
TEST(StreamedLaunchTable, StreamsShimRecordingsWhoseLaunchesHaveNames) {
  Recording recording = recording_with_launches(3, 3000, 800);
  recording.cupti_shim = CuptiShimInfo{.shim_path = "libgpuprof_cupti.so", .state = 1};
  std::mt19937 rng(3);
  add_random_gpu(recording, rng, 200);  // launch_names: the GPU's, then the probes'
  recording.launch_names = {"void k::scale<float>(float*, int)", "k::reduce", "[unknown kernel 0x4242]"};
  for (GpuCorrelation& c : recording.gpu_correlations) c.domain = 2;  // the runtime's: they may name launches
  ASSERT_GT(summarize_launches(recording).named_by_cupti, 0u);
  EXPECT_FALSE(try_streamed_summary(recording, 500, 13).has_value());
  // Every launch named by its probe: the same summary, streamed.
  Recording named = recording;
  named.launch_names[2] = "k::copy";
  const LaunchSummary whole = summarize_launches(named);
  ASSERT_EQ(whole.named_by_cupti, 0u);
  for (size_t chunk : {size_t{1}, size_t{500}})
    expect_same(streamed_summary(named, chunk, 13), whole);
  // Without GPU activities no name comes from CUPTI: unnamed launches stream.
  Recording no_activities = recording;
  no_activities.gpu_activities.clear();
  expect_same(streamed_summary(no_activities, 500, 13), summarize_launches(no_activities));
}

// CUPTI's names of the first `launches` launches (all by default), as a
// read of the launches and GPU records in file order gives them (runs of
// 100 records: the sorts merge).
StreamedLaunchTable::CuptiNames names_read(const Recording& recording, size_t launches = SIZE_MAX) {
  SortedLaunchNames names(/*run_bytes=*/100 * 40);
  launches = std::min(launches, recording.launches.size());
  for (size_t at = 0; at < launches; at += 13)
    names.add_launches(std::span<const CudaLaunch>(recording.launches).subspan(at, std::min<size_t>(13, launches - at)));
  names.add_correlations(recording.gpu_correlations);
  names.add_activities(recording.gpu_activities);
  return std::move(names).names(recording.launch_names);
}

// A recording with launches the probes could not name streams once a read
// of its launches and GPU records has named them (needs_cupti_names): each
// launch charged under CUPTI's name by its place in the file, the whole
// read's rows and named_by_cupti count, on random streams; names that
// stop short of a launch that may take one decline it (read whole).
TEST(StreamedLaunchTable, StreamsUnnamedLaunchesUnderTheNamesCuptiGave) {
  uint64_t named = 0;
  for (uint32_t seed = 1; seed <= 12; seed++) {
    Recording recording = recording_with_launches(seed, 3000, 800);
    recording.cupti_shim = CuptiShimInfo{.shim_path = "libgpuprof_cupti.so", .state = 1};
    std::mt19937 rng(seed);
    add_random_gpu(recording, rng, 300);
    recording.launch_names = {"void k::scale<float>(float*, int)", "k::reduce", "[unknown kernel 0x4242]"};
    for (GpuCorrelation& c : recording.gpu_correlations)
      if (rng() % 5) c.domain = 2;  // the runtime's; the rest the driver's, which name nothing
    const LaunchSummary whole = summarize_launches(recording);
    named += whole.named_by_cupti;
    JoinBounds bounds;
    for (const CudaLaunch& l : recording.launches) bounds.kernel_launch_names.insert(l.name_id);
    Recording head = head_of(recording);
    head.streamed_gpu_activities = recording.gpu_activities.size();
    ASSERT_TRUE(StreamedLaunchTable::needs_cupti_names(head, bounds));
    for (size_t chunk : {size_t{1}, size_t{500}}) {
      SCOPED_TRACE("seed " + std::to_string(seed) + " chunk " + std::to_string(chunk));
      expect_same(streamed_summary(recording, chunk, 13, nullptr, names_read(recording)), whole);
    }
    // Names of the launches before the last that may take one.
    size_t short_of_the_last = recording.launches.size();
    while (short_of_the_last > 0)
      if (may_take_cupti_name(recording.launch_names, recording.launches[--short_of_the_last])) break;
    StreamedLaunchTable stops(head, bounds, names_read(recording, short_of_the_last));
    ASSERT_TRUE(stops.wants(head));
    EXPECT_FALSE(stops.on_launches(recording.launches));
  }
  EXPECT_GT(named, 300u);  // or this proves little
  Recording named_by_probes = recording_with_launches(1, 300, 20);
  named_by_probes.launch_names[2] = "k::copy";
  EXPECT_FALSE(StreamedLaunchTable::needs_cupti_names(head_of(named_by_probes), JoinBounds{}));
}

TEST(StreamedLaunchTable, DeclinesMidStreamWhatTheFirstReadDidNotSee) {
  Recording recording = recording_with_launches(4, 300, 20);
  recording.launch_names[2] = "k::copy";
  Recording head = head_of(recording);
  JoinBounds bounds;
  // GPU activities the first read did not see: read whole.
  StreamedLaunchTable without(head, bounds);
  ASSERT_TRUE(without.wants(head));
  const std::vector<GpuActivity> activities(2);
  EXPECT_FALSE(without.on_gpu_activities(activities));
  // A launch that may take a CUPTI name, or whose name the first read did
  // not have, once it saw GPU activities: read whole.
  head.streamed_gpu_activities = 2;
  for (uint32_t name_id : {2u, 7u}) {
    Recording unnamed = head;
    unnamed.launch_names[2] = "[unknown kernel 0x4242]";
    StreamedLaunchTable with(name_id == 2 ? unnamed : head, bounds);
    ASSERT_TRUE(with.wants(head));
    EXPECT_TRUE(with.on_gpu_activities(activities));
    const CudaLaunch launch{.api = GP_LAUNCH_KERNEL, .name_id = name_id};
    EXPECT_FALSE(with.on_launches(std::span<const CudaLaunch>(&launch, 1))) << name_id;
  }
}

// A record -a recording (cuts, a thread launching in a process that ran no
// op, a thread no THREAD_PROCESSES names): every process's launches, and
// those of the processes --pid/--comm choose (ChosenProcessesStream), as
// summarize_launches() of the selection read whole.
TEST(StreamedLaunchTable, CountsASystemWideRecordingsRowsAllOrChosen) {
  for (uint32_t seed = 1; seed <= 10; seed++) {
    Recording recording = system_wide_recording(seed, 2000);
    recording.cuda_runtime = CudaRuntimeInfo{.libcudart_path = "/usr/lib/libcudart.so.12", .entry_points = 5};
    recording.launch_names = {"k::scale"};
    std::mt19937 rng(seed);
    for (CudaLaunch& l : recording.launches) l.ts_ns = random_moment(recording, rng).ts_ns;  // among the calls
    std::sort(recording.launches.begin(), recording.launches.end(),
              [](const CudaLaunch& a, const CudaLaunch& b) { return a.ts_ns < b.ts_ns; });
    const LaunchSummary whole = summarize_launches(recording);
    ASSERT_EQ(whole.launches, 200u);
    ASSERT_GT(whole.launches, whole.outside_ops);
    for (size_t chunk : {size_t{1}, size_t{7}, recording.events.size()}) {
      SCOPED_TRACE("seed " + std::to_string(seed) + " chunk " + std::to_string(chunk));
      expect_same(streamed_summary(recording, chunk, 13), whole);
      for (const std::set<uint32_t>& chosen : {std::set<uint32_t>{10}, std::set<uint32_t>{20},
                                               std::set<uint32_t>{10, 20}, std::set<uint32_t>{40}}) {
        const LaunchSummary selection = summarize_launches(select_processes(recording, chosen));
        expect_same(streamed_summary(recording, chunk, 13, &chosen), selection);
      }
    }
  }
}

}  // namespace
}  // namespace gpuprof
