// report's streamed GPU reads of a real file (cli/report_reads.h), against
// the whole read of the same file: --launches of launches the probes could
// not name (a read of the launches and GPU records names them from CUPTI
// before the events stream), and --gpu (the first read keeps the GPU
// records, the second places the host waits in the streamed calls). The
// file is written by RecordWriter in a recorder's order: random events (3
// threads, stacks on some entries), the launches and correlations stamped
// up to each chunk's last event after it, the GPU activities a chunk
// later, flushed chunk by chunk.
#include "cli/report_reads.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <random>
#include <string>
#include <variant>
#include <vector>

#include "analyze/gpu_time.h"
#include "error_strings.h"
#include "output/launch_table.h"
#include "random_event_streams.h"
#include "random_join_records.h"
#include "record/record_file.h"
#include "test_files.h"

namespace gpuprof {
namespace {

using namespace ::gpuprof::test;

// Launches named by their probes, and launches the probes could not name
// ("[unknown kernel 0x4242]"), of each API; CUPTI's correlations (mostly the
// runtime's) and activities, the GPU mostly waiting for the host.
Recording gpu_recording(uint32_t seed) {
  Recording r = random_recording(seed, 12000);
  std::mt19937 rng(seed);
  r.options.with_stack = true;
  r.sample_frames = {"train.py(1): <module>", "train.py(7): step"};
  r.sample_stacks = {{0}, {0, 1}};
  add_random_entry_stacks(r, rng, 2);
  r.cuda_runtime = CudaRuntimeInfo{.libcudart_path = "/usr/lib/libcudart.so.12", .entry_points = 5};
  for (int i = 0; i < 3000; i++) {
    const Moment m = random_moment(r, rng);
    r.launches.push_back({.ts_ns = m.ts_ns, .tid = m.tid, .api = static_cast<uint16_t>(GP_LAUNCH_KERNEL + rng() % 3),
                          .name_id = static_cast<uint32_t>(rng() % 3)});
  }
  std::stable_sort(r.launches.begin(), r.launches.end(),
                   [](const CudaLaunch& a, const CudaLaunch& b) { return a.ts_ns < b.ts_ns; });
  add_random_gpu(r, rng, 2000);
  r.launch_names = {"k::scale", "k::reduce", "[unknown kernel 0x4242]", "kernel_a", "kernel_b", "kernel_c"};
  for (GpuActivity& a : r.gpu_activities) a.name_id += 3;
  for (GpuCorrelation& c : r.gpu_correlations) c.domain = rng() % 5 ? 2 : 1;
  std::unordered_map<uint64_t, uint64_t> launched_at;
  for (const GpuCorrelation& c : r.gpu_correlations) launched_at[c.correlation_id] = c.ts_ns;
  for (GpuActivity& a : r.gpu_activities)
    if (auto launch = launched_at.find(a.correlation_id); launch != launched_at.end()) {
      a.start_ns = launch->second + rng() % 50;
      a.end_ns = a.start_ns + 1 + rng() % 100;
    }
  return r;
}

// Each write step must succeed.
void must(Result<void> step) {
  std::string error;
  EXPECT_TRUE(succeeded(std::move(step), &error)) << error;
}

void write(const Recording& r, const std::string& path) {
  std::string error;
  auto writer = noting_error(RecordWriter::create(path), &error);
  ASSERT_TRUE(writer) << error;
  must(writer->begin(r.process, ClockInfo{}, r.ops, r.options));
  for (const std::string& name : r.launch_names) must(writer->add_launch_name(name));
  for (const std::string& frame : r.sample_frames) must(writer->add_sample_frame(frame));
  for (const std::vector<uint32_t>& stack : r.sample_stacks) must(writer->add_sample_stack(stack));
  size_t launches = 0, correlations = 0, activities = 0, stacks = 0, correlations_before = 0;
  // Records [from, until) of `records` whose `take` holds, from `from` on.
  auto until = [](const auto& records, size_t from, auto take) {
    while (from < records.size() && take(records[from])) from++;
    return from;
  };
  constexpr size_t kChunk = 1500;
  for (size_t at = 0; at < r.events.size(); at += kChunk) {
    const size_t n = std::min(kChunk, r.events.size() - at);
    must(writer->append_events(&r.events[at], n));
    for (; stacks < r.entry_stacks.size() && r.entry_stacks[stacks].event_index < at + n; stacks++)
      must(writer->append_entry_stack(r.entry_stacks[stacks].event_index, r.entry_stacks[stacks].stack_id));
    const uint64_t last = r.events[at + n - 1].ts_ns;
    size_t end = until(r.launches, launches, [&](const CudaLaunch& l) { return l.ts_ns <= last; });
    must(writer->append_launches(r.launches.data() + launches, end - launches));
    launches = end;
    // The activities of the correlations given a chunk before (and of
    // launches never seen).
    const uint64_t below = correlations_before < r.gpu_correlations.size()
                               ? r.gpu_correlations[correlations_before].correlation_id
                               : UINT64_MAX;
    end = until(r.gpu_activities, activities,
                [&](const GpuActivity& a) { return a.correlation_id < below || a.correlation_id >= 1'000'000; });
    must(writer->append_gpu_activities(r.gpu_activities.data() + activities, end - activities));
    activities = end;
    correlations_before = correlations;
    end = until(r.gpu_correlations, correlations, [&](const GpuCorrelation& c) { return c.ts_ns <= last; });
    must(writer->append_gpu_correlations(r.gpu_correlations.data() + correlations, end - correlations));
    correlations = end;
    must(writer->flush());
  }
  must(writer->append_launches(r.launches.data() + launches, r.launches.size() - launches));
  must(writer->append_gpu_correlations(r.gpu_correlations.data() + correlations, r.gpu_correlations.size() - correlations));
  must(writer->append_gpu_activities(r.gpu_activities.data() + activities, r.gpu_activities.size() - activities));
  must(writer->set_cuda_runtime(*r.cuda_runtime));
  must(writer->set_cupti_shim(*r.cupti_shim));
  must(writer->finish(RecordStats{}, 0));
}

class ReportReads : public ::testing::Test {
 protected:
  TempFile file_{"report-reads"};
  const std::string& path_ = file_.path();
};

TEST_F(ReportReads, LaunchesNamedFromCuptiStreamAsTheWholeReadCountsThem) {
  uint64_t named = 0;
  for (uint32_t seed = 1; seed <= 3; seed++) {
    write(gpu_recording(seed), path_);
    std::string error;
    const auto whole = noting_error(read_recording(path_), &error);
    ASSERT_TRUE(whole) << error;
    const LaunchSummary expected = summarize_launches(*whole);
    named += expected.named_by_cupti;
    auto read = cli::read_for_launches(path_, /*strict=*/true);
    ASSERT_TRUE(std::holds_alternative<cli::StreamedLaunches>(read)) << "seed " << seed << ": read whole";
    const LaunchSummary& streamed = std::get<cli::StreamedLaunches>(read).summary;
    EXPECT_EQ(streamed.rows, expected.rows) << "seed " << seed;
    EXPECT_EQ(streamed.launches, expected.launches);
    EXPECT_EQ(streamed.outside_ops, expected.outside_ops);
    EXPECT_EQ(streamed.named_by_cupti, expected.named_by_cupti);
    EXPECT_EQ(format_launch_table(streamed, -1), format_launch_table(expected, -1));
  }
  EXPECT_GT(named, 300u);  // or this proves little
}

TEST_F(ReportReads, GpuTimeStreamsAsTheWholeReadBreaksItDown) {
  uint64_t charged = 0;
  for (uint32_t seed = 1; seed <= 3; seed++) {
    write(gpu_recording(seed), path_);
    std::string error;
    const auto whole = noting_error(read_recording(path_), &error);
    ASSERT_TRUE(whole) << error;
    const std::vector<GpuDeviceTime> expected = gpu_time_by_device(*whole);
    auto read = cli::read_for_gpu_time(path_, /*strict=*/true);
    ASSERT_TRUE(std::holds_alternative<cli::StreamedGpuTime>(read)) << "seed " << seed << ": read whole";
    const cli::StreamedGpuTime& streamed = std::get<cli::StreamedGpuTime>(read);
    EXPECT_TRUE(streamed.recording.events.empty());
    EXPECT_TRUE(streamed.recording.gpu_activities.empty());
    EXPECT_EQ(streamed.devices, expected) << "seed " << seed;
    for (const GpuDeviceTime& d : expected)
      for (const GpuHostWait& w : d.host_waits)
        if (w.op != "[no op]" && !w.python_frame.empty()) charged += w.gaps;
  }
  EXPECT_GT(charged, 300u);  // waits charged to ops under frames, or this proves little
}

}  // namespace
}  // namespace gpuprof
