// varint.h: LEB128 varints and zigzag, the compact integers of the record
// format's packed events (record/packed_events.h) and of the streamed
// trace's spill files (output/streamed_chrome_trace.h).
#pragma once

#include <cstdint>
#include <optional>
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

}  // namespace gpuprof
