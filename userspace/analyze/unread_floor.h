// unread_floor.h: the least value the chunks of one kind a streamed read
// has not read yet can hold, from what its first read noted per chunk
// (streamed_call_figures.h's JoinBounds): what lets a stream hand on a
// record once nothing still unread can come before it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace gpuprof {

class UnreadFloor {
 public:
  // per_chunk: each chunk's least value, in file order.
  explicit UnreadFloor(const std::vector<uint64_t>& per_chunk) : suffix_min_(per_chunk) {
    for (size_t i = suffix_min_.size(); i-- > 1;) suffix_min_[i - 1] = std::min(suffix_min_[i - 1], suffix_min_[i]);
  }
  void chunk_read() { ++read_; }
  // UINT64_MAX once every chunk the first read saw is read; 0 past them
  // (a chunk the first read did not see: nothing can be trusted to be
  // complete before the end).
  uint64_t value() const {
    if (read_ < suffix_min_.size()) return suffix_min_[read_];
    return read_ == suffix_min_.size() ? UINT64_MAX : 0;
  }

 private:
  std::vector<uint64_t> suffix_min_;
  size_t read_ = 0;
};

}  // namespace gpuprof
