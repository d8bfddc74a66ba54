// pairs_first.cpp: op events held until the pairs that name them have come.
#include "analyze/pairs_first.h"

#include <algorithm>
#include <utility>

namespace gpuprof {

void hand_pair(RecordStream& stream, PairKind kind, uint64_t event_index, uint32_t id) {
  switch (kind) {
    case PairKind::entry_stack:
      stream.on_entry_stack(event_index, id);
      return;
    case PairKind::entry_shape:
      stream.on_entry_shape(event_index, id);
      return;
    case PairKind::backward_stack:
      stream.on_backward_stack(event_index, id);
      return;
  }
}

void ChunkPairs::hand_those_of(const gp_event& event, uint64_t index, RecordStream* stream, uint64_t renumbered) {
  const bool opens = event.kind == GP_EV_OP_ENTRY || event.kind == GP_EV_RANGE_BEGIN;
  for (; next_ < pairs_.size() && pairs_[next_].event_index <= index; next_++)
    if (stream && opens && pairs_[next_].event_index == index)
      hand_pair(*stream, pairs_[next_].kind, renumbered, pairs_[next_].id);
}

PairsFirst::PairsFirst(const LastPairs& last, Hand hand) : hand_(std::move(hand)) {
  cursors_[static_cast<size_t>(PairKind::entry_stack)].last_in_file = last.entry_stack;
  cursors_[static_cast<size_t>(PairKind::entry_shape)].last_in_file = last.entry_shape;
  cursors_[static_cast<size_t>(PairKind::backward_stack)].last_in_file = last.backward_stack;
}

bool PairsFirst::passed(uint64_t index) const {
  return std::all_of(std::begin(cursors_), std::end(cursors_), [&](const Cursor& c) { return c.passed(index); });
}

void PairsFirst::add_events(std::span<const gp_event> events, uint64_t first) {
  if (events.empty()) return;
  // Nothing held before it, and its pairs all came (or the file has none): on at once.
  if (held_.empty() && passed(first + events.size() - 1)) {
    hand_chunk(events, first);
    return;
  }
  held_.push_back(HeldChunk{first, {events.begin(), events.end()}});
}

void PairsFirst::add_pair(PairKind kind, uint64_t event_index, uint32_t id) {
  waiting_[static_cast<size_t>(kind)].push_back(EventPair{event_index, kind, id});
  cursors_[static_cast<size_t>(kind)].seen = event_index;
  hand_held(false);
}

void PairsFirst::hand_held(bool all) {
  while (!held_.empty()) {
    HeldChunk& chunk = held_.front();
    if (!all && !passed(chunk.first + chunk.events.size() - 1)) return;
    hand_chunk(chunk.events, chunk.first);
    held_.pop_front();
  }
}

void PairsFirst::hand_chunk(std::span<const gp_event> events, uint64_t first) {
  const uint64_t end = first + events.size();
  chunk_pairs_.clear();
  for (std::deque<EventPair>& waiting : waiting_) {
    for (; !waiting.empty() && waiting.front().event_index < end; waiting.pop_front())
      // Pairs before the chunk name events handed on already (a damaged
      // file's): dropped.
      if (waiting.front().event_index >= first) chunk_pairs_.push_back(waiting.front());
  }
  // By event index; one event has at most one pair of each kind, so the
  // order among equal indexes does not matter.
  std::sort(chunk_pairs_.begin(), chunk_pairs_.end(),
            [](const EventPair& a, const EventPair& b) { return a.event_index < b.event_index; });
  hand_(events, first, chunk_pairs_);
}

}  // namespace gpuprof
