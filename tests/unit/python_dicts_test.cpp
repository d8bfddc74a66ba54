// The dict parsing of python/python_dicts.h on bytes and on a fake target
// memory built here (CPython 3.11 to 3.13 layouts, python_offsets.h):
// headers and entries decoded exactly, and garbage refused without a crash.
// The live interpreters are tests/unit/module_attributes_test.cpp's.
#include "python/python_dicts.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <map>
#include <vector>

namespace gpuprof {
namespace {

constexpr uint64_t kManagedDictFlag = 1 << 4, kHeapTypeFlag = 1 << 9, kInlineValuesFlag = 1 << 2;

// Regions of a pretend target; a read must lie inside one of them.
class FakeMemory {
 public:
  uint8_t* region(uint64_t base, size_t size) {
    auto& bytes = regions_[base];
    bytes.assign(size, 0);
    return bytes.data();
  }
  void put_u64(uint64_t address, uint64_t value) { std::memcpy(at(address), &value, 8); }
  void put_u8(uint64_t address, uint8_t value) { *at(address) = value; }
  TargetMemoryReader reader() {
    return [this](uint64_t address, void* buffer, size_t len) {
      const uint8_t* p = find(address, len);
      if (!p) return false;
      std::memcpy(buffer, p, len);
      return true;
    };
  }

 private:
  uint8_t* at(uint64_t address) {
    uint8_t* p = const_cast<uint8_t*>(find(address, 1));
    if (!p) throw std::logic_error("fake memory: nothing at that address");
    return p;
  }
  const uint8_t* find(uint64_t address, size_t len) const {
    auto it = regions_.upper_bound(address);
    if (it == regions_.begin()) return nullptr;
    --it;
    if (address - it->first + len > it->second.size()) return nullptr;
    return it->second.data() + (address - it->first);
  }
  std::map<uint64_t, std::vector<uint8_t>> regions_;
};

// A tiny CPython heap: a str type, a dict type, a heap class, str objects
// and dict key tables, laid out by `off`.
class FakeHeap {
 public:
  explicit FakeHeap(const PythonOffsets& off) : off_(off) {
    mem.region(kStrType, 512);
    mem.put_u64(kStrType + off.type_flags, 1ull << 28);
    mem.region(kDictType, 512);
    mem.put_u64(kDictType + off.type_flags, 1ull << 29);
    mem.region(kClass, 1024);
    mem.put_u64(kClass + off.type_flags, kManagedDictFlag | kHeapTypeFlag);
  }
  uint64_t str(const std::string& text) {
    // read_python_str reads a 64-byte head first.
    const uint64_t addr = next(std::max<size_t>(64, off_.str_ascii_data + text.size() + 1));
    mem.put_u64(addr + off_.object_type, kStrType);
    mem.put_u64(addr + off_.str_length, text.size());
    mem.put_u64(addr + off_.str_state, (1 << 2) | (1 << 5) | (1 << 6));  // kind 1, compact, ascii
    for (size_t i = 0; i < text.size(); ++i) mem.put_u8(addr + off_.str_ascii_data + i, text[i]);
    return addr;
  }
  // A table of 8 slots (index bytes 1) with these (key, value) entries.
  uint64_t keys(DictKeysKind kind, const std::vector<PythonDictItem>& entries) {
    const size_t entry = dict_entry_size(kind);
    const uint64_t addr = next(off_.keys_indices + 8 + 5 * entry);
    mem.put_u8(addr + off_.keys_log2_size, 3);
    mem.put_u8(addr + off_.keys_log2_index_bytes, 3);
    mem.put_u8(addr + off_.keys_kind, uint8_t(kind));
    mem.put_u64(addr + off_.keys_nentries, entries.size());
    const uint64_t first = addr + off_.keys_indices + 8;
    for (size_t i = 0; i < entries.size(); ++i) {
      const uint64_t e = first + i * entry + (kind == DictKeysKind::kGeneral ? 8 : 0);
      mem.put_u64(e, entries[i].key);
      mem.put_u64(e + 8, entries[i].value);
    }
    return addr;
  }
  uint64_t dict(uint64_t keys, uint64_t values = 0) {
    const uint64_t addr = next(48);
    mem.put_u64(addr + off_.object_type, kDictType);
    mem.put_u64(addr + off_.dict_keys, keys);
    mem.put_u64(addr + off_.dict_values, values);
    return addr;
  }
  // An instance of the heap class, with room for the managed words before
  // it and inline values after it; returns its address.
  uint64_t instance() {
    const uint64_t base = next(32 + 16 + 8 + 8 * 8);
    const uint64_t obj = base + 32;
    mem.put_u64(obj + off_.object_type, kClass);
    return obj;
  }
  uint64_t values(const std::vector<uint64_t>& values) {
    const uint64_t addr = next(off_.values_array + 8 * values.size());
    for (size_t i = 0; i < values.size(); ++i) mem.put_u64(addr + off_.values_array + 8 * i, values[i]);
    return addr;
  }

  FakeMemory mem;
  static constexpr uint64_t kStrType = 0x10000, kDictType = 0x11000, kClass = 0x12000;

 private:
  uint64_t next(size_t size) {
    const uint64_t addr = top_;
    mem.region(addr, size);
    top_ += (size + 0xff) & ~uint64_t{0xff};
    return addr;
  }
  PythonOffsets off_;
  uint64_t top_ = 0x100000;
};

PythonOffsets offsets(int minor) {
  if (minor < 13) return *python_offsets_for(3, minor);
  // What python_offsets_from_debug_offsets gives a 3.13 target
  // (python_runtime_test.cpp's DebugOffsets313 checks it on a live one).
  PythonOffsets o = *python_offsets_for(3, 12);
  o.str_ascii_data = 40;
  o.str_compact_data = 56;
  o.managed_dict = PythonOffsets::ManagedDict::kInlineValues;
  o.values_array = 8;
  o.values_capacity = 0;
  o.values_valid = 3;
  return o;
}

std::vector<uint8_t> header(uint8_t log2_size, uint8_t log2_index_bytes, uint8_t kind, int64_t nentries) {
  std::vector<uint8_t> b(32, 0);
  b[8] = log2_size;
  b[9] = log2_index_bytes;
  b[10] = kind;
  std::memcpy(&b[24], &nentries, 8);
  return b;
}

}  // namespace

TEST(PythonDicts, KeysHeadersCheckedAsCPythonMakesThem) {
  const PythonOffsets off = offsets(11);
  auto h = parse_dict_keys_header(header(3, 3, 1, 5), off);
  ASSERT_TRUE(h);
  EXPECT_EQ(h->kind, DictKeysKind::kUnicode);
  EXPECT_EQ(h->nentries, 5);
  EXPECT_EQ(dict_entries_offset(*h, off), 32u + 8);
  // Index bytes by table size: 1 below 2^8 slots, 2 below 2^16, 4 below 2^32.
  EXPECT_TRUE(parse_dict_keys_header(header(8, 9, 0, 170), off));
  EXPECT_TRUE(parse_dict_keys_header(header(16, 18, 2, 0), off));
  EXPECT_TRUE(parse_dict_keys_header(header(0, 0, 1, 0), off));  // the shared empty table
  EXPECT_FALSE(parse_dict_keys_header(header(8, 8, 0, 1), off));
  EXPECT_FALSE(parse_dict_keys_header(header(3, 3, 3, 1), off));  // no such kind
  EXPECT_FALSE(parse_dict_keys_header(header(3, 3, 1, 6), off));  // past 2/3 of 8 slots
  EXPECT_FALSE(parse_dict_keys_header(header(3, 3, 1, -1), off));
  EXPECT_FALSE(parse_dict_keys_header(header(33, 36, 0, 0), off));
  EXPECT_FALSE(parse_dict_keys_header(std::vector<uint8_t>(31, 0), off));  // cut short
}

TEST(PythonDicts, EntriesDecodedByKind) {
  const uint64_t general[] = {0x1234, 0x1000, 0x2000, 0x5678, 0, 0, 0x9abc, 0x3000, 0x4000};
  auto g = decode_dict_entries({reinterpret_cast<const uint8_t*>(general), sizeof(general)}, DictKeysKind::kGeneral);
  ASSERT_EQ(g.size(), 3u);
  EXPECT_EQ(g[0].key, 0x1000u);
  EXPECT_EQ(g[0].value, 0x2000u);
  EXPECT_EQ(g[1].key, 0u);  // deleted: left for the caller to skip
  EXPECT_EQ(g[2].value, 0x4000u);
  const uint64_t unicode[] = {0x1000, 0x2000, 0x3000, 0x4000, 0x5000};  // a half entry at the end
  auto u = decode_dict_entries({reinterpret_cast<const uint8_t*>(unicode), sizeof(unicode)}, DictKeysKind::kUnicode);
  ASSERT_EQ(u.size(), 2u);
  EXPECT_EQ(u[1].key, 0x3000u);
  EXPECT_EQ(u[1].value, 0x4000u);
}

TEST(PythonDicts, CombinedDictsGeneralAndUnicode) {
  const PythonOffsets off = offsets(11);
  FakeHeap heap(off);
  const uint64_t a = heap.str("conv1"), b = heap.str("bn1");
  const uint64_t unicode = heap.dict(heap.keys(DictKeysKind::kUnicode, {{a, 0x7000}, {0, 0}, {b, 0x7100}}));
  PythonDictReader reader(heap.mem.reader(), off);
  auto items = reader.dict_items(unicode);
  ASSERT_TRUE(items);
  ASSERT_EQ(items->size(), 2u);
  EXPECT_EQ((*items)[0].key, a);
  EXPECT_EQ((*items)[1].value, 0x7100u);
  EXPECT_EQ(reader.str((*items)[1].key, 16), "bn1");
  EXPECT_EQ(reader.str((*items)[0].key, 4), std::nullopt);  // longer than asked for
  const uint64_t general = heap.dict(heap.keys(DictKeysKind::kGeneral, {{a, 0x7000}}));
  ASSERT_TRUE(reader.dict_items(general));
  EXPECT_EQ(reader.dict_items(general)->at(0).value, 0x7000u);
  // A str is no dict, a dict is no str.
  EXPECT_EQ(reader.dict_items(a), std::nullopt);
  EXPECT_EQ(reader.str(general, 16), std::nullopt);
}

TEST(PythonDicts, GarbageIsRefused) {
  const PythonOffsets off = offsets(11);
  FakeHeap heap(off);
  PythonDictReader reader(heap.mem.reader(), off);
  const uint64_t keys = heap.keys(DictKeysKind::kUnicode, {{heap.str("x"), 0x7000}});
  heap.mem.put_u64(keys + off.keys_nentries, int64_t{1} << 40);
  EXPECT_EQ(reader.dict_items(heap.dict(keys)), std::nullopt);
  EXPECT_EQ(reader.dict_items(heap.dict(0x7ff000000000)), std::nullopt);  // keys unmapped
  EXPECT_EQ(reader.dict_items(heap.dict(keys + 4)), std::nullopt);        // keys unaligned
  // A combined dict may not point at split keys, nor a split one at combined keys.
  const uint64_t split_keys = heap.keys(DictKeysKind::kSplit, {{heap.str("x"), 0}});
  EXPECT_EQ(reader.dict_items(heap.dict(split_keys)), std::nullopt);
  const uint64_t unicode_keys = heap.keys(DictKeysKind::kUnicode, {{heap.str("x"), 0x7000}});
  EXPECT_EQ(reader.dict_items(heap.dict(unicode_keys, heap.values({0x7000}))), std::nullopt);
  EXPECT_EQ(reader.dict_items(heap.dict(split_keys, 0x7ff000000000)), std::nullopt);  // values unmapped
  // Entries whose pointers are no objects are left out.
  const uint64_t odd = heap.dict(heap.keys(DictKeysKind::kUnicode, {{0x1001, 0x7000}, {heap.str("y"), 3}}));
  ASSERT_TRUE(reader.dict_items(odd));
  EXPECT_TRUE(reader.dict_items(odd)->empty());
  EXPECT_EQ(reader.instance_attributes(0), std::nullopt);
  EXPECT_EQ(reader.instance_attributes(0x7ff000000000), std::nullopt);
}

// Each version's managed forms: the attribute found through the values
// (the type's cached keys) and through a dict.
class ManagedForms : public ::testing::TestWithParam<int> {};

TEST_P(ManagedForms, AttributeFoundInValuesAndInDict) {
  const PythonOffsets off = offsets(GetParam());
  FakeHeap heap(off);
  PythonDictReader reader(heap.mem.reader(), off);
  const uint64_t training = heap.str("training"), modules = heap.str("_modules");
  const uint64_t cached = heap.keys(DictKeysKind::kSplit, {{training, 0}, {modules, 0}});
  heap.mem.put_u64(FakeHeap::kClass + off.heap_type_cached_keys, cached);

  // Values apart from any dict.
  const uint64_t with_values = heap.instance();
  const std::vector<uint64_t> vals = {0x7000, 0x7100};
  switch (off.managed_dict) {
    case PythonOffsets::ManagedDict::kValuesBeforeDict:
      heap.mem.put_u64(with_values - 32, heap.values(vals));
      break;
    case PythonOffsets::ManagedDict::kTaggedDictOrValues:
      heap.mem.put_u64(with_values - 24, heap.values(vals) - 1);
      break;
    default:
      heap.mem.put_u64(FakeHeap::kClass + off.type_flags, kManagedDictFlag | kHeapTypeFlag | kInlineValuesFlag);
      heap.mem.put_u8(with_values + 16 + off.values_capacity, 2);
      heap.mem.put_u8(with_values + 16 + off.values_valid, 1);
      heap.mem.put_u64(with_values + 16 + off.values_array, vals[0]);
      heap.mem.put_u64(with_values + 16 + off.values_array + 8, vals[1]);
      break;
  }
  EXPECT_EQ(reader.instance_attribute(with_values, "_modules"), 0x7100u);
  EXPECT_EQ(reader.instance_attribute(with_values, "training"), 0x7000u);
  EXPECT_EQ(reader.instance_attribute(with_values, "_parameters"), std::nullopt);

  // A materialized dict, combined.
  const uint64_t with_dict = heap.instance();
  heap.mem.put_u64(with_dict - 24, heap.dict(heap.keys(DictKeysKind::kUnicode, {{modules, 0x7200}})));
  EXPECT_EQ(reader.instance_attribute(with_dict, "_modules"), 0x7200u);
  if (off.managed_dict == PythonOffsets::ManagedDict::kInlineValues) {
    // 3.13: inline values no longer valid and no dict: nothing to trust.
    heap.mem.put_u64(with_dict - 24, 0);
    EXPECT_EQ(reader.instance_attribute(with_dict, "_modules"), std::nullopt);
  }
}

INSTANTIATE_TEST_SUITE_P(Versions, ManagedForms, testing::Values(11, 12, 13),
                         [](const testing::TestParamInfo<int>& info) { return "Python3" + std::to_string(info.param); });

}  // namespace gpuprof
