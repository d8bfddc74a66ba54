// ChosenProcessesStream (analyze/chosen_processes_stream.h) against
// select_processes() of the same recording read whole: its inner stream
// gets the selection's events with the selection's indices, and its
// launches, in order, for every choice of processes and chunk size, and
// their ENTRY_STACKS, ENTRY_SHAPES and BACKWARD_STACKS pairs renumbered
// alike, each before its event, however late the file has them; it reads
// the selection of the head; and it declines GPU activities.
#include "analyze/chosen_processes_stream.h"

#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "analyze/process_filter.h"
#include "random_event_streams.h"
#include "record_samples.h"

namespace gpuprof {
namespace {

using namespace ::gpuprof::test;

// What an inner stream was handed.
struct Handed : RecordStream {
  explicit Handed(const Recording& selection) : processes(selection.processes.size()) {}
  bool wants(const Recording&) override { return true; }
  void on_events(std::span<const gp_event> chunk, uint64_t first) override {
    EXPECT_EQ(first, events.size());  // numbered from 0 among the chosen, no gap
    events.insert(events.end(), chunk.begin(), chunk.end());
  }
  bool on_launches(std::span<const CudaLaunch> chunk) override {
    launches.insert(launches.end(), chunk.begin(), chunk.end());
    return true;
  }
  // Each pair before its event: the inner stream is made with no last pairs.
  void on_entry_stack(uint64_t event_index, uint32_t stack_id) override {
    EXPECT_GE(event_index, events.size());
    entry_stacks.push_back({event_index, stack_id});
  }
  void on_entry_shape(uint64_t event_index, uint32_t shape_id) override {
    EXPECT_GE(event_index, events.size());
    entry_shapes.push_back({event_index, shape_id});
  }
  void on_backward_stack(uint64_t event_index, uint32_t stack_id) override {
    EXPECT_GE(event_index, events.size());
    backward_stacks.push_back({event_index, stack_id});
  }
  size_t processes;
  std::vector<gp_event> events;
  std::vector<CudaLaunch> launches;
  std::vector<EntryStack> entry_stacks, backward_stacks;
  std::vector<EntryShapes> entry_shapes;
};

// The stream of `chosen`, its inner Handed in *handed.
std::unique_ptr<ChosenProcessesStream> chosen_stream(const Recording& head, const std::set<uint32_t>& chosen,
                                                     const LastPairs& last_pairs, Handed*& handed) {
  return std::make_unique<ChosenProcessesStream>(head, chosen, last_pairs,
                                                 [&](const Recording& selection, const LastPairs& pairs) {
                                                   EXPECT_FALSE(pairs.entry_stack || pairs.entry_shape ||
                                                                pairs.backward_stack);
                                                   auto inner = std::make_unique<Handed>(selection);
                                                   handed = inner.get();
                                                   return inner;
                                                 });
}

const std::set<uint32_t> kChoices[] = {{10}, {20}, {10, 20}, {30}};

TEST(ChosenProcessesStream, HandsOnWhatTheSelectionHolds) {
  for (uint32_t seed = 1; seed <= 10; seed++) {
    const Recording recording = system_wide_recording(seed, 2000);
    const Recording head = streamed_read_of(recording);
    for (const std::set<uint32_t>& chosen : kChoices) {
      const Recording whole = select_processes(recording, chosen);
      for (size_t chunk : {size_t{1}, size_t{13}, recording.events.size()}) {
        SCOPED_TRACE("seed " + std::to_string(seed) + " chunk " + std::to_string(chunk) + " processes " +
                     std::to_string(chosen.size()) + " first " + std::to_string(*chosen.begin()));
        Handed* handed = nullptr;
        auto stream = chosen_stream(head, chosen, LastPairs{}, handed);
        ASSERT_TRUE(stream->wants(head));
        EXPECT_EQ(handed->processes, chosen.size());  // the inner stream reads their selection
        feed_in_chunks(*stream, recording, chunk, 0);
        EXPECT_EQ(handed->events.size(), whole.events.size());
        EXPECT_TRUE(record_samples::same_events(handed->events, whole.events));
        EXPECT_EQ(handed->launches, whole.launches);
      }
    }
  }
}

// Python stacks with module frames and backward links (threads 10 and 12:
// processes 10 and 20) and input shapes, the pairs chunks after their
// events or not: the inner stream gets the selection's, each before its
// event, and every event as soon as its pairs have come (not at the end).
TEST(ChosenProcessesStream, RenumbersThePairsAndHandsEachBeforeItsEvent) {
  for (uint32_t seed = 1; seed <= 6; seed++) {
    Recording recording = system_wide_recording(seed, 2000);
    add_random_module_stacks(recording, seed, false, /*engine_op=*/4);
    std::mt19937 rng(seed);
    add_random_entry_shapes(recording, rng);
    ASSERT_FALSE(recording.entry_stacks.empty() || recording.backward_stacks.empty() ||
                 recording.entry_shapes.empty());
    const Recording head = streamed_read_of(recording);
    const LastPairs last{.entry_stack = last_index_of(recording.entry_stacks),
                         .entry_shape = last_index_of(recording.entry_shapes),
                         .backward_stack = last_index_of(recording.backward_stacks)};
    for (const std::set<uint32_t>& chosen : kChoices) {
      const Recording whole = select_processes(recording, chosen);
      for (size_t chunk : {size_t{1}, size_t{13}, recording.events.size()})
        for (size_t pair_delay : {size_t{0}, size_t{3}}) {
          SCOPED_TRACE("seed " + std::to_string(seed) + " chunk " + std::to_string(chunk) + " delay " +
                       std::to_string(pair_delay) + " first " + std::to_string(*chosen.begin()));
          Handed* handed = nullptr;
          auto stream = chosen_stream(head, chosen, last, handed);
          ASSERT_TRUE(stream->wants(head));
          feed_in_chunks(*stream, recording, chunk, pair_delay);
          // Every pair came, so no event waits for the end.
          EXPECT_EQ(handed->events.size(), whole.events.size());
          stream->finished_inner();
          EXPECT_TRUE(record_samples::same_events(handed->events, whole.events));
          EXPECT_EQ(handed->entry_stacks, whole.entry_stacks);
          EXPECT_EQ(handed->entry_shapes, whole.entry_shapes);
          EXPECT_EQ(handed->backward_stacks, whole.backward_stacks);
        }
    }
  }
}

// A file whose last pair the second read never meets (it was damaged in
// between): the events that wait for it are handed on once the read is done.
TEST(ChosenProcessesStream, HandsWhatStillWaitsWhenTheReadIsDone) {
  Recording recording = system_wide_recording(3, 500);
  std::mt19937 rng(3);
  add_random_entry_shapes(recording, rng);
  const Recording head = streamed_read_of(recording);
  const Recording whole = select_processes(recording, {10});
  Handed* handed = nullptr;
  auto stream = chosen_stream(head, {10}, LastPairs{.entry_shape = recording.events.size() + 5}, handed);
  ASSERT_TRUE(stream->wants(head));
  feed_in_chunks(*stream, recording, 7, 0);
  EXPECT_LT(handed->events.size(), whole.events.size());
  stream->finished_inner();
  EXPECT_TRUE(record_samples::same_events(handed->events, whole.events));
  EXPECT_EQ(handed->entry_shapes, whole.entry_shapes);
}

TEST(ChosenProcessesStream, DeclinesGpuActivitiesOnly) {
  const Recording head = streamed_read_of(system_wide_recording(1, 100));
  EXPECT_TRUE(ChosenProcessesStream::serves(head));
  Recording stacks = head;
  stacks.options.with_stack = true;
  stacks.options.shapes = true;
  EXPECT_TRUE(ChosenProcessesStream::serves(stacks));
  Recording gpu = head;
  gpu.streamed_gpu_activities = 1;
  EXPECT_FALSE(ChosenProcessesStream::serves(gpu));
}

}  // namespace
}  // namespace gpuprof
