// record_samples.h: the sample recording data of the record-file unit tests
// (record_file_test.cpp, corrupt_chunks_test.cpp): a process, clock, op
// table and stats, valid events, and reading a file's bytes.
#pragma once

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <span>
#include <string>
#include <vector>

#include "record/packed_events.h"
#include "record/record_file.h"
#include "record/recording.h"
#include "error_strings.h"

namespace gpuprof::record_samples {

inline ProcessInfo sample_process() {
  return {4242,
          "python3",
          "python3 train.py --epochs 1",
          "/opt/torch/lib/libtorch_cpu.so",
          "0123456789abcdef",
          "gpu-node-7"};
}
inline ClockInfo sample_clock() { return {1'000'000'000ULL, 1'700'000'000'000'000'000ULL, 0}; }
inline std::vector<OpInfo> sample_ops() {
  return {{"aten::add", "Tensor", "_ZN2at4_ops10add_Tensor4callE", 3, 2},
          {"aten::mm", "", "_ZN2at4_ops2mm4callE", 2, 2},
          {"aten::conv2d", "", "_ZN2at4_ops6conv2d4callE", -1, 0}};
}
inline RecordStats sample_stats() {
  RecordStats s;
  s.events_recorded = 13;
  s.events_lost = 2;
  s.entry_probes = 3;
  s.exit_probes = 5;
  s.ops_without_exit = 1;
  s.mem_events_lost = 11;
  s.shapes_unknown = 17;
  s.samples_lost = 19;
  s.tensor_layout = "ndim@16 sizes@24 numel@64 inline 5";
  s.stop_reason = "signal";
  return s;
}

// n valid events, distinct per `seed`: entries, exits and catches.
inline std::vector<gp_event> make_events(size_t n, uint32_t seed = 0) {
  std::vector<gp_event> v(n);
  for (size_t i = 0; i < n; ++i) {
    gp_event& e = v[i];
    e.ts_ns = 5'000'000'000ULL + seed * 1000003ULL + i * 17;
    e.sp = 0x7ffd00000000ULL + i * 8;
    e.tid = 100 + seed;
    e.pid = 4242;
    e.kind = static_cast<uint16_t>(i % 3 + 1);
    e.op_id = e.kind == GP_EV_CATCH ? GP_NO_OP : static_cast<uint32_t>((i + seed) % 3);
    e.payload_bytes = 0;
  }
  return v;
}

inline bool same_events(const std::vector<gp_event>& a, const std::vector<gp_event>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(gp_event)) == 0);
}

inline std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// One chunk of a well-formed record file: where it begins, its size with
// its header, and its type.
struct ChunkSpan {
  size_t offset, bytes;
  uint32_t type;
};
// The chunks of a well-formed record file, in order (read from their
// headers: the file header is 16 bytes, a chunk header holds type and
// payload length first).
inline std::vector<ChunkSpan> chunks_of(const std::vector<uint8_t>& file) {
  std::vector<ChunkSpan> chunks;
  for (size_t off = 16; off + 16 <= file.size();) {
    uint32_t type, len;
    std::memcpy(&type, file.data() + off, 4);
    std::memcpy(&len, file.data() + off + 4, 4);
    chunks.push_back({off, 16 + size_t{len}, type});
    off += 16 + size_t{len};
  }
  return chunks;
}

// The events of the EVENTS and OP_EVENTS chunks of a well-formed file but
// the one at `skipped` (an offset; SIZE_MAX: none), read chunk by chunk.
inline std::vector<gp_event> events_but(const std::vector<uint8_t>& file, size_t skipped = SIZE_MAX) {
  std::vector<gp_event> events;
  for (const ChunkSpan& c : chunks_of(file)) {
    const bool raw = c.type == static_cast<uint32_t>(ChunkType::EVENTS);
    if ((!raw && c.type != static_cast<uint32_t>(ChunkType::OP_EVENTS)) || c.offset == skipped) continue;
    std::string error;
    const auto payload = noting_error(chunk_payload(std::span<const uint8_t>(file).subspan(c.offset, c.bytes)), &error);
    if (!payload) return {};  // not the file's events: the caller's comparison fails
    uint64_t first = 0;
    if (!raw && !unpack_events(*payload, &first, events).empty()) return {};
    if (raw) {
      const size_t base = events.size();
      events.resize(base + payload->size() / sizeof(gp_event));
      if (!payload->empty()) std::memcpy(events.data() + base, payload->data(), payload->size());
    }
  }
  return events;
}

}  // namespace gpuprof::record_samples
