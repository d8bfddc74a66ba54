// entry_stack_pairs.h: the ENTRY_STACKS pairs (record --with-stack) of a
// recording read as a stream (record/record_stream.h), held until the calls
// that need them are handed on (settled_calls.h). Pairs come in increasing
// event index, after the events they name, often chunks later: a settled
// forest can be handed on once the pairs of its events have all come, that
// is once a pair of its last event or a later one has come, or every pair
// of the file has (the first read says where the last one is).
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>

#include "base/index_map.h"

namespace gpuprof {

class EntryStackPairs {
 public:
  // wanted: false keeps nothing (every moment is known through).
  // last_in_file: the event index of the file's last pair (nullopt: none).
  EntryStackPairs(bool wanted, std::optional<uint64_t> last_in_file)
      : wanted_(wanted), last_in_file_(last_in_file) {}

  void add(uint64_t event_index, uint32_t stack_id) {
    if (!wanted_) return;
    stack_of_.emplace(event_index, stack_id);
    last_seen_ = event_index;
  }
  // Whether every pair of the events up to event_index has come.
  bool known_through(uint64_t event_index) const {
    if (!wanted_ || !last_in_file_) return true;
    return last_seen_ && *last_seen_ >= std::min(event_index, *last_in_file_);
  }
  std::optional<uint32_t> of(uint64_t entry_index) const {
    if (!wanted_) return std::nullopt;
    return stack_of_.find(entry_index);
  }
  // Its call was handed on: the pair is no longer needed.
  void forget(uint64_t entry_index) {
    if (wanted_) stack_of_.erase(entry_index);
  }
  // of(), then forget(), in one lookup: for a call read once.
  std::optional<uint32_t> take(uint64_t entry_index) {
    if (!wanted_) return std::nullopt;
    return stack_of_.take(entry_index);
  }
  // The same into stack_id, false when there is none: for a loop over
  // every call, where the optional's build and reload stall (IndexMap::take).
  bool take(uint64_t entry_index, uint32_t& stack_id) { return wanted_ && stack_of_.take(entry_index, stack_id); }

 private:
  const bool wanted_;
  const std::optional<uint64_t> last_in_file_;
  std::optional<uint64_t> last_seen_;
  IndexMap stack_of_;  // flat: one pair per op call passes through it
};

}  // namespace gpuprof
