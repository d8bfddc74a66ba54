// forest_moments.cpp: a thread's moments, by time, decided forest by forest.
#include "analyze/forest_moments.h"

#include <algorithm>

namespace gpuprof {

ForestMoments::ForestMoments(const std::vector<ThreadMoment>& moments) {
  for (size_t i = 0; i < moments.size(); i++) threads_[moments[i].tid].by_time.emplace_back(moments[i].ts_ns, i);
  for (auto& [tid, thread] : threads_) std::sort(thread.by_time.begin(), thread.by_time.end());
}

void ForestMoments::place(const Timeline& forest, const CallTree& tree,
                          const std::function<void(size_t, int64_t)>& decide) {
  if (forest.calls.empty()) return;
  auto found = threads_.find(forest.calls.front().tid);
  if (found == threads_.end()) return;
  ThreadMoments& thread = found->second;
  const uint64_t first_start = forest.calls[tree.threads.front().front()].start_ns;
  uint64_t last_end = 0;
  for (const OpCall& call : forest.calls) last_end = std::max(last_end, call.end_ns);
  // Earlier moments were decided by earlier forests, or lie outside every call.
  while (thread.next < thread.by_time.size() && thread.by_time[thread.next].first < first_start) thread.next++;
  std::vector<ThreadMoment> moments;
  for (size_t i = thread.next; i < thread.by_time.size() && thread.by_time[i].first <= last_end; i++)
    moments.push_back({thread.by_time[i].first, forest.calls.front().tid});
  const std::vector<int64_t> calls = innermost_calls_at(forest, tree, moments);
  for (size_t i = 0; i < moments.size(); i++) decide(thread.by_time[thread.next + i].second, calls[i]);
  while (thread.next < thread.by_time.size() && thread.by_time[thread.next].first < last_end) thread.next++;
}

}  // namespace gpuprof
