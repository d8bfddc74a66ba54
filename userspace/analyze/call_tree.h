// call_tree.h: how the timeline's calls nest, for the outputs that need it.
//
// build_timeline() (op_timeline.h) lists calls in completion order with
// their depth and times. The outputs that walk the nesting share two views of
// it, so that they agree with each other and with the table:
//
//  * build_call_tree(): each call's enclosing call (its parent) and each
//    thread's calls parents first; innermost_calls_at() finds with it the
//    call running at a moment (memory attribution for allocator events,
//    launch attribution for kernel launches); the folded stacks use it for
//    the op path of a call.
//  * fold_same_name_calls(): torch.profiler's EventList._remove_dup_nodes,
//    which the table applies (a call whose only child has the same name
//    absorbs that child).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "analyze/op_timeline.h"
#include "record/recording.h"

namespace gpuprof {

struct CallTree {
  // Parallel to Timeline::calls: the innermost call of the same thread that
  // encloses it ([start, end] holds its start and it is less deep), -1 when
  // none was seen complete (an outermost call, or one whose enclosing frame
  // was still open when the events ended).
  std::vector<int64_t> parent;
  // One list per thread that completed a call (in no particular thread
  // order): the indices in Timeline::calls of that thread's calls, parents
  // before their children (by start_ns, then depth, then completion order).
  std::vector<std::vector<size_t>> threads;

  // The build's working storage, kept with the tree so that a tree built
  // again in place (one per settled forest) reuses it as it does the lists.
  struct Scratch {
    struct Parent {
      size_t cursor;  // where the range left to its unplaced children ends
      uint32_t children_left;
    };
    std::vector<size_t> subtree, roots, order, open;
    std::vector<Parent> parents;
  } scratch;
};

CallTree build_call_tree(const Timeline& timeline);
// The same into `tree`, its vectors' storage kept: a streamed read builds
// one tree per settled forest (settled_calls.h), thousands of calls each,
// and fresh vectors for each would cost their pages every time.
void build_call_tree(const Timeline& timeline, CallTree& tree);

// A moment on one thread: an allocator event, a kernel launch.
struct ThreadMoment {
  uint64_t ts_ns = 0;
  uint32_t tid = 0;
};

// The moments of a list of records that carry ts_ns and tid (CPU samples,
// launches, CUPTI correlations...), in the list's order.
template <typename Records>
std::vector<ThreadMoment> thread_moments(const Records& records) {
  std::vector<ThreadMoment> moments;
  moments.reserve(records.size());
  for (const auto& r : records) moments.push_back({r.ts_ns, r.tid});
  return moments;
}

// For each moment, the index in Timeline::calls of the innermost call of its
// thread whose [start, end] holds it (both ends included); -1 outside every
// call. Moments may come in any order.
std::vector<int64_t> innermost_calls_at(const Timeline& timeline, const CallTree& tree,
                                        const std::vector<ThreadMoment>& moments);

// For each moment, the name of the innermost op running on its thread then
// (op_display_name: "<unknown op N>" for an id outside recording.ops), ""
// outside every op: what a launch or a GPU activity is charged to.
std::vector<std::string> op_names_at(const Recording& recording, const std::vector<ThreadMoment>& moments);

// torch.profiler's EventList._remove_dup_nodes: a call whose only child has
// the same op name absorbs it (aten::div_ calling aten::div_ is one call),
// and the absorbed child's children become the absorber's, so chains of
// same-named only children fold into their outermost call. Names come from
// ops by op id; a call whose op id is outside ops never folds.
//
// Returns, parallel to Timeline::calls, the call each one was folded into:
// itself for a call that stays, else the outermost call of its chain (a call
// that stays, with the same name). What the table counts for a folded call
// (self time, self memory) belongs to that call.
std::vector<size_t> fold_same_name_calls(const Timeline& timeline, const std::vector<OpInfo>& ops);

// fold_same_name_calls with its storage kept from one timeline to the next,
// for a streamed read's forests (as build_call_tree's second form).
class SameNameFolder {
 public:
  // fold_same_name_calls(timeline, ops); valid until the next fold().
  const std::vector<size_t>& fold(const Timeline& timeline, const std::vector<OpInfo>& ops);
  // The last fold's result, for a folder that is done.
  std::vector<size_t> take() && { return std::move(into_); }

 private:
  std::vector<size_t> into_;
  std::vector<uint32_t> child_count_;  // the timeline's, as absorbers take their children's
  std::vector<int64_t> only_child_;
};

// A streamed read's settled forest's call tree and fold, their storage kept
// from one forest to the next (build_call_tree's second form, SameNameFolder).
class ForestShape {
 public:
  struct Shape {
    const CallTree& tree;
    const std::vector<size_t>& folded_into;  // fold_same_name_calls'
  };
  // forest's; folded: its fold when made already (CallFigures::folded_into).
  // Valid until the next of().
  Shape of(const Timeline& forest, const std::vector<OpInfo>& ops, const std::vector<size_t>* folded = nullptr) {
    build_call_tree(forest, tree_);
    return {tree_, folded ? *folded : folder_.fold(forest, ops)};
  }

 private:
  CallTree tree_;
  SameNameFolder folder_;
};

}  // namespace gpuprof
