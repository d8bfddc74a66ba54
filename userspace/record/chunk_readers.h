// chunk_readers.h: what the reader does with one chunk whose checksum
// passed: the order and gating rules of record_file.h and each chunk type's
// payload decoded into the Recording (chunk_readers.cpp). Internal to
// record/; record_reader.cpp walks the file and calls apply_chunk.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <unordered_set>

#include "record/chunk_salvage.h"
#include "record/packed_events.h"
#include "record/recording.h"

namespace gpuprof {

class RecordStream;  // record_stream.h

// What the reader has met, to enforce the order and rules of record_file.h.
struct Seen {
  uint32_t version = 0;
  bool process = false, clock = false, ops = false, options = false, stats = false, end = false;
  bool cuda_runtime = false;
  bool cupti_shim = false;
  int probe_costs = 0;  // PROBE_COSTS chunks: attach's, then detach's
  bool thread_names = false;
  std::unordered_set<uint32_t> tids;   // THREAD_PROCESSES so far
  uint64_t next_entry_index = 0;  // an entry shape's event_index must be >= this
  uint64_t next_stack_entry_index = 0;    // the same for an entry stack
  uint64_t next_backward_entry_index = 0;  // the same for a backward stack
  uint64_t next_kernel_sample_index = 0;  // a kernel stack's sample_index must be >= this
  Salvage salvage;
  // A streaming read (record_stream.h): op events go here, not into the
  // Recording; per-event records the op table leaves unused are dropped.
  RecordStream* stream = nullptr;
  // Why a streaming read cannot go on (nullptr: it can): the recording is
  // then read whole (record_stream.h).
  const char* stream_stopped = nullptr;
  // The chunk being applied, when it is an OP_EVENTS chunk the prefetch
  // thread decoded (chunk_prefetch.h): its events (nullptr: decode the
  // payload).
  const UnpackedEvents* unpacked = nullptr;
  bool mandatory() const { return process && clock && ops && (options || version < 2); }
  const char* mandatory_names() const {
    return version >= 2 ? "PROCESS, CLOCK, OP_TABLE and OPTIONS" : "PROCESS, CLOCK and OP_TABLE";
  }
};

// Checks and applies one chunk of `type` whose checksum passed (payload
// decompressed) to rec. Returns "" or what is wrong with it (the error
// after "corrupt chunk N (TYPE) at offset X: "). Unknown types are skipped.
std::string apply_chunk(uint32_t type, std::span<const uint8_t> payload, Recording& rec, Seen& seen);

}  // namespace gpuprof
