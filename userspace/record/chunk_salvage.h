// chunk_salvage.h: reading on past a corrupt chunk (record_file.h, "Corrupt
// chunks"; docs/record-file.md).
//
// A lost chunk leaves two kinds of hole that the chunks after it may point
// into: items counted across the file (events, samples), which later chunks
// name by their index among all of them (ENTRY_SHAPES, ENTRY_STACKS,
// SAMPLE_KERNEL_STACKS), and dictionaries numbered in order of definition
// (frames, stacks, kernel names, ops, shapes), which later chunks name by id.
// Salvage keeps what the reader needs to place the first (FileItems) and to
// fill the second with placeholders (LostIds), and says what each lost chunk
// held.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "record/record_file.h"
#include "record/recording.h"

namespace gpuprof {

// Items a file counts across its chunks (events, samples), some of them in
// chunks that were lost.
class FileItems {
 public:
  void read(uint64_t n) { total_ += n; }
  // A lost chunk held n items.
  void lose(uint64_t n);
  // A lost chunk held an unknown number of them: no later index can be placed.
  void lose_uncounted() {
    if (!uncounted_) uncounted_from_ = awaiting_ ? awaiting_from_ : total_;
    uncounted_ = true;
    awaiting_ = false;  // the count it awaited is lost with the rest
  }
  // A lost chunk held items that the next chunk of them counts: its first
  // index (OP_EVENTS' first_event) says how many, given to resume(). Until
  // then every index from here on names a lost item.
  void lose_until_next() {
    if (!awaiting_) awaiting_from_ = total_;
    awaiting_ = true;
  }
  bool awaiting_first() const { return awaiting_; }
  // A chunk whose first item has index `first`: the items of the chunks lost
  // since the last read one are first - total(). False when first cannot be
  // (below total(), or above it with nothing lost).
  bool resume(uint64_t first);
  // Items of the file so far, read or lost (an index names one when below it).
  uint64_t total() const { return total_; }
  // False for an index at or after an uncounted loss: what it names is unknown.
  bool placeable(uint64_t index) const { return !uncounted_ || index < uncounted_from_; }
  // The item at `index` among the file's as an index among those read;
  // nullopt when it was in a lost chunk (or after one whose count is
  // awaited). index < total() or awaited, placeable.
  std::optional<uint64_t> kept(uint64_t index) const {
    if (gaps_.empty() && !awaiting_) return index;  // nothing lost, the rule: asked once per pair
    return kept_past_losses(index);
  }
  // Whether `index` names an item of the file so far: below total(), or in
  // the lost chunks whose count is awaited.
  bool named(uint64_t index) const { return index < total_ || awaiting_; }

 private:
  std::optional<uint64_t> kept_past_losses(uint64_t index) const;
  struct Gap {
    uint64_t start, count, lost_before;  // lost_before: items lost before start
  };
  std::vector<Gap> gaps_;  // in file order
  uint64_t total_ = 0, lost_ = 0, uncounted_from_ = 0, awaiting_from_ = 0;
  bool uncounted_ = false, awaiting_ = false;
};

// A dictionary numbered in order of definition (ids from 0, each chunk's
// first_id the number defined before it), some of whose chunks were lost:
// the ids they may have defined read as placeholders.
template <typename T>
class LostIds {
 public:
  explicit LostIds(T placeholder) : placeholder_(std::move(placeholder)) {}
  // A lost chunk could have defined up to `most` more entries (its payload
  // bytes over the smallest entry's: memory stays proportional to the file).
  void lose(uint64_t most) { room_ = most > UINT64_MAX - room_ ? UINT64_MAX : room_ + most; }
  // Whether `id` names an entry of dict, filling placeholders up to it when
  // a lost chunk may have defined it.
  bool reach(std::vector<T>& dict, uint64_t id) {
    if (id < dict.size()) return true;
    if (id - dict.size() >= room_) return false;
    room_ -= id + 1 - dict.size();
    fill(dict, id + 1);
    return true;
  }
  // A chunk of the dictionary whose first id is first_id: the ids before it
  // that are not defined were the lost chunks'. False when it cannot be.
  bool resume(std::vector<T>& dict, uint64_t first_id) {
    if (first_id < dict.size() || first_id - dict.size() > room_) return false;
    if (first_id > dict.size()) fill(dict, first_id);
    room_ = 0;  // every lost chunk of it came before this one
    return true;
  }
  // The placeholders filled in, as [begin, end) ranges of ids.
  const std::vector<std::pair<uint64_t, uint64_t>>& filled() const { return filled_; }

 private:
  void fill(std::vector<T>& dict, uint64_t end) {
    filled_.emplace_back(dict.size(), end);
    dict.resize(end, placeholder_);
  }
  T placeholder_;
  uint64_t room_ = 0;
  std::vector<std::pair<uint64_t, uint64_t>> filled_;
};

// The placeholders of lost dictionary entries, as outputs print them.
inline constexpr const char* kLostFrame = "[lost frame]";
inline constexpr const char* kLostStack = "[lost stack]";
inline constexpr const char* kLostKernelName = "[lost kernel name]";
inline constexpr const char* kLostOp = "[lost op]";

// What the reader knows of the chunks it lost so far.
struct Salvage {
  FileItems events, samples;
  LostIds<std::string> frames{kLostFrame}, launch_names{kLostKernelName};
  LostIds<std::vector<uint32_t>> stacks{{}};  // made one [lost stack] frame by finish()
  LostIds<OpInfo> ops{OpInfo{.name = kLostOp, .overload = "", .symbol = ""}};
  // SHAPES chunks carry no first id: after one is lost, no later shape id
  // can be placed, and entry shapes naming ids from here on are dropped.
  uint64_t shapes_from = UINT64_MAX;
  bool stats = false;  // the STATS chunk was lost (an END may follow)
  bool end = false;    // the END chunk was lost

  // Takes the loss of a chunk of `type` (nullopt: its header is damaged and
  // what it was cannot be told) whose payload was payload_bytes long, read
  // after the chunks that made `rec`; raw_bytes is the size its header gives
  // the payload before compression (chunk_compression.h), nullopt for a
  // chunk stored as it is. Returns what it held, for its line ("2048
  // events").
  std::string lose(std::optional<ChunkType> type, uint64_t payload_bytes, std::optional<uint64_t> raw_bytes,
                   const Recording& rec);
  // After the last chunk: the placeholder stacks become one "[lost stack]"
  // frame, added after every frame defined.
  void finish(Recording& rec) const;
};

}  // namespace gpuprof
