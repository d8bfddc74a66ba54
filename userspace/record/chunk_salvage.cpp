// chunk_salvage.cpp: placing what follows a lost chunk (chunk_salvage.h).
#include "record/chunk_salvage.h"

#include <algorithm>

namespace gpuprof {

void FileItems::lose(uint64_t n) {
  if (n == 0) return;
  gaps_.push_back({total_, n, lost_});
  total_ += n;
  lost_ += n;
}

bool FileItems::resume(uint64_t first) {
  if (first < total_) return false;
  if (awaiting_) {
    awaiting_ = false;
    lose(first - total_);
  } else if (uncounted_) {
    total_ = first;  // what came before stays unplaceable (placeable())
  } else if (first != total_) {
    return false;
  }
  return true;
}

std::optional<uint64_t> FileItems::kept_past_losses(uint64_t index) const {
  if (awaiting_ && index >= awaiting_from_) return std::nullopt;
  auto after = std::upper_bound(gaps_.begin(), gaps_.end(), index,
                                [](uint64_t i, const Gap& g) { return i < g.start; });
  if (after == gaps_.begin()) return index;  // before every gap
  const Gap& gap = *(after - 1);
  if (index < gap.start + gap.count) return std::nullopt;
  return index - gap.lost_before - gap.count;
}

namespace {

// "N what" of a payload of fixed-size items, or "its what" when the bytes
// are not a whole number of them.
std::string items(uint64_t payload_bytes, uint64_t size, const std::string& what) {
  if (payload_bytes % size != 0) return "its " + what + " (" + std::to_string(payload_bytes) + " bytes)";
  return std::to_string(payload_bytes / size) + " " + what;
}

// Bytes of the smallest entry of a dictionary chunk (a name or a stack: its
// u32 length; an op: three empty strings and its counts, version 4).
constexpr uint64_t kSmallestName = 4;
constexpr uint64_t kSmallestOp = 20;

// The chunks whose loss costs nothing but what they held: no later chunk
// needs them to be placed. What each held, as the warning names it.
struct LostAlone {
  ChunkType type;
  const char* held;
};
constexpr LostAlone kLostAlone[] = {
    {ChunkType::PROCESSES, "process descriptions (command lines)"},
    {ChunkType::CUDA_RUNTIME, "the CUDA runtime description (read as no CUDA runtime probed)"},
    {ChunkType::CUPTI_SHIM, "the CUPTI shim's state (read as no shim)"},
    {ChunkType::THREAD_NAMES, "the thread names (threads show as their ids)"},
    {ChunkType::JOB_RANKS, "job ranks (those processes show no rank)"},
    {ChunkType::NATIVE_FILES, "native files' paths and build ids (pprof mappings without build id)"},
    {ChunkType::MODULE_NAMES, "module attribute names (those modules show as their instance labels)"},
    {ChunkType::PROBE_COSTS, "a calibration of the probes' costs"},
};

}  // namespace

std::string Salvage::lose(std::optional<ChunkType> type, uint64_t stored_bytes, std::optional<uint64_t> raw_bytes,
                          const Recording& rec) {
  // Sizes and dictionary room from the payload before compression (a
  // damaged header may say too much: at most the chunk cap, so memory stays
  // bounded); counted items only from a stored payload, whose length the
  // chunk after it confirmed.
  const uint64_t payload_bytes = std::max<uint64_t>(stored_bytes, raw_bytes.value_or(0));
  // A sequence's fixed-size items (events, samples), counted only where
  // the payload is stored and whole items.
  auto counted = [&](FileItems& sequence, uint64_t size, const std::string& what) {
    if (!raw_bytes.has_value() && payload_bytes % size == 0)
      sequence.lose(payload_bytes / size);
    else
      sequence.lose_uncounted();
    return items(payload_bytes, size, what);
  };
  // A dictionary's entries from the next id on: as many as the payload
  // could hold, each at least `smallest` bytes.
  auto dictionary = [&](auto& ids, uint64_t smallest, const char* what, size_t next_id, const char* shown) {
    ids.lose(payload_bytes / smallest);
    return std::string(what) + " from id " + std::to_string(next_id) + " on (what names them shows " + shown +
           ")";
  };
  for (const LostAlone& alone : kLostAlone)
    if (type == alone.type) return alone.held;
  const uint64_t pairs = payload_bytes / 12;  // {u64 index, u32 id}
  switch (type.value_or(static_cast<ChunkType>(0))) {
    case ChunkType::OP_EVENTS:
      events.lose_until_next();
      return "the op events of a chunk (from event " + std::to_string(events.total()) +
             " on: the next such chunk says how many)";
    case ChunkType::EVENTS:
      return counted(events, sizeof(gp_event), "events");
    case ChunkType::SAMPLES:
      return counted(samples, kRecordSampleBytes, "CPU samples");
    case ChunkType::MEM_EVENTS:
      return items(payload_bytes, sizeof(gp_mem_event), "memory events");
    case ChunkType::LAUNCHES:
      return items(payload_bytes, kRecordLaunchBytes, "CUDA launches");
    case ChunkType::GPU_CORRELATIONS:
      return items(payload_bytes, kRecordGpuCorrelationBytes, "GPU correlations");
    case ChunkType::GPU_ACTIVITIES:
      return items(payload_bytes, kRecordGpuActivityBytes, "GPU activities");
    case ChunkType::ENTRY_SHAPES:
      return "the input shapes of " + std::to_string(pairs) + " op calls (shown as ?)";
    case ChunkType::ENTRY_STACKS:
      return "the Python stacks of " + std::to_string(pairs) + " op calls";
    case ChunkType::BACKWARD_STACKS:
      return "the forward stacks of " + std::to_string(pairs) + " backward calls (under [backward])";
    case ChunkType::SAMPLE_KERNEL_STACKS:
      return "the kernel stacks of " + std::to_string(pairs) + " CPU samples";
    case ChunkType::SHAPES:
      shapes_from = std::min<uint64_t>(shapes_from, rec.shapes.size());
      return "the input-shape dictionary from shape " + std::to_string(rec.shapes.size()) +
             " on (SHAPES chunks carry no first id, so later ones cannot be numbered: the calls naming "
             "those shapes show ?)";
    case ChunkType::SAMPLE_FRAMES:
      return dictionary(frames, kSmallestName, "the frame dictionary", rec.sample_frames.size(), kLostFrame);
    case ChunkType::SAMPLE_STACKS:
      return dictionary(stacks, kSmallestName, "the stack dictionary", rec.sample_stacks.size(), kLostStack);
    case ChunkType::LAUNCH_NAMES:
      return dictionary(launch_names, kSmallestName, "the CUDA kernel name dictionary", rec.launch_names.size(),
                        kLostKernelName);
    case ChunkType::MORE_OPS:
      return dictionary(ops, kSmallestOp, "the op table", rec.ops.size(), kLostOp);
    case ChunkType::THREAD_PROCESSES:
      return "the processes of " + std::to_string(payload_bytes / 8) + " threads";
    case ChunkType::STATS:
      stats = true;
      return "the recording's counters and warnings (events lost, probes, stop reason)";
    case ChunkType::END:
      end = true;
      return "the end time";
    default:
      // What it was cannot be told (a damaged type or length field, or a
      // chunk of the mandatory kinds, which come once before all others):
      // it may have held anything.
      events.lose_uncounted();
      samples.lose_uncounted();
      shapes_from = std::min<uint64_t>(shapes_from, rec.shapes.size());
      frames.lose(payload_bytes / kSmallestName);
      stacks.lose(payload_bytes / kSmallestName);
      launch_names.lose(payload_bytes / kSmallestName);
      ops.lose(payload_bytes / kSmallestOp);
      return "an unidentified chunk of " + std::to_string(payload_bytes) +
             " bytes (its header is damaged): the shapes and stacks of later calls and samples are dropped";
  }
}

void Salvage::finish(Recording& rec) const {
  if (stacks.filled().empty()) return;
  const uint32_t lost_stack = static_cast<uint32_t>(rec.sample_frames.size());
  rec.sample_frames.push_back(kLostStack);
  for (const auto& [begin, end] : stacks.filled())
    for (uint64_t id = begin; id < end; ++id) rec.sample_stacks[id] = {lost_stack};
}

}  // namespace gpuprof
