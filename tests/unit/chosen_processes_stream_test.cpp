// ChosenProcessesStream (analyze/chosen_processes_stream.h) against
// select_processes() of the same recording read whole: its inner stream
// gets the selection's events with the selection's indices, and its
// launches, in order, for every choice of processes and chunk size; it
// reads the selection of the head; and it declines what it cannot
// renumber.
#include "analyze/chosen_processes_stream.h"

#include <gtest/gtest.h>

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
  size_t processes;
  std::vector<gp_event> events;
  std::vector<CudaLaunch> launches;
};

TEST(ChosenProcessesStream, HandsOnWhatTheSelectionHolds) {
  for (uint32_t seed = 1; seed <= 10; seed++) {
    const Recording recording = system_wide_recording(seed, 2000);
    const Recording head = streamed_read_of(recording);
    for (const std::set<uint32_t>& chosen :
         {std::set<uint32_t>{10}, std::set<uint32_t>{20}, std::set<uint32_t>{10, 20}, std::set<uint32_t>{30}}) {
      const Recording whole = select_processes(recording, chosen);
      for (size_t chunk : {size_t{1}, size_t{13}, recording.events.size()}) {
        SCOPED_TRACE("seed " + std::to_string(seed) + " chunk " + std::to_string(chunk) + " processes " +
                     std::to_string(chosen.size()) + " first " + std::to_string(*chosen.begin()));
        Handed* handed = nullptr;
        ChosenProcessesStream stream(head, chosen, [&](const Recording& selection) {
          auto inner = std::make_unique<Handed>(selection);
          handed = inner.get();
          return inner;
        });
        ASSERT_TRUE(stream.wants(head));
        EXPECT_EQ(handed->processes, chosen.size());  // the inner stream reads their selection
        feed_in_chunks(stream, recording, chunk, 0);
        EXPECT_EQ(handed->events.size(), whole.events.size());
        EXPECT_TRUE(record_samples::same_events(handed->events, whole.events));
        EXPECT_EQ(handed->launches, whole.launches);
      }
    }
  }
}

TEST(ChosenProcessesStream, DeclinesEntryStacksInputShapesAndGpuActivities) {
  const Recording head = streamed_read_of(system_wide_recording(1, 100));
  EXPECT_TRUE(ChosenProcessesStream::serves(head));
  Recording stacks = head;
  stacks.options.with_stack = true;
  EXPECT_FALSE(ChosenProcessesStream::serves(stacks));
  Recording shapes = head;
  shapes.options.shapes = true;
  EXPECT_FALSE(ChosenProcessesStream::serves(shapes));
  Recording gpu = head;
  gpu.streamed_gpu_activities = 1;
  EXPECT_FALSE(ChosenProcessesStream::serves(gpu));
}

}  // namespace
}  // namespace gpuprof
