// report --gpu streamed (analyze/streamed_running_at.h) against the whole
// read (analyze/gpu_time.h): what ran at random moments (an event's own
// timestamp, between events, on a thread without ops: innermost_calls_at's
// edges) with each outermost call's Python frame, and the whole breakdown
// of random GPU records, on random event streams (folds, unwinding, steps,
// cuts, open ranges; three threads) handed over in file order, in chunks
// of several sizes, the stack pairs on time or chunks late.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "analyze/gpu_time.h"
#include "analyze/streamed_running_at.h"
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

std::vector<RunningAt> streamed_running_at(const Recording& recording, const std::vector<ThreadMoment>& moments,
                                           size_t chunk, size_t pair_delay) {
  const Recording head = head_of(recording);
  StreamedRunningAt streamed(head, moments, last_pair_of(recording));
  EXPECT_TRUE(streamed.wants(head));
  feed_with_records(streamed, recording, chunk, /*activity_lag=*/1, pair_delay);
  return std::move(streamed).finish();
}

TEST(StreamedRunningAt, EqualsTheWholeReadAtRandomMoments) {
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
TEST(StreamedRunningAt, AMomentWhereACallEndsAndTheNextStartsIsTheNextCalls) {
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
    GpuTimeDraft draft = draft_gpu_time(recording);
    const std::vector<RunningAt> running = streamed_running_at(recording, draft.moments, 9, 2);
    const std::vector<GpuDeviceTime> streamed = finish_gpu_time(std::move(draft), running);
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

}  // namespace
}  // namespace gpuprof
