// ops_filter.h: a trace's --ops PATTERN (chrome_trace.h): the calls whose op
// name the pattern is found in, and every call nested in them. The whole
// trace asks it of the recording's timeline; the streamed trace
// (streamed_chrome_trace.h) of each settled forest, which holds every
// ancestor of its calls, so both keep the same calls.
#pragma once

#include <cstdint>
#include <optional>
#include <regex>
#include <utility>
#include <vector>

#include "analyze/call_tree.h"
#include "analyze/op_timeline.h"
#include "record/recording.h"

namespace gpuprof {

class OpsFilter {
 public:
  // ops: the recording's op table (copied: a streamed trace outlives its
  // first read's).
  OpsFilter(std::vector<OpInfo> ops, const std::regex& pattern) : ops_(std::move(ops)), pattern_(pattern) {}

  // Parallel to timeline.calls: whether the call matches or is nested in a
  // call that does.
  std::vector<bool> kept(const Timeline& timeline, const CallTree& tree);

 private:
  bool matches(uint32_t op_id);

  std::vector<OpInfo> ops_;
  std::regex pattern_;
  // By op id, each op's answer once asked; the last slot, for ids outside
  // the table (a lost chunk's), is asked again each time.
  std::vector<std::optional<bool>> matches_;
};

}  // namespace gpuprof
