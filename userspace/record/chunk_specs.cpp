// chunk_specs.cpp: the table of chunk types (chunk_specs.h).
#include "record/chunk_specs.h"

namespace gpuprof {

namespace {

using enum ChunkGate;
using enum ChunkPlace;

// Types 16 to 22 came to version 2 after it was released (the layout of no
// chunk changed: an older build skips them); version 3 added no type.
constexpr ChunkSpec kSpecs[] = {
    {ChunkType::PROCESS, "PROCESS", 1, none, header},
    {ChunkType::CLOCK, "CLOCK", 1, none, header},
    {ChunkType::OP_TABLE, "OP_TABLE", 1, none, header},
    {ChunkType::EVENTS, "EVENTS", 1, ops, data},
    {ChunkType::STATS, "STATS", 1, none, stats},
    {ChunkType::END, "END", 1, none, end},
    {ChunkType::OPTIONS, "OPTIONS", 2, none, header},
    {ChunkType::SHAPES, "SHAPES", 2, shapes, data},
    {ChunkType::ENTRY_SHAPES, "ENTRY_SHAPES", 2, shapes, data},
    {ChunkType::MEM_EVENTS, "MEM_EVENTS", 2, memory, data},
    {ChunkType::SAMPLE_FRAMES, "SAMPLE_FRAMES", 2, frames, data},
    {ChunkType::SAMPLES, "SAMPLES", 2, sampled, data},
    {ChunkType::SAMPLE_STACKS, "SAMPLE_STACKS", 2, frames, data},
    {ChunkType::ENTRY_STACKS, "ENTRY_STACKS", 2, with_stack, data},
    {ChunkType::SAMPLE_KERNEL_STACKS, "SAMPLE_KERNEL_STACKS", 2, sampled, data},
    {ChunkType::LAUNCH_NAMES, "LAUNCH_NAMES", 2, ops, data},
    {ChunkType::LAUNCHES, "LAUNCHES", 2, ops, data},
    {ChunkType::CUDA_RUNTIME, "CUDA_RUNTIME", 2, ops, data},
    {ChunkType::GPU_CORRELATIONS, "GPU_CORRELATIONS", 2, ops, data},
    {ChunkType::GPU_ACTIVITIES, "GPU_ACTIVITIES", 2, ops, data},
    {ChunkType::CUPTI_SHIM, "CUPTI_SHIM", 2, ops, data},
    {ChunkType::THREAD_NAMES, "THREAD_NAMES", 2, none, data},
    {ChunkType::PROCESSES, "PROCESSES", 4, none, data},
    {ChunkType::THREAD_PROCESSES, "THREAD_PROCESSES", 4, none, data},
    {ChunkType::MORE_OPS, "MORE_OPS", 4, none, data},
    {ChunkType::PROBE_COSTS, "PROBE_COSTS", 5, ops, data},
    {ChunkType::OP_EVENTS, "OP_EVENTS", 6, ops, data},
    // Came to version 6 after it was released: an older build skips it.
    {ChunkType::MODULE_NAMES, "MODULE_NAMES", 6, with_stack, data},
    // Came to version 6 after it was released: an older build skips it.
    {ChunkType::JOB_RANKS, "JOB_RANKS", 6, none, data},
    // Came to version 6 after it was released: an older build skips it.
    {ChunkType::NATIVE_FILES, "NATIVE_FILES", 6, sampled, data},
    // Came to version 6 after it was released: an older build skips it.
    {ChunkType::BACKWARD_STACKS, "BACKWARD_STACKS", 6, with_stack, data},
};

constexpr bool in_type_order() {
  for (size_t i = 0; i < std::size(kSpecs); ++i)
    if (static_cast<size_t>(kSpecs[i].type) != i + 1) return false;
  return true;
}
static_assert(in_type_order(), "kSpecs[i] is the spec of type i + 1");

const ChunkSpec* spec_of(uint32_t type) {
  return type >= 1 && type <= std::size(kSpecs) ? &kSpecs[type - 1] : nullptr;
}

}  // namespace

std::span<const ChunkSpec> chunk_specs() { return kSpecs; }

const ChunkSpec* find_chunk_spec(uint32_t type, uint32_t version) {
  const ChunkSpec* spec = spec_of(type);
  return spec != nullptr && version >= spec->since ? spec : nullptr;
}

const char* chunk_type_name(uint32_t type) {
  const ChunkSpec* spec = spec_of(type);
  return spec != nullptr ? spec->name : "unknown type";
}

bool gate_open(ChunkGate gate, const RecordOptions& o) {
  switch (gate) {
    case none: return true;
    case ops: return o.ops;
    case shapes: return o.shapes;
    case memory: return o.memory;
    case frames: return o.sample_hz > 0 || o.with_stack;
    case sampled: return o.sample_hz > 0;
    case with_stack: return o.with_stack;
  }
  return false;
}

const char* gate_missing(ChunkGate gate) {
  switch (gate) {
    case none: return "";
    case ops: return "ops (the no-ops option)";
    case shapes: return "the shapes option";
    case memory: return "the memory option";
    case frames: return "CPU sampling (sample_hz 0) or the with_stack option";
    case sampled: return "CPU sampling (sample_hz 0)";
    case with_stack: return "the with_stack option";
  }
  return "";
}

}  // namespace gpuprof
