// folded_several.h: report A B ... --folded: the folded stacks of several
// recordings in one text, each recording's under a root frame of its own
// (docs/fleet.md, "One table of several recordings").
//
// The root frame is the recording's rank ("rank 1") when its process had
// one (torchrun's workers), else its file name; a system-wide recording's
// stacks keep their process frame below it. Recordings of one rank add up
// under one root, as --by rank adds them up.
#pragma once

#include <string>
#include <vector>

#include "output/folded_stacks.h"
#include "record/recording.h"

namespace gpuprof {

struct FoldedInput {
  const Recording* recording;
  std::string file;
};

// "rank 1", or the file's name: the frame a recording's stacks go under.
std::string folded_root(const FoldedInput& input);

// One recording's stacks (folded_stacks_by_process, or a streamed read's:
// the same stacks) added to `merged` under its root, totals and counters
// too; merge_alike_stacks once every recording is in.
void add_recording_stacks(FoldedStacks& merged, const FoldedInput& input, const FoldedStacks& stacks);

// Every recording's stacks (folded_stacks_by_process) under its root,
// merged: sorted by stack, no two alike; the totals and counters added up.
FoldedStacks folded_stacks_of_several(const std::vector<FoldedInput>& inputs, FoldedMetric metric,
                                      bool raw_times = false);

}  // namespace gpuprof
