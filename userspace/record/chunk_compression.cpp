// chunk_compression.cpp: zstd per chunk (chunk_compression.h).
#include "record/chunk_compression.h"

#include <zstd.h>

#include "record/record_file.h"

namespace gpuprof {

void ChunkCompressor::Free::operator()(void* ctx) const { ZSTD_freeCCtx(static_cast<ZSTD_CCtx*>(ctx)); }

ChunkCompressor::ChunkCompressor() : ctx_(ZSTD_createCCtx()) {}

bool ChunkCompressor::compress(std::span<const uint8_t> payload, std::vector<uint8_t>& out) {
  if (!ctx_ || payload.size() < kRecordCompressMinPayload) return false;
  // Only a smaller result is kept: room for one byte less than the payload.
  out.resize(kRecordChunkHeaderSize + payload.size() - 1);
  const size_t n = ZSTD_compressCCtx(static_cast<ZSTD_CCtx*>(ctx_.get()), out.data() + kRecordChunkHeaderSize,
                                     payload.size() - 1, payload.data(), payload.size(), kRecordZstdLevel);
  if (ZSTD_isError(n)) return false;  // dstSize_tooSmall: it would not shrink
  out.resize(kRecordChunkHeaderSize + n);
  return true;
}

std::string decompress_chunk(std::span<const uint8_t> stored, uint32_t raw_size, std::vector<uint8_t>& out) {
  const unsigned long long said = ZSTD_getFrameContentSize(stored.data(), stored.size());
  if (said == ZSTD_CONTENTSIZE_ERROR) return "its compressed payload is not a zstd frame";
  if (said != raw_size)
    return "its compressed payload says " +
           (said == ZSTD_CONTENTSIZE_UNKNOWN ? std::string("no size") : std::to_string(said) + " bytes") +
           ", its header " + std::to_string(raw_size);
  out.resize(raw_size);
  // One context per reading thread, reused for every chunk.
  static thread_local std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> ctx(ZSTD_createDCtx(), ZSTD_freeDCtx);
  if (!ctx) return "cannot decompress it: out of memory";
  const size_t n = ZSTD_decompressDCtx(ctx.get(), out.data(), out.size(), stored.data(), stored.size());
  if (ZSTD_isError(n)) return std::string("its compressed payload does not decompress: ") + ZSTD_getErrorName(n);
  if (n != raw_size)
    return "its compressed payload decompresses to " + std::to_string(n) + " bytes, its header says " +
           std::to_string(raw_size);
  return "";
}

}  // namespace gpuprof
