// python_dicts.h: read dicts and instance attributes out of a CPython 3.11
// to 3.13 target's memory (docs/modules.md), never writing to it.
//
// A dict is a PyDictObject whose ma_keys table holds its entries in
// insertion order: (hash, key, value) for a general table, (key, value) for
// a table of str keys; a split table (an instance dict sharing its type's
// keys) keeps the keys in the type's ht_cached_keys and the values in an
// array of their own. An object's attributes are its __dict__, which a
// Py_TPFLAGS_MANAGED_DICT type keeps beside the object in a per-version
// form (PythonOffsets::ManagedDict). Everything read is checked: garbage
// (a freed object, a table changing under the reader) gives nullopt or
// fewer items, never a crash or an unbounded read.
#pragma once

#include "python/python_offsets.h"
#include "python/python_strings.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gpuprof {

// At most this many entries of one table are read (the first ones).
inline constexpr int64_t kMaxDictEntries = 4096;

enum class DictKeysKind : uint8_t { kGeneral = 0, kUnicode = 1, kSplit = 2 };

// The header of a PyDictKeysObject, checked: a kind CPython has, a table
// size of 8 to 2^32 slots, the index width CPython gives that size, and no
// more entries than the table can hold.
struct DictKeysHeader {
  uint8_t log2_size = 0;
  uint8_t log2_index_bytes = 0;
  DictKeysKind kind = DictKeysKind::kGeneral;
  int64_t nentries = 0;
};
std::optional<DictKeysHeader> parse_dict_keys_header(std::span<const uint8_t> bytes, const PythonOffsets& offsets);

// Where the entries start, from the keys object's address.
uint64_t dict_entries_offset(const DictKeysHeader& header, const PythonOffsets& offsets);
// Bytes per entry: 24 (hash, key, value) for a general table, 16 (key, value) otherwise.
size_t dict_entry_size(DictKeysKind kind);

struct PythonDictItem {
  uint64_t key = 0;
  uint64_t value = 0;  // 0 in a split table's entries (the values are apart)
};
// The entries in `bytes` (whole entries of `kind`), deleted ones (no key)
// left out.
std::vector<PythonDictItem> decode_dict_entries(std::span<const uint8_t> bytes, DictKeysKind kind);

// A user-space address an object can have: nonzero, 8-aligned, below 2^47.
bool plausible_object_address(uint64_t address);

class PythonDictReader {
 public:
  PythonDictReader(TargetMemoryReader read, const PythonOffsets& offsets);

  // The items of the dict (or dict subclass: OrderedDict) at dict, in its
  // table's order, values nonzero; nullopt when it is no readable dict.
  std::optional<std::vector<PythonDictItem>> dict_items(uint64_t dict);

  // ma_version_tag of the dict at dict: it changes with the dict.
  std::optional<uint64_t> dict_version(uint64_t dict);

  // The instance attributes of the object at obj (its __dict__ in whichever
  // form it has: managed, materialized or not, or at a type's positive
  // tp_dictoffset); nullopt when it has none that can be read.
  std::optional<std::vector<PythonDictItem>> instance_attributes(uint64_t obj);

  // The value of attribute `name` in obj's __dict__ (not its type's).
  std::optional<uint64_t> instance_attribute(uint64_t obj, std::string_view name);

  // The str at addr, when it is a str of at most max_length code points.
  std::optional<std::string> str(uint64_t addr, uint64_t max_length);

  // tp_flags of obj's type.
  std::optional<uint64_t> type_flags_of(uint64_t obj);

 private:
  bool read_u64(uint64_t address, uint64_t* value);
  std::optional<uint64_t> type_of(uint64_t obj);
  std::optional<uint64_t> type_flags(uint64_t type);
  // Entries of the keys object at keys; *header gets its header.
  std::optional<std::vector<PythonDictItem>> keys_entries(uint64_t keys, DictKeysHeader* header);
  // A split table: keys (kind split) and the values array at values_array;
  // capacity_at (0 = unknown) holds the array's capacity byte.
  std::optional<std::vector<PythonDictItem>> split_items(uint64_t keys, uint64_t values_array,
                                                         uint64_t capacity_at);
  std::optional<std::vector<PythonDictItem>> managed_attributes(uint64_t obj, uint64_t type, uint64_t flags);

  TargetMemoryReader read_;
  PythonOffsets off_;
};

}  // namespace gpuprof
