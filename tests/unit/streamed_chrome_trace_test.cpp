// The streamed Chrome trace (output/streamed_chrome_trace.h) against
// write_chrome_trace() of the same recording read whole: the same
// document, byte for byte, on random event streams of three threads that
// nest, fold, unwind, step (step frames on their own tracks), cut and leave
// calls open at the end, with CPU samples (on a thread without ops too)
// and, half of them, Python stacks on half their entries (handed over a
// chunk late), fed in chunks of every size, whole and cut by --time-range;
// a system-wide recording's; and what it declines.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <csignal>

#include <random>
#include <string>
#include <vector>

#include "output/chrome_trace.h"
#include "output/chrome_trace_several.h"
#include "output/streamed_chrome_trace.h"
#include "probe_events.h"
#include "random_event_streams.h"
#include "random_join_records.h"
#include "recordings.h"

namespace gpuprof {
namespace {

using namespace ::gpuprof::test;

std::string whole_trace(const Recording& recording, const ChromeTraceOptions& options) {
  std::string out;
  write_chrome_trace(recording, options, [&](std::string_view piece) { out += piece; });
  return out;
}

// The streamed trace of `recording`: its events fed `chunk` at a time, each
// chunk's entry-stack pairs handed over after the next chunk (as a file
// has them, later), the rest at the end.
std::string streamed_trace(const Recording& recording, const ChromeTraceOptions& options, size_t chunk) {
  const Recording head = head_of(recording);
  StreamedChromeTrace streamed(head, last_pair_of(recording), last_index_of(recording.entry_shapes), options.ops);
  EXPECT_TRUE(streamed.wants(head));
  feed_in_chunks(streamed, recording, chunk, /*pair_delay=*/1);
  const StreamedTraceCalls calls = streamed.finish();
  std::string out;
  write_chrome_trace(head, options, calls, [&](std::string_view piece) { out += piece; });
  return out;
}

// The traces the tests compare: whole, cut by --time-range to the
// recording's events 1000 to 2000 (its clock starts at 900), with --ops
// (the range and the divisions, and what they hold), and with both.
struct TraceCuts {
  ChromeTraceOptions whole, cut, ops, ops_cut;
};
TraceCuts trace_cuts(const Recording& recording) {
  TraceCuts cuts;
  cuts.cut.range.from_s = (recording.events[1000].ts_ns - 900) / 1e9;
  cuts.cut.range.until_s = (recording.events[2000].ts_ns - 900) / 1e9;
  cuts.ops.ops.emplace("my_range|div_");
  cuts.ops.ops_pattern = "my_range|div_";
  cuts.ops_cut = cuts.ops;
  cuts.ops_cut.range = cuts.cut.range;
  return cuts;
}

// The whole read's traces of `recording` (trace_cuts), after checking that
// the streamed traces, fed in chunks of every size, are the same bytes.
std::vector<std::string> expect_streamed_traces_as_whole(const Recording& recording, uint32_t seed) {
  const TraceCuts cuts = trace_cuts(recording);
  std::vector<std::string> traces;
  for (const ChromeTraceOptions& options : {cuts.whole, cuts.cut, cuts.ops, cuts.ops_cut}) {
    const std::string& expected = traces.emplace_back(whole_trace(recording, options));
    for (size_t chunk : {size_t{1}, size_t{7}, size_t{500}, recording.events.size()}) {
      SCOPED_TRACE("seed " + std::to_string(seed) + " chunk " + std::to_string(chunk) +
                   (options.range.from_s ? " cut" : "") + (options.ops ? " --ops" : ""));
      EXPECT_EQ(streamed_trace(recording, options, chunk), expected);
    }
  }
  return traces;
}

// How many times `needle` is in `text`.
size_t occurrences(const std::string& text, const std::string& needle) {
  size_t count = 0;
  for (size_t at = 0; (at = text.find(needle, at)) != std::string::npos; at++) count++;
  return count;
}

TEST(StreamedChromeTrace, WritesTheWholeReadsTraceOnRandomStreams) {
  size_t steps = 0, unwound = 0, dims = 0;
  size_t python = 0, samples = 0, samples_in_ops = 0;
  for (uint32_t seed = 1; seed <= 25; seed++) {
    Recording recording = random_recording_with_samples(seed, 3000);
    std::mt19937 rng(seed);
    if (seed % 2) {  // record --with-stack (Python stacks without modules): half the entries have one
      recording.options.with_stack = true;
      add_random_entry_stacks(recording, rng, 2);
    }
    if (seed % 3 == 0) add_random_entry_shapes(recording, rng);  // record --record-shapes
    const std::vector<std::string> traces = expect_streamed_traces_as_whole(recording, seed);
    samples += occurrences(traces[0], "\"cat\":\"cpu_sample\"");
    samples_in_ops += occurrences(traces[2], "\"cat\":\"cpu_sample\"");
    for (const std::string& expected : traces) {
      steps += occurrences(expected, "\"ProfilerStep#");
      unwound += occurrences(expected, "\"unwound\":true");
      dims += occurrences(expected, "\"Input Dims\":[[8,3],[3]]");
      size_t at = 0;
      while ((at = expected.find("\"cat\":\"cpu_op\"", at)) != std::string::npos &&
             (at = expected.find("\"sf\":", at)) != std::string::npos)
        python++, at++;
    }
  }
  // Step frames (their own tracks) and unwound calls must be in the
  // traces, or the comparison proves little.
  EXPECT_GT(steps, 100u);
  EXPECT_GT(unwound, 1000u);
  EXPECT_GT(python, 1000u);  // calls with their entry's stack
  EXPECT_GT(dims, 1000u);    // and with their entry's input shapes
  // --ops kept some samples (those in kept calls), not all.
  EXPECT_GT(samples_in_ops, 100u);
  EXPECT_LT(samples_in_ops, samples / 2);
}

// report A B ... --chrome-trace: each recording's calls streamed on their
// own, in one trace of several (chrome_trace_several.h): the trace of the
// recordings read whole, with --ops and --time-range too; one of them read
// whole beside the streamed ones.
TEST(StreamedChromeTrace, WritesTheWholeReadsTraceOfSeveralRecordings) {
  std::vector<Recording> recordings;
  for (uint32_t seed : {31u, 32u, 33u}) {
    Recording r = random_recording_with_samples(seed, 3000);
    r.process.pid = 100 * static_cast<int32_t>(seed);
    r.clock.start_realtime_ns = 1'700'000'000'000'000'000ull + seed * 1'000'000;  // 1 ms apart
    recordings.push_back(std::move(r));
  }
  const TraceCuts cuts = trace_cuts(recordings[0]);
  for (const ChromeTraceOptions* options : {&cuts.whole, &cuts.cut, &cuts.ops, &cuts.ops_cut}) {
    std::vector<TraceInput> whole_inputs;
    std::vector<Recording> heads;
    std::vector<StreamedTraceCalls> calls;
    heads.reserve(recordings.size());
    calls.reserve(recordings.size());
    for (const Recording& r : recordings) {
      whole_inputs.push_back({&r, "f" + std::to_string(r.process.pid)});
      heads.push_back(head_of(r));
      StreamedChromeTrace streamed(heads.back(), last_pair_of(r), last_index_of(r.entry_shapes), options->ops);
      feed_in_chunks(streamed, r, 500, /*pair_delay=*/1);
      calls.push_back(streamed.finish());
    }
    // The last one read whole, the others streamed.
    std::vector<TraceInput> streamed_inputs = {{&heads[0], "f3100", &calls[0]},
                                               {&heads[1], "f3200", &calls[1]},
                                               {&recordings[2], "f3300"}};
    std::string whole, streamed;
    ASSERT_TRUE(write_chrome_trace_of_several(whole_inputs, *options, [&](std::string_view p) { whole += p; }));
    ASSERT_TRUE(
        write_chrome_trace_of_several(streamed_inputs, *options, [&](std::string_view p) { streamed += p; }));
    EXPECT_EQ(streamed, whole);
    EXPECT_GT(occurrences(whole, "\"cat\":\"cpu_op\""), options == &cuts.whole ? 3000u : 10u);
  }
}

// --ops and the samples at a forest's edges: a sample at the moment one
// call ends and the next (a new forest: the thread was at rest) starts
// belongs to the call that starts, as in the whole timeline; one between
// forests to none.
TEST(StreamedChromeTrace, OpsKeepTheSamplesOfTheCallThatStartsAtTheirMoment) {
  const uint32_t div = 2, mm = 3;
  Recording recording = recording_of(ops_of_the_streams(), {op_entry(1000, 0x100, div, 10), op_exit(2000, 0x100, div, 10),
                                                            op_entry(2000, 0x100, mm, 10), op_exit(3000, 0x100, mm, 10),
                                                            op_entry(4000, 0x100, div, 10), op_exit(5000, 0x100, div, 10)});
  recording.process.pid = 4242;
  recording.options.sample_hz = 997;
  recording.sample_frames = {"libtorch_cpu.so+0x1234"};
  for (uint64_t ts : {500, 1500, 2000, 2500, 3000, 3500, 4000, 5000, 5500}) {
    CpuSample sample;
    sample.tid = 10;
    sample.ts_ns = ts;
    recording.samples.push_back(sample);
  }
  // div_: its two calls, the samples at 1500, 4000 and 5000 (2000 is mm's);
  // mm: its call, the samples at 2000, 2500 and 3000.
  struct Kept {
    const char* pattern;
    size_t calls, samples;
  };
  for (const Kept& kept : {Kept{"div_", 2, 3}, Kept{"mm", 1, 3}}) {
    ChromeTraceOptions options;
    options.ops.emplace(kept.pattern);
    options.ops_pattern = kept.pattern;
    const std::string expected = whole_trace(recording, options);
    EXPECT_EQ(occurrences(expected, "\"cat\":\"cpu_op\""), kept.calls) << expected;
    EXPECT_EQ(occurrences(expected, "\"cat\":\"cpu_sample\""), kept.samples) << expected;
    for (size_t chunk : {size_t{1}, size_t{2}, size_t{6}}) EXPECT_EQ(streamed_trace(recording, options, chunk), expected);
  }
}

// Module frames in the entries' stacks (record --with-modules): the module
// calls, written before every op call, are the whole read's too, thread
// after thread, on threads with stacks from the start, from the middle on,
// or none; whole and cut by --time-range.
TEST(StreamedChromeTrace, WritesTheWholeReadsModuleCalls) {
  size_t module_calls = 0;
  for (uint32_t seed = 1; seed <= 20; seed++) {
    Recording recording = random_recording_with_samples(seed, 3000);
    add_random_module_stacks(recording, seed, seed % 2 == 0, /*engine_op=*/4);
    for (const std::string& expected : expect_streamed_traces_as_whole(recording, seed))
      module_calls += occurrences(expected, "\"nn.Module: Net");
  }
  EXPECT_GT(module_calls, 500u);  // or the comparison proves little
}

// A system-wide recording (record -a): every process's threads on its own
// trace process, a process met only from the middle on, samples of a
// process that ran no op, CUDA launches on every thread (one of a thread
// no THREAD_PROCESSES names), whole and cut by --time-range.
TEST(StreamedChromeTrace, WritesTheWholeReadsTraceOfASystemWideRecording) {
  size_t launches = 0;
  for (uint32_t seed = 1; seed <= 10; seed++) {
    Recording recording = system_wide_recording(seed, 3000);
    ASSERT_FALSE(recording.launches.empty());
    ASSERT_TRUE(StreamedChromeTrace::streamable(head_of(recording), false));
    ChromeTraceOptions cut;
    cut.range.from_s = (recording.events[1000].ts_ns - recording.clock.start_monotonic_ns) / 1e9;
    for (const ChromeTraceOptions& options : {ChromeTraceOptions{}, cut}) {
      const std::string expected = whole_trace(recording, options);
      ASSERT_NE(expected.find("\"pid\":20,"), std::string::npos);
      launches += occurrences(expected, "\"cat\":\"cuda_runtime\"");
      for (size_t chunk : {size_t{1}, size_t{500}}) {
        SCOPED_TRACE("seed " + std::to_string(seed) + " chunk " + std::to_string(chunk));
        EXPECT_EQ(streamed_trace(recording, options, chunk), expected);
      }
    }
  }
  EXPECT_GT(launches, 100u);  // or the comparison proves little
}

// The trace of allocator events and calls streamed: `recording`'s records
// handed over in a file's order (random_join_records.h), the allocator
// events' chunks bounded as the first read notes them.
std::string streamed_trace_with_records(const Recording& recording, const ChromeTraceOptions& options, size_t chunk) {
  const Recording head = head_of(recording);
  const JoinBounds bounds = bounds_of(recording, chunk, 0);
  StreamedChromeTrace streamed(head, last_pair_of(recording), last_index_of(recording.entry_shapes), options.ops,
                               bounds.mem_event_ts);
  EXPECT_TRUE(streamed.wants(head));
  feed_with_records(streamed, recording, chunk, 0, /*pair_delay=*/1);
  const StreamedTraceCalls calls = streamed.finish();
  std::string out;
  write_chrome_trace(head, options, calls, [&](std::string_view piece) { out += piece; });
  return out;
}

// A random recording with samples (3000 events), an odd seed's with
// Python stacks on half its entries.
Recording random_recording_half_with_stacks(uint32_t seed, std::mt19937& rng) {
  Recording recording = random_recording_with_samples(seed, 3000);
  if (seed % 2) {
    recording.options.with_stack = true;
    add_random_entry_stacks(recording, rng, 2);
  }
  return recording;
}

// Memory counters: the level after each allocator event in time order,
// across threads and chunks that overlap in time (a CPU release sized by
// an allocation on another thread, releases of blocks never seen
// allocated, CUDA totals), whole and cut by --time-range, with and
// without --ops.
TEST(StreamedChromeTrace, WritesTheWholeReadsMemoryCountersOnRandomStreams) {
  size_t counters = 0, cut_counters = 0;
  for (uint32_t seed = 1; seed <= 20; seed++) {
    std::mt19937 rng(seed);
    Recording recording = random_recording_half_with_stacks(seed, rng);
    add_random_memory(recording, rng, 800);
    ring_order(recording.mem_events, rng);
    const TraceCuts cuts = trace_cuts(recording);
    for (const ChromeTraceOptions& options : {cuts.whole, cuts.cut, cuts.ops}) {
      const std::string expected = whole_trace(recording, options);
      (options.range.from_s ? cut_counters : counters) += occurrences(expected, "\"ph\":\"C\"");
      for (size_t chunk : {size_t{1}, size_t{7}, size_t{500}, recording.events.size()}) {
        SCOPED_TRACE("seed " + std::to_string(seed) + " chunk " + std::to_string(chunk) +
                     (options.range.from_s ? " cut" : "") + (options.ops ? " --ops" : ""));
        EXPECT_EQ(streamed_trace_with_records(recording, options, chunk), expected);
      }
    }
  }
  // Most events are a level (releases never seen allocated are not);
  // the cut keeps about a third.
  EXPECT_GT(counters, 20u * 2 * 600);
  EXPECT_GT(cut_counters, 20u * 150);
  EXPECT_LT(cut_counters, 20u * 500);
}

// The trace of GPU activities streamed: `recording`'s records handed over
// in a file's order, the activities `activity_lag` event chunks after
// their launches, bounded as the first read notes them. kept_by_calls
// (--ops): the launches and GPU activities kept by their calls, the calls
// joined with them (keep_launches_by_their_calls).
std::string streamed_trace_with_gpu(const Recording& recording, const ChromeTraceOptions& options, size_t chunk,
                                    size_t activity_lag, bool kept_by_calls = false) {
  const Recording head = head_of(recording);
  const JoinBounds bounds = bounds_of(recording, chunk, activity_lag);
  StreamedChromeTrace streamed(head, last_pair_of(recording), last_index_of(recording.entry_shapes), options.ops,
                               {}, GpuActivityBounds{.activity_start = bounds.gpu_activity_start,
                                                     .activity_correlation = bounds.gpu_activity_correlation,
                                                     .correlation_id = bounds.gpu_correlation_id});
  if (kept_by_calls) streamed.keep_launches_by_their_calls(bounds);
  EXPECT_TRUE(streamed.wants(head));
  feed_with_records(streamed, recording, chunk, activity_lag, /*pair_delay=*/1);
  const StreamedTraceCalls calls = streamed.finish();
  std::string out;
  write_chrome_trace(head, options, calls, [&](std::string_view piece) { out += piece; });
  return out;
}

// add_random_gpu's activities spread over two devices and three streams
// each, so that a stream's activities overlap (lanes) and streams
// interleave in the file; a few share a start and an end (their order is
// the file's).
void spread_over_streams(Recording& recording) {
  for (size_t i = 0; i < recording.gpu_activities.size(); i++) {
    GpuActivity& a = recording.gpu_activities[i];
    a.device = static_cast<uint32_t>(a.correlation_id % 2);
    a.stream = 7 * static_cast<uint32_t>((a.correlation_id / 2) % 3);
    a.kind = i % 11 == 0 ? GpuActivityKind::memcpy : i % 13 == 0 ? GpuActivityKind::memset : GpuActivityKind::kernel;
  }
}

// GPU activities: on two devices' streams, overlapping (lanes), their
// launches on the op threads, on a thread without ops and never seen, two
// activities for a graph launch, read a few chunks after their launches;
// whole and cut by --time-range (which cuts arrows whose launch is
// outside it).
TEST(StreamedChromeTrace, WritesTheWholeReadsGpuActivitiesOnRandomStreams) {
  size_t activities = 0, flows = 0, lanes = 0, cut_activities = 0;
  for (uint32_t seed = 1; seed <= 20; seed++) {
    Recording recording = random_recording_with_samples(seed, 3000);
    std::mt19937 rng(seed);
    add_random_gpu(recording, rng, 600);
    spread_over_streams(recording);
    const TraceCuts cuts = trace_cuts(recording);
    for (const ChromeTraceOptions& options : {cuts.whole, cuts.cut}) {
      const std::string expected = whole_trace(recording, options);
      const size_t written = occurrences(expected, "\"cat\":\"kernel\"") + occurrences(expected, "\"cat\":\"gpu_mem");
      (options.range.from_s ? cut_activities : activities) += written;
      if (!options.range.from_s) {
        flows += occurrences(expected, "\"ph\":\"s\"");
        lanes += occurrences(expected, "(lane 1)");
      }
      for (size_t chunk : {size_t{1}, size_t{7}, size_t{500}, recording.events.size()})
        for (size_t lag : {size_t{0}, size_t{3}}) {
          SCOPED_TRACE("seed " + std::to_string(seed) + " chunk " + std::to_string(chunk) + " lag " +
                       std::to_string(lag) + (options.range.from_s ? " cut" : ""));
          EXPECT_EQ(streamed_trace_with_gpu(recording, options, chunk, lag), expected);
        }
    }
  }
  // About 6/7 of the launches have one activity or two, a few activities
  // no launch; the cut keeps about a third; overlaps make second lanes.
  EXPECT_GT(activities, 20u * 550);
  EXPECT_GT(flows, 20u * 500);
  EXPECT_GT(lanes, 20u);
  EXPECT_GT(cut_activities, 20u * 100);
  EXPECT_LT(cut_activities, 20u * 400);
}

// --ops with launch probes' launches and GPU activities: at random moments
// (a call's very start or end, between calls, on a thread without ops),
// read in a ring's order, the activities a few chunks after their
// launches, some with no launch (a third of the recordings have launches
// alone); whole and cut by --time-range (an activity inside it whose
// launching call ends before it is not written).
TEST(StreamedChromeTrace, WritesTheWholeReadsLaunchesAndGpuActivitiesOfKeptCalls) {
  size_t launches = 0, activities = 0, all_launches = 0, all_activities = 0, cut_launches = 0, cut_activities = 0;
  auto activities_in = [](const std::string& trace) {
    return occurrences(trace, "\"cat\":\"kernel\"") + occurrences(trace, "\"cat\":\"gpu_mem");
  };
  for (uint32_t seed = 1; seed <= 20; seed++) {
    std::mt19937 rng(seed);
    Recording recording = random_recording_half_with_stacks(seed, rng);
    add_random_launches(recording, rng, 400);
    ring_order(recording.launches, rng);
    if (seed % 3) {  // else launches alone, as without the CUPTI shim
      add_random_gpu(recording, rng, 600);
      spread_over_streams(recording);
    }
    const TraceCuts cuts = trace_cuts(recording);
    const std::string everything = whole_trace(recording, cuts.whole);
    all_launches += occurrences(everything, "\"cat\":\"cuda_runtime\"");
    all_activities += activities_in(everything);
    for (const ChromeTraceOptions& options : {cuts.ops, cuts.ops_cut}) {
      const std::string expected = whole_trace(recording, options);
      const bool cut = options.range.from_s.has_value();
      (cut ? cut_launches : launches) += occurrences(expected, "\"cat\":\"cuda_runtime\"");
      (cut ? cut_activities : activities) += activities_in(expected);
      for (size_t chunk : {size_t{1}, size_t{7}, size_t{500}, recording.events.size()})
        for (size_t lag : {size_t{0}, size_t{3}}) {
          SCOPED_TRACE("seed " + std::to_string(seed) + " chunk " + std::to_string(chunk) + " lag " +
                       std::to_string(lag) + (cut ? " cut" : ""));
          EXPECT_EQ(streamed_trace_with_gpu(recording, options, chunk, lag, /*kept_by_calls=*/true), expected);
        }
    }
  }
  // --ops keeps about 58% of each here (my_range and div_ calls hold many
  // launches); the cut about a third of those.
  EXPECT_GT(launches, 4000u);
  EXPECT_LT(launches, all_launches * 7 / 10);
  EXPECT_GT(activities, 4000u);
  EXPECT_LT(activities, all_activities * 7 / 10);
  EXPECT_GT(cut_launches, 1000u);
  EXPECT_LT(cut_launches, launches / 2);
  EXPECT_GT(cut_activities, 700u);
  EXPECT_LT(cut_activities, activities / 2);
}

// The same of a system-wide recording (record -a): launches on threads of
// several processes, of a process that ran no op and of a thread no
// THREAD_PROCESSES names.
TEST(StreamedChromeTrace, WritesTheWholeReadsLaunchesOfKeptCallsOfASystemWideRecording) {
  size_t kept = 0;
  for (uint32_t seed = 1; seed <= 10; seed++) {
    Recording recording = system_wide_recording(seed, 3000);
    std::mt19937 rng(seed);
    add_random_launches(recording, rng, 300);
    const TraceCuts cuts = trace_cuts(recording);
    for (const ChromeTraceOptions& options : {cuts.ops, cuts.ops_cut}) {
      const std::string expected = whole_trace(recording, options);
      kept += occurrences(expected, "\"cat\":\"cuda_runtime\"");
      for (size_t chunk : {size_t{1}, size_t{500}}) {
        SCOPED_TRACE("seed " + std::to_string(seed) + " chunk " + std::to_string(chunk));
        EXPECT_EQ(streamed_trace_with_gpu(recording, options, chunk, 0, /*kept_by_calls=*/true), expected);
      }
    }
  }
  EXPECT_GT(kept, 1000u);  // or the comparison proves little
}

// An activity read before its launch waits for it; a correlation id read
// twice is joined to its first launch; an activity whose launch no unread
// chunk can hold goes without one.
TEST(StreamedGpuActivities, JoinsEachActivityToTheFirstLaunchOfItsIdInAnyOrder) {
  const GpuActivity a5{.start_ns = 1000, .end_ns = 1100, .correlation_id = 5};
  const GpuActivity a6{.start_ns = 900, .end_ns = 950, .correlation_id = 6};
  const GpuActivity a7{.start_ns = 1000, .end_ns = 1100, .correlation_id = 7, .stream = 3};
  const std::vector<GpuCorrelation> first = {{.ts_ns = 100, .correlation_id = 5, .tid = 1}};
  const std::vector<GpuCorrelation> again = {{.ts_ns = 300, .correlation_id = 5, .tid = 3}};
  const std::vector<GpuCorrelation> last = {{.ts_ns = 200, .correlation_id = 6, .tid = 2}};
  const std::vector<GpuActivity> activities = {a5, a6, a7};
  // File order: a launch of 5, another, the activities, the launch of 6.
  StreamedGpuActivities streamed(GpuActivityBounds{.activity_start = {900}, .activity_correlation = {5},
                                                   .correlation_id = {5, 5, 6}});
  streamed.add_correlations(first);
  streamed.add_correlations(again);
  streamed.add_activities(activities);
  streamed.add_correlations(last);
  std::vector<TraceGpuActivity> replayed;
  streamed.finish()([&](const TraceGpuActivity& t) { replayed.push_back(t); });
  ASSERT_EQ(replayed.size(), 3u);
  // Stream 0 by start (6, then 5), then stream 3.
  EXPECT_EQ(replayed[0].activity, a6);
  EXPECT_EQ(replayed[0].launch_seen, 1u);
  EXPECT_EQ(replayed[0].launch_tid, 2u);
  EXPECT_EQ(replayed[0].launch_ts_ns, 200u);
  EXPECT_EQ(replayed[1].activity, a5);
  EXPECT_EQ(replayed[1].launch_tid, 1u);
  EXPECT_EQ(replayed[1].launch_ts_ns, 100u);
  EXPECT_EQ(replayed[2].activity, a7);
  EXPECT_EQ(replayed[2].launch_seen, 0u);
}

// A quiet stream's activities handed over last (CUPTI may complete a
// stream's buffer only at the end): every other activity waits for them,
// then each stream is replayed in the trace's order (by start, the longer
// first, then file order) with its launch, whatever order the chunks and
// launches came in.
TEST(StreamedGpuActivities, AQuietStreamHandedOverLastHoldsTheOthersInOrder) {
  std::mt19937 rng(11);
  std::vector<std::vector<GpuActivity>> chunks;
  std::vector<GpuActivity> all;
  uint64_t id = 1;
  for (int c = 0; c < 40; c++) {
    std::vector<GpuActivity> chunk;
    for (int i = 0; i < 100; i++) {
      const uint64_t start = 10'000 + c * 1000 + rng() % 2000;  // a little out of order across chunks
      chunk.push_back({.start_ns = start, .end_ns = start + 1 + rng() % 3, .correlation_id = id++, .stream = 1});
    }
    chunks.push_back(chunk);
  }
  std::vector<GpuActivity> quiet;
  for (int i = 0; i < 30; i++)
    quiet.push_back({.start_ns = 5000u + (i % 10) * 7u, .end_ns = 5002u + (i % 3u), .correlation_id = id++, .stream = 9});
  chunks.push_back(quiet);
  GpuActivityBounds bounds;
  for (const auto& chunk : chunks) {
    bounds.activity_start.push_back(std::min_element(chunk.begin(), chunk.end(), [](auto& a, auto& b) {
                                      return a.start_ns < b.start_ns;
                                    })->start_ns);
    bounds.activity_correlation.push_back(chunk.front().correlation_id);
    all.insert(all.end(), chunk.begin(), chunk.end());
  }
  // Each activity's launch, in one chunk read before any activity, but for
  // the quiet stream's, read last.
  std::vector<GpuCorrelation> launches, late;
  for (const GpuActivity& a : all)
    (a.stream == 9 ? late : launches).push_back({.ts_ns = a.correlation_id, .correlation_id = a.correlation_id, .tid = 4});
  bounds.correlation_id = {launches.front().correlation_id, late.front().correlation_id};
  StreamedGpuActivities streamed(bounds);
  streamed.add_correlations(launches);
  for (const auto& chunk : chunks) streamed.add_activities(chunk);
  streamed.add_correlations(late);
  std::vector<TraceGpuActivity> replayed;
  streamed.finish()([&](const TraceGpuActivity& t) { replayed.push_back(t); });
  std::vector<GpuActivity> expected = all;
  std::stable_sort(expected.begin(), expected.end(), gpu_trace_order);
  ASSERT_EQ(replayed.size(), expected.size());
  for (size_t i = 0; i < expected.size(); i++) {
    EXPECT_EQ(replayed[i].activity, expected[i]) << i;
    EXPECT_EQ(replayed[i].launch_seen, 1u) << i;
    EXPECT_EQ(replayed[i].launch_ts_ns, expected[i].correlation_id) << i;
  }
}

// Activities enough to fill several 64 KiB pieces of their streams'
// temporary files: read back whole, in order.
TEST(StreamedChromeTrace, GpuActivitiesSpilledInPiecesReadBackInOrder) {
  Recording recording = random_recording_with_samples(9, 3000);
  std::mt19937 rng(9);
  add_random_gpu(recording, rng, 8000);  // 72 bytes an activity: over 64 KiB a stream
  spread_over_streams(recording);
  EXPECT_EQ(streamed_trace_with_gpu(recording, {}, 100, 2), whole_trace(recording, {}));
}

// Memory levels enough to fill several 64 KiB pieces of their temporary
// file: read back whole, in order.
TEST(StreamedChromeTrace, MemoryLevelsSpilledInPiecesReadBackInOrder) {
  Recording recording = random_recording_with_samples(5, 3000);
  std::mt19937 rng(5);
  add_random_memory(recording, rng, 20'000);  // 24 bytes a level: about 7 pieces
  ring_order(recording.mem_events, rng);
  EXPECT_EQ(streamed_trace_with_records(recording, {}, 100), whole_trace(recording, {}));
}

// Launches enough to fill several 64 KiB pieces of their temporary file:
// read back whole, in order.
TEST(StreamedChromeTrace, LaunchesSpilledInPiecesReadBackInOrder) {
  Recording recording = system_wide_recording(3, 3000);
  const std::vector<CudaLaunch> some = recording.launches;
  recording.launches.clear();
  for (size_t i = 0; recording.launches.size() < 5000; i++) recording.launches.push_back(some[i % some.size()]);
  std::sort(recording.launches.begin(), recording.launches.end(),
            [](const CudaLaunch& a, const CudaLaunch& b) { return a.ts_ns < b.ts_ns; });
  EXPECT_EQ(streamed_trace(recording, {}, 100), whole_trace(recording, {}));
}

// Long enough that each thread's spill is written to its temporary file in
// several pieces and read back across the pieces' boundaries.
TEST(StreamedChromeTrace, SpillsWrittenInPiecesReadBackWhole) {
  Recording recording = random_recording_with_samples(7, 200'000);
  recording.options.with_stack = true;
  std::mt19937 rng(7);
  add_random_entry_stacks(recording, rng, 2);
  const std::string expected = whole_trace(recording, {});
  ASSERT_GT(expected.size(), 10u << 20);  // ~100k calls: over 64 KiB of spill per thread
  EXPECT_EQ(streamed_trace(recording, {}, 4096), expected);
  // And with module calls among the op calls of each spill.
  Recording modules = random_recording_with_samples(7, 200'000);
  add_random_module_stacks(modules, 7, true, /*engine_op=*/4);
  const std::string with_modules = whole_trace(modules, {});
  ASSERT_NE(with_modules.find("\"nn.Module: Net.fc\""), std::string::npos);
  EXPECT_EQ(streamed_trace(modules, {}, 4096), with_modules);
}

// A spill that cannot be written (here: a file size limit, as a full disk
// would) keeps what its file held and everything after in memory.
TEST(StreamedChromeTrace, ASpillThatCannotBeWrittenIsHeld) {
  Recording recording = random_recording_with_samples(8, 200'000);
  const std::string expected = whole_trace(recording, {});
  struct rlimit before {};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &before), 0);
  void (*was)(int) = std::signal(SIGXFSZ, SIG_IGN);  // the write fails with EFBIG instead
  struct rlimit small = before;
  small.rlim_cur = 100 << 10;  // past the first 64 KiB piece, within the second
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  const std::string streamed = streamed_trace(recording, {}, 4096);
  setrlimit(RLIMIT_FSIZE, &before);
  std::signal(SIGXFSZ, was);
  EXPECT_EQ(streamed, expected);
}

TEST(StreamedChromeTrace, DeclinesWhatItCannotWrite) {
  Recording recording = recording_of(ops_of_the_streams(), {});
  recording.process.pid = 4242;
  EXPECT_TRUE(StreamedChromeTrace::streamable(recording, false));
  Recording with_stack = recording;
  with_stack.options.with_stack = true;
  Recording shapes = recording;  // their pairs are held as the calls stream by
  shapes.options.shapes = true;
  Recording memory = recording;  // its levels are put in time order as they come
  memory.options.memory = true;
  Recording launches = recording;  // put aside as they come; with --ops they need their calls
  launches.streamed_launches = 3;
  launches.cuda_runtime.emplace();
  Recording activities = launches;  // joined and ordered as they come; with --ops they need their calls
  activities.gpu_activities.push_back(GpuActivity{});
  with_stack.sample_frames = {"train.py(3): main"};
  EXPECT_TRUE(StreamedChromeTrace::streamable(with_stack, false));
  Recording modules = with_stack;  // module calls are counted as the calls stream by
  modules.sample_frames.push_back("nn.Module: Linear_0");
  EXPECT_TRUE(StreamedChromeTrace::streamable(modules, true));
  EXPECT_TRUE(StreamedChromeTrace::streamable(shapes, true));
  EXPECT_TRUE(StreamedChromeTrace::streamable(launches, false));
  EXPECT_FALSE(StreamedChromeTrace::streamable(launches, true));
  EXPECT_TRUE(StreamedChromeTrace::streamable(memory, true));
  EXPECT_TRUE(StreamedChromeTrace::streamable(activities, false));
  EXPECT_FALSE(StreamedChromeTrace::streamable(activities, true));
  Recording activities_read = recording;  // a first read counts them, keeping none
  activities_read.streamed_gpu_activities = 2;
  EXPECT_TRUE(StreamedChromeTrace::streamable(activities_read, false));
  EXPECT_FALSE(StreamedChromeTrace::streamable(activities_read, true));
}

}  // namespace
}  // namespace gpuprof
