// chunk_codecs.h: the codecs of the record file's chunk payloads, shared by
// the writer (record_writer.cpp) and the reader (chunk_readers.cpp,
// record_reader.cpp): the byte encoder and bounds-checked decoder, one field
// list per chunk family run by both (so encode and decode cannot drift), the
// fixed-size records (samples, launches, GPU correlations and activities,
// shapes) and the rules the writer and the reader both enforce. Internal to
// record/; the format is record_file.h's.
#pragma once

#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <unordered_set>
#include <utility>
#include <vector>

#include "record/chunk_specs.h"
#include "record/record_file.h"

namespace gpuprof {

static_assert(std::endian::native == std::endian::little,
              "the record format stores little-endian integers and raw gp_events");
static_assert(sizeof(gp_event) == 32);
static_assert(sizeof(gp_mem_event) == 40);
static_assert(kRecordSamplesChunkBytes % kRecordSampleBytes == 0 &&
              kRecordSamplesChunkBytes <= (64u << 10));
static_assert(GP_LAUNCH_KERNEL == 1 && GP_LAUNCH_GRAPH == 3 && GP_LAUNCH_DRIVER_KERNEL_EX == 5,
              "the LAUNCHES api values are part of the record format");
static_assert(static_cast<uint16_t>(GpuActivityKind::kernel) == 1 &&
                  static_cast<uint16_t>(GpuActivityKind::memset) == 3,
              "the GPU_ACTIVITIES kind values are part of the record format");

namespace chunk_codec {

template <typename T>
T get(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

inline uint32_t chunk_crc(const uint8_t* header12, const uint8_t* payload, size_t len) {
  uLong crc = crc32(0L, header12, 12);
  if (len > 0)  // crc32(crc, NULL, 0) would return 0, not crc
    crc = crc32(crc, payload, static_cast<uInt>(len));
  return static_cast<uint32_t>(crc);
}

// `chunk` holds kRecordChunkHeaderSize bytes of room followed by the payload;
// fills in the header (raw_size: the payload's size before compression, 0
// when it is stored as it is). The caller checked the payload size.
inline void seal_chunk(std::vector<uint8_t>& chunk, uint32_t type, uint32_t raw_size = 0) {
  uint32_t len = static_cast<uint32_t>(chunk.size() - kRecordChunkHeaderSize);
  uint32_t fields[3] = {type, len, raw_size};
  std::memcpy(chunk.data(), fields, 12);
  uint32_t crc = chunk_crc(chunk.data(), chunk.data() + kRecordChunkHeaderSize, len);
  std::memcpy(chunk.data() + 12, &crc, 4);
}

// Whether the writer compresses chunks of `type`. SAMPLES stay as they are:
// a lost chunk's samples are counted from its stored length, which the
// chunk after it confirms (chunk_salvage.h).
inline bool compresses(ChunkType type) { return type != ChunkType::SAMPLES; }

inline std::vector<uint8_t> chunk_buffer() { return std::vector<uint8_t>(kRecordChunkHeaderSize, 0); }

// Builds a chunk: kRecordChunkHeaderSize bytes of room, then the payload.
struct Encoder {
  std::vector<uint8_t> b = chunk_buffer();
  template <typename T>
  void put(T v) {
    uint8_t t[sizeof v];
    std::memcpy(t, &v, sizeof v);
    b.insert(b.end(), t, t + sizeof v);
  }
  void i32(int32_t v) { put(v); }
  void u32(uint32_t v) { put(v); }
  void u64(uint64_t v) { put(v); }
  void i64(int64_t v) { put(v); }
  void str(const std::string& s) {
    put(static_cast<uint32_t>(s.size()));
    b.insert(b.end(), s.begin(), s.end());
  }
  // A field list, each field as its type says: an integer as its bytes
  // (u32, u64, i32, i64), a string as str.
  template <typename... F>
  void fields(const F&... f) {
    (field(f), ...);
  }
  void field(const std::string& s) { str(s); }
  template <typename T>
    requires std::is_integral_v<T>
  void field(T v) {
    put(v);
  }
};

// Bounds-checked payload decoder: a short read sets ok = false and yields 0/"".
struct Decoder {
  std::span<const uint8_t> p;
  size_t pos = 0;
  bool ok = true;

  template <typename T>
  void get(T& v) {
    ok = ok && p.size() - pos >= sizeof v;
    v = ok ? chunk_codec::get<T>(p.data() + pos) : T{};
    pos += ok ? sizeof v : 0;
  }
  void i32(int32_t& v) { get(v); }
  void u32(uint32_t& v) { get(v); }
  void u64(uint64_t& v) { get(v); }
  void i64(int64_t& v) { get(v); }
  void str(std::string& s) {
    uint32_t n;
    get(n);  // checked against the payload, itself bounded by the cap
    ok = ok && p.size() - pos >= n;
    s.assign(ok ? reinterpret_cast<const char*>(p.data() + pos) : "", ok ? n : 0);
    pos += ok ? n : 0;
  }
  size_t left() const { return p.size() - pos; }
  // Encoder::fields' counterpart.
  template <typename... F>
  void fields(F&... f) {
    (field(f), ...);
  }
  void field(std::string& s) { str(s); }
  template <typename T>
    requires std::is_integral_v<T>
  void field(T& v) {
    get(v);
  }
};

// The field lists of the PROCESS, CLOCK, OP_TABLE entry and STATS payloads
// of format `version`, run by both Encoder and Decoder so writer and reader
// cannot disagree.
template <typename IO, typename P>
void process_fields(IO& io, P& p) {
  io.i32(p.pid);
  for (auto* s : {&p.comm, &p.cmdline, &p.libtorch_path, &p.libtorch_build_id, &p.hostname})
    io.str(*s);
}
// One process of a PROCESSES chunk: PROCESS without the hostname.
template <typename IO, typename P>
void listed_process_fields(IO& io, P& p) {
  io.i32(p.pid);
  for (auto* s : {&p.comm, &p.cmdline, &p.libtorch_path, &p.libtorch_build_id}) io.str(*s);
}
template <typename IO, typename C>
void clock_fields(IO& io, C& c) {
  io.fields(c.start_monotonic_ns, c.start_realtime_ns);
}
template <typename IO, typename O>
void op_fields(IO& io, O& op, uint32_t version) {
  for (auto* s : {&op.name, &op.overload, &op.symbol}) io.str(*s);
  if (version >= 2) {
    io.i32(op.arg_count);
    io.u32(op.tensor_args);
  }
  if (version >= 5) {
    uint32_t kind = static_cast<uint32_t>(op.kind);
    io.u32(kind);
    if constexpr (!std::is_const_v<O>) op.kind = static_cast<OpKind>(kind);
  }
}
// A u32 count, then each item's fields (item_fields(io, item)); a count
// that cannot fit the payload, each item taking at least min_item_bytes,
// stops the decoder at once (it would read short).
template <typename IO, typename L, typename ItemFields>
void counted_list(IO& io, L& list, size_t min_item_bytes, ItemFields item_fields) {
  uint32_t count = static_cast<uint32_t>(list.size());
  io.u32(count);
  if constexpr (!std::is_const_v<L>) {
    if (count > io.left() / min_item_bytes) {
      io.ok = false;
      return;
    }
    list.resize(count);
  }
  for (auto& item : list) item_fields(io, item);
}
// A u32 count, then that many str.
template <typename IO, typename L>
void string_list(IO& io, L& list) {
  counted_list(io, list, 4, [](IO& io, auto& s) { io.str(s); });  // 4: an empty str
}
template <typename IO, typename S>
void stats_fields(IO& io, S& s, uint32_t version) {
  io.fields(s.events_recorded, s.events_lost, s.entry_probes, s.exit_probes, s.ops_without_exit, s.stop_reason);
  if (version >= 2) io.fields(s.mem_events_lost, s.shapes_unknown, s.tensor_layout, s.samples_lost);
  if (version >= 3) {
    io.fields(s.symbols_unresolved);
    string_list(io, s.problems);
  }
}
template <typename IO, typename C>
void cuda_runtime_fields(IO& io, C& c) {
  io.fields(c.libcudart_path, c.entry_points, c.launches_lost);
}
template <typename IO, typename C>
void probe_costs_fields(IO& io, C& c) {
  for (auto* cost : {&c.entry, &c.exit, &c.entry_stepped, &c.exit_stepped}) io.fields(cost->before_ns, cost->after_ns);
  std::string sites(c.op_sites.begin(), c.op_sites.end());
  io.str(sites);
  if constexpr (!std::is_const_v<C>) c.op_sites.assign(sites.begin(), sites.end());
  io.fields(c.calls, c.rounds, c.spread_permille, c.took_ns);
}
template <typename IO, typename C>
void cupti_shim_fields(IO& io, C& c) {
  io.fields(c.shim_path, c.state, c.records_dropped, c.events_lost);
}
// THREAD_NAMES: the count, then each {tid, name}.
template <typename IO, typename N>
void thread_names_fields(IO& io, N& names) {
  counted_list(io, names, 8, [](IO& io, auto& t) { io.fields(t.tid, t.name); });  // 8: a tid and an empty name
}

// MODULE_NAMES: the count, then each {parent_frame, frame, name, position}.
template <typename IO, typename N>
void module_names_fields(IO& io, N& names) {
  // 16: two ids, an empty name, a position
  counted_list(io, names, 16, [](IO& io, auto& m) { io.fields(m.parent_frame, m.frame, m.name, m.position); });
}

// The MODULE_NAMES rules of record_file.h, shared by writer and reader:
// both frames defined, a name of 1 to kRecordMaxModuleName bytes.
inline std::string module_name_problem(const ModuleName& m, size_t frames_defined) {
  for (uint32_t frame : {m.parent_frame, m.frame})
    if (frame >= frames_defined)
      return "names frame " + std::to_string(frame) + ", but " + std::to_string(frames_defined) +
             " frames are defined";
  if (m.name.empty() || m.name.size() > kRecordMaxModuleName)
    return "has a name of " + std::to_string(m.name.size()) + " bytes (1 to " +
           std::to_string(kRecordMaxModuleName) + ")";
  return "";
}

// JOB_RANKS: the count, then each {pid, rank, local_rank, world_size,
// local_world_size, group_rank, master_port, run_id, master_addr}; an
// absent number is kRecordNoJobNumber.
template <typename IO, typename L>
void job_ranks_fields(IO& io, L& ranks) {
  // 36: seven numbers and two empty strings
  counted_list(io, ranks, 36, [](IO& io, auto& r) {
    io.i32(r.pid);
    io.u32(r.rank);
    for (auto* number : {&r.local_rank, &r.world_size, &r.local_world_size, &r.group_rank, &r.master_port}) {
      uint32_t v = number->value_or(kRecordNoJobNumber);
      io.u32(v);
      if constexpr (!std::is_const_v<std::remove_reference_t<decltype(r)>>)
        *number = v == kRecordNoJobNumber ? std::nullopt : std::optional<uint32_t>(v);
    }
    io.str(r.run_id);
    io.str(r.master_addr);
  });
}

// The first entry of `items` that breaks a chunk's rules, as "ONE i
// PROBLEM" (problem(item): "" when none); "" when every entry keeps them.
// Shared by writer and reader.
template <typename T, typename Problem>
std::string first_problem(const std::vector<T>& items, Problem problem, const char* one) {
  for (size_t i = 0; i < items.size(); ++i)
    if (std::string why = problem(items[i]); !why.empty()) return std::string(one) + " " + std::to_string(i) + " " + why;
  return "";
}

// NATIVE_FILES: the count, then each {pid, path, build_id}.
template <typename IO, typename L>
void native_files_fields(IO& io, L& files) {
  // 12: a pid and two empty strings
  counted_list(io, files, 12, [](IO& io, auto& f) {
    io.i32(f.pid);
    io.str(f.path);
    io.str(f.build_id);
  });
}

// The NATIVE_FILES rules of record_file.h, shared by writer and reader.
inline std::string native_file_problem(const NativeFile& f) {
  if (f.pid <= 0) return "has pid " + std::to_string(f.pid);
  if (f.path.empty() || f.path.front() != '/' || f.path.size() > kRecordMaxNativePath)
    return "has a path of " + std::to_string(f.path.size()) + " bytes not starting with / (1 to " +
           std::to_string(kRecordMaxNativePath) + ")";
  const bool hex = std::all_of(f.build_id.begin(), f.build_id.end(),
                               [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
  if (!hex || f.build_id.size() % 2 != 0 || f.build_id.size() > kRecordMaxBuildId)
    return "has a build id that is not 0 to " + std::to_string(kRecordMaxBuildId) + " lowercase hex digits, paired";
  return "";
}

// The JOB_RANKS rules of record_file.h, shared by writer and reader: pid >
// 0, numbers of at most kRecordMaxJobNumber, texts of at most
// kRecordMaxJobText bytes.
inline std::string job_rank_problem(const JobRank& r) {
  if (r.pid <= 0) return "has pid " + std::to_string(r.pid);
  if (r.rank > kRecordMaxJobNumber) return "has rank " + std::to_string(r.rank);
  for (const auto& number : {r.local_rank, r.world_size, r.local_world_size, r.group_rank, r.master_port})
    if (number && *number > kRecordMaxJobNumber) return "has a number " + std::to_string(*number) + " out of range";
  for (const std::string* text : {&r.run_id, &r.master_addr})
    if (text->size() > kRecordMaxJobText)
      return "has a text of " + std::to_string(text->size()) + " bytes (at most " +
             std::to_string(kRecordMaxJobText) + ")";
  return "";
}

// The THREAD_NAMES rules of record_file.h, shared by writer and reader.
inline std::string thread_names_problem(const std::vector<ThreadName>& names) {
  std::unordered_set<uint32_t> seen;
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i].tid == 0) return "thread name " + std::to_string(i) + " has tid 0";
    if (!seen.insert(names[i].tid).second)
      return "thread name " + std::to_string(i) + " repeats tid " + std::to_string(names[i].tid);
    if (names[i].name.size() > kRecordMaxThreadName)
      return "thread name " + std::to_string(i) + " is " + std::to_string(names[i].name.size()) +
             " bytes long (at most " + std::to_string(kRecordMaxThreadName) + ")";
  }
  return "";
}

// The PROCESSES and THREAD_PROCESSES rules of record_file.h, shared by
// writer and reader.
inline std::string listed_process_problem(const ProcessInfo& p) {
  if (p.pid <= 0) return "has pid " + std::to_string(p.pid);
  return "";
}
inline std::string thread_process_problem(const ThreadProcess& t, const std::unordered_set<uint32_t>& defined) {
  if (t.tid == 0 || t.pid == 0) return "has tid " + std::to_string(t.tid) + ", pid " + std::to_string(t.pid);
  if (defined.count(t.tid)) return "repeats tid " + std::to_string(t.tid);
  return "";
}

// Smallest encoded OP_TABLE entry: three empty strings (and two i32s).
inline size_t min_op_bytes(uint32_t version) { return version >= 5 ? 24 : version >= 2 ? 20 : 12; }

// The op table rule of record_file.h, shared by writer and reader.
inline std::string op_problem(const OpInfo& op, size_t i) {
  if (static_cast<uint32_t>(op.kind) > static_cast<uint32_t>(OpKind::collective))
    return "op " + std::to_string(i) + " has unknown kind " + std::to_string(static_cast<uint32_t>(op.kind));
  if (op.arg_count >= -1 && op.tensor_args <= static_cast<uint32_t>(std::max(op.arg_count, 0)))
    return "";
  return "op " + std::to_string(i) + " has arg_count " + std::to_string(op.arg_count) +
         " and tensor_args " + std::to_string(op.tensor_args);
}

inline uint32_t option_flags(const RecordOptions& o) {
  return (o.shapes ? kRecordOptionShapes : 0) | (o.memory ? kRecordOptionMemory : 0) |
         (o.sample_hz > 0 ? kRecordOptionSampled : 0) | (o.ops ? 0 : kRecordOptionNoOps) |
         (o.with_stack ? kRecordOptionWithStack : 0);
}

// Frames and stacks serve CPU samples and the Python stacks of op entries.
inline bool has_frames(const RecordOptions& o) { return o.sample_hz > 0 || o.with_stack; }

// One {u64 index, u32 id} pair of an ENTRY_SHAPES, ENTRY_STACKS or
// SAMPLE_KERNEL_STACKS chunk.
constexpr size_t kPairBytes = 12;
inline void append_pair(std::vector<uint8_t>& chunk, uint64_t index, uint32_t id) {
  uint8_t pair[kPairBytes];
  std::memcpy(pair, &index, 8);
  std::memcpy(pair + 8, &id, 4);
  chunk.insert(chunk.end(), pair, pair + kPairBytes);
}

// The fixed-size records (samples, launches, GPU correlations and
// activities) are field lists too, each field its bytes, one after the
// other: run by FixedEncoder (the writer) and FixedDecoder (the reader).
// A reserved field is written 0; the reader finds the first that is not.
template <typename T>
struct Reserved {
  T value = 0;
};
// Puts one record's fields from `out` on.
struct FixedEncoder {
  uint8_t* out;
  template <typename... F>
  void fields(const F&... f) {
    (put(f), ...);
  }
  template <typename T>
  void put(const T& v) {
    std::memcpy(out, &v, sizeof v);
    out += sizeof v;
  }
  template <typename T>
  void put(const Reserved<T>&) {
    put(T{0});
  }
};
// Takes one record's fields from `start` on (the caller checked its size).
struct FixedDecoder {
  explicit FixedDecoder(const uint8_t* record) : start(record), p(record) {}
  const uint8_t* start;
  const uint8_t* p;
  // The first reserved field that is not 0: its value and its byte in the record.
  std::optional<std::pair<uint32_t, size_t>> nonzero_reserved;
  template <typename... F>
  void fields(F&&... f) {
    (take(f), ...);
  }
  template <typename T>
  void take(T& v) {
    std::memcpy(&v, p, sizeof v);
    p += sizeof v;
  }
  template <typename T>
  void take(Reserved<T>& r) {
    const size_t at = static_cast<size_t>(p - start);
    take(r.value);
    if (r.value != 0 && !nonzero_reserved) nonzero_reserved = {r.value, at};
  }
};

// The bytes of one record as `layout(io, record)` lists its fields,
// counted at compile time: the static_asserts below hold each field list
// to its record's size (record_file.h).
struct FixedSize {
  size_t bytes = 0;
  template <typename... F>
  constexpr void fields(const F&... f) {
    ((bytes += sizeof f), ...);
  }
};
template <typename T, typename Layout>
constexpr size_t fixed_size(Layout layout) {
  FixedSize io;
  T record{};
  layout(io, record);
  return io.bytes;
}

// One sample as stored in a SAMPLES chunk (kRecordSampleBytes): {u64 ts_ns,
// u32 tid, u32 frame_id, u32 python_stack, u32 flags}.
template <typename IO, typename S>
constexpr void sample_fields(IO& io, S& s, uint32_t& flags) {
  io.fields(s.ts_ns, s.tid, s.frame_id, s.python_stack, flags);
}
static_assert(fixed_size<CpuSample>([](FixedSize& io, CpuSample& s) {
                uint32_t flags = 0;
                sample_fields(io, s, flags);
              }) == kRecordSampleBytes);
inline void encode_sample(const CpuSample& s, uint8_t* out) {
  uint32_t flags = s.in_kernel ? kRecordSampleInKernel : 0;
  FixedEncoder io{out};
  sample_fields(io, s, flags);
}

// One launch as stored in a LAUNCHES chunk: {u64 ts_ns, u64 function, u64
// stream, u32 grid[3], u32 block[3], u32 tid, u16 api, u16 reserved, u32
// name_id, u32 reserved}, reserved fields 0.
constexpr size_t kLaunchBytes = kRecordLaunchBytes;
static_assert(kRecordEventsChunkBytes % kLaunchBytes == 0);
template <typename IO, typename L>
constexpr void launch_fields(IO& io, L& l) {
  io.fields(l.ts_ns, l.function, l.stream, l.grid, l.block, l.tid, l.api, Reserved<uint16_t>{}, l.name_id,
            Reserved<uint32_t>{});
}
static_assert(fixed_size<CudaLaunch>(launch_fields<FixedSize, CudaLaunch>) == kLaunchBytes);
inline void encode_launch(const CudaLaunch& l, uint8_t* out) {
  FixedEncoder io{out};
  launch_fields(io, l);
}

// The launch rules of record_file.h, shared by writer and reader: "" or
// what is wrong ("api 7 (expected 1..5)").
inline std::string launch_problem(const CudaLaunch& l, size_t names) {
  if (l.api < GP_LAUNCH_KERNEL || l.api > GP_LAUNCH_DRIVER_KERNEL_EX)
    return "api " + std::to_string(l.api) + " (expected " + std::to_string(GP_LAUNCH_KERNEL) +
           ".." + std::to_string(GP_LAUNCH_DRIVER_KERNEL_EX) + ")";
  if (l.name_id >= names)
    return "name_id " + std::to_string(l.name_id) + ", but " + std::to_string(names) +
           " launch names are defined";
  return "";
}

// "0x..." for a reserved field that must be 0.
inline std::string hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%x", v);
  return buf;
}

// One correlation as stored in a GPU_CORRELATIONS chunk: {u64 ts_ns, u64
// correlation_id, u32 tid, u32 cbid, u32 domain, u32 reserved}, reserved 0.
constexpr size_t kGpuCorrelationBytes = kRecordGpuCorrelationBytes;
static_assert(kRecordEventsChunkBytes % kGpuCorrelationBytes == 0);
template <typename IO, typename C>
constexpr void gpu_correlation_fields(IO& io, C& c) {
  io.fields(c.ts_ns, c.correlation_id, c.tid, c.cbid, c.domain, Reserved<uint32_t>{});
}
static_assert(fixed_size<GpuCorrelation>(gpu_correlation_fields<FixedSize, GpuCorrelation>) ==
              kGpuCorrelationBytes);
inline void encode_gpu_correlation(const GpuCorrelation& c, uint8_t* out) {
  FixedEncoder io{out};
  gpu_correlation_fields(io, c);
}

// The correlation rule of record_file.h, shared by writer and reader: "" or
// what is wrong ("domain 3 (expected 1 or 2)").
inline std::string gpu_correlation_problem(const GpuCorrelation& c) {
  if (c.domain == 1 || c.domain == 2) return "";
  return "domain " + std::to_string(c.domain) + " (expected 1 or 2)";
}

// One activity as stored in a GPU_ACTIVITIES chunk: {u64 start_ns, u64
// end_ns, u64 correlation_id, u64 bytes, u32 device, u32 stream, u16 kind,
// u16 reserved, u32 name_id}, reserved 0. 64 KiB is not a whole number of
// them: a full chunk holds 1366 (65,568 bytes), far under the cap.
constexpr size_t kGpuActivityBytes = kRecordGpuActivityBytes;
static_assert(kRecordEventsChunkBytes + kGpuActivityBytes <= kRecordMaxChunkPayload);
static_assert(sizeof(GpuActivityKind) == 2);  // stored as its u16 value
template <typename IO, typename A>
constexpr void gpu_activity_fields(IO& io, A& a) {
  io.fields(a.start_ns, a.end_ns, a.correlation_id, a.bytes, a.device, a.stream, a.kind, Reserved<uint16_t>{},
            a.name_id);
}
static_assert(fixed_size<GpuActivity>(gpu_activity_fields<FixedSize, GpuActivity>) == kGpuActivityBytes);
inline void encode_gpu_activity(const GpuActivity& a, uint8_t* out) {
  FixedEncoder io{out};
  gpu_activity_fields(io, a);
}

// The activity rules of record_file.h, shared by writer and reader: "" or
// what is wrong ("kind 4 (expected 1..3)").
inline std::string gpu_activity_problem(const GpuActivity& a, size_t names) {
  const auto kind = static_cast<uint16_t>(a.kind);
  const auto first = static_cast<uint16_t>(GpuActivityKind::kernel);
  const auto last = static_cast<uint16_t>(GpuActivityKind::memset);
  if (kind < first || kind > last)
    return "kind " + std::to_string(kind) + " (expected " + std::to_string(first) + ".." +
           std::to_string(last) + ")";
  if (a.end_ns < a.start_ns)
    return "end_ns " + std::to_string(a.end_ns) + ", before its start_ns " +
           std::to_string(a.start_ns);
  if (a.name_id >= names)
    return "name_id " + std::to_string(a.name_id) + ", but " + std::to_string(names) +
           " launch names are defined";
  return "";
}

// One SHAPES definition: u32 nargs, then {i32 ndim (-1: unknown), sizes}.
// Canonical, so it doubles as the writer's interning key.
inline std::string encode_shape(const InputShapes& shapes) {
  size_t n = 4;
  for (const ArgShape& a : shapes) n += 4 + (a ? a->size() * 8 : 0);
  std::string out(n, '\0');
  char* p = out.data();
  auto put = [&p](auto v) {
    std::memcpy(p, &v, sizeof v);
    p += sizeof v;
  };
  put(static_cast<uint32_t>(shapes.size()));
  for (const ArgShape& a : shapes) {
    put(a ? static_cast<int32_t>(a->size()) : int32_t{-1});
    if (a)
      for (int64_t d : *a) put(d);
  }
  return out;
}

inline bool mem_event_ok(const gp_mem_event& e) {
  return e.kind >= GP_MEM_CPU_ALLOC && e.kind <= GP_MEM_DEVICE;
}

// The event rules of record_file.h, shared by writer and reader.
// GP_EV_STEP events (schedules) came with version 3, GP_EV_CUT with 5.
inline uint16_t last_event_kind(uint32_t version) {
  return version >= 5 ? GP_EV_RANGE_END : version >= 3 ? GP_EV_STEP : GP_EV_CATCH;
}
inline bool event_ok(const gp_event& e, size_t nops, uint32_t version) {
  if (e.kind == GP_EV_CUT && version >= 5) return e.op_id == GP_NO_OP;
  // A range's end whose beginning came before the recording names no op.
  if (e.kind == GP_EV_RANGE_END && version >= 5) return e.op_id == GP_NO_OP || e.op_id < nops;
  if (e.kind == GP_EV_RANGE_BEGIN && version >= 5) return e.op_id < nops;
  if (e.kind == GP_EV_CATCH || (e.kind == GP_EV_STEP && version >= 3))
    return e.op_id == GP_NO_OP || e.op_id < nops;
  return (e.kind == GP_EV_OP_ENTRY || e.kind == GP_EV_OP_EXIT) && e.op_id < nops;
}
inline std::string event_problem(const gp_event& e, size_t nops, uint32_t version) {
  if (e.kind < GP_EV_OP_ENTRY || e.kind > last_event_kind(version))
    return " has unknown kind " + std::to_string(e.kind);
  return " has op_id " + std::to_string(e.op_id) + ", but the op table has " +
         std::to_string(nops) + " ops";
}

}  // namespace chunk_codec
}  // namespace gpuprof
