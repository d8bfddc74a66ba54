// streamed_running_at.cpp: the host waits' moments placed in each thread's
// settled forests.
#include "analyze/streamed_running_at.h"

#include <utility>

#include "analyze/call_tree.h"

namespace gpuprof {

// report --gpu shows raw times, as the whole read's timeline does: no
// compensation.
StreamedRunningAt::StreamedRunningAt(const Recording& head, const std::vector<ThreadMoment>& moments,
                                     std::optional<uint64_t> last_entry_stack)
    : head_(head),
      settled_(nullptr),
      stacks_(head.options.with_stack, last_entry_stack),
      moments_(moments),
      running_(moments.size()) {}

void StreamedRunningAt::on_events(std::span<const gp_event> events, uint64_t first) {
  settled_.add(events, first);
  // A forest waits for the stack pairs of its events.
  settled_.hand_settled([this](uint64_t event_index) { return stacks_.known_through(event_index); },
                        [this](const Timeline& forest) { place(forest); });
}

// A moment's op is its innermost call's; its frame, the entry stack of that
// call's outermost call (a forest holds every ancestor of its calls).
void StreamedRunningAt::place(const Timeline& forest) {
  const CallTree tree = build_call_tree(forest);
  moments_.place(forest, tree, [&](size_t moment, int64_t call) {
    RunningAt ran;
    if (call >= 0) {
      ran.op = op_display_name(head_.ops, forest.calls[call].op_id);
      int64_t outer = call;
      while (tree.parent[outer] >= 0) outer = tree.parent[outer];
      ran.python_frame = innermost_frame(head_, stacks_.of(forest.calls[outer].entry_index));
    }
    running_[moment] = std::move(ran);  // a later forest's decision stands
  });
  for (const OpCall& call : forest.calls) stacks_.forget(call.entry_index);
}

std::vector<RunningAt> StreamedRunningAt::finish() && {
  std::move(settled_).finish([this](const Timeline& forest) { place(forest); });
  return std::move(running_);
}

}  // namespace gpuprof
