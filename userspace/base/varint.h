// varint.h: LEB128 varints and zigzag, the compact integers of the record
// format's packed events (record/packed_events.h), of the streamed
// trace's spill files (output/streamed_chrome_trace.h) and of protobuf
// (output/protobuf_writer.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace gpuprof {

// Signed values as unsigned ones, small magnitudes staying small.
inline uint64_t zigzag(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); }
inline int64_t unzigzag(uint64_t v) { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }

// Appends v, 7 bits a byte, lowest first; out is any container of bytes
// with push_back (std::vector<uint8_t>, std::string).
template <typename Bytes>
void append_varint(Bytes& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<typename Bytes::value_type>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<typename Bytes::value_type>(v));
}

// Writes v as append_varint does at p, which has room for 10 bytes;
// returns the end of what it wrote (for packing a record whole before one
// append).
template <typename Byte>
Byte* put_varint(Byte* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<Byte>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<Byte>(v);
  return p;
}

enum class VarintRead { ok, truncated, overflow };

// Reads the varint at bytes[pos], moving pos past what it read; Byte is
// uint8_t or char.
template <typename Byte>
VarintRead read_varint(std::span<const Byte> bytes, size_t& pos, uint64_t& v) {
  // Most values (op ids, flags, small deltas) fit one byte.
  if (pos < bytes.size() && !(static_cast<uint8_t>(bytes[pos]) & 0x80)) {
    v = static_cast<uint8_t>(bytes[pos++]);
    return VarintRead::ok;
  }
  v = 0;
  for (int shift = 0;; shift += 7) {
    if (pos >= bytes.size()) return VarintRead::truncated;
    const auto b = static_cast<uint8_t>(bytes[pos++]);
    if (shift == 63 && b > 1) return VarintRead::overflow;  // more than 64 bits (or a 64th continuation)
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) return VarintRead::ok;
  }
}

}  // namespace gpuprof
