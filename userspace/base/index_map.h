// index_map.h: a hash map from 64-bit keys (event indices) to 32-bit values,
// stored flat: open addressing, linear probing, erase by shifting the
// probe run back (no tombstones), so its memory follows the most keys held
// at once, never the keys ever added.
//
// Why not std::unordered_map: a streamed read of a --with-stack recording
// adds, finds and erases one entry stack pair per op call
// (analyze/entry_stack_pairs.h), and the node map's allocation, free and
// pointer chasing took about a seventh of the main thread
// (docs/report.md, "Memory").
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace gpuprof {

class IndexMap {
 public:
  // Inserts key -> value; a key already held keeps its value (as emplace).
  void emplace(uint64_t key, uint32_t value) {
    if (key == kEmpty) {
      if (!empty_key_value_) empty_key_value_ = value;
      return;
    }
    if ((size_ + 1) * 2 > slots_.size()) grow();
    size_t i = home(key);
    while (slots_[i].key != kEmpty) {
      if (slots_[i].key == key) return;
      i = (i + 1) & mask_;
    }
    slots_[i] = {key, value};
    size_++;
  }

  std::optional<uint32_t> find(uint64_t key) const {
    if (key == kEmpty) return empty_key_value_;
    if (size_ == 0) return std::nullopt;
    for (size_t i = home(key);; i = (i + 1) & mask_) {
      if (slots_[i].key == key) return slots_[i].value;
      if (slots_[i].key == kEmpty) return std::nullopt;
    }
  }

  void erase(uint64_t key) { take(key); }
  // find() and erase() in one probe: key's value, no longer held.
  std::optional<uint32_t> take(uint64_t key) {
    uint32_t value;
    if (!take(key, value)) return std::nullopt;
    return value;
  }
  // The same into `value`, false when key is not held: a caller that keeps
  // the value in place of std::optional's pieces (GCC builds the optional
  // from a 4-byte and a 1-byte store and reads it back whole, which stalls
  // store forwarding once per call of a streamed read).
  bool take(uint64_t key, uint32_t& value) {
    if (key == kEmpty) {
      if (!empty_key_value_) return false;
      value = *std::exchange(empty_key_value_, std::nullopt);
      return true;
    }
    if (size_ == 0) return false;
    size_t hole = home(key);
    while (slots_[hole].key != key) {
      if (slots_[hole].key == kEmpty) return false;
      hole = (hole + 1) & mask_;
    }
    value = slots_[hole].value;
    // Shift later entries of the run back into the hole when their home
    // does not lie (cyclically) between the hole and them.
    for (size_t next = (hole + 1) & mask_; slots_[next].key != kEmpty; next = (next + 1) & mask_) {
      const size_t want = home(slots_[next].key);
      const bool stays = hole <= next ? (hole < want && want <= next) : (hole < want || want <= next);
      if (stays) continue;
      slots_[hole] = slots_[next];
      hole = next;
    }
    slots_[hole].key = kEmpty;
    size_--;
    return true;
  }
  size_t size() const { return size_ + (empty_key_value_ ? 1 : 0); }
  size_t capacity() const { return slots_.size(); }

 private:
  // The one key a slot cannot hold marks empty slots; a corrupt file can
  // still name it, so its value is kept aside.
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  struct Slot {
    uint64_t key = kEmpty;
    uint32_t value = 0;
  };

  // Fibonacci hashing: event indices come in runs, which the multiply
  // spreads over the top bits.
  size_t home(uint64_t key) const { return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_); }

  void grow() {
    std::vector<Slot> old = std::move(slots_);
    const size_t capacity = old.empty() ? 64 : old.size() * 2;
    slots_.assign(capacity, Slot{});
    mask_ = capacity - 1;
    shift_ = 64 - static_cast<unsigned>(__builtin_ctzll(capacity));
    size_ = 0;
    for (const Slot& slot : old)
      if (slot.key != kEmpty) emplace(slot.key, slot.value);
  }

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  unsigned shift_ = 64;
  size_t size_ = 0;  // keys in slots_
  std::optional<uint32_t> empty_key_value_;
};

}  // namespace gpuprof
