// chunk_compression.cpp: zstd per chunk (chunk_compression.h).
#include "record/chunk_compression.h"

#include <zstd.h>

#include <algorithm>
#include <memory>

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

std::string decompress_chunk(std::span<const uint8_t> stored, uint32_t raw_size, std::vector<uint8_t>& out,
                             size_t at) {
  const unsigned long long said = ZSTD_getFrameContentSize(stored.data(), stored.size());
  if (said == ZSTD_CONTENTSIZE_ERROR) return "its compressed payload is not a zstd frame";
  if (said != raw_size)
    return "its compressed payload says " +
           (said == ZSTD_CONTENTSIZE_UNKNOWN ? std::string("no size") : std::to_string(said) + " bytes") +
           ", its header " + std::to_string(raw_size);
  // One context per reading thread, reused for every chunk.
  static thread_local std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> ctx(ZSTD_createDCtx(), ZSTD_freeDCtx);
  if (!ctx) return "cannot decompress it: out of memory";
  ZSTD_DCtx_reset(ctx.get(), ZSTD_reset_session_only);
  // The output grows as the frame produces it: a damaged frame whose header
  // claims the most a chunk may hold costs what it really holds before its
  // error, not an allocation of the claim (the fuzzer makes such frames).
  constexpr size_t kFirstOutput = 1u << 20;
  out.resize(at + std::min<size_t>(raw_size, kFirstOutput));
  ZSTD_inBuffer in{stored.data(), stored.size(), 0};
  size_t produced = 0;
  for (;;) {
    ZSTD_outBuffer o{out.data() + at, out.size() - at, produced};
    const size_t in_before = in.pos, out_before = produced;
    const size_t left = ZSTD_decompressStream(ctx.get(), &o, &in);
    if (ZSTD_isError(left)) return std::string("its compressed payload does not decompress: ") + ZSTD_getErrorName(left);
    produced = o.pos;
    if (left == 0) break;  // the frame is whole
    if (produced == out.size() - at && produced < raw_size) {
      out.resize(at + std::min<size_t>(raw_size, produced * 2));
      continue;
    }
    if (in.pos == in_before && produced == out_before)  // stuck: no input left, or no room left
      return in.pos == in.size ? std::string("its compressed payload ends inside its zstd frame")
                               : "its compressed payload decompresses to more than the " + std::to_string(raw_size) +
                                     " bytes its header says";
  }
  if (in.pos != in.size) return "its compressed payload has bytes after its zstd frame";
  if (produced != raw_size)
    return "its compressed payload decompresses to " + std::to_string(produced) + " bytes, its header says " +
           std::to_string(raw_size);
  out.resize(at + produced);
  return "";
}

}  // namespace gpuprof
