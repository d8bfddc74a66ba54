// call_tree.cpp: parents and same-name folding of the timeline's calls.
#include "analyze/call_tree.h"

#include <algorithm>
#include <string>
#include <unordered_map>

namespace gpuprof {

namespace {

// One thread's calls, in completion order, put parents first in linear
// time where the sort would put them: a thread's calls complete in
// post-order of their nesting (Timeline::child_count), so its pre-order
// follows from each call's subtree size. Returns false, `ids` unchanged,
// where the child counts do not make a forest of these calls, or where its
// pre-order is not in the sort's order (timestamps that disagree with the
// nesting): the caller sorts then. A permutation in order under a total
// order is the sort's result, so what comes out never depends on which way
// was taken.
// The sort took about a twentieth of a streamed --modules read
// (docs/report.md, "Memory").
template <typename Less>
bool put_in_preorder(const Timeline& timeline, std::vector<size_t>& ids, const Less& parents_first,
                     CallTree::Scratch& scratch) {
  const size_t n = ids.size();
  std::vector<size_t>& subtree = scratch.subtree, &roots = scratch.roots, &order = scratch.order;
  std::vector<CallTree::Scratch::Parent>& parents = scratch.parents;
  subtree.resize(n);
  roots.clear();  // the subtrees not claimed by a parent yet, by their last call
  for (size_t k = 0; k < n; k++) {  // a call's children: the subtrees just before it
    const uint32_t children = timeline.child_count[ids[k]];
    if (children > roots.size()) return false;
    size_t size = 1;
    for (uint32_t c = 0; c < children; c++) {
      size += subtree[roots.back()];
      roots.pop_back();
    }
    subtree[k] = size;
    roots.push_back(k);
  }
  // Backwards, each call comes before its children: it takes the first
  // place of the range its parent (or the roots) has left at the right,
  // and its children fill the rest of its subtree's range from the right.
  // The sizes add up, so every place is taken once.
  parents.clear();
  order.resize(n);
  size_t roots_cursor = n;
  for (size_t k = n; k-- > 0;) {
    while (!parents.empty() && parents.back().children_left == 0) parents.pop_back();
    size_t& cursor = parents.empty() ? roots_cursor : parents.back().cursor;
    cursor -= subtree[k];
    if (!parents.empty()) parents.back().children_left--;
    order[cursor] = ids[k];
    parents.push_back({cursor + subtree[k], timeline.child_count[ids[k]]});
  }
  if (!std::is_sorted(order.begin(), order.end(), parents_first)) return false;
  ids.swap(order);
  return true;
}

}  // namespace

CallTree build_call_tree(const Timeline& timeline) {
  CallTree tree;
  build_call_tree(timeline, tree);
  return tree;
}

void build_call_tree(const Timeline& timeline, CallTree& tree) {
  const auto& calls = timeline.calls;
  tree.parent.assign(calls.size(), -1);
  // tree.threads' lists are reused in place; those past `threads` are dropped at the end.
  size_t threads = 0;
  std::unordered_map<uint32_t, size_t> thread_of_tid;
  std::vector<size_t>* thread = nullptr;
  uint32_t thread_tid = 0;
  for (size_t i = 0; i < calls.size(); i++) {
    if (!thread || calls[i].tid != thread_tid) {  // runs of one thread's calls are the rule
      auto [it, inserted] = thread_of_tid.try_emplace(calls[i].tid, threads);
      if (inserted) {
        if (threads == tree.threads.size()) tree.threads.emplace_back();
        tree.threads[threads++].clear();
      }
      thread = &tree.threads[it->second];
      thread_tid = calls[i].tid;
    }
    thread->push_back(i);
  }
  tree.threads.resize(threads);
  for (std::vector<size_t>& ids : tree.threads) {
    // Parents first: by start, then by depth, then in completion order (a
    // total order: the same calls come out the same however a read cuts
    // them into forests). Calls that nest nothing (a loop of outermost
    // calls) complete in that order already.
    const auto parents_first = [&](size_t a, size_t b) {
      if (calls[a].start_ns != calls[b].start_ns) return calls[a].start_ns < calls[b].start_ns;
      if (calls[a].depth != calls[b].depth) return calls[a].depth < calls[b].depth;
      return a < b;
    };
    if (!std::is_sorted(ids.begin(), ids.end(), parents_first) &&
        !put_in_preorder(timeline, ids, parents_first, tree.scratch))
      std::sort(ids.begin(), ids.end(), parents_first);
    std::vector<size_t>& open = tree.scratch.open;  // calls holding the sweep point, innermost last
    open.clear();
    for (size_t id : ids) {
      while (!open.empty() && calls[open.back()].end_ns < calls[id].start_ns) open.pop_back();
      // A call as deep or deeper does not enclose this one, even when it
      // ends at the very timestamp this one starts (a sibling).
      while (!open.empty() && calls[open.back()].depth >= calls[id].depth) open.pop_back();
      tree.parent[id] = open.empty() ? -1 : static_cast<int64_t>(open.back());
      open.push_back(id);
    }
  }
}

std::vector<size_t> fold_same_name_calls(const Timeline& timeline, const std::vector<OpInfo>& ops) {
  SameNameFolder folder;
  folder.fold(timeline, ops);
  return std::move(folder).take();
}

const std::vector<size_t>& SameNameFolder::fold(const Timeline& timeline, const std::vector<OpInfo>& ops) {
  const size_t n = timeline.calls.size();
  std::vector<size_t>& into = into_;
  into.resize(n);
  for (size_t i = 0; i < n; i++) into[i] = i;
  auto name_of = [&](uint32_t op_id) -> const std::string* {
    return op_id < ops.size() ? &ops[op_id].name : nullptr;
  };
  // Children complete before their parents, so one pass in completion order
  // sees every child's own chain already folded: absorbing a child hands its
  // remaining children (after its own folds) to the absorber.
  std::vector<uint32_t>& child_count = child_count_;
  std::vector<int64_t>& only_child = only_child_;
  child_count.assign(timeline.child_count.begin(), timeline.child_count.end());
  only_child.assign(timeline.only_child.begin(), timeline.only_child.end());
  for (size_t i = 0; i < n; i++) {
    const std::string* name = name_of(timeline.calls[i].op_id);
    if (name == nullptr) continue;
    while (child_count[i] == 1 && only_child[i] >= 0) {
      const auto child = static_cast<size_t>(only_child[i]);
      const std::string* child_name = name_of(timeline.calls[child].op_id);
      if (child_name == nullptr || *name != *child_name) break;
      into[child] = i;
      child_count[i] = child_count[child];
      only_child[i] = only_child[child];
    }
  }
  // An absorber completes after what it absorbs (into[j] > j), so walking
  // down resolves chains to their outermost call.
  for (size_t j = n; j-- > 0;) into[j] = into[into[j]];
  return into;
}

std::vector<int64_t> innermost_calls_at(const Timeline& timeline, const CallTree& tree,
                                        const std::vector<ThreadMoment>& moments) {
  const auto& calls = timeline.calls;
  std::vector<int64_t> out(moments.size(), -1);
  std::unordered_map<uint32_t, std::vector<size_t>> moments_of;
  for (size_t i = 0; i < moments.size(); i++) moments_of[moments[i].tid].push_back(i);
  for (const std::vector<size_t>& ids : tree.threads) {
    auto it = moments_of.find(calls[ids.front()].tid);
    if (it == moments_of.end()) continue;
    std::vector<size_t>& ms = it->second;
    std::stable_sort(ms.begin(), ms.end(),
                     [&](size_t a, size_t b) { return moments[a].ts_ns < moments[b].ts_ns; });
    // Sweep the thread's calls parents first. The calls holding the sweep
    // point are `innermost` and its chain of parents; a call that ended
    // before a moment gives way to its parent.
    int64_t innermost = -1;
    size_t m = 0;
    auto place_moments_before = [&](uint64_t ts, bool inclusive) {
      while (m < ms.size() && (moments[ms[m]].ts_ns < ts || (inclusive && moments[ms[m]].ts_ns == ts))) {
        const size_t i = ms[m++];
        while (innermost >= 0 && calls[innermost].end_ns < moments[i].ts_ns) innermost = tree.parent[innermost];
        out[i] = innermost;
      }
    };
    for (size_t id : ids) {
      place_moments_before(calls[id].start_ns, false);
      innermost = static_cast<int64_t>(id);
    }
    place_moments_before(UINT64_MAX, true);
  }
  return out;
}

std::vector<std::string> op_names_at(const Recording& recording, const std::vector<ThreadMoment>& moments) {
  const Timeline timeline = build_timeline(recording.events);
  const std::vector<int64_t> calls = innermost_calls_at(timeline, build_call_tree(timeline), moments);
  std::vector<std::string> names(moments.size());
  for (size_t i = 0; i < moments.size(); ++i) {
    if (calls[i] < 0) continue;
    names[i] = op_display_name(recording.ops, timeline.calls[calls[i]].op_id);
  }
  return names;
}

}  // namespace gpuprof
