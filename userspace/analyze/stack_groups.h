// stack_groups.h: torch's event.stack[:N] of each call (report
// --group-by-stack-n N, key_averages(group_by_stack_n=N)): the first N
// frames of the Python stack at its ENTRY, innermost first (recordings
// store stacks outermost first). Calls run under many stacks that share
// their top N frames, so each distinct frame list gets a small id, a stack
// group, and rows are keyed by that id rather than by copies of the
// frames. The whole aggregate (aggregator.h) and the streamed one
// (streamed_aggregate.h) both ask it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "record/recording.h"

namespace gpuprof {

class StackGroups {
 public:
  static constexpr uint32_t kNoStack = 0;  // the group of calls without Python frames

  // recording: its frames and stacks (kept by reference). n <= 0 (not
  // grouped by stack): every call is in kNoStack.
  StackGroups(const Recording& recording, int n);

  // The group of an entry's stack (nullopt, or an id outside the
  // recording: kNoStack). Entries share their stacks (sample_stacks are
  // interned): each stack's group is made once.
  uint32_t of_stack(std::optional<uint32_t> stack_id);

  // The frames of each group, by group id (grows as groups are made).
  const std::vector<std::vector<std::string>>& frames() const { return frames_; }

 private:
  std::vector<std::string> top_frames(uint32_t stack_id) const;

  const Recording& recording_;
  const int n_;
  std::vector<std::vector<std::string>> frames_;                  // by group
  std::map<std::vector<std::string>, uint32_t> group_of_frames_;  // frames_, inverted
  std::vector<std::optional<uint32_t>> group_of_stack_;           // by stack id, once seen
};

}  // namespace gpuprof
