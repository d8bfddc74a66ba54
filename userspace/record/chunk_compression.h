// chunk_compression.h: zstd per chunk (record format version 6;
// record_file.h, "Compression"; docs/record-file.md). A compressed chunk's
// payload is one zstd frame, and its header's reserved field, otherwise 0,
// holds the payload's size before compression. Each chunk is compressed on
// its own, so any prefix of a file that ends on a chunk boundary still
// reads, and the checksum covers the bytes as stored.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace gpuprof {

// Chunks with smaller payloads are stored as they are: zstd's frame header
// and the call cost more than they save there.
inline constexpr size_t kRecordCompressMinPayload = 256;
// The zstd level the writer uses: level 1 packs an op-event chunk about as
// tightly as the default 3 (docs/record-file.md, "Size") at a fraction of
// the collector's CPU.
inline constexpr int kRecordZstdLevel = 1;

// The writer's side: one zstd context, reused for every chunk.
class ChunkCompressor {
 public:
  ChunkCompressor();
  // Sets out to kRecordChunkHeaderSize bytes of room, then payload
  // compressed; false (out unspecified) when that would not be smaller.
  bool compress(std::span<const uint8_t> payload, std::vector<uint8_t>& out);

 private:
  struct Free {
    void operator()(void* ctx) const;
  };
  std::unique_ptr<void, Free> ctx_;
};

// The reader's side: sets out, from byte `at` on (those before are kept:
// chunk_prefetch.h decompresses into a batch of payloads), to the payload
// of a stored chunk whose header says raw_size bytes compressed. Returns ""
// or what is wrong (a sentence's end): not one zstd frame, or not raw_size
// bytes once decompressed (out's size is then at least `at`). raw_size is
// at most kRecordMaxChunkPayload (the caller checked), which bounds what is
// allocated.
std::string decompress_chunk(std::span<const uint8_t> stored, uint32_t raw_size, std::vector<uint8_t>& out,
                             size_t at = 0);

}  // namespace gpuprof
