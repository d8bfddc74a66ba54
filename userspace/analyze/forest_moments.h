// forest_moments.h: moments of threads (CPU samples, the starts of a GPU's
// idle gaps) placed in their thread's calls as the calls stream by in
// settled forests (settled_calls.h): each moment gets the call that
// innermost_calls_at (call_tree.h) gives it in the whole timeline, with
// memory for the moments alone.
//
// A forest holds its thread's calls from its first call's start to its last
// end, and a call of a later forest starts no earlier than that end: only
// the moments at that very end may belong to a later forest, and they are
// decided again when it comes (the later decision stands). Moments between
// forests are decided by none: they lie outside every call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analyze/call_tree.h"
#include "analyze/op_timeline.h"

namespace gpuprof {

class ForestMoments {
 public:
  // Moment i is moments[i]; any order.
  explicit ForestMoments(const std::vector<ThreadMoment>& moments);
  // Calls decide(i, call) for each moment of the forest's thread that the
  // forest decides: call is the index in forest.calls of its innermost
  // call, -1 for none. tree: build_call_tree(forest).
  void place(const Timeline& forest, const CallTree& tree, const std::function<void(size_t, int64_t)>& decide);

 private:
  struct ThreadMoments {
    std::vector<std::pair<uint64_t, size_t>> by_time;  // (ts, moment index)
    size_t next = 0;  // the first not decided for good
  };
  std::unordered_map<uint32_t, ThreadMoments> threads_;
};

}  // namespace gpuprof
