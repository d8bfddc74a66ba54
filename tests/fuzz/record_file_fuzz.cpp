// libFuzzer target: the record-file reader, and what every report does with
// what it accepts. The reader promises that a file it returns can be indexed
// without checks (record_file.h): the aggregator, the tables, folded stacks
// and the Chrome trace run on every accepted input to hold it to that, on
// what it reads with corrupt chunks skipped (as report does). And a file
// read whole, with one data chunk corrupted, must lose that chunk alone.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "analyze/aggregator.h"
#include "analyze/module_tree.h"
#include "analyze/profile_merge.h"
#include "output/chrome_trace.h"
#include "output/folded_stacks.h"
#include "output/gpu_kernel_table.h"
#include "output/job_rank_line.h"
#include "output/launch_table.h"
#include "output/module_table.h"
#include "output/op_table.h"
#include "output/spread_table.h"
#include "analyze/process_filter.h"
#include "record/record_file.h"

namespace {

using namespace gpuprof;

[[noreturn]] void broken(const char* promise) {
  std::fprintf(stderr, "record_file_fuzz: %s\n", promise);
  std::abort();
}

template <typename T>
bool same_item(const T& a, const T& b) {
  if constexpr (std::is_same_v<T, gp_event> || std::is_same_v<T, gp_mem_event>)
    return std::memcmp(&a, &b, sizeof a) == 0;  // raw copies of the file's bytes
  else
    return a == b;
}
// Whether got is whole without its items [from, from + n).
template <typename T>
bool whole_but(const std::vector<T>& got, const std::vector<T>& whole, size_t from, size_t n) {
  if (from + n > whole.size() || got.size() + n != whole.size()) return false;
  for (size_t i = 0; i < got.size(); ++i)
    if (!same_item(got[i], whole[i < from ? i : i + n])) return false;
  return true;
}

uint64_t fnv1a(const uint8_t* data, size_t size) {
  uint64_t h = 1469598103934665603ULL;
  for (size_t i = 0; i < size; ++i) h = (h ^ data[i]) * 1099511628211ULL;
  return h;
}

// The data chunks: the types whose payloads are items counted across the file.
struct DataChunk {
  size_t offset, bytes;  // bytes: with its header
  uint32_t type;
};
constexpr ChunkType kDataChunks[] = {ChunkType::EVENTS,   ChunkType::OP_EVENTS,        ChunkType::MEM_EVENTS,
                                     ChunkType::SAMPLES,  ChunkType::LAUNCHES,         ChunkType::GPU_CORRELATIONS,
                                     ChunkType::GPU_ACTIVITIES};

// The items of the first `size` bytes of a file the reader accepts whole,
// cut on a chunk boundary after its mandatory chunks: every such prefix reads.
Recording prefix(const uint8_t* data, size_t size) {
  auto rec = read_recording_bytes(std::span<const uint8_t>(data, size), "fuzz.gpuprof");
  if (!rec) broken(("a chunk-boundary prefix of a readable file is unreadable: " + rec.error()).c_str());
  return std::move(*rec);
}

// record_file.h, "Corrupt chunks": a file the reader accepts whole (and that
// ends on a chunk boundary), with one bit of one data chunk's payload
// flipped, reads with that chunk alone lost and every other chunk's events,
// memory events, samples, launches, GPU correlations and activities exactly.
// What the chunk held comes from the prefixes that end before and after it
// (its payload may be packed and compressed).
void check_one_corrupt_data_chunk(const uint8_t* data, size_t size, const Recording& whole) {
  std::vector<DataChunk> chunks;
  for (size_t off = kRecordHeaderSize; size - off >= kRecordChunkHeaderSize;) {
    uint32_t type, len;
    std::memcpy(&type, data + off, 4);
    std::memcpy(&len, data + off + 4, 4);
    // A torn last chunk: skipping may read its bytes as a damaged length
    // and a chunk inside them (record_file.h), which the whole file did not
    // have. Only files that end on a chunk boundary have one reading.
    if (len > size - off - kRecordChunkHeaderSize) return;
    const ChunkSpec* spec = find_chunk_spec(type, whole.format_version);
    if (spec != nullptr && len > 0 && std::find(std::begin(kDataChunks), std::end(kDataChunks), spec->type) != std::end(kDataChunks))
      chunks.push_back({off, kRecordChunkHeaderSize + len, type});
    off += kRecordChunkHeaderSize + len;
  }
  if (chunks.empty()) return;
  const uint64_t h = fnv1a(data, size);
  const DataChunk& c = chunks[h % chunks.size()];
  const Recording before = prefix(data, c.offset), after = prefix(data, c.offset + c.bytes);
  std::vector<uint8_t> bad(data, data + size);
  bad[c.offset + kRecordChunkHeaderSize + (h >> 16) % (c.bytes - kRecordChunkHeaderSize)] ^=
      static_cast<uint8_t>(1u << (h >> 8) % 8);
  auto got = read_recording_bytes(bad, "fuzz.gpuprof", CorruptChunks::skip);
  if (!got) broken(("a corrupt data chunk made the file unreadable: " + got.error()).c_str());
  if (got->lost_chunks.size() != 1 || got->lost_chunks[0].offset != c.offset) {
    std::string said = "the chunk at offset " + std::to_string(c.offset) + " was corrupted; lost:";
    for (const LostChunk& lost : got->lost_chunks) said += "\n  " + lost.message;
    broken(said.c_str());
  }
  // Each kind of item: all of them, but those the lost chunk held.
  auto kept = [&](auto member) {
    const size_t from = (before.*member).size(), n = (after.*member).size() - from;
    return whole_but((*got).*member, whole.*member, from, n);
  };
  if (!kept(&Recording::events) || !kept(&Recording::mem_events) || !kept(&Recording::samples) ||
      !kept(&Recording::launches) || !kept(&Recording::gpu_correlations) || !kept(&Recording::gpu_activities))
    broken("a corrupt data chunk lost items of other chunks");
}

}  // namespace

// Compressed chunks (format 6) let a few kilobytes of input stand for
// millions of items, and the corrupt-chunk check and every output below are
// linear in them: a recording past this many items is only read, so that
// the fuzzer's time goes to new inputs rather than to the same outputs over
// big recordings (small ones take the same code paths).
constexpr size_t kMaxItemsChecked = 1000;

size_t items(const Recording& r) {
  return r.events.size() + r.mem_events.size() + r.samples.size() + r.launches.size() + r.gpu_correlations.size() +
         r.gpu_activities.size();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> input(data, size);
  if (auto whole = read_recording_bytes(input, "fuzz.gpuprof")) {
    if (items(*whole) > kMaxItemsChecked) return 0;
    check_one_corrupt_data_chunk(data, size, *whole);
  }
  // What report reads (corrupt chunks skipped, placeholders for what they
  // defined) goes through every output.
  auto recording = read_recording_bytes(input, "fuzz.gpuprof", CorruptChunks::skip);
  if (!recording || items(*recording) > kMaxItemsChecked) return 0;
  AggregateOptions grouped;
  grouped.group_by_input_shape = recording->options.shapes;
  grouped.group_by_stack_n = recording->options.with_stack ? 5 : 0;
  for (const AggregateOptions& options : {AggregateOptions{}, grouped}) {
    const Profile profile = aggregate(*recording, options);
    TableOptions table;
    (void)format_op_table(profile, table);
    (void)format_profile_notes(profile);
  }
  for (FoldedMetric metric : {FoldedMetric::kSelfCpuTime, FoldedMetric::kSamples, FoldedMetric::kSelfCudaTime}) {
    (void)format_folded(folded_stacks(*recording, metric));
    (void)format_folded(folded_stacks_by_process(*recording, metric));
  }
  // System-wide recordings: each process on its own, as report's sections,
  // and --by rank over those with a job rank (and their rank lines).
  std::vector<ProfileUnit> ranked;
  for (const auto& [pid, activity] : process_activity(*recording)) {
    const Recording one = select_processes(*recording, {pid});
    Profile profile = aggregate(one);
    (void)format_op_table(profile, TableOptions{});
    if (const JobRank* rank = job_rank_of(one.job_ranks, static_cast<int32_t>(pid)))
      ranked.push_back({"f", one.process, std::move(profile), *rank});
  }
  if (const JobRank* rank = job_rank_of(recording->job_ranks, recording->process.pid))
    ranked.push_back({"f", recording->process, aggregate(*recording), *rank});
  for (const JobRank& rank : recording->job_ranks) (void)job_rank_line(rank);
  const OpSpreads spreads = op_spread(ranked, SpreadKey::kRank);
  (void)format_spread_table(spreads, "rank", -1);
  (void)format_group_calls(spreads, "rank", -1);
  if (recording->options.with_stack) {
    ModuleTableOptions modules;
    modules.show_events = true;
    (void)format_module_table(build_module_tree(*recording), modules);
  }
  (void)format_launch_table(summarize_launches(*recording), -1);
  (void)format_gpu_kernel_table(summarize_gpu_kernels(*recording), -1);
  size_t bytes = 0;
  write_chrome_trace(*recording, ChromeTraceOptions{}, [&](std::string_view piece) { bytes += piece.size(); });
  return 0;
}
