// chunk_specs.h: every chunk type of the record file in one table: its
// number, its name, the format version that brought it, the option it needs
// and where it may stand (record_file.h; docs/record-file.md holds the same
// list, checked against this table by a unit test). A new chunk type is one
// row here, its codec and its line in the doc.
#pragma once

#include <cstdint>
#include <span>

#include "record/recording.h"

namespace gpuprof {

enum class ChunkType : uint32_t {
  PROCESS = 1,
  CLOCK = 2,
  OP_TABLE = 3,
  EVENTS = 4,
  STATS = 5,
  END = 6,
  OPTIONS = 7,
  SHAPES = 8,
  ENTRY_SHAPES = 9,
  MEM_EVENTS = 10,
  SAMPLE_FRAMES = 11,
  SAMPLES = 12,
  SAMPLE_STACKS = 13,
  ENTRY_STACKS = 14,
  SAMPLE_KERNEL_STACKS = 15,
  LAUNCH_NAMES = 16,
  LAUNCHES = 17,
  CUDA_RUNTIME = 18,
  GPU_CORRELATIONS = 19,
  GPU_ACTIVITIES = 20,
  CUPTI_SHIM = 21,
  THREAD_NAMES = 22,
  PROCESSES = 23,
  THREAD_PROCESSES = 24,
  MORE_OPS = 25,
  PROBE_COSTS = 26,
  OP_EVENTS = 27,
  MODULE_NAMES = 28,
  JOB_RANKS = 29,
  NATIVE_FILES = 30,
  BACKWARD_STACKS = 31,
};

// Where a chunk may stand in a file.
enum class ChunkPlace {
  header,  // mandatory, once each, before any other known chunk
  data,    // after the header chunks, before STATS, any number of times (or as its rules say)
  stats,   // STATS: after the header chunks
  end,     // END: the last chunk
};

// The option a chunk needs (RecordOptions); a chunk without it is corrupt.
enum class ChunkGate {
  none,
  ops,         // not with --no-ops (op events, launches, GPU activities: traced with the ops)
  shapes,      // --record-shapes
  memory,      // --profile-memory
  frames,      // -F or --with-stack: frames and stacks serve both
  sampled,     // -F (sample_hz > 0)
  with_stack,  // --with-stack
};

struct ChunkSpec {
  ChunkType type;
  const char* name;
  uint32_t since;  // the first format version that knows it
  ChunkGate gate;
  ChunkPlace place;
};

// Every chunk type, in type order.
std::span<const ChunkSpec> chunk_specs();
// The spec of `type` in format `version`; nullptr for a type that version
// does not know (an unknown chunk: skipped).
const ChunkSpec* find_chunk_spec(uint32_t type, uint32_t version);
// The name of a known type of any version ("unknown type" otherwise).
const char* chunk_type_name(uint32_t type);
// Whether options allow a chunk gated by gate.
bool gate_open(ChunkGate gate, const RecordOptions& options);
// The refusal of a chunk whose gate is closed: "... in a recording without ...".
const char* gate_missing(ChunkGate gate);

}  // namespace gpuprof
