#include "python/python_code.h"

#include "python/python_strings.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

namespace gpuprof {
namespace {

constexpr uint64_t kMaxString = 4096;
constexpr uint64_t kMaxLinetable = 1 << 20;

struct Reader {
  std::span<const uint8_t> t;
  size_t pos = 0;
  bool ok = true;
  uint8_t byte() {
    if (pos >= t.size()) {
      ok = false;
      return 0;
    }
    return t[pos++];
  }
  uint32_t varint() {
    uint32_t b = byte();
    uint32_t val = b & 63;
    int shift = 0;
    while (ok && (b & 64)) {
      b = byte();
      shift += 6;
      if (shift > 30) {
        ok = false;
        break;
      }
      val |= (b & 63) << shift;
    }
    return val;
  }
  int32_t svarint() {
    uint32_t u = varint();
    return (u & 1) ? -static_cast<int32_t>(u >> 1) : static_cast<int32_t>(u >> 1);
  }
};

}  // namespace

int python_line_for_index(std::span<const uint8_t> linetable, int firstlineno, int64_t index) {
  if (index < 0) return firstlineno;
  Reader r{linetable};
  // int64: the deltas come from the target's memory, and a corrupt table
  // (or one read while it changed) can sum past an int (found by
  // tests/fuzz/symbol_parsers_fuzz); such a line is no line.
  int64_t line = firstlineno;
  int64_t start = 0;
  while (r.pos < linetable.size()) {
    uint8_t first = r.byte();
    if (!(first & 0x80)) return -1;  // lost sync: not an entry start
    int code = (first >> 3) & 15;
    int64_t length = (first & 7) + 1;
    bool has_line = true;
    if (code == 15) {  // no location
      has_line = false;
    } else if (code == 14) {  // long form
      line += r.svarint();
      r.varint();  // end line delta
      r.varint();  // column + 1
      r.varint();  // end column + 1
    } else if (code == 13) {  // no column
      line += r.svarint();
    } else if (code >= 10) {  // one-line form
      line += code - 10;
      r.byte();
      r.byte();
    } else {  // short form
      r.byte();
    }
    if (!r.ok || line < INT32_MIN || line > INT32_MAX) return -1;
    if (index >= start && index < start + length) return has_line ? static_cast<int>(line) : -1;
    start += length;
  }
  return -1;
}

PythonCodeResolver::PythonCodeResolver(int pid, const PythonOffsets& offsets)
    : pid_(pid), off_(offsets) {}

std::optional<std::string> PythonCodeResolver::read_str(uint64_t addr) {
  const TargetMemoryReader read = [this](uint64_t address, void* buffer, size_t len) {
    return read_target_memory(pid_, address, buffer, len);
  };
  return read_python_str(read, off_, addr, kMaxString);
}

std::optional<std::string> PythonCodeResolver::read_bytes(uint64_t addr) {
  if (!addr) return std::nullopt;
  int64_t size;
  if (!read_target_memory(pid_, addr + off_.bytes_size, &size, 8)) return std::nullopt;
  if (size < 0 || uint64_t(size) > kMaxLinetable) return std::nullopt;
  std::string out(size, '\0');
  if (!read_target_memory(pid_, addr + off_.bytes_data, out.data(), out.size())) return std::nullopt;
  return out;
}

// co_firstlineno and the co_filename .. co_linetable pointers, one read.
std::optional<std::string> PythonCodeResolver::read_identity(uint64_t code_addr) {
  const uint64_t first = std::min({uint64_t{off_.code_firstlineno}, uint64_t{off_.code_filename},
                                    uint64_t{off_.code_name}, uint64_t{off_.code_qualname},
                                    uint64_t{off_.code_linetable}});
  const uint64_t end = std::max({off_.code_firstlineno + 4ull, off_.code_filename + 8ull,
                                  off_.code_name + 8ull, off_.code_qualname + 8ull,
                                  off_.code_linetable + 8ull});
  std::string bytes(end - first, '\0');
  if (!read_target_memory(pid_, code_addr + first, bytes.data(), bytes.size())) return std::nullopt;
  return bytes;
}

const PythonCodeInfo* PythonCodeResolver::code(uint64_t code_addr) {
  if (auto it = cache_.find(code_addr); it != cache_.end()) {
    if (it->second.checked_epoch == epoch_) return &it->second.info;
    if (read_identity(code_addr) == it->second.identity) {
      it->second.checked_epoch = epoch_;
      return &it->second.info;
    }
    cache_.erase(it);  // freed, or another code object now: resolve again
  }
  auto identity = read_identity(code_addr);
  if (!identity) return nullptr;
  uint64_t p[4];  // co_filename, co_name, co_qualname, co_linetable
  if (!read_target_memory(pid_, code_addr + off_.code_filename, &p[0], 8) ||
      !read_target_memory(pid_, code_addr + off_.code_name, &p[1], 8) ||
      !read_target_memory(pid_, code_addr + off_.code_qualname, &p[2], 8) ||
      !read_target_memory(pid_, code_addr + off_.code_linetable, &p[3], 8))
    return nullptr;
  int32_t firstlineno;
  if (!read_target_memory(pid_, code_addr + off_.code_firstlineno, &firstlineno, 4)) return nullptr;
  auto filename = read_str(p[0]);
  auto name = read_str(p[1]);
  auto qualname = read_str(p[2]);
  auto linetable = read_bytes(p[3]);
  if (!filename || !name || !linetable) return nullptr;
  PythonCodeInfo info{*filename, *name, qualname ? *qualname : *name, firstlineno, *linetable};
  Cached entry{std::move(info), std::move(*identity), epoch_};
  return &cache_.insert_or_assign(code_addr, std::move(entry)).first->second.info;
}

std::optional<int> PythonCodeResolver::line(uint64_t code_addr, uint64_t instr_addr) {
  const PythonCodeInfo* info = code(code_addr);
  if (!info) return std::nullopt;
  int64_t index = (static_cast<int64_t>(instr_addr) -
                   static_cast<int64_t>(code_addr + off_.code_bytecode)) / 2;
  if (instr_addr < code_addr + off_.code_bytecode) index = -1;
  std::span<const uint8_t> table(reinterpret_cast<const uint8_t*>(info->linetable.data()),
                                 info->linetable.size());
  return python_line_for_index(table, info->firstlineno, index);
}

std::optional<std::string> PythonCodeResolver::frame(uint64_t code_addr, uint64_t instr_addr) {
  auto l = line(code_addr, instr_addr);
  if (!l) return std::nullopt;
  const PythonCodeInfo* info = code(code_addr);
  return info->filename + "(" + std::to_string(*l) + "): " + info->name;
}

}  // namespace gpuprof
