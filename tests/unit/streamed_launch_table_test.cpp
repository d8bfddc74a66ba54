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
#include <random>
#include <string>
#include <vector>

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
// (the rest at the end), with the bounds the first read notes.
LaunchSummary streamed_summary(const Recording& recording, size_t chunk, size_t per_chunk) {
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
    for (size_t i = first; i < first + n; i++) least = std::min(least, recording.launches[i].ts_ns);
    bounds.launch_ts.push_back(least);
  }
  const Recording head = head_of(recording);
  EXPECT_TRUE(StreamedLaunchTable::serves(head));
  StreamedLaunchTable streamed(bounds);
  EXPECT_TRUE(streamed.wants(head));
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
  return std::move(streamed).finish(head);
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

// A recording whose GPU activities name its unnamed launches (the CUPTI
// shim), or of record -a, is read whole.
TEST(StreamedLaunchTable, LeavesShimAndSystemWideRecordingsToTheWholeRead) {
  Recording recording = recording_with_launches(3, 300, 20);
  EXPECT_TRUE(StreamedLaunchTable::serves(head_of(recording)));
  Recording shim = recording;
  shim.cupti_shim = CuptiShimInfo{.shim_path = "libgpuprof_cupti.so", .state = 1};
  EXPECT_FALSE(StreamedLaunchTable::serves(head_of(shim)));
  Recording activities = recording;
  activities.streamed_gpu_activities = 4;
  EXPECT_FALSE(StreamedLaunchTable::serves(activities));
  Recording system_wide = recording;
  system_wide.process.pid = 0;
  system_wide.processes.push_back(recording.process);
  EXPECT_FALSE(StreamedLaunchTable::serves(system_wide));
}

}  // namespace
}  // namespace gpuprof
