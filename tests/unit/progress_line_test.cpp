// The progress line's text (collect/progress_line.h) and its fit to the
// terminal (base/status_line.h).
#include <gtest/gtest.h>

#include "base/status_line.h"
#include "collect/progress_line.h"

namespace gpuprof {
namespace {

constexpr uint64_t kStart = 5'000'000'000;

ProgressCounters at(double seconds) {
  ProgressCounters c;
  c.now_ns = kStart + static_cast<uint64_t>(seconds * 1e9);
  return c;
}

TEST(ProgressLine, OpsOnly) {
  ProgressCounters before = at(2);
  before.op_calls = 1000;
  ProgressCounters now = at(3);
  now.op_calls = 49210;
  now.events = 1204331;
  now.bytes_written = 14'240'000;
  now.lost = 7;
  EXPECT_EQ(format_progress_line(now, before, kStart),
            "gpuprof: 3s, 48210 ops/s, 1204331 events, 14.2 MB, 7 lost");
}

TEST(ProgressLine, SamplesAndGpuRecordsWhenRecorded) {
  ProgressCounters before = at(10);
  ProgressCounters now = at(12);
  now.op_calls = 300;  // 150 a second over the two seconds since the last line
  now.events = 600;
  now.samples = 1188;
  now.gpu_records = 3402;
  now.bytes_written = 50'000;
  EXPECT_EQ(format_progress_line(now, before, kStart),
            "gpuprof: 12s, 150 ops/s, 600 events, 1188 samples, 3402 GPU records, 0.1 MB, 0 lost");
  now.samples = 0;  // recorded but none yet: still shown
  now.gpu_records.reset();
  EXPECT_EQ(format_progress_line(now, before, kStart),
            "gpuprof: 12s, 150 ops/s, 600 events, 0 samples, 0.1 MB, 0 lost");
}

TEST(ProgressLine, NoTimeElapsedIsZeroRate) {
  ProgressCounters now = at(0);
  now.op_calls = 10;
  EXPECT_EQ(format_progress_line(now, now, kStart), "gpuprof: 0s, 0 ops/s, 0 events, 0.0 MB, 0 lost");
}

TEST(ProgressLine, CutToTheTerminalWidthLeavingTheLastColumn) {
  EXPECT_EQ(fit_to_width("gpuprof: 3s, 10 ops/s", 80), "gpuprof: 3s, 10 ops/s");
  EXPECT_EQ(fit_to_width("gpuprof: 3s, 10 ops/s", 12), "gpuprof: 3s");
  EXPECT_EQ(fit_to_width("gpuprof: 3s, 10 ops/s", 22), "gpuprof: 3s, 10 ops/s");
  EXPECT_EQ(fit_to_width("gpuprof: 3s, 10 ops/s", 21), "gpuprof: 3s, 10 ops/");
  EXPECT_EQ(fit_to_width("abc", 1), "");
  EXPECT_EQ(fit_to_width("abc", 0), "");
}

TEST(ProgressLine, InertWhenNotWanted) {
  RecordProgress progress(false, kStart);
  EXPECT_FALSE(progress.active());
  progress.tick(at(5));  // draws nothing, touches no stream
  progress.last(at(6));
}

}  // namespace
}  // namespace gpuprof
