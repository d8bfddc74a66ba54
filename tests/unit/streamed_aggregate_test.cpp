// The streamed op table (analyze/streamed_aggregate.h, record/record_stream.h)
// against aggregate() of the same recording read whole: row for row, counter
// for counter, on random event streams that fold same-name children, unwind,
// catch, step, cut and open ranges, fed in chunks of every size; and a
// streaming read of a written file, which keeps nothing per event.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "analyze/aggregator.h"
#include "analyze/streamed_aggregate.h"
#include "probe_events.h"
#include "profile_checks.h"
#include "random_event_streams.h"
#include "record/record_file.h"
#include "record/record_stream.h"
#include "recordings.h"
#include "error_strings.h"

namespace gpuprof {
namespace {

using namespace ::gpuprof::test;

// The streamed Profile of `recording`, its events fed `chunk` at a time.
Profile streamed_profile(const Recording& recording, size_t chunk, bool raw_times) {
  StreamedAggregate streamed(compensation_costs(recording, raw_times), raw_times);
  EXPECT_TRUE(streamed.wants(recording));
  for (size_t at = 0; at < recording.events.size(); at += chunk) {
    const size_t n = std::min(chunk, recording.events.size() - at);
    streamed.on_events(std::span<const gp_event>(recording.events).subspan(at, n), at);
  }
  return std::move(streamed).finish(recording);
}

TEST(StreamedAggregate, EqualsTheWholeAggregateOnRandomStreams) {
  size_t folded_calls = 0;  // the streams must fold, or the test proves little
  for (uint32_t seed = 1; seed <= 60; seed++) {
    Recording recording = recording_of(ops_of_the_streams(), random_events(seed, 3000));
    recording.probe_costs = costs_of_the_streams();
    for (bool raw : {false, true}) {
      const Profile whole = aggregate(recording, AggregateOptions{.raw_times = raw});
      for (size_t chunk : {size_t{1}, size_t{7}, size_t{500}, recording.events.size()}) {
        SCOPED_TRACE("seed " + std::to_string(seed) + " chunk " + std::to_string(chunk) + (raw ? " raw" : ""));
        expect_same_profile(streamed_profile(recording, chunk, raw), whole);
      }
    }
    const Timeline timeline = build_timeline(recording.events);
    uint64_t calls = 0;
    for (const OpRow& row : aggregate(recording).rows) calls += row.calls;
    folded_calls += timeline.calls.size() - calls;
  }
  EXPECT_GT(folded_calls, 1000u);
}

// Grouped by input shape (report --group-by-input-shape), by stack
// (--group-by-stack-n N) and by both: the rows of the whole read, with
// each entry's ENTRY_SHAPES and ENTRY_STACKS pairs handed over chunks
// after its events, an op that records nothing per call ("[[], []]"),
// calls whose shapes were not read ("?"), and calls without a stack.
TEST(StreamedAggregate, GroupedByInputShapeOrStackEqualsTheWholeAggregate) {
  size_t shaped_rows = 0, stacked_rows = 0;
  for (uint32_t seed = 1; seed <= 30; seed++) {
    Recording recording = recording_of(ops_of_the_streams(), random_events(seed, 3000));
    recording.probe_costs = costs_of_the_streams();
    recording.ops[3].arg_count = 2;  // aten::mm, here without tensors: all its calls "[[], []]"
    recording.ops[3].tensor_args = 0;
    recording.options.with_stack = true;
    recording.sample_frames = {"train.py(9): <module>", "train.py(5): step", "model.py(3): forward",
                               "optim.py(7): step"};
    recording.sample_stacks = {{0, 1, 2}, {0, 1, 3}, {0}};
    std::mt19937 rng(seed);
    add_random_entry_shapes(recording, rng);
    add_random_entry_stacks(recording, rng, 3);
    for (const TableGrouping& grouping : {TableGrouping{.by_input_shape = true}, TableGrouping{.by_stack_n = 1},
                                          TableGrouping{.by_input_shape = true, .by_stack_n = 2}}) {
      const Profile whole = aggregate(recording, AggregateOptions{.group_by_input_shape = grouping.by_input_shape,
                                                                  .group_by_stack_n = grouping.by_stack_n});
      for (size_t chunk : {size_t{1}, size_t{7}, size_t{500}})
        for (size_t delay : {size_t{0}, size_t{3}}) {
          SCOPED_TRACE("seed " + std::to_string(seed) + " chunk " + std::to_string(chunk) + " delay " +
                       std::to_string(delay) + " shapes " + std::to_string(grouping.by_input_shape) + " stack " +
                       std::to_string(grouping.by_stack_n));
          TableGrouping with_ends = grouping;
          with_ends.last_entry_shape = last_index_of(recording.entry_shapes);
          with_ends.last_entry_stack = last_index_of(recording.entry_stacks);
          StreamedAggregate streamed(compensation_costs(recording, false), false, with_ends);
          ASSERT_TRUE(streamed.wants(recording));
          feed_in_chunks(streamed, recording, chunk, delay);
          expect_same_profile(std::move(streamed).finish(recording), whole);
        }
      for (const OpRow& row : whole.rows) {
        shaped_rows += row.input_shapes == "[[8, 3], [3]]";
        stacked_rows += row.stack == std::vector<std::string>{"optim.py(7): step"};
      }
    }
  }
  // Or the comparison proves little.
  EXPECT_GT(shaped_rows, 30u);
  EXPECT_GT(stacked_rows, 30u);
}

TEST(StreamedAggregate, FoldsAChainOfSameNameCallsIntoItsOutermost) {
  // aten::div_ (Scalar) -> aten::div_ -> aten::div_ (Scalar) -> aten::mm,
  // then a second outer call with two children (no folding).
  Recording recording = recording_of(ops_of_the_streams(),
                                     {op_entry(0, 1000, 4), op_entry(10, 900, 2), op_entry(20, 800, 4),
                                      op_entry(30, 700, 3), op_exit(40, 700, 3), op_exit(50, 800, 4),
                                      op_exit(60, 900, 2), op_exit(100, 1000, 4), op_entry(200, 1000, 2),
                                      op_entry(210, 900, 2), op_exit(220, 900, 2), op_entry(230, 900, 2),
                                      op_exit(250, 900, 2), op_exit(300, 1000, 2)});
  const Profile streamed = streamed_profile(recording, 3, true);
  expect_same_profile(streamed, aggregate(recording, AggregateOptions{.raw_times = true}));
  ASSERT_EQ(streamed.rows.size(), 2u);
  EXPECT_EQ(streamed.rows[0].name, "aten::div_");
  EXPECT_EQ(streamed.rows[0].calls, 4u);  // the chain's outermost, the second outer call and its two
  EXPECT_EQ(streamed.rows[0].cpu_total_ns, 100u + 100u + 10u + 20u);
  EXPECT_EQ(streamed.rows[0].self_cpu_ns, 90u + 70u + 10u + 20u);
  EXPECT_EQ(streamed.rows[1].name, "aten::mm");
  EXPECT_EQ(streamed.rows[1].calls, 1u);
}

TEST(StreamedAggregate, DeclinesMemoryRecordings) {
  Recording recording = recording_of(ops_of_the_streams(), {});
  recording.options.memory = true;
  StreamedAggregate streamed(nullptr, false);
  EXPECT_FALSE(streamed.wants(recording));
}

ProcessInfo process_4242() {
  ProcessInfo process;
  process.pid = 4242;
  process.comm = "python3";
  return process;
}

// A file written by RecordWriter, read streamed: the same Recording as read
// whole but for what it hands on, and the same Profile.
// Grouped by stack, with each chunk's pairs a chunk late: after every chunk
// exactly the calls of that chunk wait, those of the chunk before having
// gone to their rows (the waiting list is bounded by how far pairs lag,
// not by the events).
TEST(StreamedAggregate, OnlyTheCallsWhosePairsHaveNotComeWait) {
  constexpr size_t kChunks = 40, kCallsPerChunk = 50;
  std::vector<gp_event> events;
  for (size_t i = 0; i < kChunks * kCallsPerChunk; i++) {
    events.push_back(op_entry(1000 + 10 * i, 0x1000, 0, 7));
    events.push_back(op_exit(1005 + 10 * i, 0x1000, 0, 7));
  }
  Recording recording = recording_of({op("aten::add")}, events);
  recording.options.with_stack = true;
  recording.sample_frames = {"train.py(9): <module>"};
  recording.sample_stacks = {{0}};
  const uint64_t last_entry = events.size() - 2;
  StreamedAggregate streamed(nullptr, /*raw_times=*/true, TableGrouping{.by_stack_n = 1, .last_entry_stack = last_entry});
  ASSERT_TRUE(streamed.wants(recording));
  const size_t chunk = 2 * kCallsPerChunk;
  for (size_t k = 0; k < kChunks; k++) {
    if (k > 0)
      for (size_t i = (k - 1) * chunk; i < k * chunk; i += 2) streamed.on_entry_stack(i, 0);
    streamed.on_events(std::span<const gp_event>(events).subspan(k * chunk, chunk), k * chunk);
    ASSERT_EQ(streamed.calls_waiting(), kCallsPerChunk) << "after chunk " << k;
  }
  for (size_t i = (kChunks - 1) * chunk; i < kChunks * chunk; i += 2) streamed.on_entry_stack(i, 0);
  const Profile profile = std::move(streamed).finish(recording);
  ASSERT_EQ(profile.rows.size(), 1u);
  EXPECT_EQ(profile.rows[0].calls, kChunks * kCallsPerChunk);
  EXPECT_EQ(profile.rows[0].stack, std::vector<std::string>{"train.py(9): <module>"});
}

TEST(RecordStream, StreamedReadKeepsNothingPerEvent) {
  char path[] = "/tmp/gpuprof-stream-test-XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ::close(fd);
  const std::vector<gp_event> events = random_events(7, 20000);
  {
    std::string error;
    auto writer = noting_error(RecordWriter::create(path), &error);
    ASSERT_TRUE(writer) << error;
    RecordOptions options;
    options.with_stack = true;
    ASSERT_TRUE(succeeded(writer->begin(process_4242(), ClockInfo{}, ops_of_the_streams(), options), &error))
        << error;
    ASSERT_TRUE(succeeded(writer->set_probe_costs(costs_of_the_streams()), &error)) << error;
    ASSERT_TRUE(succeeded(writer->append_events(events.data(), events.size()), &error)) << error;
    ASSERT_TRUE(succeeded(writer->add_sample_frame("train.py(3): main"), &error)) << error;
    ASSERT_TRUE(succeeded(writer->add_sample_stack({0}), &error)) << error;
    uint64_t stacked = 0;
    for (uint64_t i = 0; i < events.size(); i++)
      if (events[i].kind == GP_EV_OP_ENTRY && i % 3 == 0) {
        ASSERT_TRUE(succeeded(writer->append_entry_stack(i, 0), &error)) << error;
        ++stacked;
      }
    ASSERT_TRUE(succeeded(writer->finish(RecordStats{}, 0), &error)) << error;
    ASSERT_GT(stacked, 1000u);
  }
  std::string error;
  const auto whole = noting_error(read_recording(path), &error);
  ASSERT_TRUE(whole) << error;
  ASSERT_TRUE(whole->probe_costs);
  StreamedAggregate streamed(compensation_costs(*whole, false), false);
  bool whole_needed = true;
  const auto read = noting_error(read_recording_streamed(path, CorruptChunks::refuse, streamed, &whole_needed), &error);
  ::unlink(path);
  ASSERT_TRUE(read) << error;
  EXPECT_FALSE(whole_needed);
  EXPECT_TRUE(read->events.empty());
  EXPECT_EQ(read->streamed_events, whole->events.size());
  EXPECT_EQ(op_events_read(*read), events.size());
  EXPECT_TRUE(read->entry_stacks.empty());
  ASSERT_EQ(read->streamed_entry_stacks.size(), 1u);
  EXPECT_EQ(read->streamed_entry_stacks[0], whole->entry_stacks.size());
  EXPECT_EQ(read->ops, whole->ops);
  EXPECT_EQ(read->probe_costs, whole->probe_costs);
  EXPECT_TRUE(read->complete);
  expect_same_profile(std::move(streamed).finish(*read), aggregate(*whole));
}

}  // namespace
}  // namespace gpuprof
