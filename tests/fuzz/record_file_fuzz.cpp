// libFuzzer target: the record-file reader, and what every report does with
// what it accepts. The reader promises that a file it returns can be indexed
// without checks (record_file.h): the aggregator, the tables, folded stacks
// and the Chrome trace run on every accepted input to hold it to that.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "analyze/aggregator.h"
#include "output/chrome_trace.h"
#include "output/folded_stacks.h"
#include "output/gpu_kernel_table.h"
#include "output/launch_table.h"
#include "output/op_table.h"
#include "analyze/process_filter.h"
#include "record/record_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpuprof;
  std::string error;
  auto recording = read_recording_bytes(std::span<const uint8_t>(data, size), &error, "fuzz.gpuprof");
  if (!recording) return 0;
  AggregateOptions grouped;
  grouped.group_by_input_shape = recording->options.shapes;
  grouped.group_by_stack_n = recording->options.with_stack ? 5 : 0;
  for (const AggregateOptions& options : {AggregateOptions{}, grouped}) {
    const Profile profile = aggregate(*recording, options);
    TableOptions table;
    (void)format_op_table(profile, table);
    (void)format_profile_notes(profile);
  }
  for (FoldedMetric metric : {FoldedMetric::kSelfCpuTime, FoldedMetric::kSamples, FoldedMetric::kSelfCudaTime}) {
    (void)format_folded(folded_stacks(*recording, metric));
    (void)format_folded(folded_stacks_by_process(*recording, metric));
  }
  // System-wide recordings: each process on its own, as report's sections.
  for (const auto& [pid, activity] : process_activity(*recording))
    (void)format_op_table(aggregate(select_processes(*recording, {pid})), TableOptions{});
  (void)format_launch_table(summarize_launches(*recording), -1);
  (void)format_gpu_kernel_table(summarize_gpu_kernels(*recording), -1);
  size_t bytes = 0;
  write_chrome_trace(*recording, ChromeTraceOptions{}, [&](std::string_view piece) { bytes += piece.size(); });
  return 0;
}
