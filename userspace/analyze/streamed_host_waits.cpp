// streamed_host_waits.cpp: each thread's host-wait moments read from its
// file as its settled forests come, and charged once decided for good.
#include "analyze/streamed_host_waits.h"

#include <algorithm>

#include "analyze/call_tree.h"

namespace gpuprof {

std::unordered_map<uint32_t, std::unique_ptr<SpillFile>> HostWaitMoments::by_thread() && {
  std::unordered_map<uint32_t, std::unique_ptr<SpillFile>> files;
  SpillFile* file = nullptr;
  uint32_t tid = 0;
  sorted_.drain([&](const Moment& m) {
    if (!file || m.tid != tid) {
      tid = m.tid;
      file = (files[tid] = std::make_unique<SpillFile>()).get();
    }
    append_records(*file, std::span<const Moment>(&m, 1));
  });
  return files;
}

const HostWaitMoments::Moment* StreamedHostWaits::ThreadMoments::peek() {
  if (!ahead) {
    if (!reader) reader.emplace(*file);
    HostWaitMoments::Moment next;
    if (!reader->next(&next)) return nullptr;
    ahead = next;
  }
  return &*ahead;
}

// report --gpu shows raw times, as the whole read's timeline does: no
// compensation.
StreamedHostWaits::StreamedHostWaits(const Recording& head, HostWaitMoments moments, size_t devices,
                                     std::optional<uint64_t> last_entry_stack)
    : head_(head), settled_(nullptr), stacks_(head.options.with_stack, last_entry_stack), waits_(devices) {
  for (auto& [tid, file] : std::move(moments).by_thread()) threads_[tid].file = std::move(file);
}

void StreamedHostWaits::on_events(std::span<const gp_event> events, uint64_t first) {
  settled_.add(events, first);
  // A forest waits for the stack pairs of its events.
  settled_.hand_settled([this](uint64_t event_index) { return stacks_.known_through(event_index); },
                        [this](const Timeline& forest) { place(forest); });
}

// A moment's op is its innermost call's; its frame, the entry stack of that
// call's outermost call (a forest holds every ancestor of its calls).
void StreamedHostWaits::place(const Timeline& forest) {
  if (forest.calls.empty()) return;
  auto found = threads_.find(forest.calls.front().tid);
  if (found == threads_.end()) {
    for (const OpCall& call : forest.calls) stacks_.forget(call.entry_index);
    return;
  }
  ThreadMoments& thread = found->second;
  const CallTree tree = build_call_tree(forest);
  const uint64_t first_start = forest.calls[tree.threads.front().front()].start_ns;
  uint64_t last_end = 0;
  for (const OpCall& call : forest.calls) last_end = std::max(last_end, call.end_ns);
  // The previous forest's decisions at its end stand unless this forest
  // starts there; earlier moments no forest decided were outside every call.
  std::vector<HostWaitMoments::Moment> moments;
  for (auto& [m, ran] : thread.at_end) {
    if (m.ts_ns < first_start)
      charge(m, ran);
    else
      moments.push_back(m);
  }
  thread.at_end.clear();
  for (const HostWaitMoments::Moment* m; (m = thread.peek()) && m->ts_ns < first_start; thread.ahead.reset())
    charge(*m, RunningAt{});
  for (const HostWaitMoments::Moment* m; (m = thread.peek()) && m->ts_ns <= last_end; thread.ahead.reset())
    moments.push_back(*m);
  std::vector<ThreadMoment> at;
  at.reserve(moments.size());
  for (const HostWaitMoments::Moment& m : moments) at.push_back({m.ts_ns, m.tid});
  const std::vector<int64_t> calls = innermost_calls_at(forest, tree, at);
  for (size_t i = 0; i < moments.size(); i++) {
    RunningAt ran;
    if (calls[i] >= 0) {
      ran.op = op_display_name(head_.ops, forest.calls[calls[i]].op_id);
      int64_t outer = calls[i];
      while (tree.parent[outer] >= 0) outer = tree.parent[outer];
      ran.python_frame = innermost_frame(head_, stacks_.of(forest.calls[outer].entry_index));
    }
    if (moments[i].ts_ns < last_end)
      charge(moments[i], ran);
    else
      thread.at_end.emplace_back(moments[i], std::move(ran));  // the next forest may start there
  }
  for (const OpCall& call : forest.calls) stacks_.forget(call.entry_index);
}

void StreamedHostWaits::charge(const HostWaitMoments::Moment& moment, const RunningAt& ran) {
  if (moment.device >= waits_.size()) return;
  GpuHostWait& w = waits_[moment.device][{ran.op, ran.python_frame}];
  w.op = ran.op;
  w.python_frame = ran.python_frame;
  w.wait_ns += moment.wait_ns;
  w.gaps++;
}

std::vector<std::vector<GpuHostWait>> StreamedHostWaits::finish() && {
  std::move(settled_).finish([this](const Timeline& forest) { place(forest); });
  for (auto& [tid, thread] : threads_) {
    for (const auto& [m, ran] : thread.at_end) charge(m, ran);
    for (const HostWaitMoments::Moment* m; (m = thread.peek()); thread.ahead.reset()) charge(*m, RunningAt{});
  }
  std::vector<std::vector<GpuHostWait>> out;
  for (auto& waits : waits_) out.push_back(listed_host_waits(std::move(waits)));
  return out;
}

}  // namespace gpuprof
