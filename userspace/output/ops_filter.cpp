// ops_filter.cpp: the pattern searched in each op's display name once,
// the calls walked parents first.
#include "output/ops_filter.h"

#include <algorithm>

namespace gpuprof {

bool OpsFilter::matches(uint32_t op_id) {
  if (matches_.empty()) matches_.resize(ops_.size() + 1);
  std::optional<bool>& m = matches_[std::min<size_t>(op_id, ops_.size())];
  if (!m || op_id >= ops_.size()) m = std::regex_search(op_display_name(ops_, op_id), pattern_);
  return *m;
}

std::vector<bool> OpsFilter::kept(const Timeline& timeline, const CallTree& tree) {
  std::vector<bool> kept(timeline.calls.size(), false);
  for (const std::vector<size_t>& thread : tree.threads)
    for (size_t i : thread)  // parents first
      kept[i] = matches(timeline.calls[i].op_id) || (tree.parent[i] >= 0 && kept[tree.parent[i]]);
  return kept;
}

}  // namespace gpuprof
