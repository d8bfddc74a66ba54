#include "output/folded_several.h"

#include <map>

namespace gpuprof {

std::string folded_root(const FoldedInput& input) {
  const Recording& recording = *input.recording;
  if (const JobRank* rank = job_rank_of(recording.job_ranks, recording.process.pid))
    return "rank " + std::to_string(rank->rank);
  return folded_frame_name(input.file);
}

FoldedStacks folded_stacks_of_several(const std::vector<FoldedInput>& inputs, FoldedMetric metric, bool raw_times) {
  FoldedStacks merged;
  std::map<std::string, uint64_t> values;  // stack -> value, in byte order
  for (const FoldedInput& input : inputs) {
    FoldedStacks one = folded_stacks_by_process(*input.recording, metric, raw_times);
    const std::string root = folded_root(input) + ";";
    for (FoldedStack& stack : one.stacks) values[root + stack.stack] += stack.value;
    merged.self_ns_total += one.self_ns_total;
    merged.stacks_below_1us += one.stacks_below_1us;
    merged.samples_total += one.samples_total;
    merged.gpu_ns_outside_ops += one.gpu_ns_outside_ops;
    merged.calls_unwound += one.calls_unwound;
    merged.exits_without_entry += one.exits_without_entry;
    merged.calls_open_at_end += one.calls_open_at_end;
    merged.calls_shorter_than_probes += one.calls_shorter_than_probes;
  }
  merged.stacks.reserve(values.size());
  for (auto& [stack, value] : values) merged.stacks.push_back({stack, value});
  return merged;
}

}  // namespace gpuprof
