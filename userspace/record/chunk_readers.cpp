// chunk_readers.cpp: each chunk type's payload, checked and decoded into
// the Recording (chunk_readers.h; the rules are record_file.h's).
#include "record/chunk_readers.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "record/chunk_codecs.h"
#include "record/packed_events.h"
#include "record/record_stream.h"

namespace gpuprof {

using namespace chunk_codec;

namespace {

std::string not_whole(size_t bytes, size_t size, const char* what) {
  return "payload of " + std::to_string(bytes) + " bytes is not a whole number of " +
         std::to_string(size) + "-byte " + what;
}

// Decodes a SHAPES payload (after its count) into rec.shapes.
std::string read_shapes(Decoder& d, Recording& rec) {
  uint32_t count;
  d.u32(count);
  if (count > d.left() / 4)  // each definition takes at least its u32 nargs
    return "shape count " + std::to_string(count) + " does not fit the payload";
  for (uint32_t i = 0; i < count && d.ok; ++i) {
    const std::string id = "shape " + std::to_string(rec.shapes.size());
    uint32_t nargs;
    d.u32(nargs);
    if (nargs > d.left() / 4)  // each argument takes at least its i32 ndim
      return id + ": argument count " + std::to_string(nargs) + " does not fit the payload";
    InputShapes shapes;
    shapes.reserve(nargs);
    for (uint32_t a = 0; a < nargs && d.ok; ++a) {
      int32_t ndim;
      d.i32(ndim);
      if (!d.ok) break;
      if (ndim < -1 || ndim > kRecordMaxShapeDims)
        return id + ": argument " + std::to_string(a) + " has ndim " + std::to_string(ndim) +
               " (expected -1.." + std::to_string(kRecordMaxShapeDims) + ")";
      if (ndim == -1) {
        shapes.emplace_back(std::nullopt);
        continue;
      }
      if (static_cast<size_t>(ndim) > d.left() / 8) return "payload too short";
      std::vector<int64_t>& sizes = shapes.emplace_back(std::in_place).value();
      sizes.resize(static_cast<size_t>(ndim));
      for (int64_t& v : sizes) d.i64(v);
    }
    rec.shapes.push_back(std::move(shapes));
  }
  return "";
}

// How a chunk of {u64 index, u32 id} pairs (ENTRY_SHAPES, ENTRY_STACKS,
// SAMPLE_KERNEL_STACKS) names things in its errors, and what it may point at.
struct PairChunk {
  const char* pair;   // one pair: "entry shape"
  const char* pairs;  // "entry shapes"
  const char* index;  // "event_index"
  const char* items;  // what index counts: "events"
  const FileItems& file_items;  // the items of the file before the chunk, read or lost
  const char* id;     // "shape_id"
  const char* ids;    // "shapes"
  size_t id_count;    // ids defined before the chunk
};

// What a pair's id names (read_pairs' known_id).
enum class IdFate { defined, lost, undefined };

// Checks the pairs of a PairChunk payload: indices strictly increasing from
// next_index (across chunks) and below the file's item count, the item each
// names acceptable to item_problem (which returns "" or the end of a
// sentence), ids defined (known_id). Hands each pair to add(index among the
// items read, id) and moves next_index past it; a pair naming an item or an
// id of a lost chunk (chunk_salvage.h) is dropped.
template <typename KnownId, typename ItemProblem, typename Add>
std::string read_pairs(std::span<const uint8_t> payload, const PairChunk& c, uint64_t& next_index,
                       KnownId known_id, ItemProblem item_problem, Add add) {
  if (payload.size() % kPairBytes != 0) return not_whole(payload.size(), kPairBytes, c.pairs);
  for (size_t i = 0; i < payload.size() / kPairBytes; ++i) {
    const uint64_t index = get<uint64_t>(payload.data() + i * kPairBytes);
    const uint32_t id = get<uint32_t>(payload.data() + i * kPairBytes + 8);
    auto has = [&](const char* field, uint64_t v) {  // built only for an error
      return std::string(c.pair) + " " + std::to_string(i) + " has " + field + " " +
             std::to_string(v);
    };
    if (index < next_index)
      return has(c.index, index) + ", not above the previous " + std::to_string(next_index - 1);
    const uint64_t item_count = c.file_items.total();
    if (c.file_items.placeable(index) && !c.file_items.named(index))
      return has(c.index, index) + ", but only " + std::to_string(item_count) + " " + c.items +
             " precede it";
    // Where the item is among those read; dropped when it was lost, or
    // when it comes after a loss that could not be counted.
    const std::optional<uint64_t> kept = c.file_items.placeable(index) ? c.file_items.kept(index) : std::nullopt;
    const uint64_t kept_index = kept.value_or(0);
    if (kept.has_value())
      if (std::string problem = item_problem(kept_index); !problem.empty()) return has(c.index, index) + problem;
    const IdFate fate = known_id(id);
    if (fate == IdFate::undefined)
      return has(c.id, id) + ", but " + std::to_string(c.id_count) + " " + c.ids + " are defined";
    next_index = index + 1;
    if (kept.has_value() && fate == IdFate::defined) add(kept_index, id);
  }
  return "";
}

// read_pairs' item_problem for pairs that name ENTRY events.
// A streaming read no longer holds the event: not checked (record_stream.h).
auto entry_event(const Recording& rec, const Seen& seen) {
  return [&rec, &seen](uint64_t index) -> std::string {
    if (seen.stream) return "";
    const uint16_t kind = rec.events[index].kind;
    // A range's beginning opens a frame too (version 5: its Python stack).
    return kind == GP_EV_OP_ENTRY || kind == GP_EV_RANGE_BEGIN
               ? ""
               : ", which is not an ENTRY event (kind " + std::to_string(kind) + ")";
  };
}

// read_pairs' known_id for pairs naming stacks: a stack a lost chunk may
// have defined is a placeholder.
auto known_stack(Recording& rec, Seen& seen) {
  return [&rec, &seen](uint32_t id) {
    return seen.salvage.stacks.reach(rec.sample_stacks, id) ? IdFate::defined : IdFate::undefined;
  };
}

// Checks and appends an ENTRY_SHAPES payload to rec.entry_shapes (a
// streaming read hands them to its stream).
std::string read_entry_shapes(std::span<const uint8_t> payload, Recording& rec, Seen& seen) {
  const PairChunk c{"entry shape",         "entry shapes", "event_index", "events",
                    seen.salvage.events, "shape_id",     "shapes",      rec.shapes.size()};
  auto known_shape = [&](uint32_t id) {
    return id >= seen.salvage.shapes_from ? IdFate::lost
           : id < rec.shapes.size()      ? IdFate::defined
                                         : IdFate::undefined;
  };
  return read_pairs(payload, c, seen.next_entry_index, known_shape, entry_event(rec, seen),
                    [&](uint64_t index, uint32_t id) {
                      if (!seen.stream) return rec.entry_shapes.push_back({index, id});
                      seen.stream->on_entry_shape(index, id);
                    });
}

// Checks an ENTRY_STACKS or BACKWARD_STACKS payload, each on its own
// cursor, and hands every pair to `take`.
template <typename Take>
std::string read_stack_pairs(std::span<const uint8_t> payload, Recording& rec, Seen& seen, const char* what,
                             const char* plural, uint64_t& cursor, Take take) {
  const PairChunk c{what, plural, "event_index", "events", seen.salvage.events, "stack_id", "stacks",
                    rec.sample_stacks.size()};
  return read_pairs(payload, c, cursor, known_stack(rec, seen), entry_event(rec, seen), take);
}

// Checks and appends an ENTRY_STACKS payload to rec.entry_stacks (a
// streaming read counts them per stack and hands them to its stream).
std::string read_entry_stacks(std::span<const uint8_t> payload, Recording& rec, Seen& seen) {
  return read_stack_pairs(payload, rec, seen, "entry stack", "entry stacks", seen.next_stack_entry_index,
                          [&](uint64_t index, uint32_t id) {
                            if (!seen.stream) return rec.entry_stacks.push_back({index, id});
                            seen.stream->on_entry_stack(index, id);
                            if (id >= rec.streamed_entry_stacks.size()) rec.streamed_entry_stacks.resize(id + 1);
                            ++rec.streamed_entry_stacks[id];
                          });
}

// Checks and appends a BACKWARD_STACKS payload to rec.backward_stacks (a
// streaming read hands them to its stream).
std::string read_backward_stacks(std::span<const uint8_t> payload, Recording& rec, Seen& seen) {
  return read_stack_pairs(payload, rec, seen, "backward stack", "backward stacks", seen.next_backward_entry_index,
                          [&](uint64_t index, uint32_t id) {
                            if (!seen.stream) return rec.backward_stacks.push_back({index, id});
                            seen.stream->on_backward_stack(index, id);
                          });
}

// Checks and appends a SAMPLE_KERNEL_STACKS payload to rec.sample_kernel_stacks.
std::string read_sample_kernel_stacks(std::span<const uint8_t> payload, Recording& rec,
                                      Seen& seen) {
  const PairChunk c{"kernel stack",       "kernel stacks", "sample_index", "samples",
                    seen.salvage.samples, "stack_id",      "stacks",       rec.sample_stacks.size()};
  auto in_kernel = [&rec](uint64_t index) -> std::string {
    return rec.samples[index].in_kernel ? "" : ", which is not an in-kernel sample";
  };
  return read_pairs(payload, c, seen.next_kernel_sample_index, known_stack(rec, seen), in_kernel,
                    [&](uint64_t index, uint32_t id) {
                      rec.sample_kernel_stacks.push_back({index, id});
                    });
}

// Decodes a {u32 first_id, u32 count, count x str} payload (SAMPLE_FRAMES,
// LAUNCH_NAMES) into names; `what` names one of them in errors ("frame").
std::string read_names(Decoder& d, std::vector<std::string>& names, LostIds<std::string>& lost,
                       const std::string& what) {
  uint32_t first_id, count;
  d.u32(first_id);
  d.u32(count);
  if (!d.ok) return "payload too short";
  if (first_id != names.size() && !lost.resume(names, first_id))
    return "first_id " + std::to_string(first_id) + ", but " + std::to_string(names.size()) + " " +
           what + "s are defined";
  if (count > d.left() / 4)  // each name takes at least its u32 length
    return what + " count " + std::to_string(count) + " does not fit the payload";
  if (count > UINT32_MAX - first_id) return what + " count " + std::to_string(count) + " overflows";
  for (uint32_t i = 0; i < count && d.ok; ++i) d.str(names.emplace_back());
  return "";
}

// Decodes a SAMPLE_FRAMES payload into rec.sample_frames.
std::string read_sample_frames(Decoder& d, Recording& rec, Salvage& salvage) {
  return read_names(d, rec.sample_frames, salvage.frames, "frame");
}

// Decodes a LAUNCH_NAMES payload into rec.launch_names.
std::string read_launch_names(Decoder& d, Recording& rec, Salvage& salvage) {
  return read_names(d, rec.launch_names, salvage.launch_names, "launch name");
}

// Decodes a SAMPLE_STACKS payload into rec.sample_stacks.
std::string read_sample_stacks(Decoder& d, Recording& rec, Salvage& salvage) {
  uint32_t first_id, count;
  d.u32(first_id);
  d.u32(count);
  if (!d.ok) return "payload too short";
  if (first_id != rec.sample_stacks.size() && !salvage.stacks.resume(rec.sample_stacks, first_id))
    return "first_id " + std::to_string(first_id) + ", but " +
           std::to_string(rec.sample_stacks.size()) + " stacks are defined";
  if (count > d.left() / 4)  // each stack takes at least its u32 n
    return "stack count " + std::to_string(count) + " does not fit the payload";
  if (count > UINT32_MAX - first_id) return "stack count " + std::to_string(count) + " overflows";
  for (uint32_t i = 0; i < count; ++i) {
    const std::string id = "stack " + std::to_string(first_id + i);
    uint32_t n;
    d.u32(n);
    if (!d.ok) return "payload too short";
    if (n > kRecordMaxSampleStackDepth)
      return id + " has " + std::to_string(n) + " frames (at most " +
             std::to_string(kRecordMaxSampleStackDepth) + ")";
    if (n > d.left() / 4) return id + " has " + std::to_string(n) + " frames: payload too short";
    std::vector<uint32_t>& stack = rec.sample_stacks.emplace_back();
    stack.resize(n);
    for (uint32_t j = 0; j < n; ++j) {
      d.u32(stack[j]);
      if (!salvage.frames.reach(rec.sample_frames, stack[j]))
        return id + " has frame_id " + std::to_string(stack[j]) + ", but " +
               std::to_string(rec.sample_frames.size()) + " frames are defined";
    }
  }
  return "";
}

// Appends a payload of raw structs (gp_event, gp_mem_event: the format
// stores them as they are) to `list`; false, with nothing appended, when it
// is not a whole number of them.
template <typename T>
bool append_raw(std::span<const uint8_t> payload, std::vector<T>& list) {
  if (payload.size() % sizeof(T) != 0) return false;
  const size_t base = list.size();
  list.resize(base + payload.size() / sizeof(T));
  if (!payload.empty())  // memcpy must not see the null data() of an empty vector
    std::memcpy(list.data() + base, payload.data(), payload.size());
  return true;
}

// Puts `item` in the place of the entry of `list` with its pid, when there
// is one, else at the end.
template <typename T>
void put_by_pid(std::vector<T>& list, T item) {
  auto known = std::find_if(list.begin(), list.end(), [&](const T& q) { return q.pid == item.pid; });
  if (known != list.end())
    *known = std::move(item);
  else
    list.push_back(std::move(item));
}

// Checks and appends a payload of fixed-size records of record_bytes each
// to `list` (`many` names them when it is not a whole number of them):
// fields(io, record) decodes one, problem(record) says what is wrong with
// it ("" when nothing), and its reserved fields must be 0. An error names
// the record as "<one> <i>".
template <typename T, typename Fields, typename Problem>
std::string read_records(std::span<const uint8_t> payload, size_t record_bytes, const char* one, const char* many,
                         std::vector<T>& list, Fields fields, Problem problem) {
  if (payload.size() % record_bytes != 0) return not_whole(payload.size(), record_bytes, many);
  for (size_t i = 0; i < payload.size() / record_bytes; ++i) {
    FixedDecoder io{payload.data() + i * record_bytes};
    T record;
    fields(io, record);
    std::string why = problem(record);
    if (why.empty() && io.nonzero_reserved)
      why = "reserved field " + hex(io.nonzero_reserved->first) + " at byte " +
            std::to_string(io.nonzero_reserved->second) + " (must be 0)";
    if (!why.empty()) return std::string(one) + " " + std::to_string(i) + " has " + why;
    list.push_back(record);
  }
  return "";
}

// Checks and appends a SAMPLES payload to rec.samples.
std::string read_samples(std::span<const uint8_t> payload, Recording& rec, Salvage& salvage) {
  uint32_t flags = 0;  // the sample's last decoded
  auto fields = [&](FixedDecoder& io, CpuSample& s) {
    sample_fields(io, s, flags);
    s.in_kernel = (flags & kRecordSampleInKernel) != 0;
  };
  auto problem = [&](const CpuSample& s) -> std::string {
    if (!salvage.frames.reach(rec.sample_frames, s.frame_id))
      return "frame_id " + std::to_string(s.frame_id) + ", but " + std::to_string(rec.sample_frames.size()) +
             " frames are defined";
    if (s.python_stack != kNoPythonStack && !salvage.stacks.reach(rec.sample_stacks, s.python_stack))
      return "python_stack " + std::to_string(s.python_stack) + ", but " +
             std::to_string(rec.sample_stacks.size()) + " stacks are defined";
    if ((flags & ~kRecordSampleInKernel) != 0) return "unknown flags " + hex(flags & ~kRecordSampleInKernel);
    return "";
  };
  std::string problems = read_records(payload, kRecordSampleBytes, "sample", "samples", rec.samples, fields, problem);
  if (problems.empty()) salvage.samples.read(payload.size() / kRecordSampleBytes);
  return problems;
}

// The problem(record, names defined) of a record that names a kernel name
// (launches, GPU activities), where a lost name stands as its placeholder.
template <typename T>
auto naming_kernel(Recording& rec, Salvage& salvage, std::string (*problem)(const T&, size_t)) {
  return [&rec, &salvage, problem](const T& record) {
    salvage.launch_names.reach(rec.launch_names, record.name_id);
    return problem(record, rec.launch_names.size());
  };
}

// Checks and appends a LAUNCHES payload to rec.launches.
std::string read_launches(std::span<const uint8_t> payload, Recording& rec, Salvage& salvage) {
  return read_records(payload, kLaunchBytes, "launch", "launches", rec.launches,
                      launch_fields<FixedDecoder, CudaLaunch>, naming_kernel(rec, salvage, launch_problem));
}

// Checks and appends a GPU_CORRELATIONS payload to rec.gpu_correlations.
std::string read_gpu_correlations(std::span<const uint8_t> payload, Recording& rec) {
  return read_records(payload, kGpuCorrelationBytes, "GPU correlation", "GPU correlations", rec.gpu_correlations,
                      gpu_correlation_fields<FixedDecoder, GpuCorrelation>, gpu_correlation_problem);
}

// Checks and appends a GPU_ACTIVITIES payload to rec.gpu_activities (an
// unknown kind is decoded as it is, and refused by gpu_activity_problem).
std::string read_gpu_activities(std::span<const uint8_t> payload, Recording& rec, Salvage& salvage) {
  return read_records(payload, kGpuActivityBytes, "GPU activity", "GPU activities", rec.gpu_activities,
                      gpu_activity_fields<FixedDecoder, GpuActivity>,
                      naming_kernel(rec, salvage, gpu_activity_problem));
}

// Decodes one checksummed chunk into rec. Returns what is wrong with it, or "".
// A stream's answer to one chunk's records (launches, GPU activities),
// which it took or refused: the read counts and drops them, and a refusal
// stops it (`why`: the file is then read again whole).
template <typename Record>
void handed_to_stream(bool taken, std::vector<Record>& records, uint64_t& streamed, Seen& seen, const char* why) {
  if (!taken) seen.stream_stopped = why;
  streamed += records.size();
  records.clear();
}

// Checks the events a chunk added to rec.events from `base` on (the rules
// of record_file.h) and counts them read.
std::string check_event_span(std::span<const gp_event> events, Recording& rec, Seen& seen) {
  for (size_t i = 0; i < events.size(); ++i) {
    const gp_event& e = events[i];
    if (e.op_id != GP_NO_OP) seen.salvage.ops.reach(rec.ops, e.op_id);  // a lost op: its placeholder
    if (!event_ok(e, rec.ops.size(), seen.version))
      return "event " + std::to_string(i) + event_problem(e, rec.ops.size(), seen.version);
    if (e.payload_bytes != 0)
      return "event " + std::to_string(i) + " has payload_bytes " + std::to_string(e.payload_bytes) +
             " (always 0 in a record file)";
  }
  seen.salvage.events.read(events.size());
  return "";
}

std::string check_events(size_t base, Recording& rec, Seen& seen) {
  if (std::string problem = check_event_span(std::span<const gp_event>(rec.events).subspan(base), rec, seen);
      !problem.empty())
    return problem;
  if (seen.stream) {  // handed on, not kept (record_stream.h)
    seen.stream->on_events(std::span<const gp_event>(rec.events).subspan(base), rec.streamed_events);
    rec.streamed_events += rec.events.size() - base;
    rec.events.resize(base);
  }
  return "";
}

// An OP_EVENTS chunk's events decoded ahead (chunk_prefetch.h): checked as
// check_events does, and handed to a stream where they lie.
std::string take_unpacked_events(std::span<const gp_event> events, Recording& rec, Seen& seen) {
  if (!seen.stream) {
    const size_t base = rec.events.size();
    rec.events.insert(rec.events.end(), events.begin(), events.end());
    return check_events(base, rec, seen);
  }
  if (std::string problem = check_event_span(events, rec, seen); !problem.empty()) return problem;
  seen.stream->on_events(events, rec.streamed_events);
  rec.streamed_events += events.size();
  return "";
}

// Whether a chunk's events are counted, not decoded: for a stream that
// skips them, while no chunk was lost (RecordStream::skips_events).
bool counting_events_only(const Recording& rec, const Seen& seen) {
  return seen.stream && seen.stream->skips_events() && rec.lost_chunks.empty();
}

// Counts n events read, unchecked, for a stream that skips them.
void count_skipped_events(uint64_t n, Recording& rec, Seen& seen) {
  seen.salvage.events.read(n);
  rec.streamed_events += n;
}

}  // namespace


// The chunk types a file holds once at most, each with the flag Seen keeps of it.
constexpr std::pair<ChunkType, bool Seen::*> kOnce[] = {
    {ChunkType::PROCESS, &Seen::process},           {ChunkType::CLOCK, &Seen::clock},
    {ChunkType::OP_TABLE, &Seen::ops},              {ChunkType::OPTIONS, &Seen::options},
    {ChunkType::CUDA_RUNTIME, &Seen::cuda_runtime}, {ChunkType::CUPTI_SHIM, &Seen::cupti_shim},
    {ChunkType::THREAD_NAMES, &Seen::thread_names}, {ChunkType::STATS, &Seen::stats},
};

std::string apply_chunk(uint32_t type, std::span<const uint8_t> payload, Recording& rec,
                        Seen& seen) {
  const ChunkSpec* spec = find_chunk_spec(type, seen.version);
  if (spec == nullptr) return "";  // unknown type, checksum verified: skip (forward compatibility)
  const ChunkType t = spec->type;
  const std::string name = spec->name;
  const bool data = spec->place == ChunkPlace::data;
  if ((data || spec->place == ChunkPlace::stats) && !seen.mandatory())
    return name + " chunk before the " + seen.mandatory_names() + " chunks";
  if (data && seen.stats) return name + " chunk after the STATS chunk";
  if (!gate_open(spec->gate, rec.options))
    return name + " chunk in a recording without " + gate_missing(spec->gate);
  for (const auto& [once, met] : kOnce)
    if (t == once && std::exchange(seen.*met, true)) return "duplicate " + name + " chunk";
  Decoder d{payload};
  switch (t) {
    case ChunkType::PROCESS:
      process_fields(d, rec.process);
      break;
    case ChunkType::CLOCK:
      clock_fields(d, rec.clock);
      break;
    case ChunkType::OP_TABLE: {
      uint32_t count;
      d.u32(count);
      if (count > d.left() / min_op_bytes(seen.version))
        return "op count " + std::to_string(count) + " does not fit the payload";
      rec.ops.reserve(count);
      for (uint32_t i = 0; i < count && d.ok; ++i) {
        op_fields(d, rec.ops.emplace_back(), seen.version);
        std::string problem = d.ok ? op_problem(rec.ops.back(), i) : "";
        if (!problem.empty()) return problem;
      }
      break;
    }
    case ChunkType::OPTIONS: {
      uint32_t flags;
      d.u32(flags);
      const uint32_t known = kRecordOptionShapes | kRecordOptionMemory | kRecordOptionSampled |
                             kRecordOptionNoOps | kRecordOptionWithStack;
      if (d.ok && (flags & ~known) != 0) {
        char hex[16];
        std::snprintf(hex, sizeof hex, "0x%x", flags & ~known);
        return std::string("unknown option flags ") + hex;
      }
      rec.options.shapes = (flags & kRecordOptionShapes) != 0;
      rec.options.memory = (flags & kRecordOptionMemory) != 0;
      rec.options.ops = (flags & kRecordOptionNoOps) == 0;
      rec.options.with_stack = (flags & kRecordOptionWithStack) != 0;
      if (d.ok && (flags & kRecordOptionSampled) != 0) {
        d.u32(rec.options.sample_hz);
        if (d.ok && rec.options.sample_hz == 0) return "sampled option with sample_hz 0";
      }
      break;
    }
    case ChunkType::EVENTS: {
      if (counting_events_only(rec, seen)) {  // no chunk lost: none awaits a count
        if (payload.size() % sizeof(gp_event) != 0) return not_whole(payload.size(), sizeof(gp_event), "events");
        count_skipped_events(payload.size() / sizeof(gp_event), rec, seen);
        return "";
      }
      const size_t base = rec.events.size();
      if (!append_raw(payload, rec.events)) return not_whole(payload.size(), sizeof(gp_event), "events");
      // After a lost OP_EVENTS chunk only the next one's first_event says
      // how many events it held: raw events cannot be placed.
      if (seen.salvage.events.awaiting_first()) seen.salvage.events.lose_uncounted();
      return check_events(base, rec, seen);
    }
    case ChunkType::OP_EVENTS: {
      const size_t base = rec.events.size();
      const bool counting = counting_events_only(rec, seen);
      const UnpackedEvents* ahead = counting ? nullptr : seen.unpacked;
      uint64_t first_event = 0;
      uint32_t count = 0;
      if (ahead) {
        first_event = ahead->first_event;
      } else if (std::string problem = counting ? packed_events_prefix(payload, &first_event, &count)
                                                : unpack_events(payload, &first_event, rec.events);
                 !problem.empty()) {
        return problem;
      }
      if (!seen.salvage.events.resume(first_event))
        return "first_event " + std::to_string(first_event) + ", but " +
               std::to_string(seen.salvage.events.total()) + " events precede it";
      if (counting) {
        count_skipped_events(count, rec, seen);
        return "";
      }
      return ahead ? take_unpacked_events(ahead->events, rec, seen) : check_events(base, rec, seen);
    }
    case ChunkType::SHAPES:
      // After a lost SHAPES chunk no shape id can be placed (Salvage::shapes_from).
      if (seen.salvage.shapes_from != UINT64_MAX) return "";
      if (std::string problem = read_shapes(d, rec); !problem.empty()) return problem;
      break;
    case ChunkType::ENTRY_SHAPES:
      return read_entry_shapes(payload, rec, seen);
    case ChunkType::MEM_EVENTS: {
      const size_t base = rec.mem_events.size();
      if (!append_raw(payload, rec.mem_events))
        return not_whole(payload.size(), sizeof(gp_mem_event), "memory events");
      for (size_t i = base; i < rec.mem_events.size(); ++i)
        if (!mem_event_ok(rec.mem_events[i]))
          return "memory event " + std::to_string(i - base) + " has unknown kind " +
                 std::to_string(rec.mem_events[i].kind);
      if (seen.stream && seen.stream->on_mem_events(std::span<const gp_mem_event>(rec.mem_events).subspan(base)))
        rec.mem_events.resize(base);  // taken (record_stream.h)
      return "";
    }
    case ChunkType::SAMPLE_FRAMES:
      if (std::string problem = read_sample_frames(d, rec, seen.salvage); !problem.empty()) return problem;
      break;
    case ChunkType::SAMPLE_STACKS:
      if (std::string problem = read_sample_stacks(d, rec, seen.salvage); !problem.empty()) return problem;
      break;
    case ChunkType::SAMPLES:
      return read_samples(payload, rec, seen.salvage);
    case ChunkType::ENTRY_STACKS:
      return read_entry_stacks(payload, rec, seen);
    case ChunkType::BACKWARD_STACKS:
      return read_backward_stacks(payload, rec, seen);
    case ChunkType::SAMPLE_KERNEL_STACKS:
      return read_sample_kernel_stacks(payload, rec, seen);
    case ChunkType::LAUNCH_NAMES:
      if (std::string problem = read_launch_names(d, rec, seen.salvage); !problem.empty()) return problem;
      break;
    case ChunkType::LAUNCHES: {
      std::string problem = read_launches(payload, rec, seen.salvage);
      if (seen.stream)
        handed_to_stream(seen.stream->on_launches(rec.launches), rec.launches, rec.streamed_launches, seen,
                         "CUDA launches the stream cannot place");
      return problem;
    }
    case ChunkType::CUDA_RUNTIME:
      cuda_runtime_fields(d, rec.cuda_runtime.emplace());
      break;
    case ChunkType::GPU_CORRELATIONS: {
      std::string problem = read_gpu_correlations(payload, rec);
      if (seen.stream) {  // as launches
        if (problem.empty()) seen.stream->on_gpu_correlations(rec.gpu_correlations);
        rec.gpu_correlations.clear();
      }
      return problem;
    }
    case ChunkType::GPU_ACTIVITIES: {
      std::string problem = read_gpu_activities(payload, rec, seen.salvage);
      // Their ops need every call: a stream that cannot wait for them
      // stops the read (record_stream.h).
      if (seen.stream && problem.empty() && !rec.gpu_activities.empty())
        handed_to_stream(seen.stream->on_gpu_activities(rec.gpu_activities), rec.gpu_activities,
                         rec.streamed_gpu_activities, seen, "GPU activities mid-stream");
      return problem;
    }
    case ChunkType::CUPTI_SHIM:
      cupti_shim_fields(d, rec.cupti_shim.emplace());
      break;
    case ChunkType::PROBE_COSTS: {
      if (++seen.probe_costs > 2) return "a third PROBE_COSTS chunk (at most attach's and the recording's)";
      ProbeCosts costs;
      probe_costs_fields(d, costs);
      for (size_t op = 0; d.ok && op < costs.op_sites.size(); op++)
        if (costs.op_sites[op] > (kEntrySingleStepped | kExitSingleStepped))
          return "op " + std::to_string(op) + "'s probe sites are " + std::to_string(costs.op_sites[op]) +
                 ", not 0 to 3";
      if (!d.ok) break;
      if (seen.probe_costs == 1) {
        rec.probe_costs = std::move(costs);
        break;
      }
      // The calibration through the recording supersedes attach's (recording.h).
      const uint32_t attach_total = rec.probe_costs->total_ns();
      rec.probe_costs = std::move(costs);
      rec.probe_costs->attach_total_ns = attach_total;
      rec.probe_costs->recording_total_ns = rec.probe_costs->total_ns();
      break;
    }
    case ChunkType::MODULE_NAMES: {
      std::vector<ModuleName> names;
      module_names_fields(d, names);
      for (size_t i = 0; d.ok && i < names.size(); ++i) {
        // A frame of a lost SAMPLE_FRAMES chunk: its placeholder.
        for (uint32_t frame : {names[i].parent_frame, names[i].frame}) seen.salvage.frames.reach(rec.sample_frames, frame);
        if (std::string problem = module_name_problem(names[i], rec.sample_frames.size()); !problem.empty())
          return "module name " + std::to_string(i) + " " + problem;
      }
      if (d.ok) rec.module_names.insert(rec.module_names.end(), names.begin(), names.end());
      break;
    }
    case ChunkType::JOB_RANKS: {
      std::vector<JobRank> ranks;
      job_ranks_fields(d, ranks);
      if (!d.ok) break;
      if (std::string problem = first_problem(ranks, job_rank_problem, "job rank"); !problem.empty()) return problem;
      // A process defined again (-a: its environment read again once it
      // exec'd into Python) keeps its place, with the new numbers.
      for (JobRank& r : ranks) put_by_pid(rec.job_ranks, std::move(r));
      break;
    }
    case ChunkType::NATIVE_FILES: {
      std::vector<NativeFile> files;
      native_files_fields(d, files);
      if (!d.ok) break;
      if (std::string problem = first_problem(files, native_file_problem, "native file"); !problem.empty())
        return problem;
      rec.native_files.insert(rec.native_files.end(), files.begin(), files.end());
      break;
    }
    case ChunkType::THREAD_NAMES:
      thread_names_fields(d, rec.thread_names);
      if (d.ok)
        if (std::string problem = thread_names_problem(rec.thread_names); !problem.empty()) return problem;
      break;
    case ChunkType::PROCESSES: {
      uint32_t count;
      d.u32(count);
      if (count > d.left() / 20)  // the smallest entry: a pid and four empty strings
        return "process count " + std::to_string(count) + " does not fit the payload";
      for (uint32_t i = 0; i < count && d.ok; ++i) {
        ProcessInfo p;
        listed_process_fields(d, p);
        if (!d.ok) break;
        if (std::string problem = listed_process_problem(p); !problem.empty())
          return "process " + std::to_string(i) + " " + problem;
        // A process defined again (it loaded libtorch after it was first
        // seen) keeps its place, with the new description.
        put_by_pid(rec.processes, std::move(p));
      }
      break;
    }
    case ChunkType::THREAD_PROCESSES: {
      if (payload.size() % 8 != 0) return not_whole(payload.size(), 8, "thread processes");
      for (size_t i = 0; i < payload.size() / 8; ++i) {
        ThreadProcess t{get<uint32_t>(payload.data() + 8 * i), get<uint32_t>(payload.data() + 8 * i + 4)};
        if (std::string problem = thread_process_problem(t, seen.tids); !problem.empty())
          return "thread " + std::to_string(i) + " " + problem;
        seen.tids.insert(t.tid);
        rec.thread_processes.push_back(t);
      }
      return "";
    }
    case ChunkType::MORE_OPS: {
      uint32_t first_id, count;
      d.u32(first_id);
      d.u32(count);
      if (d.ok && first_id != rec.ops.size() && !seen.salvage.ops.resume(rec.ops, first_id))
        return "first_id " + std::to_string(first_id) + " but " + std::to_string(rec.ops.size()) +
               " ops are defined";
      if (count > d.left() / min_op_bytes(seen.version))
        return "op count " + std::to_string(count) + " does not fit the payload";
      for (uint32_t i = 0; i < count && d.ok; ++i) {
        op_fields(d, rec.ops.emplace_back(), seen.version);
        std::string problem = d.ok ? op_problem(rec.ops.back(), rec.ops.size() - 1) : "";
        if (!problem.empty()) return problem;
      }
      break;
    }
    case ChunkType::STATS:
      stats_fields(d, rec.stats, seen.version);
      break;
    case ChunkType::END:
      if (!seen.stats && !seen.salvage.stats) return "END chunk without a STATS chunk";
      d.u64(rec.clock.end_monotonic_ns);
      seen.end = true;
      break;
  }
  if (!d.ok) return "payload too short";
  if (d.left() != 0) return std::to_string(d.left()) + " unexpected trailing payload bytes";
  return "";
}
}  // namespace gpuprof
