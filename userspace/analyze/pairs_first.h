// pairs_first.h: the op events of a recording read as a stream
// (record/record_stream.h), each chunk handed on with the ENTRY_STACKS,
// ENTRY_SHAPES and BACKWARD_STACKS pairs that name its events, for a
// stream that renumbers the events (a record -a recording cut into
// processes: chosen_processes_stream.h, process_event_split.h) and so must
// renumber the pairs with them.
//
// A pair names its event by the file's index and comes chunks after it,
// in increasing event index per kind: each chunk is held until no pair
// still to come can name one of its events (the first read says where
// each kind's last pair is), and the pairs wait with it. Memory grows with
// how far the pairs lag their events, as an output that waits for them
// does; a recording without pairs holds nothing.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "op_tracer_abi.h"
#include "record/record_stream.h"

namespace gpuprof {

enum class PairKind : uint8_t { entry_stack, entry_shape, backward_stack };

// One pair: the event it names (the file's index), its kind and the stack
// or shape id.
struct EventPair {
  uint64_t event_index = 0;
  PairKind kind = PairKind::entry_stack;
  uint32_t id = 0;
};

// Hands a pair to a stream as its kind's on_X, the event renumbered.
void hand_pair(RecordStream& stream, PairKind kind, uint64_t event_index, uint32_t id);

// Walks a handed chunk's pairs alongside its events, in file order.
class ChunkPairs {
 public:
  explicit ChunkPairs(std::span<const EventPair> pairs) : pairs_(pairs) {}
  // The pairs up to the event at file index `index` are passed; those that
  // name it go to `stream` (null: the event is not kept), renumbered to
  // `renumbered`, when it opens a frame (an op entry or range begin:
  // select_processes renumbers those pairs alone).
  void hand_those_of(const gp_event& event, uint64_t index, RecordStream* stream, uint64_t renumbered);

 private:
  std::span<const EventPair> pairs_;
  size_t next_ = 0;
};

class PairsFirst {
 public:
  // hand(events, first, pairs): a chunk whose pairs have all come: its
  // events (first: the file's index of events[0]) and the pairs that name
  // them, by event index.
  using Hand = std::function<void(std::span<const gp_event> events, uint64_t first, std::span<const EventPair> pairs)>;
  PairsFirst(const LastPairs& last, Hand hand);

  void add_events(std::span<const gp_event> events, uint64_t first);
  void add_pair(PairKind kind, uint64_t event_index, uint32_t id);
  // The read is done: every chunk still held (a damaged file's, whose last
  // pairs never came) handed on.
  void finish() { hand_held(true); }

 private:
  // One kind of pair: the file index of the last one read, and of the
  // file's last.
  struct Cursor {
    std::optional<uint64_t> seen, last_in_file;
    // Whether every pair of this kind that names an event up to `index` has come.
    bool passed(uint64_t index) const {
      return !last_in_file || (seen && *seen >= std::min(index, *last_in_file));
    }
  };
  struct HeldChunk {
    uint64_t first = 0;
    std::vector<gp_event> events;
  };
  bool passed(uint64_t index) const;
  void hand_held(bool all);
  void hand_chunk(std::span<const gp_event> events, uint64_t first);

  Hand hand_;
  Cursor cursors_[3];  // by PairKind
  std::deque<HeldChunk> held_;
  // The pairs of held events, one queue per kind: each comes in
  // increasing event index.
  std::deque<EventPair> waiting_[3];
  std::vector<EventPair> chunk_pairs_;          // one chunk's, handed on
};

}  // namespace gpuprof
