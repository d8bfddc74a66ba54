// report --gpu streamed (analyze/sorted_gpu_time.h, analyze/
// streamed_host_waits.h) against the whole read (analyze/gpu_time.h): the
// draft of random GPU records through sorts in memory and merged from
// temporary files; what ran at random moments (an event's own
// timestamp, between events, on a thread without ops: innermost_calls_at's
// edges) with each outermost call's Python frame, and the whole breakdown
// of random GPU records, on random event streams (folds, unwinding, steps,
// cuts, open ranges; three threads) handed over in file order, in chunks
// of several sizes, the stack pairs on time or chunks late.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <span>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analyze/gpu_time.h"
#include "analyze/sorted_gpu_time.h"
#include "analyze/streamed_host_waits.h"
#include "output/gpu_time_report.h"
#include "random_event_streams.h"
#include "random_join_records.h"
#include "recordings.h"

namespace gpuprof {
namespace {

using namespace ::gpuprof::test;

// Three Python stacks, their innermost frames told apart, on about half
// the outermost calls' entries.
void add_stacks(Recording& recording, std::mt19937& rng) {
  recording.options.with_stack = true;
  recording.sample_frames = {"train.py(1): <module>", "train.py(7): step", "model.py(30): forward"};
  recording.sample_stacks = {{0}, {0, 1}, {0, 1, 2}};
  add_random_entry_stacks(recording, rng, 3);
}

// What ran at each moment, streamed: moment i is charged to device i alone
// (one gap, its wait i + 1), so each device's one row says what ran there.
std::vector<RunningAt> streamed_running_at(const Recording& recording, const std::vector<ThreadMoment>& moments,
                                           size_t chunk, size_t pair_delay) {
  const Recording head = head_of(recording);
  HostWaitMoments spilled(/*run_bytes=*/24 * 50);  // runs of 50 moments: merged
  for (size_t i = 0; i < moments.size(); i++)
    spilled.add({.ts_ns = moments[i].ts_ns, .wait_ns = i + 1, .device = static_cast<uint32_t>(i), .tid = moments[i].tid});
  StreamedHostWaits streamed(head, std::move(spilled), moments.size(), last_pair_of(recording));
  EXPECT_TRUE(streamed.wants(head));
  feed_with_records(streamed, recording, chunk, /*activity_lag=*/1, pair_delay);
  std::vector<RunningAt> running;
  for (const std::vector<GpuHostWait>& device : std::move(streamed).finish()) {
    EXPECT_EQ(device.size(), 1u);
    if (device.size() != 1) return {};
    EXPECT_EQ(device[0].wait_ns, running.size() + 1);
    EXPECT_EQ(device[0].gaps, 1u);
    running.push_back({device[0].op, device[0].python_frame});
  }
  return running;
}

TEST(StreamedHostWaits, EqualsTheWholeReadAtRandomMoments) {
  size_t in_ops = 0, outside = 0, with_frame = 0;
  for (uint32_t seed = 1; seed <= 30; seed++) {
    std::mt19937 rng(seed);
    Recording recording = random_recording(seed, 3000);
    if (seed % 3) add_stacks(recording, rng);
    std::vector<ThreadMoment> moments;
    for (int i = 0; i < 400; i++) {
      const Moment m = random_moment(recording, rng);
      moments.push_back({m.ts_ns, m.tid});
    }
    const std::vector<RunningAt> whole = running_at(recording, moments);
    for (size_t chunk : {size_t{1}, size_t{9}, size_t{400}, recording.events.size()})
      for (size_t delay : {size_t{0}, size_t{3}}) {
        SCOPED_TRACE("seed " + std::to_string(seed) + " chunk " + std::to_string(chunk) + " delay " +
                     std::to_string(delay));
        EXPECT_EQ(streamed_running_at(recording, moments, chunk, delay), whole);
      }
    for (const RunningAt& ran : whole) {
      (ran.op == "[no op]" ? outside : in_ops)++;
      with_frame += !ran.python_frame.empty();
    }
  }
  // The moments must fall in ops, outside them and under frames, or this
  // proves little.
  EXPECT_GT(in_ops, 8000u);
  EXPECT_GT(outside, 2000u);
  EXPECT_GT(with_frame, 2000u);
}

// A moment at the end of one outermost call and the start of the next is
// the next one's (innermost_calls_at), though the first call's forest,
// handed on before the next call's, decides it first (its stack pair, the
// file's last, comes with it); its frame is the next call's too: none.
TEST(StreamedHostWaits, AMomentWhereACallEndsAndTheNextStartsIsTheNextCalls) {
  Recording r = recording_of({op("aten::first"), op("aten::next")},
                             {op_entry(100, 0x1000, 0), op_exit(200, 0x1000, 0), op_entry(200, 0x1000, 1),
                              op_exit(300, 0x1000, 1)});
  r.options.with_stack = true;
  r.sample_frames = {"train.py(1): <module>", "train.py(7): first"};
  r.sample_stacks = {{0, 1}};
  r.entry_stacks = {{0, 0}};
  const std::vector<ThreadMoment> moments{{200, kTid}, {150, kTid}, {50, kTid}, {300, kTid}, {301, kTid}};
  const std::vector<RunningAt> expected{
      {"aten::next", ""}, {"aten::first", "train.py(7): first"}, {}, {"aten::next", ""}, {}};
  ASSERT_EQ(running_at(r, moments), expected);
  for (size_t delay : {size_t{0}, size_t{1}}) EXPECT_EQ(streamed_running_at(r, moments, 1, delay), expected);
}

// add_random_gpu's records with each activity started soon after its
// launch and short: the GPU mostly idle, waiting for the host, the waits
// beginning in ops and between them.
void add_sparse_gpu(Recording& recording, std::mt19937& rng, size_t launches) {
  add_random_gpu(recording, rng, launches);
  std::unordered_map<uint64_t, uint64_t> launched_at;
  for (const GpuCorrelation& c : recording.gpu_correlations) launched_at[c.correlation_id] = c.ts_ns;
  for (GpuActivity& a : recording.gpu_activities) {
    auto launch = launched_at.find(a.correlation_id);
    if (launch == launched_at.end()) continue;  // launch not seen: left where it was
    a.start_ns = launch->second + rng() % 50;
    a.end_ns = a.start_ns + 1 + rng() % 100;
  }
}

TEST(StreamedGpuTime, EqualsTheWholeBreakdownOnRandomStreams) {
  uint64_t waits = 0, charged = 0;
  for (uint32_t seed = 1; seed <= 20; seed++) {
    std::mt19937 rng(seed);
    Recording recording = random_recording(seed, 3000);
    add_stacks(recording, rng);
    add_sparse_gpu(recording, rng, 600);
    const std::vector<GpuDeviceTime> whole = gpu_time_by_device(recording);
    SortedGpuTime sorted(/*run_bytes=*/48 * 64);
    sorted.add_correlations(recording.gpu_correlations);
    sorted.add_activities(recording.gpu_activities);
    HostWaitMoments moments(/*run_bytes=*/24 * 64);
    GpuTimeDraft draft = std::move(sorted).finish(recording.launch_names, moments);
    const Recording head = head_of(recording);
    StreamedHostWaits placed(head, std::move(moments), draft.devices.size(), last_pair_of(recording));
    feed_with_records(placed, recording, 9, /*activity_lag=*/1, /*pair_delay=*/2);
    std::vector<std::vector<GpuHostWait>> host_waits = std::move(placed).finish();
    std::vector<GpuDeviceTime> streamed = std::move(draft.devices);
    ASSERT_EQ(host_waits.size(), streamed.size());
    for (size_t d = 0; d < streamed.size(); d++) streamed[d].host_waits = std::move(host_waits[d]);
    EXPECT_EQ(streamed, whole) << "seed " << seed;
    EXPECT_EQ(format_gpu_time_report(streamed, *recording.cupti_shim, -1),
              format_gpu_time_report(whole, *recording.cupti_shim, -1));
    for (const GpuDeviceTime& d : whole)
      for (const GpuHostWait& w : d.host_waits) {
        waits += w.gaps;
        if (w.op != "[no op]") charged += w.gaps;
      }
  }
  EXPECT_GT(waits, 4000u);
  EXPECT_GT(charged, 3000u);
}

// GPU records with every edge the draft has: three devices, four streams,
// kernels (one an NCCL one), memcpys and memsets, a name id past the names,
// empty and inverted spans, activities starting together (one id or
// several), launches seen late (after their activity's start), twice (the
// first counts) or not at all, and launches without activities.
Recording random_gpu_records(std::mt19937& rng, size_t launches) {
  Recording r;
  r.cupti_shim = CuptiShimInfo{.shim_path = "libgpuprof_cupti.so", .state = 1};
  r.launch_names = {"kernel_a", "ncclDevKernel_AllReduce", "Memcpy HtoD (Pageable -> Device)", "Memset (Device)"};
  uint64_t t = 1'000'000;
  for (size_t i = 0; i < launches; i++) {
    t += rng() % 3000;
    const uint64_t id = 1 + rng() % (launches + launches / 8);  // some ids twice
    const uint32_t tid = 100 + rng() % 3;
    if (rng() % 10) r.gpu_correlations.push_back({.ts_ns = t, .correlation_id = id, .tid = tid});
    const unsigned activities = rng() % 6 == 0 ? 0 : 1 + rng() % 3;
    uint64_t start = t + (rng() % 8 == 0 ? 0 : rng() % 4000) - (rng() % 9 == 0 ? 500 : 0);
    for (unsigned a = 0; a < activities; a++) {
      const uint64_t length = rng() % 11 == 0 ? 0 : rng() % 2500;
      GpuActivity activity{.start_ns = start,
                           .end_ns = rng() % 17 == 0 ? start - 1 : start + length,
                           .correlation_id = rng() % 13 == 0 ? id + 1 : id,
                           .device = static_cast<uint32_t>(rng() % 3),
                           .stream = static_cast<uint32_t>(rng() % 4),
                           .kind = static_cast<GpuActivityKind>(1 + rng() % 3),
                           .name_id = static_cast<uint32_t>(rng() % 5)};
      r.gpu_activities.push_back(activity);
      if (rng() % 3) start += rng() % 1500;  // else the next starts with it
    }
  }
  // CUPTI hands activities buffer by buffer, not in time order.
  for (size_t i = 1; i < r.gpu_activities.size(); i++)
    if (rng() % 4 == 0) std::swap(r.gpu_activities[i - 1], r.gpu_activities[i]);
  return r;
}

using MomentKey = std::tuple<uint32_t, uint64_t, uint64_t, uint64_t>;  // tid, ts, device, wait

// The sorted draft and its host waits' moments, read back from their files.
std::pair<GpuTimeDraft, std::vector<MomentKey>> sorted_draft(const Recording& r, size_t run_bytes, size_t chunk,
                                                             size_t* spilled = nullptr) {
  SortedGpuTime sorted(run_bytes);
  // Handed over in chunks, the correlations a chunk ahead of the activities.
  for (size_t at = 0; at < std::max(r.gpu_correlations.size(), r.gpu_activities.size()) + chunk; at += chunk) {
    if (at < r.gpu_correlations.size())
      sorted.add_correlations(std::span(r.gpu_correlations).subspan(at, std::min(chunk, r.gpu_correlations.size() - at)));
    if (at >= chunk && at - chunk < r.gpu_activities.size())
      sorted.add_activities(
          std::span(r.gpu_activities).subspan(at - chunk, std::min(chunk, r.gpu_activities.size() - (at - chunk))));
  }
  if (spilled) *spilled = sorted.spilled_runs();
  HostWaitMoments moments(run_bytes);
  GpuTimeDraft draft = std::move(sorted).finish(r.launch_names, moments);
  std::vector<MomentKey> keys;
  for (auto& [tid, file] : std::move(moments).by_thread()) {
    SpilledRecords<HostWaitMoments::Moment> reader(*file);
    uint64_t last_ts = 0;
    for (HostWaitMoments::Moment m; reader.next(&m);) {
      EXPECT_EQ(m.tid, tid);
      EXPECT_GE(m.ts_ns, last_ts);  // each thread's by time
      last_ts = m.ts_ns;
      keys.emplace_back(m.tid, m.ts_ns, m.device, m.wait_ns);
    }
  }
  std::sort(keys.begin(), keys.end());
  return {std::move(draft), keys};
}

void expect_same_draft(const std::pair<GpuTimeDraft, std::vector<MomentKey>>& sorted, const GpuTimeDraft& whole) {
  EXPECT_EQ(sorted.first.devices, whole.devices);
  std::vector<MomentKey> expected;
  for (size_t i = 0; i < whole.moments.size(); i++)
    expected.emplace_back(whole.moments[i].tid, whole.moments[i].ts_ns, whole.waits[i].device, whole.waits[i].wait_ns);
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(sorted.second, expected);
}

TEST(SortedGpuTime, EqualsTheWholeReadsDraftOnRandomRecords) {
  GpuDeviceTime seen;  // sums over all runs: every part of the draft must be exercised
  size_t devices = 0, moments = 0, merged = 0;
  for (uint32_t seed = 1; seed <= 25; seed++) {
    std::mt19937 rng(seed);
    const Recording r = random_gpu_records(rng, 400 + seed * 40);
    const GpuTimeDraft whole = draft_gpu_time(r);
    for (size_t run_bytes : {size_t{1}, size_t{48 * 5}, size_t{48 * 100}, kSortRunBytes})
      for (size_t chunk : {size_t{1}, size_t{37}, r.gpu_activities.size()}) {
        SCOPED_TRACE("seed " + std::to_string(seed) + " run " + std::to_string(run_bytes) + " chunk " +
                     std::to_string(chunk));
        size_t spilled = 0;
        expect_same_draft(sorted_draft(r, run_bytes, chunk, &spilled), whole);
        merged += spilled > 0;
      }
    devices += whole.devices.size();
    moments += whole.moments.size();
    for (const GpuDeviceTime& d : whole.devices) {
      seen.idle_gaps += d.idle_gaps;
      seen.host_wait_ns += d.host_wait_ns;
      seen.queued_ns += d.queued_ns;
      seen.launch_not_seen_ns += d.launch_not_seen_ns;
      seen.overlap_ns += d.overlap_ns;
      seen.by_category.memset_ns += d.by_category.memset_ns;
      seen.queue_delays.count += d.queue_delays.count;
    }
  }
  EXPECT_EQ(devices, 25u * 3);
  EXPECT_GT(moments, 1000u);
  EXPECT_GT(seen.queued_ns, 0u);
  EXPECT_GT(seen.launch_not_seen_ns, 0u);
  EXPECT_GT(seen.overlap_ns, 0u);
  EXPECT_GT(seen.by_category.memset_ns, 0u);
  EXPECT_GT(seen.queue_delays.count, 5000u);
  EXPECT_EQ(merged, 25u * 9);  // the three smaller runs spill, the default (2 MiB) does not
}

// A device whose activities CUPTI could not time (every span empty): its
// window is its first activity's start in file order, as the whole read's.
TEST(SortedGpuTime, ADeviceWithoutTimedActivitiesHasItsWindowAtItsFirst) {
  Recording r;
  r.gpu_correlations = {{.ts_ns = 10, .correlation_id = 1, .tid = 5}};
  r.gpu_activities = {{.start_ns = 900, .end_ns = 900, .correlation_id = 1, .device = 1},
                      {.start_ns = 400, .end_ns = 300, .correlation_id = 1, .device = 1},
                      {.start_ns = 100, .end_ns = 200, .correlation_id = 1, .device = 0}};
  const GpuTimeDraft whole = draft_gpu_time(r);
  ASSERT_EQ(whole.devices.size(), 2u);
  EXPECT_EQ(whole.devices[1].window_start_ns, 900u);
  EXPECT_EQ(whole.devices[1].activities, 2u);
  for (size_t run_bytes : {size_t{1}, kSortRunBytes}) expect_same_draft(sorted_draft(r, run_bytes, 1), whole);
}

}  // namespace
}  // namespace gpuprof
