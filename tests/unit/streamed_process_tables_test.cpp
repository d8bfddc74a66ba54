// The streamed per-process tables of a system-wide recording
// (analyze/streamed_process_tables.h) against process_tables() of the same
// recording read whole: the activity of every process and the Profile of
// every process that ran ops, on random event streams of two processes (one
// first met after cuts), fed in chunks of every size; the tables --pid
// keeps; and a streaming read of a written file whose THREAD_PROCESSES come
// after the events and launches they place.
#include <gtest/gtest.h>
#include <unistd.h>

#include <random>
#include <set>
#include <string>
#include <vector>

#include "analyze/aggregator.h"
#include "analyze/process_tables.h"
#include "analyze/streamed_process_tables.h"
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

ProcessTables streamed_tables(const Recording& recording, size_t chunk, bool raw_times, int by_stack_n = 0,
                              size_t pair_delay = 0) {
  const Recording head = streamed_read_of(recording);
  StreamedProcessTables streamed(compensation_costs(recording, raw_times), raw_times,
                                 TableGrouping{.by_stack_n = by_stack_n,
                                               .last_entry_stack = last_index_of(recording.entry_stacks)});
  EXPECT_TRUE(streamed.wants(head));
  feed_in_chunks(streamed, recording, chunk, pair_delay);  // its launches too
  return std::move(streamed).finish(head);
}

void expect_same_tables(const ProcessTables& streamed, const ProcessTables& whole) {
  ASSERT_EQ(streamed.activity.size(), whole.activity.size());
  for (size_t i = 0; i < whole.activity.size(); i++) {
    SCOPED_TRACE("process " + std::to_string(whole.activity[i].first));
    EXPECT_EQ(streamed.activity[i].first, whole.activity[i].first);
    EXPECT_EQ(streamed.activity[i].second.events, whole.activity[i].second.events);
    EXPECT_EQ(streamed.activity[i].second.samples, whole.activity[i].second.samples);
    EXPECT_EQ(streamed.activity[i].second.launches, whole.activity[i].second.launches);
  }
  ASSERT_EQ(streamed.profiles.size(), whole.profiles.size());
  for (const auto& [pid, profile] : whole.profiles) {
    SCOPED_TRACE("profile of " + std::to_string(pid));
    ASSERT_TRUE(streamed.profiles.count(pid));
    expect_same_profile(streamed.profiles.at(pid), profile);
  }
}

TEST(StreamedProcessTables, EqualTheWholeTablesOnRandomStreams) {
  uint64_t cut_calls = 0, late_rows = 0;  // the streams must cut calls and reach the late process
  for (uint32_t seed = 1; seed <= 30; seed++) {
    const Recording recording = system_wide_recording(seed, 3000);
    for (bool raw : {false, true}) {
      const ProcessTables whole = process_tables(recording, AggregateOptions{.raw_times = raw});
      ASSERT_EQ(whole.profiles.size(), 2u);
      ASSERT_EQ(whole.activity.size(), 4u);  // 10, 20, 30 and 40 (launches only)
      EXPECT_GT(whole.activity[3].second.launches, 0u);
      cut_calls += whole.profiles.at(10).calls_cut + whole.profiles.at(20).calls_cut;
      EXPECT_GE(whole.profiles.at(20).events_after_cut, 1u);
      late_rows += whole.profiles.at(20).rows.size();
      for (size_t chunk : {size_t{1}, size_t{7}, size_t{500}, recording.events.size()}) {
        SCOPED_TRACE("seed " + std::to_string(seed) + " chunk " + std::to_string(chunk) + (raw ? " raw" : ""));
        expect_same_tables(streamed_tables(recording, chunk, raw), whole);
      }
    }
  }
  EXPECT_GT(cut_calls, 100u);
  EXPECT_GT(late_rows, 100u);
}

// record -a --with-stack, --group-by-stack-n: each process's rows per op
// and Python stack, its entry stacks' pairs chunks after their events or
// not: the whole read's tables.
TEST(StreamedProcessTables, GroupedByStackEqualTheWholeTables) {
  size_t stacked_rows = 0;  // rows under a Python stack: the grouping must see the pairs
  for (uint32_t seed = 1; seed <= 8; seed++) {
    Recording recording = system_wide_recording(seed, 3000);
    add_random_module_stacks(recording, seed, false, /*engine_op=*/4);
    for (int depth : {1, 3}) {
      const ProcessTables whole =
          process_tables(recording, AggregateOptions{.group_by_stack_n = depth, .raw_times = false});
      for (const auto& [pid, profile] : whole.profiles)
        for (const OpRow& row : profile.rows) stacked_rows += !row.stack.empty();
      for (size_t chunk : {size_t{1}, size_t{7}, size_t{500}})
        for (size_t delay : {size_t{0}, size_t{3}}) {
          SCOPED_TRACE("seed " + std::to_string(seed) + " depth " + std::to_string(depth) + " chunk " +
                       std::to_string(chunk) + " delay " + std::to_string(delay));
          expect_same_tables(streamed_tables(recording, chunk, false, depth, delay), whole);
        }
    }
  }
  EXPECT_GT(stacked_rows, 100u);
}

// --pid 20, --comm python3: the streamed tables kept to those processes are
// the whole tables of the selected recording.
TEST(StreamedProcessTables, KeptProcessesEqualTheSelectedRecordingsTables) {
  const Recording recording = system_wide_recording(11, 3000);
  for (const std::set<uint32_t>& chosen : {std::set<uint32_t>{20}, std::set<uint32_t>{10, 20}, std::set<uint32_t>{30}}) {
    ProcessTables streamed = streamed_tables(recording, 64, false);
    keep_processes(streamed, chosen);
    const ProcessTables whole = process_tables(select_processes(recording, chosen), AggregateOptions{});
    EXPECT_EQ(whole.activity.size(), chosen.size());
    expect_same_tables(streamed, whole);
  }
}

TEST(StreamedProcessTables, DeclinesMemoryRecordings) {
  Recording recording = system_wide_recording(2, 100);
  recording.options.memory = true;
  StreamedProcessTables streamed(nullptr, false);
  EXPECT_FALSE(streamed.wants(recording));
}

// `planted` as record -a writes it, but for THREAD_PROCESSES: last, after
// the events and launches of the threads it places.
void write_system_wide_file(const std::string& path, const Recording& planted) {
  std::string error;
  auto writer = noting_error(RecordWriter::create(path), &error);
  ASSERT_TRUE(writer) << error;
  RecordOptions options;
  options.sample_hz = 99;
  ASSERT_TRUE(succeeded(writer->begin(planted.process, ClockInfo{}, planted.ops, options), &error)) << error;
  ASSERT_TRUE(succeeded(writer->set_probe_costs(*planted.probe_costs), &error)) << error;
  ASSERT_TRUE(succeeded(writer->add_processes(planted.processes), &error)) << error;
  ASSERT_TRUE(succeeded(writer->append_events(planted.events.data(), planted.events.size()), &error)) << error;
  ASSERT_TRUE(succeeded(writer->add_launch_name("kernel"), &error)) << error;
  std::vector<CudaLaunch> launches = planted.launches;
  for (CudaLaunch& l : launches) l.name_id = 0;
  ASSERT_TRUE(succeeded(writer->append_launches(launches.data(), launches.size()), &error)) << error;
  ASSERT_TRUE(succeeded(writer->flush(), &error)) << error;
  ASSERT_TRUE(succeeded(writer->add_thread_processes(planted.thread_processes), &error)) << error;
  ASSERT_TRUE(succeeded(writer->finish(RecordStats{}, 0), &error)) << error;
}

// The file read streamed: the tables of the file read whole, launches
// charged to their processes though the reader knew their threads' only
// after.
TEST(StreamedProcessTables, StreamedReadOfAFileEqualsTheWholeRead) {
  const Recording planted = system_wide_recording(5, 20000);
  std::string path = ::testing::TempDir() + "gpuprof-process-tables-XXXXXX";
  ::close(::mkstemp(path.data()));
  ASSERT_NO_FATAL_FAILURE(write_system_wide_file(path, planted));
  StreamedProcessTables streamed(&*planted.probe_costs, false);
  bool whole_needed = true;
  std::string error;
  const auto read = noting_error(read_recording_streamed(path, CorruptChunks::refuse, streamed, &whole_needed), &error);
  const auto whole = noting_error(read_recording(path), &error);
  ::unlink(path.c_str());
  ASSERT_TRUE(read.has_value() && whole.has_value()) << error;
  EXPECT_FALSE(whole_needed);
  EXPECT_EQ(whole->launches.size(), planted.launches.size());
  EXPECT_EQ(read->events.size() + read->launches.size(), 0u);  // none kept
  EXPECT_EQ(read->streamed_launches, planted.launches.size());
  const ProcessTables tables = std::move(streamed).finish(*read);
  expect_same_tables(tables, process_tables(*whole, AggregateOptions{}));
  uint64_t launches = 0;
  for (const auto& [pid, activity] : tables.activity) launches += activity.launches;
  EXPECT_GT(launches, 100u);  // every launch but those of the thread no process holds
}

}  // namespace
}  // namespace gpuprof
