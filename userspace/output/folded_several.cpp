#include "output/folded_several.h"

namespace gpuprof {

std::string folded_root(const FoldedInput& input) {
  const Recording& recording = *input.recording;
  if (const JobRank* rank = job_rank_of(recording.job_ranks, recording.process.pid))
    return "rank " + std::to_string(rank->rank);
  return folded_frame_name(input.file);
}

void add_recording_stacks(FoldedStacks& merged, const FoldedInput& input, const FoldedStacks& stacks) {
  add_under_root(merged, folded_root(input), stacks);
}

FoldedStacks folded_stacks_of_several(const std::vector<FoldedInput>& inputs, FoldedMetric metric, bool raw_times) {
  FoldedStacks merged;
  for (const FoldedInput& input : inputs)
    add_recording_stacks(merged, input, folded_stacks_by_process(*input.recording, metric, raw_times));
  merge_alike_stacks(merged);  // recordings of one rank add up under one root
  return merged;
}

}  // namespace gpuprof
