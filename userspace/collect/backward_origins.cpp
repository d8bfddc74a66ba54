// backward_origins.cpp: which forward op made each autograd node (backward_origins.h).
#include "collect/backward_origins.h"

#include <iterator>

namespace gpuprof {

void BackwardOrigins::node_made(uint32_t pid, uint32_t tid, uint64_t sequence_nr) {
  auto last = last_stack_.find(tid);
  const std::optional<uint32_t> stack = last == last_stack_.end() ? std::nullopt : last->second;
  auto [it, inserted] = made_.try_emplace({pid, sequence_nr}, Made{tid, stack, false});
  if (!inserted) {
    // The same thread numbering again: a new node (the count is per
    // thread, so only after a wrap); another thread's: ambiguous.
    if (it->second.tid == tid && !it->second.ambiguous)
      it->second.stack = stack;
    else
      it->second.ambiguous = true;
    return;
  }
  if (made_.size() > kMaxNodes) {
    // The oldest by number (within each process): a map keeps them first.
    auto end = made_.begin();
    std::advance(end, kMaxNodes / 2);
    made_.erase(made_.begin(), end);
  }
}

std::optional<uint32_t> BackwardOrigins::origin(uint32_t pid, uint64_t sequence_nr) const {
  auto it = made_.find({pid, sequence_nr});
  if (it == made_.end() || it->second.ambiguous) return std::nullopt;
  return it->second.stack;
}

}  // namespace gpuprof
