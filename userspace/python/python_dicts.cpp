#include "python/python_dicts.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace gpuprof {
namespace {

// Py_TPFLAGS_* bits (Include/object.h, the same from 3.11 to 3.13).
constexpr uint64_t kTypeInlineValues = 1ull << 2;  // 3.13
constexpr uint64_t kTypeManagedDict = 1ull << 4;
constexpr uint64_t kTypeHeapType = 1ull << 9;
constexpr uint64_t kTypeUnicodeSubclass = 1ull << 28;
constexpr uint64_t kTypeDictSubclass = 1ull << 29;
// sizeof(PyObject): 3.13's inline values follow the object header.
constexpr uint64_t kObjectHeaderSize = 16;
// The managed dict word lies 3 words before the object (3.11 to 3.13's
// MANAGED_DICT_OFFSET), 3.11's values pointer 4 words before it.
constexpr uint64_t kManagedDictBefore = 24;
constexpr uint64_t kManagedValuesBefore311 = 32;
// A positive tp_dictoffset larger than this is no object's layout.
constexpr int64_t kMaxDictOffset = 1 << 16;

}  // namespace

std::optional<DictKeysHeader> parse_dict_keys_header(std::span<const uint8_t> bytes, const PythonOffsets& off) {
  const size_t need = std::max({size_t{off.keys_log2_size} + 1, size_t{off.keys_log2_index_bytes} + 1,
                                size_t{off.keys_kind} + 1, size_t{off.keys_nentries} + 8});
  if (bytes.size() < need) return std::nullopt;
  DictKeysHeader h;
  h.log2_size = bytes[off.keys_log2_size];
  h.log2_index_bytes = bytes[off.keys_log2_index_bytes];
  const uint8_t kind = bytes[off.keys_kind];
  std::memcpy(&h.nentries, bytes.data() + off.keys_nentries, 8);
  if (kind > uint8_t(DictKeysKind::kSplit) || h.log2_size > 32) return std::nullopt;
  h.kind = DictKeysKind(kind);
  // The index width CPython's new_keys_object gives a table of this size
  // (1, 2, 4 or 8 bytes; the shared empty table has size 1 and width 1).
  const int width_log2 = h.log2_size < 8 ? 0 : h.log2_size < 16 ? 1 : h.log2_size < 32 ? 2 : 3;
  if (h.log2_index_bytes != h.log2_size + width_log2) return std::nullopt;
  // USABLE_FRACTION: at most 2/3 of the slots hold entries.
  const int64_t usable = ((int64_t{1} << h.log2_size) << 1) / 3;
  if (h.nentries < 0 || h.nentries > usable) return std::nullopt;
  return h;
}

uint64_t dict_entries_offset(const DictKeysHeader& header, const PythonOffsets& off) {
  return off.keys_indices + (uint64_t{1} << header.log2_index_bytes);
}

size_t dict_entry_size(DictKeysKind kind) { return kind == DictKeysKind::kGeneral ? 24 : 16; }

std::vector<PythonDictItem> decode_dict_entries(std::span<const uint8_t> bytes, DictKeysKind kind) {
  const size_t size = dict_entry_size(kind);
  // A general entry starts with its hash: key and value follow it.
  const size_t key_at = kind == DictKeysKind::kGeneral ? 8 : 0;
  std::vector<PythonDictItem> out;
  out.reserve(bytes.size() / size);
  for (size_t at = 0; at + size <= bytes.size(); at += size) {
    PythonDictItem item;
    std::memcpy(&item.key, bytes.data() + at + key_at, 8);
    std::memcpy(&item.value, bytes.data() + at + key_at + 8, 8);
    out.push_back(item);
  }
  return out;
}

bool plausible_object_address(uint64_t address) {
  return address != 0 && address % 8 == 0 && address < (uint64_t{1} << 47);
}

PythonDictReader::PythonDictReader(TargetMemoryReader read, const PythonOffsets& offsets)
    : read_(std::move(read)), off_(offsets) {}

bool PythonDictReader::read_u64(uint64_t address, uint64_t* value) { return read_(address, value, 8); }

std::optional<uint64_t> PythonDictReader::type_of(uint64_t obj) {
  uint64_t type = 0;
  if (!plausible_object_address(obj) || !read_u64(obj + off_.object_type, &type) ||
      !plausible_object_address(type))
    return std::nullopt;
  return type;
}

std::optional<uint64_t> PythonDictReader::type_flags(uint64_t type) {
  uint64_t flags = 0;
  if (!read_u64(type + off_.type_flags, &flags)) return std::nullopt;
  return flags;
}

std::optional<uint64_t> PythonDictReader::type_flags_of(uint64_t obj) {
  auto type = type_of(obj);
  return type ? type_flags(*type) : std::nullopt;
}

std::optional<std::string> PythonDictReader::str(uint64_t addr, uint64_t max_length) {
  auto flags = type_flags_of(addr);
  if (!flags || !(*flags & kTypeUnicodeSubclass)) return std::nullopt;
  return read_python_str(read_, off_, addr, max_length);
}

std::optional<std::vector<PythonDictItem>> PythonDictReader::keys_entries(uint64_t keys, DictKeysHeader* header) {
  if (!plausible_object_address(keys)) return std::nullopt;
  std::vector<uint8_t> head(off_.keys_indices);
  if (!read_(keys, head.data(), head.size())) return std::nullopt;
  auto h = parse_dict_keys_header(head, off_);
  if (!h) return std::nullopt;
  *header = *h;
  const int64_t count = std::min(h->nentries, kMaxDictEntries);
  std::vector<uint8_t> bytes(count * dict_entry_size(h->kind));
  if (!bytes.empty() && !read_(keys + dict_entries_offset(*h, off_), bytes.data(), bytes.size()))
    return std::nullopt;
  return decode_dict_entries(bytes, h->kind);
}

std::optional<std::vector<PythonDictItem>> PythonDictReader::split_items(uint64_t keys, uint64_t values_array,
                                                                         uint64_t capacity_at) {
  DictKeysHeader header;
  auto entries = keys_entries(keys, &header);
  if (!entries || header.kind != DictKeysKind::kSplit || !plausible_object_address(values_array))
    return std::nullopt;
  // 3.13 says how many values the array holds; before it, the array was
  // made for every entry the shared keys can take (dk_nentries + dk_usable,
  // a constant of the keys object), so the first dk_nentries are there.
  size_t count = entries->size();
  if (capacity_at) {
    uint8_t capacity = 0;
    if (!read_(capacity_at, &capacity, 1)) return std::nullopt;
    count = std::min<size_t>(count, capacity);
  }
  std::vector<uint64_t> values(count);
  if (count && !read_(values_array, values.data(), count * 8)) return std::nullopt;
  std::vector<PythonDictItem> out;
  for (size_t i = 0; i < count; ++i) {
    // An attribute this object never had (or deleted) has no value.
    if (plausible_object_address((*entries)[i].key) && plausible_object_address(values[i]))
      out.push_back({(*entries)[i].key, values[i]});
  }
  return out;
}

std::optional<std::vector<PythonDictItem>> PythonDictReader::dict_items(uint64_t dict) {
  auto flags = type_flags_of(dict);
  if (!flags || !(*flags & kTypeDictSubclass)) return std::nullopt;
  uint64_t keys = 0, values = 0;
  if (!read_u64(dict + off_.dict_keys, &keys) || !read_u64(dict + off_.dict_values, &values)) return std::nullopt;
  if (values) {
    const uint64_t capacity_at = off_.values_capacity == PythonOffsets::kNoField ? 0 : values + off_.values_capacity;
    return split_items(keys, values + off_.values_array, capacity_at);
  }
  DictKeysHeader header;
  auto entries = keys_entries(keys, &header);
  if (!entries || header.kind == DictKeysKind::kSplit) return std::nullopt;
  std::erase_if(*entries, [](const PythonDictItem& item) {
    return !plausible_object_address(item.key) || !plausible_object_address(item.value);
  });
  return entries;
}

std::optional<uint64_t> PythonDictReader::dict_version(uint64_t dict) {
  uint64_t version = 0;
  if (!plausible_object_address(dict) || !read_u64(dict + off_.dict_version, &version)) return std::nullopt;
  return version;
}

std::optional<std::vector<PythonDictItem>> PythonDictReader::managed_attributes(uint64_t obj, uint64_t type,
                                                                               uint64_t flags) {
  using Layout = PythonOffsets::ManagedDict;
  if (off_.managed_dict == Layout::kNone || obj < kManagedValuesBefore311 || !(flags & kTypeHeapType))
    return std::nullopt;
  // A type without instances whose values are apart has no cached keys
  // (nullptr): split_items refuses it.
  auto cached_keys = [&]() -> uint64_t {
    uint64_t keys = 0;
    return read_u64(type + off_.heap_type_cached_keys, &keys) ? keys : 0;
  };
  uint64_t word = 0;
  if (!read_u64(obj - kManagedDictBefore, &word)) return std::nullopt;
  switch (off_.managed_dict) {
    case Layout::kValuesBeforeDict: {
      uint64_t values = 0;
      if (!read_u64(obj - kManagedValuesBefore311, &values)) return std::nullopt;
      if (values) return split_items(cached_keys(), values + off_.values_array, 0);
      break;
    }
    case Layout::kTaggedDictOrValues:
      if (word & 1) return split_items(cached_keys(), word + 1 + off_.values_array, 0);
      break;
    case Layout::kInlineValues:
      if (!word && (flags & kTypeInlineValues)) {
        const uint64_t values = obj + kObjectHeaderSize;
        uint8_t valid = 0;
        if (off_.values_valid == PythonOffsets::kNoField || !read_(values + off_.values_valid, &valid, 1) || !valid)
          return std::nullopt;
        return split_items(cached_keys(), values + off_.values_array, values + off_.values_capacity);
      }
      break;
    case Layout::kNone:
      return std::nullopt;
  }
  if (!word) return std::vector<PythonDictItem>{};  // no attribute set yet
  return dict_items(word);
}

std::optional<std::vector<PythonDictItem>> PythonDictReader::instance_attributes(uint64_t obj) {
  auto type = type_of(obj);
  if (!type) return std::nullopt;
  auto flags = type_flags(*type);
  if (!flags) return std::nullopt;
  if (*flags & kTypeManagedDict) return managed_attributes(obj, *type, *flags);
  int64_t dictoffset = 0;
  if (!read_(*type + off_.type_dictoffset, &dictoffset, 8) || dictoffset <= 0 || dictoffset > kMaxDictOffset)
    return std::nullopt;
  uint64_t dict = 0;
  if (!read_u64(obj + dictoffset, &dict)) return std::nullopt;
  if (!dict) return std::vector<PythonDictItem>{};
  return dict_items(dict);
}

std::optional<uint64_t> PythonDictReader::instance_attribute(uint64_t obj, std::string_view name) {
  auto items = instance_attributes(obj);
  if (!items) return std::nullopt;
  for (const PythonDictItem& item : *items) {
    if (str(item.key, name.size()) == name) return item.value;
  }
  return std::nullopt;
}

}  // namespace gpuprof
