#include "python/python_strings.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace gpuprof {
namespace {

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xc0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    out += char(0xe0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3f));
    out += char(0x80 | (cp & 0x3f));
  } else {
    out += char(0xf0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3f));
    out += char(0x80 | ((cp >> 6) & 0x3f));
    out += char(0x80 | (cp & 0x3f));
  }
}

}  // namespace

std::optional<std::string> read_python_str(const TargetMemoryReader& read, const PythonOffsets& off,
                                           uint64_t addr, uint64_t max_length) {
  if (!addr) return std::nullopt;
  uint8_t head[64];
  if (off.str_length + 8u > sizeof(head) || off.str_state + 4u > sizeof(head)) return std::nullopt;
  if (!read(addr, head, sizeof(head))) return std::nullopt;
  int64_t length;
  std::memcpy(&length, head + off.str_length, 8);
  uint32_t state;
  std::memcpy(&state, head + off.str_state, 4);
  if (length < 0 || uint64_t(length) > max_length) return std::nullopt;
  unsigned kind = (state >> 2) & 7;
  bool compact = (state >> 5) & 1;
  bool ascii = (state >> 6) & 1;
  if (!compact || (kind != 1 && kind != 2 && kind != 4)) return std::nullopt;
  uint64_t data = addr + (ascii ? off.str_ascii_data : off.str_compact_data);
  std::vector<uint8_t> raw(length * kind);
  if (!raw.empty() && !read(data, raw.data(), raw.size())) return std::nullopt;
  std::string out;
  if (ascii) {
    // Not ASCII after all: not a live str (freed memory read late).
    if (std::any_of(raw.begin(), raw.end(), [](uint8_t b) { return b >= 0x80; })) return std::nullopt;
    return std::string(raw.begin(), raw.end());
  }
  for (int64_t i = 0; i < length; ++i) {
    uint32_t cp = 0;
    if (kind == 1) cp = raw[i];
    else if (kind == 2) cp = raw[2 * i] | (raw[2 * i + 1] << 8);
    else std::memcpy(&cp, &raw[4 * i], 4);
    append_utf8(out, cp);
  }
  return out;
}

}  // namespace gpuprof
