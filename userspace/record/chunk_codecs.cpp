// chunk_codecs.cpp: building chunks by hand and reading one back
// (record_file.h: encode_record_header, encode_chunk, encode_written_chunk,
// chunk_payload), with the codecs of chunk_codecs.h.
#include "record/chunk_codecs.h"

namespace gpuprof {

using namespace chunk_codec;

std::vector<uint8_t> encode_record_header(uint32_t version) {
  Encoder e;
  e.b.assign(kRecordMagic, kRecordMagic + sizeof kRecordMagic);
  e.u32(version);
  e.u32(static_cast<uint32_t>(kRecordHeaderSize));
  return e.b;
}

std::vector<uint8_t> encode_chunk(uint32_t type, std::span<const uint8_t> payload) {
  std::vector<uint8_t> chunk(kRecordChunkHeaderSize + payload.size());
  if (!payload.empty())
    std::memcpy(chunk.data() + kRecordChunkHeaderSize, payload.data(), payload.size());
  seal_chunk(chunk, type);
  return chunk;
}

std::vector<uint8_t> encode_written_chunk(ChunkType type, std::span<const uint8_t> payload) {
  ChunkCompressor compressor;
  std::vector<uint8_t> chunk;
  if (!compresses(type) || !compressor.compress(payload, chunk)) return encode_chunk(static_cast<uint32_t>(type), payload);
  seal_chunk(chunk, static_cast<uint32_t>(type), static_cast<uint32_t>(payload.size()));
  return chunk;
}

Result<std::vector<uint8_t>> chunk_payload(std::span<const uint8_t> chunk) {
  if (chunk.size() < kRecordChunkHeaderSize || chunk.size() - kRecordChunkHeaderSize != get<uint32_t>(chunk.data() + 4))
    return Error("not one whole chunk");
  const std::span<const uint8_t> stored = chunk.subspan(kRecordChunkHeaderSize);
  const uint32_t raw = get<uint32_t>(chunk.data() + 8);
  if (raw == 0) return std::vector<uint8_t>(stored.begin(), stored.end());
  std::vector<uint8_t> out;
  std::string error = raw > kRecordMaxChunkPayload ? "its size before compression exceeds the limit"
                                                   : decompress_chunk(stored, raw, out);
  if (!error.empty()) return Error(std::move(error));
  return out;
}

}  // namespace gpuprof
