// record_file.cpp: RecordWriter and read_recording (format in record_file.h).
#include "record/record_file.h"

#include "base/file_mode.h"
#include "record/chunk_salvage.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <type_traits>
#include <unordered_set>
#include <utility>

namespace gpuprof {

static_assert(std::endian::native == std::endian::little,
              "the record format stores little-endian integers and raw gp_events");
static_assert(sizeof(gp_event) == 32);
static_assert(sizeof(gp_mem_event) == 40);
static_assert(kRecordEventsChunkBytes % sizeof(gp_event) == 0);
static_assert(kRecordSamplesChunkBytes % kRecordSampleBytes == 0 &&
              kRecordSamplesChunkBytes <= (64u << 10));
static_assert(GP_LAUNCH_KERNEL == 1 && GP_LAUNCH_GRAPH == 3 && GP_LAUNCH_DRIVER_KERNEL_EX == 5,
              "the LAUNCHES api values are part of the record format");
static_assert(static_cast<uint16_t>(GpuActivityKind::kernel) == 1 &&
                  static_cast<uint16_t>(GpuActivityKind::memset) == 3,
              "the GPU_ACTIVITIES kind values are part of the record format");

namespace {

template <typename T>
T get(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

uint32_t chunk_crc(const uint8_t* header12, const uint8_t* payload, size_t len) {
  uLong crc = crc32(0L, header12, 12);
  if (len > 0)  // crc32(crc, NULL, 0) would return 0, not crc
    crc = crc32(crc, payload, static_cast<uInt>(len));
  return static_cast<uint32_t>(crc);
}

// `chunk` holds kRecordChunkHeaderSize bytes of room followed by the payload;
// fills in the header. The caller checked the payload size.
void seal_chunk(std::vector<uint8_t>& chunk, uint32_t type) {
  uint32_t len = static_cast<uint32_t>(chunk.size() - kRecordChunkHeaderSize);
  uint32_t fields[3] = {type, len, 0};
  std::memcpy(chunk.data(), fields, 12);
  uint32_t crc = chunk_crc(chunk.data(), chunk.data() + kRecordChunkHeaderSize, len);
  std::memcpy(chunk.data() + 12, &crc, 4);
}

std::vector<uint8_t> chunk_buffer() { return std::vector<uint8_t>(kRecordChunkHeaderSize, 0); }

const char* type_name(uint32_t type) {
  static const char* const names[] = {
      "",             "PROCESS",       "CLOCK",        "OP_TABLE",
      "EVENTS",       "STATS",         "END",          "OPTIONS",
      "SHAPES",       "ENTRY_SHAPES",  "MEM_EVENTS",   "SAMPLE_FRAMES",
      "SAMPLES",      "SAMPLE_STACKS", "ENTRY_STACKS", "SAMPLE_KERNEL_STACKS",
      "LAUNCH_NAMES", "LAUNCHES",      "CUDA_RUNTIME", "GPU_CORRELATIONS",
      "GPU_ACTIVITIES", "CUPTI_SHIM",  "THREAD_NAMES", "PROCESSES",
      "THREAD_PROCESSES", "MORE_OPS", "PROBE_COSTS"};
  return type >= 1 && type <= 26 ? names[type] : "unknown type";
}

// Whether `type` is a chunk type of format `version` (others are skipped).
bool known_type(uint32_t type, uint32_t version) {
  // Version 3 added no type; version 4 is version 3 with PROCESSES,
  // THREAD_PROCESSES and MORE_OPS (system-wide recordings).
  return type >= 1 && type <= (version >= 5 ? 26u : version >= 4 ? 25u : version >= 2 ? 22u : 6u);
}

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
};

// Bounds-checked payload decoder: a short read sets ok = false and yields 0/"".
struct Decoder {
  std::span<const uint8_t> p;
  size_t pos = 0;
  bool ok = true;

  template <typename T>
  void get(T& v) {
    ok = ok && p.size() - pos >= sizeof v;
    v = ok ? gpuprof::get<T>(p.data() + pos) : T{};
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
  io.u64(c.start_monotonic_ns);
  io.u64(c.start_realtime_ns);
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
// A u32 count, then that many str; a count that cannot fit the payload
// stops the decoder at once.
template <typename IO, typename L>
void string_list(IO& io, L& list) {
  uint32_t count = static_cast<uint32_t>(list.size());
  io.u32(count);
  if constexpr (std::is_const_v<L>) {
    for (const std::string& item : list) io.str(item);
  } else {
    if (count > io.left() / 4) {  // 4: the smallest entry, an empty str
      io.ok = false;
      return;
    }
    list.resize(count);
    for (std::string& item : list) io.str(item);
  }
}
template <typename IO, typename S>
void stats_fields(IO& io, S& s, uint32_t version) {
  io.u64(s.events_recorded);
  io.u64(s.events_lost);
  io.u32(s.entry_probes);
  io.u32(s.exit_probes);
  io.u32(s.ops_without_exit);
  io.str(s.stop_reason);
  if (version >= 2) {
    io.u64(s.mem_events_lost);
    io.u64(s.shapes_unknown);
    io.str(s.tensor_layout);
    io.u64(s.samples_lost);
  }
  if (version >= 3) {
    io.u64(s.symbols_unresolved);
    string_list(io, s.problems);
  }
}
template <typename IO, typename C>
void cuda_runtime_fields(IO& io, C& c) {
  io.str(c.libcudart_path);
  io.u32(c.entry_points);
  io.u64(c.launches_lost);
}
template <typename IO, typename C>
void probe_costs_fields(IO& io, C& c) {
  io.u32(c.entry.before_ns);
  io.u32(c.entry.after_ns);
  io.u32(c.exit.before_ns);
  io.u32(c.exit.after_ns);
  io.u32(c.entry_stepped.before_ns);
  io.u32(c.entry_stepped.after_ns);
  io.u32(c.exit_stepped.before_ns);
  io.u32(c.exit_stepped.after_ns);
  std::string sites(c.op_sites.begin(), c.op_sites.end());
  io.str(sites);
  if constexpr (!std::is_const_v<C>) c.op_sites.assign(sites.begin(), sites.end());
  io.u32(c.calls);
  io.u32(c.rounds);
  io.u32(c.spread_permille);
  io.u64(c.took_ns);
}
template <typename IO, typename C>
void cupti_shim_fields(IO& io, C& c) {
  io.str(c.shim_path);
  io.u32(c.state);
  io.u64(c.records_dropped);
  io.u64(c.events_lost);
}
// THREAD_NAMES: the count, then each {tid, name}; a count that cannot fit
// the payload stops the decoder at once (it would read short).
template <typename IO, typename N>
void thread_names_fields(IO& io, N& names) {
  uint32_t count = static_cast<uint32_t>(names.size());
  io.u32(count);
  if constexpr (std::is_const_v<N>) {
    for (const ThreadName& t : names) {
      uint32_t tid = t.tid;
      std::string name = t.name;
      io.u32(tid);
      io.str(name);
    }
  } else {
    if (count > io.left() / 8) {  // 8: the smallest entry, a tid and an empty name
      io.ok = false;
      return;
    }
    names.resize(count);
    for (ThreadName& t : names) {
      io.u32(t.tid);
      io.str(t.name);
    }
  }
}

// The THREAD_NAMES rules of record_file.h, shared by writer and reader.
std::string thread_names_problem(const std::vector<ThreadName>& names) {
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
std::string listed_process_problem(const ProcessInfo& p) {
  if (p.pid <= 0) return "has pid " + std::to_string(p.pid);
  return "";
}
std::string thread_process_problem(const ThreadProcess& t, const std::unordered_set<uint32_t>& defined) {
  if (t.tid == 0 || t.pid == 0) return "has tid " + std::to_string(t.tid) + ", pid " + std::to_string(t.pid);
  if (defined.count(t.tid)) return "repeats tid " + std::to_string(t.tid);
  return "";
}

// Smallest encoded OP_TABLE entry: three empty strings (and two i32s).
size_t min_op_bytes(uint32_t version) { return version >= 5 ? 24 : version >= 2 ? 20 : 12; }

// The op table rule of record_file.h, shared by writer and reader.
std::string op_problem(const OpInfo& op, size_t i) {
  if (static_cast<uint32_t>(op.kind) > static_cast<uint32_t>(OpKind::user_range))
    return "op " + std::to_string(i) + " has unknown kind " + std::to_string(static_cast<uint32_t>(op.kind));
  if (op.arg_count >= -1 && op.tensor_args <= static_cast<uint32_t>(std::max(op.arg_count, 0)))
    return "";
  return "op " + std::to_string(i) + " has arg_count " + std::to_string(op.arg_count) +
         " and tensor_args " + std::to_string(op.tensor_args);
}

uint32_t option_flags(const RecordOptions& o) {
  return (o.shapes ? kRecordOptionShapes : 0) | (o.memory ? kRecordOptionMemory : 0) |
         (o.sample_hz > 0 ? kRecordOptionSampled : 0) | (o.ops ? 0 : kRecordOptionNoOps) |
         (o.with_stack ? kRecordOptionWithStack : 0);
}

// Frames and stacks serve CPU samples and the Python stacks of op entries.
bool has_frames(const RecordOptions& o) { return o.sample_hz > 0 || o.with_stack; }

// One {u64 index, u32 id} pair of an ENTRY_SHAPES, ENTRY_STACKS or
// SAMPLE_KERNEL_STACKS chunk.
constexpr size_t kPairBytes = 12;
void append_pair(std::vector<uint8_t>& chunk, uint64_t index, uint32_t id) {
  uint8_t pair[kPairBytes];
  std::memcpy(pair, &index, 8);
  std::memcpy(pair + 8, &id, 4);
  chunk.insert(chunk.end(), pair, pair + kPairBytes);
}

// One sample as stored in a SAMPLES chunk (kRecordSampleBytes).
void encode_sample(const CpuSample& s, uint8_t* out) {
  const uint32_t flags = s.in_kernel ? kRecordSampleInKernel : 0;
  std::memcpy(out, &s.ts_ns, 8);
  std::memcpy(out + 8, &s.tid, 4);
  std::memcpy(out + 12, &s.frame_id, 4);
  std::memcpy(out + 16, &s.python_stack, 4);
  std::memcpy(out + 20, &flags, 4);
}

// One launch as stored in a LAUNCHES chunk: {u64 ts_ns, u64 function, u64
// stream, u32 grid[3], u32 block[3], u32 tid, u16 api, u16 reserved, u32
// name_id, u32 reserved}, reserved fields 0.
constexpr size_t kLaunchBytes = kRecordLaunchBytes;
static_assert(kRecordEventsChunkBytes % kLaunchBytes == 0);
void encode_launch(const CudaLaunch& l, uint8_t* out) {
  std::memset(out, 0, kLaunchBytes);
  std::memcpy(out, &l.ts_ns, 8);
  std::memcpy(out + 8, &l.function, 8);
  std::memcpy(out + 16, &l.stream, 8);
  std::memcpy(out + 24, l.grid, 12);
  std::memcpy(out + 36, l.block, 12);
  std::memcpy(out + 48, &l.tid, 4);
  std::memcpy(out + 52, &l.api, 2);
  std::memcpy(out + 56, &l.name_id, 4);
}

// The launch rules of record_file.h, shared by writer and reader: "" or
// what is wrong ("api 7 (expected 1..5)").
std::string launch_problem(const CudaLaunch& l, size_t names) {
  if (l.api < GP_LAUNCH_KERNEL || l.api > GP_LAUNCH_DRIVER_KERNEL_EX)
    return "api " + std::to_string(l.api) + " (expected " + std::to_string(GP_LAUNCH_KERNEL) +
           ".." + std::to_string(GP_LAUNCH_DRIVER_KERNEL_EX) + ")";
  if (l.name_id >= names)
    return "name_id " + std::to_string(l.name_id) + ", but " + std::to_string(names) +
           " launch names are defined";
  return "";
}

// "0x..." for a reserved field that must be 0.
std::string hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%x", v);
  return buf;
}

// One correlation as stored in a GPU_CORRELATIONS chunk: {u64 ts_ns, u64
// correlation_id, u32 tid, u32 cbid, u32 domain, u32 reserved}, reserved 0.
constexpr size_t kGpuCorrelationBytes = kRecordGpuCorrelationBytes;
static_assert(kRecordEventsChunkBytes % kGpuCorrelationBytes == 0);
void encode_gpu_correlation(const GpuCorrelation& c, uint8_t* out) {
  std::memset(out, 0, kGpuCorrelationBytes);
  std::memcpy(out, &c.ts_ns, 8);
  std::memcpy(out + 8, &c.correlation_id, 8);
  std::memcpy(out + 16, &c.tid, 4);
  std::memcpy(out + 20, &c.cbid, 4);
  std::memcpy(out + 24, &c.domain, 4);
}

// The correlation rule of record_file.h, shared by writer and reader: "" or
// what is wrong ("domain 3 (expected 1 or 2)").
std::string gpu_correlation_problem(const GpuCorrelation& c) {
  if (c.domain == 1 || c.domain == 2) return "";
  return "domain " + std::to_string(c.domain) + " (expected 1 or 2)";
}

// One activity as stored in a GPU_ACTIVITIES chunk: {u64 start_ns, u64
// end_ns, u64 correlation_id, u64 bytes, u32 device, u32 stream, u16 kind,
// u16 reserved, u32 name_id}, reserved 0. 64 KiB is not a whole number of
// them: a full chunk holds 1366 (65,568 bytes), far under the cap.
constexpr size_t kGpuActivityBytes = kRecordGpuActivityBytes;
static_assert(kRecordEventsChunkBytes + kGpuActivityBytes <= kRecordMaxChunkPayload);
void encode_gpu_activity(const GpuActivity& a, uint8_t* out) {
  const auto kind = static_cast<uint16_t>(a.kind);
  std::memset(out, 0, kGpuActivityBytes);
  std::memcpy(out, &a.start_ns, 8);
  std::memcpy(out + 8, &a.end_ns, 8);
  std::memcpy(out + 16, &a.correlation_id, 8);
  std::memcpy(out + 24, &a.bytes, 8);
  std::memcpy(out + 32, &a.device, 4);
  std::memcpy(out + 36, &a.stream, 4);
  std::memcpy(out + 40, &kind, 2);
  std::memcpy(out + 44, &a.name_id, 4);
}

// The activity rules of record_file.h, shared by writer and reader: "" or
// what is wrong ("kind 4 (expected 1..3)").
std::string gpu_activity_problem(const GpuActivity& a, size_t names) {
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
std::string encode_shape(const InputShapes& shapes) {
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

bool mem_event_ok(const gp_mem_event& e) {
  return e.kind >= GP_MEM_CPU_ALLOC && e.kind <= GP_MEM_DEVICE;
}

// The event rules of record_file.h, shared by writer and reader.
// GP_EV_STEP events (schedules) came with version 3, GP_EV_CUT with 5.
uint16_t last_event_kind(uint32_t version) {
  return version >= 5 ? GP_EV_RANGE_END : version >= 3 ? GP_EV_STEP : GP_EV_CATCH;
}
bool event_ok(const gp_event& e, size_t nops, uint32_t version) {
  if (e.kind == GP_EV_CUT && version >= 5) return e.op_id == GP_NO_OP;
  // A range's end whose beginning came before the recording names no op.
  if (e.kind == GP_EV_RANGE_END && version >= 5) return e.op_id == GP_NO_OP || e.op_id < nops;
  if (e.kind == GP_EV_RANGE_BEGIN && version >= 5) return e.op_id < nops;
  if (e.kind == GP_EV_CATCH || (e.kind == GP_EV_STEP && version >= 3))
    return e.op_id == GP_NO_OP || e.op_id < nops;
  return (e.kind == GP_EV_OP_ENTRY || e.kind == GP_EV_OP_EXIT) && e.op_id < nops;
}
std::string event_problem(const gp_event& e, size_t nops, uint32_t version) {
  if (e.kind < GP_EV_OP_ENTRY || e.kind > last_event_kind(version))
    return " has unknown kind " + std::to_string(e.kind);
  return " has op_id " + std::to_string(e.op_id) + ", but the op table has " +
         std::to_string(nops) + " ops";
}

// Where the reader gets bytes: memory, or a file (fd >= 0, owned) read chunk
// by chunk into one reused buffer. size is fixed when the source is opened.
class Source {
 public:
  Source(std::span<const uint8_t> bytes) : size_(bytes.size()), mem_(bytes) {}
  Source(UniqueFd fd, uint64_t size, std::string path)
      : fd_(std::move(fd)), size_(size), path_(std::move(path)) {}
  uint64_t size() const { return size_; }

  // Sets *out to the n bytes at off (off + n <= size()), valid until the next
  // call. Returns false with *error on an I/O error.
  bool read(uint64_t off, size_t n, std::span<const uint8_t>* out, std::string* error) {
    if (fd_.get() < 0) {
      *out = mem_.subspan(off, n);
      return true;
    }
    buf_.resize(n);
    for (size_t got = 0; got < n;) {
      ssize_t r = ::pread(fd_.get(), buf_.data() + got, n - got, static_cast<off_t>(off + got));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) {
        *error = "cannot read " + path_ + ": " +
                 (r < 0 ? std::strerror(errno) : "the file shrank while being read");
        return false;
      }
      got += static_cast<size_t>(r);
    }
    *out = std::span<const uint8_t>(buf_.data(), n);
    return true;
  }

 private:
  UniqueFd fd_;
  uint64_t size_;
  std::string path_;
  std::span<const uint8_t> mem_;
  std::vector<uint8_t> buf_;
};

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
  uint64_t next_kernel_sample_index = 0;  // a kernel stack's sample_index must be >= this
  Salvage salvage;  // what the chunks lost so far leave to place (chunk_salvage.h)
  bool mandatory() const { return process && clock && ops && (options || version < 2); }
  const char* mandatory_names() const {
    return version >= 2 ? "PROCESS, CLOCK, OP_TABLE and OPTIONS" : "PROCESS, CLOCK and OP_TABLE";
  }
};

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
    if (c.file_items.placeable(index) && index >= item_count)
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
auto entry_event(const Recording& rec) {
  return [&rec](uint64_t index) -> std::string {
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

// Checks and appends an ENTRY_SHAPES payload to rec.entry_shapes.
std::string read_entry_shapes(std::span<const uint8_t> payload, Recording& rec, Seen& seen) {
  const PairChunk c{"entry shape",         "entry shapes", "event_index", "events",
                    seen.salvage.events, "shape_id",     "shapes",      rec.shapes.size()};
  auto known_shape = [&](uint32_t id) {
    return id >= seen.salvage.shapes_from ? IdFate::lost
           : id < rec.shapes.size()      ? IdFate::defined
                                         : IdFate::undefined;
  };
  return read_pairs(payload, c, seen.next_entry_index, known_shape, entry_event(rec),
                    [&](uint64_t index, uint32_t id) {
                      rec.entry_shapes.push_back({index, id});
                    });
}

// Checks and appends an ENTRY_STACKS payload to rec.entry_stacks.
std::string read_entry_stacks(std::span<const uint8_t> payload, Recording& rec, Seen& seen) {
  const PairChunk c{"entry stack",         "entry stacks", "event_index", "events",
                    seen.salvage.events, "stack_id",     "stacks",      rec.sample_stacks.size()};
  return read_pairs(payload, c, seen.next_stack_entry_index, known_stack(rec, seen), entry_event(rec),
                    [&](uint64_t index, uint32_t id) {
                      rec.entry_stacks.push_back({index, id});
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

// Checks and appends a SAMPLES payload to rec.samples.
std::string read_samples(std::span<const uint8_t> payload, Recording& rec, Salvage& salvage) {
  if (payload.size() % kRecordSampleBytes != 0)
    return not_whole(payload.size(), kRecordSampleBytes, "samples");
  const size_t n = payload.size() / kRecordSampleBytes;
  for (size_t i = 0; i < n; ++i) {
    const uint8_t* p = payload.data() + i * kRecordSampleBytes;
    const uint32_t flags = get<uint32_t>(p + 20);
    CpuSample s{get<uint64_t>(p), get<uint32_t>(p + 8), get<uint32_t>(p + 12),
                (flags & kRecordSampleInKernel) != 0, get<uint32_t>(p + 16)};
    if (!salvage.frames.reach(rec.sample_frames, s.frame_id))
      return "sample " + std::to_string(i) + " has frame_id " + std::to_string(s.frame_id) +
             ", but " + std::to_string(rec.sample_frames.size()) + " frames are defined";
    if (s.python_stack != kNoPythonStack && !salvage.stacks.reach(rec.sample_stacks, s.python_stack))
      return "sample " + std::to_string(i) + " has python_stack " +
             std::to_string(s.python_stack) + ", but " +
             std::to_string(rec.sample_stacks.size()) + " stacks are defined";
    if ((flags & ~kRecordSampleInKernel) != 0) {
      char hex[16];
      std::snprintf(hex, sizeof hex, "0x%x", flags & ~kRecordSampleInKernel);
      return "sample " + std::to_string(i) + " has unknown flags " + hex;
    }
    rec.samples.push_back(s);
  }
  salvage.samples.read(n);
  return "";
}

// Checks and appends a LAUNCHES payload to rec.launches.
std::string read_launches(std::span<const uint8_t> payload, Recording& rec, Salvage& salvage) {
  if (payload.size() % kLaunchBytes != 0)
    return not_whole(payload.size(), kLaunchBytes, "launches");
  const size_t n = payload.size() / kLaunchBytes;
  for (size_t i = 0; i < n; ++i) {
    const uint8_t* p = payload.data() + i * kLaunchBytes;
    CudaLaunch l;
    l.ts_ns = get<uint64_t>(p);
    l.function = get<uint64_t>(p + 8);
    l.stream = get<uint64_t>(p + 16);
    std::memcpy(l.grid, p + 24, 12);
    std::memcpy(l.block, p + 36, 12);
    l.tid = get<uint32_t>(p + 48);
    l.api = get<uint16_t>(p + 52);
    l.name_id = get<uint32_t>(p + 56);
    salvage.launch_names.reach(rec.launch_names, l.name_id);  // a lost kernel name: its placeholder
    if (std::string problem = launch_problem(l, rec.launch_names.size()); !problem.empty())
      return "launch " + std::to_string(i) + " has " + problem;
    const uint32_t reserved[2] = {get<uint16_t>(p + 54), get<uint32_t>(p + 60)};
    for (int r = 0; r < 2; ++r)
      if (reserved[r] != 0) {
        char hex[16];
        std::snprintf(hex, sizeof hex, "0x%x", reserved[r]);
        return "launch " + std::to_string(i) + " has reserved field " + hex + " at byte " +
               (r == 0 ? "54" : "60") + " (must be 0)";
      }
    rec.launches.push_back(l);
  }
  return "";
}

// Checks and appends a GPU_CORRELATIONS payload to rec.gpu_correlations.
std::string read_gpu_correlations(std::span<const uint8_t> payload, Recording& rec) {
  if (payload.size() % kGpuCorrelationBytes != 0)
    return not_whole(payload.size(), kGpuCorrelationBytes, "GPU correlations");
  const size_t n = payload.size() / kGpuCorrelationBytes;
  for (size_t i = 0; i < n; ++i) {
    const uint8_t* p = payload.data() + i * kGpuCorrelationBytes;
    GpuCorrelation c{get<uint64_t>(p), get<uint64_t>(p + 8), get<uint32_t>(p + 16),
                     get<uint32_t>(p + 20), get<uint32_t>(p + 24)};
    if (std::string problem = gpu_correlation_problem(c); !problem.empty())
      return "GPU correlation " + std::to_string(i) + " has " + problem;
    if (const uint32_t reserved = get<uint32_t>(p + 28); reserved != 0)
      return "GPU correlation " + std::to_string(i) + " has reserved field " + hex(reserved) +
             " at byte 28 (must be 0)";
    rec.gpu_correlations.push_back(c);
  }
  return "";
}

// Checks and appends a GPU_ACTIVITIES payload to rec.gpu_activities.
std::string read_gpu_activities(std::span<const uint8_t> payload, Recording& rec, Salvage& salvage) {
  if (payload.size() % kGpuActivityBytes != 0)
    return not_whole(payload.size(), kGpuActivityBytes, "GPU activities");
  const size_t n = payload.size() / kGpuActivityBytes;
  for (size_t i = 0; i < n; ++i) {
    const uint8_t* p = payload.data() + i * kGpuActivityBytes;
    GpuActivity a;
    a.start_ns = get<uint64_t>(p);
    a.end_ns = get<uint64_t>(p + 8);
    a.correlation_id = get<uint64_t>(p + 16);
    a.bytes = get<uint64_t>(p + 24);
    a.device = get<uint32_t>(p + 32);
    a.stream = get<uint32_t>(p + 36);
    a.kind = static_cast<GpuActivityKind>(get<uint16_t>(p + 40));  // checked just below
    a.name_id = get<uint32_t>(p + 44);
    salvage.launch_names.reach(rec.launch_names, a.name_id);  // a lost kernel name: its placeholder
    if (std::string problem = gpu_activity_problem(a, rec.launch_names.size()); !problem.empty())
      return "GPU activity " + std::to_string(i) + " has " + problem;
    if (const uint16_t reserved = get<uint16_t>(p + 42); reserved != 0)
      return "GPU activity " + std::to_string(i) + " has reserved field " + hex(reserved) +
             " at byte 42 (must be 0)";
    rec.gpu_activities.push_back(a);
  }
  return "";
}

// Decodes one checksummed chunk into rec. Returns what is wrong with it, or "".
std::string apply_chunk(uint32_t type, std::span<const uint8_t> payload, Recording& rec,
                        Seen& seen) {
  if (!known_type(type, seen.version))
    return "";  // unknown type, checksum verified: skip (forward compatibility)
  const ChunkType t = static_cast<ChunkType>(type);
  const std::string name = type_name(type);
  auto first = [](bool& flag) { return !std::exchange(flag, true); };
  const bool data = t == ChunkType::EVENTS || t == ChunkType::SHAPES ||
                    t == ChunkType::ENTRY_SHAPES || t == ChunkType::MEM_EVENTS ||
                    t == ChunkType::SAMPLE_FRAMES || t == ChunkType::SAMPLE_STACKS ||
                    t == ChunkType::SAMPLES || t == ChunkType::ENTRY_STACKS ||
                    t == ChunkType::SAMPLE_KERNEL_STACKS || t == ChunkType::LAUNCH_NAMES ||
                    t == ChunkType::LAUNCHES || t == ChunkType::CUDA_RUNTIME ||
                    t == ChunkType::GPU_CORRELATIONS || t == ChunkType::GPU_ACTIVITIES ||
                    t == ChunkType::CUPTI_SHIM || t == ChunkType::PROCESSES ||
                    t == ChunkType::THREAD_PROCESSES || t == ChunkType::MORE_OPS ||
                    t == ChunkType::PROBE_COSTS;
  if ((data || t == ChunkType::STATS) && !seen.mandatory())
    return name + " chunk before the " + seen.mandatory_names() + " chunks";
  if (data && seen.stats) return name + " chunk after the STATS chunk";
  if ((t == ChunkType::SHAPES || t == ChunkType::ENTRY_SHAPES) && !rec.options.shapes)
    return name + " chunk in a recording without the shapes option";
  if (t == ChunkType::MEM_EVENTS && !rec.options.memory)
    return name + " chunk in a recording without the memory option";
  if ((t == ChunkType::SAMPLE_FRAMES || t == ChunkType::SAMPLE_STACKS) && !has_frames(rec.options))
    return name +
           " chunk in a recording without CPU sampling (sample_hz 0) or the with_stack option";
  if ((t == ChunkType::SAMPLES || t == ChunkType::SAMPLE_KERNEL_STACKS) &&
      rec.options.sample_hz == 0)
    return name + " chunk in a recording without CPU sampling (sample_hz 0)";
  if (t == ChunkType::ENTRY_STACKS && !rec.options.with_stack)
    return name + " chunk in a recording without the with_stack option";
  if ((t == ChunkType::EVENTS || t == ChunkType::LAUNCH_NAMES || t == ChunkType::LAUNCHES ||
       t == ChunkType::CUDA_RUNTIME || t == ChunkType::GPU_CORRELATIONS ||
       t == ChunkType::GPU_ACTIVITIES || t == ChunkType::CUPTI_SHIM || t == ChunkType::PROBE_COSTS) &&
      !rec.options.ops)
    return name + " chunk in a recording without ops (the no-ops option)";
  Decoder d{payload};
  switch (t) {
    case ChunkType::PROCESS:
      if (!first(seen.process)) return "duplicate PROCESS chunk";
      process_fields(d, rec.process);
      break;
    case ChunkType::CLOCK:
      if (!first(seen.clock)) return "duplicate CLOCK chunk";
      clock_fields(d, rec.clock);
      break;
    case ChunkType::OP_TABLE: {
      if (!first(seen.ops)) return "duplicate OP_TABLE chunk";
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
      if (!first(seen.options)) return "duplicate OPTIONS chunk";
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
      if (payload.size() % sizeof(gp_event) != 0)
        return not_whole(payload.size(), sizeof(gp_event), "events");
      const size_t base = rec.events.size();
      rec.events.resize(base + payload.size() / sizeof(gp_event));
      if (!payload.empty())  // memcpy must not see the null data() of an empty vector
        std::memcpy(rec.events.data() + base, payload.data(), payload.size());
      for (size_t i = base; i < rec.events.size(); ++i) {
        const gp_event& e = rec.events[i];
        if (e.op_id != GP_NO_OP) seen.salvage.ops.reach(rec.ops, e.op_id);  // a lost op: its placeholder
        if (!event_ok(e, rec.ops.size(), seen.version))
          return "event " + std::to_string(i - base) + event_problem(e, rec.ops.size(), seen.version);
        if (e.payload_bytes != 0)
          return "event " + std::to_string(i - base) + " has payload_bytes " +
                 std::to_string(e.payload_bytes) + " (always 0 in a record file)";
      }
      seen.salvage.events.read(rec.events.size() - base);
      return "";
    }
    case ChunkType::SHAPES:
      // After a lost SHAPES chunk no shape id can be placed (Salvage::shapes_from).
      if (seen.salvage.shapes_from != UINT64_MAX) return "";
      if (std::string problem = read_shapes(d, rec); !problem.empty()) return problem;
      break;
    case ChunkType::ENTRY_SHAPES:
      return read_entry_shapes(payload, rec, seen);
    case ChunkType::MEM_EVENTS: {
      if (payload.size() % sizeof(gp_mem_event) != 0)
        return not_whole(payload.size(), sizeof(gp_mem_event), "memory events");
      const size_t base = rec.mem_events.size();
      rec.mem_events.resize(base + payload.size() / sizeof(gp_mem_event));
      if (!payload.empty())  // memcpy must not see the null data() of an empty vector
        std::memcpy(rec.mem_events.data() + base, payload.data(), payload.size());
      for (size_t i = base; i < rec.mem_events.size(); ++i)
        if (!mem_event_ok(rec.mem_events[i]))
          return "memory event " + std::to_string(i - base) + " has unknown kind " +
                 std::to_string(rec.mem_events[i].kind);
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
    case ChunkType::SAMPLE_KERNEL_STACKS:
      return read_sample_kernel_stacks(payload, rec, seen);
    case ChunkType::LAUNCH_NAMES:
      if (std::string problem = read_launch_names(d, rec, seen.salvage); !problem.empty()) return problem;
      break;
    case ChunkType::LAUNCHES:
      return read_launches(payload, rec, seen.salvage);
    case ChunkType::CUDA_RUNTIME:
      if (!first(seen.cuda_runtime)) return "duplicate CUDA_RUNTIME chunk";
      cuda_runtime_fields(d, rec.cuda_runtime.emplace());
      break;
    case ChunkType::GPU_CORRELATIONS:
      return read_gpu_correlations(payload, rec);
    case ChunkType::GPU_ACTIVITIES:
      return read_gpu_activities(payload, rec, seen.salvage);
    case ChunkType::CUPTI_SHIM:
      if (!first(seen.cupti_shim)) return "duplicate CUPTI_SHIM chunk";
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
    case ChunkType::THREAD_NAMES:
      if (!first(seen.thread_names)) return "duplicate THREAD_NAMES chunk";
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
        auto known = std::find_if(rec.processes.begin(), rec.processes.end(),
                                  [&](const ProcessInfo& q) { return q.pid == p.pid; });
        if (known != rec.processes.end())
          *known = std::move(p);
        else
          rec.processes.push_back(std::move(p));
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
      if (!first(seen.stats)) return "duplicate STATS chunk";
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

// Whether a chunk that passes its checksum starts at `at`: of any type when
// any_type (where a trusted length ends), else of a known type of `version`
// with a zero reserved field (a place to go on from after a damaged length:
// anything else the writer never wrote). nullopt on an I/O error.
std::optional<bool> chunk_at(Source& src, uint64_t at, uint32_t version, bool any_type, std::string* error) {
  if (src.size() - at < kRecordChunkHeaderSize) return false;
  std::span<const uint8_t> bytes;
  if (!src.read(at, kRecordChunkHeaderSize, &bytes, error)) return std::nullopt;
  uint8_t hdr[kRecordChunkHeaderSize];
  std::memcpy(hdr, bytes.data(), sizeof hdr);
  const uint32_t len = get<uint32_t>(hdr + 4);
  if (!any_type && (!known_type(get<uint32_t>(hdr), version) || get<uint32_t>(hdr + 8) != 0)) return false;
  if (len > kRecordMaxChunkPayload || src.size() - at - kRecordChunkHeaderSize < len) return false;
  if (!src.read(at + kRecordChunkHeaderSize, len, &bytes, error)) return std::nullopt;
  return chunk_crc(hdr, bytes.data(), len) == get<uint32_t>(hdr + 12);
}

// The first offset from `from` on where chunk_at finds a chunk of a known
// type; src.size() when there is none. nullopt on an I/O error.
std::optional<uint64_t> next_chunk(Source& src, uint64_t from, uint32_t version, std::string* error) {
  constexpr size_t kWindow = 64u << 10;  // header positions looked at per read
  const uint64_t size = src.size();
  std::vector<uint8_t> window;
  for (uint64_t base = from; base < size && size - base >= kRecordChunkHeaderSize;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(size - base, kWindow + kRecordChunkHeaderSize - 1));
    std::span<const uint8_t> bytes;
    if (!src.read(base, n, &bytes, error)) return std::nullopt;
    window.assign(bytes.begin(), bytes.end());  // chunk_at reads over the source's buffer
    const size_t positions = n - (kRecordChunkHeaderSize - 1);
    for (size_t i = 0; i < positions; ++i) {
      const uint8_t* h = window.data() + i;
      // The cheap tests first: most positions fail them.
      if (!known_type(get<uint32_t>(h), version) || get<uint32_t>(h + 8) != 0 ||
          get<uint32_t>(h + 4) > size - base - i - kRecordChunkHeaderSize)
        continue;
      const std::optional<bool> found = chunk_at(src, base + i, version, false, error);
      if (!found) return std::nullopt;
      if (*found) return base + i;
    }
    base += positions;
  }
  return size;
}

// A corrupt chunk the reader skips (record_file.h, "Corrupt chunks").
struct Skipped {
  uint64_t end = 0;                // where the next chunk begins (the file's size: none)
  std::optional<ChunkType> type;   // what it was, nullopt when that cannot be told
  std::string how;                 // said after the damage: "" or how its extent was found
  bool rest = false;               // no chunk follows: the rest of the file is lost
};

// The type of a chunk whose checksum fails: the header's when known, unless
// the checksum matches with another known type in its place (only the type
// field was damaged); with `len` in place of the header's (the length was
// damaged), only a match confirms the header's type.
std::optional<ChunkType> damaged_type(const uint8_t* hdr, std::span<const uint8_t> payload, uint32_t version,
                                      bool len_damaged) {
  uint8_t fixed[kRecordChunkHeaderSize];
  std::memcpy(fixed, hdr, sizeof fixed);
  const uint32_t len = static_cast<uint32_t>(payload.size()), crc = get<uint32_t>(hdr + 12);
  std::memcpy(fixed + 4, &len, 4);
  const uint32_t said = get<uint32_t>(hdr);
  auto matches = [&](uint32_t type) {
    std::memcpy(fixed, &type, 4);
    return chunk_crc(fixed, payload.data(), len) == crc;
  };
  if (len_damaged) return known_type(said, version) && matches(said) ? std::optional(ChunkType(said)) : std::nullopt;
  for (uint32_t type = 1; known_type(type, version); ++type)
    if (type != said && matches(type)) return ChunkType(type);
  return known_type(said, version) ? std::optional(ChunkType(said)) : std::nullopt;
}

// Where the corrupt chunk at `off` (header hdr) ends and what it was: where
// its length says when a chunk passing its checksum starts there (or the
// file ends there) and no chunk of a known type passing its checksum starts
// before (a length damaged into pointing at a later chunk would skip good
// chunks); otherwise at the first such chunk after it (the length was
// damaged); otherwise at the end of the file.
std::optional<Skipped> skip_corrupt(Source& src, uint64_t off, const uint8_t* hdr, uint32_t version,
                                    std::string* error) {
  const uint64_t size = src.size();
  const uint32_t len = get<uint32_t>(hdr + 4);
  const std::optional<uint64_t> next = next_chunk(src, off + 1, version, error);
  if (!next) return std::nullopt;
  std::span<const uint8_t> payload;
  if (len <= kRecordMaxChunkPayload && size - off - kRecordChunkHeaderSize >= len) {
    const uint64_t end = off + kRecordChunkHeaderSize + len;
    const std::optional<bool> ends_there = end == size ? true : chunk_at(src, end, version, true, error);
    if (!ends_there) return std::nullopt;
    if (*ends_there && *next >= end) {
      if (!src.read(off + kRecordChunkHeaderSize, len, &payload, error)) return std::nullopt;
      return Skipped{end, damaged_type(hdr, payload, version, false), "", false};
    }
  }
  if (*next == size)
    return Skipped{size, std::nullopt, " (no chunk follows it that passes its checksum: the rest of the file is lost)",
                   true};
  const uint64_t payload_bytes = *next - off >= kRecordChunkHeaderSize ? *next - off - kRecordChunkHeaderSize : 0;
  if (!src.read(off + kRecordChunkHeaderSize, static_cast<size_t>(payload_bytes), &payload, error))
    return std::nullopt;
  return Skipped{*next, damaged_type(hdr, payload, version, true),
                 " (its length is damaged: the next chunk is at offset " + std::to_string(*next) + ")", false};
}

std::optional<Recording> parse(Source& src, const std::string& name, std::string* error, CorruptChunks corrupt) {
  auto fail = [&](std::string msg) -> std::optional<Recording> {
    *error = std::move(msg);
    return std::nullopt;
  };
  const uint64_t size = src.size();
  if (size == 0) return fail(name + " is empty: not a gpuprof record file");

  std::span<const uint8_t> bytes;
  size_t head = static_cast<size_t>(std::min<uint64_t>(size, kRecordHeaderSize));
  if (!src.read(0, head, &bytes, error)) return std::nullopt;
  if (std::memcmp(bytes.data(), kRecordMagic, std::min(head, sizeof kRecordMagic)) != 0)
    return fail(name + " is not a gpuprof record file (no GPUPROF magic)");
  if (head < kRecordHeaderSize)
    return fail(name + " is truncated: it ends inside the file header (" + std::to_string(head) +
                " of " + std::to_string(kRecordHeaderSize) + " bytes)");
  const uint32_t version = get<uint32_t>(bytes.data() + 8);
  const uint32_t header_size = get<uint32_t>(bytes.data() + 12);
  const std::string ours = std::to_string(GP_RECORD_FORMAT_VERSION);
  if (version > GP_RECORD_FORMAT_VERSION)
    return fail(name + " was written by a newer gpuprof: record format version " +
                std::to_string(version) + ", this gpuprof reads version " + ours);
  if (version == 0)
    return fail(name + ": unsupported record format version 0 (this gpuprof reads version " + ours +
                ")");
  if (header_size != kRecordHeaderSize)
    return fail(name + ": corrupt file header: header size " + std::to_string(header_size) +
                " (expected " + std::to_string(kRecordHeaderSize) + ")");

  Recording rec;
  rec.format_version = version;
  Seen seen;
  seen.version = version;
  uint64_t off = kRecordHeaderSize;
  uint64_t torn_bytes = 0;  // bytes of a torn final chunk
  bool rest_lost = false;   // a corrupt chunk after which no chunk could be found
  for (uint64_t index = 1; off < size && !seen.end; ++index) {
    const std::string where = name + ": corrupt chunk " + std::to_string(index);
    const std::string at = " at offset " + std::to_string(off) + ": ";
    const uint64_t avail = size - off;
    uint8_t hdr[kRecordChunkHeaderSize] = {};
    if (avail >= sizeof hdr) {
      if (!src.read(off, sizeof hdr, &bytes, error)) return std::nullopt;
      std::memcpy(hdr, bytes.data(), sizeof hdr);
    }
    const uint32_t type = get<uint32_t>(hdr), len = get<uint32_t>(hdr + 4);
    // Corrupt chunks are skipped once the mandatory chunks are read (record_file.h).
    const bool skip = corrupt == CorruptChunks::skip && seen.mandatory();
    std::string damage;  // what is wrong with the chunk, "" when nothing
    if (len > kRecordMaxChunkPayload) {  // refused before anything is allocated
      damage = "payload length " + std::to_string(len) + " exceeds the limit of " +
               std::to_string(kRecordMaxChunkPayload) + " bytes";
    } else if (avail < sizeof hdr || avail - sizeof hdr < len) {  // the file ends inside this chunk
      // A torn last chunk (the recorder was killed), unless a chunk follows:
      // then the length is damaged.
      std::optional<uint64_t> next = skip ? next_chunk(src, off + 1, version, error) : size;
      if (!next) return std::nullopt;
      if (*next == size) {
        torn_bytes = avail;
        break;
      }
      damage = "payload length " + std::to_string(len) + " points past the end of the file";
    } else {
      if (!src.read(off + kRecordChunkHeaderSize, len, &bytes, error)) return std::nullopt;
      if (chunk_crc(hdr, bytes.data(), len) != get<uint32_t>(hdr + 12)) damage = "checksum mismatch";
    }
    if (!damage.empty()) {
      if (!skip) return fail(where + at + damage);
      const std::optional<Skipped> skipped = skip_corrupt(src, off, hdr, version, error);
      if (!skipped) return std::nullopt;
      const uint64_t bytes_lost = skipped->end - off;
      const uint64_t payload_lost = bytes_lost > kRecordChunkHeaderSize ? bytes_lost - kRecordChunkHeaderSize : 0;
      const std::string kind =
          skipped->type ? std::string(" (") + type_name(static_cast<uint32_t>(*skipped->type)) + ")" : "";
      const std::string lost = seen.salvage.lose(skipped->type, payload_lost, rec);
      rec.lost_chunks.push_back(
          {index, off, bytes_lost, where + kind + at + damage + skipped->how + "; skipped: lost " + lost});
      rest_lost = skipped->rest;
      off = skipped->end;
      continue;
    }
    if (type == static_cast<uint32_t>(ChunkType::EVENTS) && rec.events.capacity() == 0)
      rec.events.reserve(static_cast<size_t>((size - off) / sizeof(gp_event)));  // <= the file
    if (type == static_cast<uint32_t>(ChunkType::SAMPLES) && rec.samples.capacity() == 0)
      rec.samples.reserve(static_cast<size_t>((size - off) / kRecordSampleBytes));  // 1.2 x file
    if (type == static_cast<uint32_t>(ChunkType::LAUNCHES) && rec.launches.capacity() == 0)
      rec.launches.reserve(static_cast<size_t>((size - off) / kLaunchBytes));  // <= the file
    if (type == static_cast<uint32_t>(ChunkType::GPU_CORRELATIONS) &&
        rec.gpu_correlations.capacity() == 0)  // 32 bytes each: <= the file
      rec.gpu_correlations.reserve(static_cast<size_t>((size - off) / kGpuCorrelationBytes));
    if (type == static_cast<uint32_t>(ChunkType::GPU_ACTIVITIES) &&
        rec.gpu_activities.capacity() == 0)  // 48 bytes each: <= the file
      rec.gpu_activities.reserve(static_cast<size_t>((size - off) / kGpuActivityBytes));
    std::string problem = apply_chunk(type, bytes, rec, seen);
    if (!problem.empty()) return fail(where + " (" + type_name(type) + ")" + at + problem);
    off += kRecordChunkHeaderSize + len;
  }
  if (seen.end && off != size)
    return fail(name + ": corrupt: " + std::to_string(size - off) +
                " bytes after the END chunk at offset " + std::to_string(off));
  if (!seen.mandatory())
    return fail(name + " is truncated: it ends at offset " + std::to_string(size) +
                ", before the " + seen.mandatory_names() + " chunks are complete");
  seen.salvage.finish(rec);
  rec.complete = seen.end;
  if (rest_lost) {
    rec.incomplete_reason = "its end was lost with a corrupt chunk";
  } else if (seen.salvage.end) {
    rec.incomplete_reason = "its END chunk was corrupt";
  } else if (!seen.end) {
    rec.incomplete_reason = "no END chunk: the recorder did not finish (killed, or its disk full)";
    if (torn_bytes > 0)
      rec.incomplete_reason += "; ignored " + std::to_string(torn_bytes) +
                               " bytes of a torn chunk at offset " + std::to_string(off);
  }
  return rec;
}

}  // namespace

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

// ---- RecordWriter ----

namespace {
// The room for a SHAPES chunk header and its u32 count.
constexpr size_t kShapesPrefix = kRecordChunkHeaderSize + 4;
// The room for a SAMPLE_FRAMES chunk header, its u32 first_id and u32 count.
constexpr size_t kFramesPrefix = kRecordChunkHeaderSize + 8;
// The same for a SAMPLE_STACKS chunk.
constexpr size_t kStacksPrefix = kRecordChunkHeaderSize + 8;
// The same for a LAUNCH_NAMES chunk.
constexpr size_t kLaunchNamesPrefix = kRecordChunkHeaderSize + 8;
size_t payload_size(const std::vector<uint8_t>& chunk) {
  return chunk.size() - kRecordChunkHeaderSize;
}
}  // namespace

RecordWriter::RecordWriter(int fd, std::string path)
    : fd_(fd),
      path_(std::move(path)),
      pending_(chunk_buffer()),
      pending_shapes_(kShapesPrefix, 0),
      pending_entries_(chunk_buffer()),
      pending_mem_(chunk_buffer()),
      pending_frames_(kFramesPrefix, 0),
      pending_stacks_(kStacksPrefix, 0),
      pending_samples_(chunk_buffer()),
      pending_entry_stacks_(chunk_buffer()),
      pending_kernel_stacks_(chunk_buffer()),
      pending_launch_names_(kLaunchNamesPrefix, 0),
      pending_launches_(chunk_buffer()),
      pending_gpu_correlations_(chunk_buffer()),
      pending_gpu_activities_(chunk_buffer()) {}

std::optional<RecordWriter> RecordWriter::create(const std::string& path, std::string* error, mode_t mode) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) {
    *error = "cannot create " + path + ": " + std::strerror(errno);
    return std::nullopt;
  }
  if (!set_file_mode(fd, mode)) {
    *error = "cannot set the mode of " + path + ": " + std::strerror(errno);
    ::close(fd);
    return std::nullopt;
  }
  return RecordWriter(fd, path);
}

bool RecordWriter::check_state(State want, const char* what, std::string* error) const {
  if (state_ == want && fd_.get() >= 0) return true;  // fd < 0: moved from
  *error = path_ + ": " + what +
           (state_ == State::kFailed || state_ == State::kDiskFull ? " after an earlier write error"
                                     : " called out of order (internal error)");
  return false;
}

// Keeps kRecordClosingReserve bytes allocated past the next `bytes`, in
// steps of that much (one fallocate per step, not per chunk). A file system
// out of room refuses: nothing of the chunk is written, and the room taken
// before is there for finish().
bool RecordWriter::keep_room_for(size_t bytes, std::string* error) {
  if (closing_ || !can_reserve_ || offset_ + bytes + kRecordClosingReserve <= reserved_to_) return true;
  const uint64_t to = offset_ + bytes + 2 * kRecordClosingReserve;
  if (fallocate(fd_.get(), FALLOC_FL_KEEP_SIZE, static_cast<off_t>(offset_), static_cast<off_t>(to - offset_)) == 0) {
    reserved_to_ = to;
    return true;
  }
  const int why = errno;
  if (why != ENOSPC && why != EDQUOT) {
    can_reserve_ = false;  // no fallocate here (a pipe, /dev/null, a file system without it)
    return true;
  }
  // A failed call may undo its whole range not yet written, the room kept
  // before included (tmpfs does): take that much again.
  if (fallocate(fd_.get(), FALLOC_FL_KEEP_SIZE, static_cast<off_t>(offset_), static_cast<off_t>(kRecordClosingReserve)) != 0)
    can_reserve_ = false;
  stop_writing(why, error);
  return false;
}

void RecordWriter::stop_writing(int error_number, std::string* error) {
  *error = "cannot write " + path_ + ": " + std::strerror(error_number);
  state_ = (error_number == ENOSPC || error_number == EDQUOT) && !closing_ ? State::kDiskFull : State::kFailed;
}

// One write loop for the whole buffer: a killed writer tears at most this one.
bool RecordWriter::write_bytes(const std::vector<uint8_t>& bytes, std::string* error) {
  if (!keep_room_for(bytes.size(), error)) return false;
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t r = ::write(fd_.get(), bytes.data() + done, bytes.size() - done);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      const int why = r < 0 ? errno : EIO;
      // A torn chunk is cut off: the file ends at its last whole chunk.
      if (done > 0 && ftruncate(fd_.get(), static_cast<off_t>(offset_)) == 0)
        lseek(fd_.get(), static_cast<off_t>(offset_), SEEK_SET);
      stop_writing(why, error);
      return false;
    }
    done += static_cast<size_t>(r);
  }
  offset_ += bytes.size();
  return true;
}

bool RecordWriter::write_chunk(ChunkType type, std::vector<uint8_t>& chunk, std::string* error) {
  if (payload_size(chunk) > kRecordMaxChunkPayload) {
    *error = path_ + ": " + type_name(static_cast<uint32_t>(type)) + " chunk of " +
             std::to_string(payload_size(chunk)) + " bytes exceeds the limit";
    state_ = State::kFailed;
    return false;
  }
  seal_chunk(chunk, static_cast<uint32_t>(type));
  return write_bytes(chunk, error);
}

bool RecordWriter::begin(const ProcessInfo& process, const ClockInfo& clock,
                         const std::vector<OpInfo>& ops, const RecordOptions& options,
                         std::string* error) {
  if (!check_state(State::kCreated, "begin", error)) return false;
  for (size_t i = 0; i < ops.size(); ++i)
    if (std::string problem = op_problem(ops[i], i); !problem.empty()) {
      *error = path_ + ": not recording op table: " + problem;
      return false;
    }
  Encoder p, c, o, f;
  process_fields(p, process);
  clock_fields(c, clock);
  o.u32(static_cast<uint32_t>(ops.size()));
  for (const OpInfo& op : ops) op_fields(o, op, GP_RECORD_FORMAT_VERSION);
  f.u32(option_flags(options));
  if (options.sample_hz > 0) f.u32(options.sample_hz);
  if (!write_bytes(encode_record_header(), error) || !write_chunk(ChunkType::PROCESS, p.b, error) ||
      !write_chunk(ChunkType::CLOCK, c.b, error) || !write_chunk(ChunkType::OP_TABLE, o.b, error) ||
      !write_chunk(ChunkType::OPTIONS, f.b, error)) {
    // Without its mandatory chunks the file is no recording: no stub is
    // left (a full disk at the start). Only a file this writer made.
    struct stat st;
    if (fstat(fd_.get(), &st) == 0 && S_ISREG(st.st_mode)) unlink(path_.c_str());
    state_ = State::kFailed;
    return false;
  }
  ops_count_ = ops.size();
  options_ = options;
  state_ = State::kBegun;
  return true;
}

bool RecordWriter::append_events(const gp_event* events, size_t count, std::string* error) {
  if (!check_state(State::kBegun, "append_events", error)) return false;
  if (count > 0 && !options_.ops) {
    *error = path_ + ": not recording events: the recording was begun without ops (no-ops option)";
    return false;
  }
  // Reject the whole batch before buffering any of it: a bad event written
  // would make the file unreadable (the reader rejects it as corrupt).
  for (size_t i = 0; i < count; ++i)
    if (!event_ok(events[i], ops_count_, GP_RECORD_FORMAT_VERSION)) {
      *error = path_ + ": not recording event" + event_problem(events[i], ops_count_, GP_RECORD_FORMAT_VERSION);
      return false;
    }
  if (options_.shapes || options_.with_stack) {  // for append_shapes, append_entry_stack
    const uint64_t first = events_appended();
    for (size_t i = 0; i < count; ++i)
      if (events[i].kind == GP_EV_OP_ENTRY || events[i].kind == GP_EV_RANGE_BEGIN) entries_.set(first + i);
  }
  const auto* src = reinterpret_cast<const uint8_t*>(events);
  size_t left = count * sizeof(gp_event);
  while (left > 0) {
    size_t buffered = payload_size(pending_);
    size_t take = std::min(left, kRecordEventsChunkBytes - buffered);  // whole events
    pending_.insert(pending_.end(), src, src + take);
    // payload_bytes belongs to the ring buffer: always 0 in the file.
    for (size_t at = pending_.size() - take; at < pending_.size(); at += sizeof(gp_event))
      std::memset(pending_.data() + at + offsetof(gp_event, payload_bytes), 0,
                  sizeof(gp_event::payload_bytes));
    src += take;
    left -= take;
    if (buffered + take >= kRecordEventsChunkBytes && !flush_events(error)) return false;
  }
  return true;
}

void RecordWriter::IndexBits::set(uint64_t index) {
  if (index < base_) return;  // forgotten already: never asked about again
  const uint64_t word = (index - base_) / 64;
  if (word >= words_.size()) words_.resize(static_cast<size_t>(word + 1), 0);
  words_[word] |= uint64_t{1} << ((index - base_) % 64);
}

bool RecordWriter::IndexBits::test(uint64_t index) const {
  if (index < base_) return false;
  const uint64_t word = (index - base_) / 64;
  return word < words_.size() && ((words_[word] >> ((index - base_) % 64)) & 1) != 0;
}

// In big steps: erasing the front moves every word after it.
void RecordWriter::IndexBits::forget_below(uint64_t mark) {
  const uint64_t drop = mark > base_ ? (mark - base_) / 64 : 0;
  if (drop < 1024) return;
  words_.erase(words_.begin(),
               words_.begin() + static_cast<ptrdiff_t>(std::min<uint64_t>(drop, words_.size())));
  base_ += drop * 64;
}

// Both cursors that ask about entries must be past an event before it is
// forgotten.
void RecordWriter::forget_old_entries() {
  uint64_t mark = UINT64_MAX;
  if (options_.shapes) mark = std::min(mark, next_entry_index_);
  if (options_.with_stack) mark = std::min(mark, next_stack_entry_index_);
  entries_.forget_below(mark);
}

bool RecordWriter::append_shapes(uint64_t event_index, const InputShapes& shapes,
                                 std::string* error) {
  if (!check_state(State::kBegun, "append_shapes", error)) return false;
  auto refuse = [&](const std::string& why) {
    *error =
        path_ + ": not recording the shapes of event " + std::to_string(event_index) + ": " + why;
    return false;
  };
  if (!options_.shapes) return refuse("the recording was begun without the shapes option");
  if (event_index < next_entry_index_)
    return refuse("not above the previous entry shape's event " +
                  std::to_string(next_entry_index_ - 1));
  if (event_index >= events_appended())
    return refuse("only " + std::to_string(events_appended()) + " events were appended");
  if (!entries_.test(event_index)) return refuse("it is not an ENTRY event");
  if (shapes.size() > UINT32_MAX) return refuse("too many arguments");
  for (size_t a = 0; a < shapes.size(); ++a)
    if (shapes[a] && shapes[a]->size() > static_cast<size_t>(kRecordMaxShapeDims))
      return refuse("argument " + std::to_string(a) + " has " + std::to_string(shapes[a]->size()) +
                    " dims (at most " + std::to_string(kRecordMaxShapeDims) + ")");
  std::string def = encode_shape(shapes);
  if (def.size() > kRecordMaxChunkPayload - 4) return refuse("the shape list is too large");

  auto it = shape_ids_.find(def);
  if (it == shape_ids_.end()) {
    if (shape_ids_.size() >= UINT32_MAX) return refuse("too many distinct shape lists");
    // Keep the SHAPES chunk under the cap (flush writes the pending ones).
    if (pending_shapes_.size() - kShapesPrefix + def.size() > kRecordMaxChunkPayload - 4 &&
        !flush(error))
      return false;
    pending_shapes_.insert(pending_shapes_.end(), def.begin(), def.end());
    ++pending_shape_count_;
    const uint32_t id = static_cast<uint32_t>(shape_ids_.size());
    it = shape_ids_.emplace(std::move(def), id).first;
  }
  append_pair(pending_entries_, event_index, it->second);
  next_entry_index_ = event_index + 1;
  forget_old_entries();
  if (pending_shapes_.size() - kShapesPrefix >= kRecordEventsChunkBytes ||
      payload_size(pending_entries_) >= kRecordEventsChunkBytes)
    return flush(error);
  return true;
}

bool RecordWriter::append_mem_events(const gp_mem_event* events, size_t count, std::string* error) {
  if (!check_state(State::kBegun, "append_mem_events", error)) return false;
  if (count > 0 && !options_.memory) {
    *error = path_ +
             ": not recording memory events: the recording was begun without the "
             "memory option";
    return false;
  }
  for (size_t i = 0; i < count; ++i)
    if (!mem_event_ok(events[i])) {
      *error = path_ + ": not recording memory event " + std::to_string(i) +
               " of the batch: unknown kind " + std::to_string(events[i].kind);
      return false;
    }
  const auto* src = reinterpret_cast<const uint8_t*>(events);
  size_t left = count * sizeof(gp_mem_event);
  while (left > 0) {
    size_t buffered = payload_size(pending_mem_);
    size_t take = std::min(left, kRecordMemEventsChunkBytes - buffered);  // whole events
    pending_mem_.insert(pending_mem_.end(), src, src + take);
    src += take;
    left -= take;
    if (buffered + take >= kRecordMemEventsChunkBytes && !flush_mem_events(error)) return false;
  }
  return true;
}

bool RecordWriter::add_sample_frame(const std::string& name, std::string* error) {
  if (!check_state(State::kBegun, "add_sample_frame", error)) return false;
  auto refuse = [&](const std::string& why) {
    *error = path_ + ": not defining sample frame " + std::to_string(frames_defined_) + ": " + why;
    return false;
  };
  if (!has_frames(options_))
    return refuse("the recording was begun without CPU sampling or the with_stack option");
  if (frames_defined_ == UINT32_MAX) return refuse("too many frames");
  const size_t def = 4 + name.size();
  if (def > kRecordMaxChunkPayload - 8) return refuse("the name is too long");
  // Keep the SAMPLE_FRAMES chunk under the cap.
  if (pending_frames_.size() - kFramesPrefix + def > kRecordMaxChunkPayload - 8 &&
      !flush_sample_frames(error))
    return false;
  const uint32_t len = static_cast<uint32_t>(name.size());
  const auto* l = reinterpret_cast<const uint8_t*>(&len);
  pending_frames_.insert(pending_frames_.end(), l, l + 4);
  pending_frames_.insert(pending_frames_.end(), name.begin(), name.end());
  ++pending_frame_count_;
  ++frames_defined_;
  if (pending_frames_.size() - kFramesPrefix >= kRecordEventsChunkBytes)
    return flush_sample_frames(error);
  return true;
}

bool RecordWriter::add_sample_stack(const std::vector<uint32_t>& frame_ids, std::string* error) {
  if (!check_state(State::kBegun, "add_sample_stack", error)) return false;
  auto refuse = [&](const std::string& why) {
    *error = path_ + ": not defining sample stack " + std::to_string(stacks_defined_) + ": " + why;
    return false;
  };
  if (!has_frames(options_))
    return refuse("the recording was begun without CPU sampling or the with_stack option");
  if (stacks_defined_ == UINT32_MAX - 1)  // UINT32_MAX is kNoPythonStack
    return refuse("too many stacks");
  if (frame_ids.size() > kRecordMaxSampleStackDepth)
    return refuse(std::to_string(frame_ids.size()) + " frames (at most " +
                  std::to_string(kRecordMaxSampleStackDepth) + ")");
  for (size_t i = 0; i < frame_ids.size(); ++i)
    if (frame_ids[i] >= frames_defined_)
      return refuse("frame " + std::to_string(i) + " is frame_id " +
                    std::to_string(frame_ids[i]) + ", but " + std::to_string(frames_defined_) +
                    " frames are defined");
  const uint32_t n = static_cast<uint32_t>(frame_ids.size());
  const auto* b = reinterpret_cast<const uint8_t*>(&n);
  pending_stacks_.insert(pending_stacks_.end(), b, b + 4);
  if (n > 0) {
    const auto* f = reinterpret_cast<const uint8_t*>(frame_ids.data());
    pending_stacks_.insert(pending_stacks_.end(), f, f + 4 * size_t{n});
  }
  ++pending_stack_count_;
  ++stacks_defined_;
  // At most kRecordEventsChunkBytes + 4 + 4 * 4096 bytes: far under the cap.
  if (pending_stacks_.size() - kStacksPrefix >= kRecordEventsChunkBytes)
    return flush_sample_stacks(error);
  return true;
}

bool RecordWriter::append_samples(const CpuSample* samples, size_t count, std::string* error) {
  if (!check_state(State::kBegun, "append_samples", error)) return false;
  if (count > 0 && options_.sample_hz == 0) {
    *error = path_ + ": not recording samples: the recording was begun without CPU sampling";
    return false;
  }
  for (size_t i = 0; i < count; ++i)
    if (samples[i].frame_id >= frames_defined_) {
      *error = path_ + ": not recording sample " + std::to_string(i) + " of the batch: frame_id " +
               std::to_string(samples[i].frame_id) + ", but " + std::to_string(frames_defined_) +
               " frames are defined";
      return false;
    }
  for (size_t i = 0; i < count; ++i)
    if (samples[i].python_stack != kNoPythonStack && samples[i].python_stack >= stacks_defined_) {
      *error = path_ + ": not recording sample " + std::to_string(i) +
               " of the batch: python_stack " + std::to_string(samples[i].python_stack) +
               ", but " + std::to_string(stacks_defined_) + " stacks are defined";
      return false;
    }
  for (size_t i = 0; i < count; ++i) {
    if (samples[i].in_kernel) in_kernel_.set(samples_appended());  // for append_sample_kernel_stack
    const size_t at = pending_samples_.size();
    pending_samples_.resize(at + kRecordSampleBytes);
    encode_sample(samples[i], pending_samples_.data() + at);
    if (payload_size(pending_samples_) >= kRecordSamplesChunkBytes && !flush_samples(error))
      return false;
  }
  return true;
}

bool RecordWriter::append_entry_stack(uint64_t event_index, uint32_t stack_id, std::string* error) {
  if (!check_state(State::kBegun, "append_entry_stack", error)) return false;
  auto refuse = [&](const std::string& why) {
    *error =
        path_ + ": not recording the stack of event " + std::to_string(event_index) + ": " + why;
    return false;
  };
  if (!options_.with_stack) return refuse("the recording was begun without the with_stack option");
  if (event_index < next_stack_entry_index_)
    return refuse("not above the previous entry stack's event " +
                  std::to_string(next_stack_entry_index_ - 1));
  if (event_index >= events_appended())
    return refuse("only " + std::to_string(events_appended()) + " events were appended");
  if (!entries_.test(event_index)) return refuse("it is not an ENTRY event");
  if (stack_id >= stacks_defined_)
    return refuse("stack_id " + std::to_string(stack_id) + ", but " +
                  std::to_string(stacks_defined_) + " stacks are defined");
  append_pair(pending_entry_stacks_, event_index, stack_id);
  next_stack_entry_index_ = event_index + 1;
  forget_old_entries();
  if (payload_size(pending_entry_stacks_) >= kRecordEventsChunkBytes)
    return flush_entry_stacks(error);
  return true;
}

bool RecordWriter::append_sample_kernel_stack(uint64_t sample_index, uint32_t stack_id,
                                              std::string* error) {
  if (!check_state(State::kBegun, "append_sample_kernel_stack", error)) return false;
  auto refuse = [&](const std::string& why) {
    *error = path_ + ": not recording the kernel stack of sample " + std::to_string(sample_index) +
             ": " + why;
    return false;
  };
  if (options_.sample_hz == 0) return refuse("the recording was begun without CPU sampling");
  if (sample_index < next_kernel_sample_index_)
    return refuse("not above the previous kernel stack's sample " +
                  std::to_string(next_kernel_sample_index_ - 1));
  if (sample_index >= samples_appended())
    return refuse("only " + std::to_string(samples_appended()) + " samples were appended");
  if (!in_kernel_.test(sample_index)) return refuse("it is not an in-kernel sample");
  if (stack_id >= stacks_defined_)
    return refuse("stack_id " + std::to_string(stack_id) + ", but " +
                  std::to_string(stacks_defined_) + " stacks are defined");
  append_pair(pending_kernel_stacks_, sample_index, stack_id);
  next_kernel_sample_index_ = sample_index + 1;
  in_kernel_.forget_below(next_kernel_sample_index_);
  if (payload_size(pending_kernel_stacks_) >= kRecordEventsChunkBytes)
    return flush_sample_kernel_stacks(error);
  return true;
}

bool RecordWriter::add_launch_name(const std::string& name, std::string* error) {
  if (!check_state(State::kBegun, "add_launch_name", error)) return false;
  auto refuse = [&](const std::string& why) {
    *error =
        path_ + ": not defining launch name " + std::to_string(launch_names_defined_) + ": " + why;
    return false;
  };
  if (!options_.ops) return refuse("the recording was begun without ops (no-ops option)");
  if (launch_names_defined_ == UINT32_MAX) return refuse("too many names");
  const size_t def = 4 + name.size();
  if (def > kRecordMaxChunkPayload - 8) return refuse("the name is too long");
  // Keep the LAUNCH_NAMES chunk under the cap.
  if (pending_launch_names_.size() - kLaunchNamesPrefix + def > kRecordMaxChunkPayload - 8 &&
      !flush_launch_names(error))
    return false;
  const uint32_t len = static_cast<uint32_t>(name.size());
  const auto* l = reinterpret_cast<const uint8_t*>(&len);
  pending_launch_names_.insert(pending_launch_names_.end(), l, l + 4);
  pending_launch_names_.insert(pending_launch_names_.end(), name.begin(), name.end());
  ++pending_launch_name_count_;
  ++launch_names_defined_;
  if (pending_launch_names_.size() - kLaunchNamesPrefix >= kRecordEventsChunkBytes)
    return flush_launch_names(error);
  return true;
}

uint32_t RecordWriter::launch_names_defined() const { return launch_names_defined_; }

bool RecordWriter::append_launches(const CudaLaunch* launches, size_t count, std::string* error) {
  if (!check_state(State::kBegun, "append_launches", error)) return false;
  if (count > 0 && !options_.ops) {
    *error =
        path_ + ": not recording launches: the recording was begun without ops (no-ops option)";
    return false;
  }
  for (size_t i = 0; i < count; ++i)
    if (std::string problem = launch_problem(launches[i], launch_names_defined_);
        !problem.empty()) {
      *error = path_ + ": not recording launch " + std::to_string(i) + " of the batch: " + problem;
      return false;
    }
  for (size_t i = 0; i < count; ++i) {
    const size_t at = pending_launches_.size();
    pending_launches_.resize(at + kLaunchBytes);
    encode_launch(launches[i], pending_launches_.data() + at);
    if (payload_size(pending_launches_) >= kRecordEventsChunkBytes && !flush_launches(error))
      return false;
  }
  return true;
}

bool RecordWriter::set_cuda_runtime(const CudaRuntimeInfo& info, std::string* error) {
  if (!disk_full() && !check_state(State::kBegun, "set_cuda_runtime", error)) return false;  // finish() writes it
  auto refuse = [&](const std::string& why) {
    *error = path_ + ": not recording the CUDA runtime: " + why;
    return false;
  };
  if (!options_.ops) return refuse("the recording was begun without ops (no-ops option)");
  if (info.libcudart_path.size() > kRecordMaxChunkPayload - 16)  // str length, u32, u64
    return refuse("the libcudart path is too long");
  cuda_runtime_ = info;
  return true;
}

bool RecordWriter::append_gpu_correlations(const GpuCorrelation* correlations, size_t count,
                                           std::string* error) {
  if (!check_state(State::kBegun, "append_gpu_correlations", error)) return false;
  if (count > 0 && !options_.ops) {
    *error = path_ +
             ": not recording GPU correlations: the recording was begun without ops (no-ops "
             "option)";
    return false;
  }
  for (size_t i = 0; i < count; ++i)
    if (std::string problem = gpu_correlation_problem(correlations[i]); !problem.empty()) {
      *error = path_ + ": not recording GPU correlation " + std::to_string(i) +
               " of the batch: " + problem;
      return false;
    }
  for (size_t i = 0; i < count; ++i) {
    const size_t at = pending_gpu_correlations_.size();
    pending_gpu_correlations_.resize(at + kGpuCorrelationBytes);
    encode_gpu_correlation(correlations[i], pending_gpu_correlations_.data() + at);
    if (payload_size(pending_gpu_correlations_) >= kRecordEventsChunkBytes &&
        !flush_gpu_correlations(error))
      return false;
  }
  return true;
}

bool RecordWriter::append_gpu_activities(const GpuActivity* activities, size_t count,
                                         std::string* error) {
  if (!check_state(State::kBegun, "append_gpu_activities", error)) return false;
  if (count > 0 && !options_.ops) {
    *error = path_ +
             ": not recording GPU activities: the recording was begun without ops (no-ops "
             "option)";
    return false;
  }
  for (size_t i = 0; i < count; ++i)
    if (std::string problem = gpu_activity_problem(activities[i], launch_names_defined_);
        !problem.empty()) {
      *error = path_ + ": not recording GPU activity " + std::to_string(i) + " of the batch: " +
               problem;
      return false;
    }
  for (size_t i = 0; i < count; ++i) {
    const size_t at = pending_gpu_activities_.size();
    pending_gpu_activities_.resize(at + kGpuActivityBytes);
    encode_gpu_activity(activities[i], pending_gpu_activities_.data() + at);
    if (payload_size(pending_gpu_activities_) >= kRecordEventsChunkBytes &&
        !flush_gpu_activities(error))
      return false;
  }
  return true;
}

bool RecordWriter::set_cupti_shim(const CuptiShimInfo& info, std::string* error) {
  if (!disk_full() && !check_state(State::kBegun, "set_cupti_shim", error)) return false;  // finish() writes it
  auto refuse = [&](const std::string& why) {
    *error = path_ + ": not recording the CUPTI shim: " + why;
    return false;
  };
  if (!options_.ops) return refuse("the recording was begun without ops (no-ops option)");
  if (info.shim_path.size() > kRecordMaxChunkPayload - 24)  // str length, u32, u64, u64
    return refuse("the shim path is too long");
  cupti_shim_ = info;
  return true;
}

bool RecordWriter::add_processes(const std::vector<ProcessInfo>& processes, std::string* error) {
  if (!check_state(State::kBegun, "add_processes", error)) return false;
  Encoder e;
  e.u32(static_cast<uint32_t>(processes.size()));
  for (const ProcessInfo& p : processes) {
    if (std::string problem = listed_process_problem(p); !problem.empty()) {
      *error = path_ + ": not recording a process: it " + problem;
      return false;
    }
    listed_process_fields(e, p);
  }
  return write_chunk(ChunkType::PROCESSES, e.b, error);
}

bool RecordWriter::set_probe_costs(const ProbeCosts& costs, std::string* error) {
  if (!check_state(State::kBegun, "set_probe_costs", error)) return false;
  if (!options_.ops) {
    *error = path_ + ": not recording probe costs: the recording was begun without ops (no-ops option)";
    return false;
  }
  if (probe_costs_written_ == 2) {
    *error = path_ + ": not recording probe costs: attach's and the recording's already recorded";
    return false;
  }
  Encoder e;
  probe_costs_fields(e, std::as_const(costs));
  if (!write_chunk(ChunkType::PROBE_COSTS, e.b, error)) return false;
  probe_costs_written_++;
  return true;
}

bool RecordWriter::add_thread_processes(const std::vector<ThreadProcess>& threads, std::string* error) {
  if (!check_state(State::kBegun, "add_thread_processes", error)) return false;
  std::unordered_set<uint32_t> defined = tids_defined_;
  Encoder e;
  for (const ThreadProcess& t : threads) {
    if (std::string problem = thread_process_problem(t, defined); !problem.empty()) {
      *error = path_ + ": not recording a thread's process: thread " + problem;
      return false;
    }
    defined.insert(t.tid);
    e.u32(t.tid);
    e.u32(t.pid);
  }
  if (!write_chunk(ChunkType::THREAD_PROCESSES, e.b, error)) return false;
  tids_defined_ = std::move(defined);
  return true;
}

bool RecordWriter::add_ops(const std::vector<OpInfo>& ops, std::string* error) {
  if (!check_state(State::kBegun, "add_ops", error)) return false;
  Encoder e;
  e.u32(static_cast<uint32_t>(ops_count_));
  e.u32(static_cast<uint32_t>(ops.size()));
  for (size_t i = 0; i < ops.size(); ++i) {
    if (std::string problem = op_problem(ops[i], ops_count_ + i); !problem.empty()) {
      *error = path_ + ": not recording ops: " + problem;
      return false;
    }
    op_fields(e, ops[i], GP_RECORD_FORMAT_VERSION);
  }
  if (!write_chunk(ChunkType::MORE_OPS, e.b, error)) return false;
  ops_count_ += ops.size();
  return true;
}

bool RecordWriter::set_thread_names(const std::vector<ThreadName>& names, std::string* error) {
  if (!disk_full() && !check_state(State::kBegun, "set_thread_names", error)) return false;  // finish() writes it
  if (std::string problem = thread_names_problem(names); !problem.empty()) {
    *error = path_ + ": not recording the thread names: " + problem;
    return false;
  }
  if (names.size() > (kRecordMaxChunkPayload - 4) / (8 + kRecordMaxThreadName)) {
    *error = path_ + ": not recording the thread names: too many threads";
    return false;
  }
  thread_names_ = names;
  return true;
}

bool RecordWriter::flush_sample_frames(std::string* error) {
  if (pending_frame_count_ == 0) return true;
  const uint32_t first_id = frames_defined_ - pending_frame_count_;
  std::memcpy(pending_frames_.data() + kRecordChunkHeaderSize, &first_id, 4);
  std::memcpy(pending_frames_.data() + kRecordChunkHeaderSize + 4, &pending_frame_count_, 4);
  if (!write_chunk(ChunkType::SAMPLE_FRAMES, pending_frames_, error)) return false;
  pending_frames_.resize(kFramesPrefix);
  pending_frame_count_ = 0;
  return true;
}

// SAMPLE_FRAMES before SAMPLE_STACKS: a file cut after either never has a
// stack naming a frame it does not define.
bool RecordWriter::flush_sample_stacks(std::string* error) {
  if (!flush_sample_frames(error)) return false;
  if (pending_stack_count_ == 0) return true;
  const uint32_t first_id = stacks_defined_ - pending_stack_count_;
  std::memcpy(pending_stacks_.data() + kRecordChunkHeaderSize, &first_id, 4);
  std::memcpy(pending_stacks_.data() + kRecordChunkHeaderSize + 4, &pending_stack_count_, 4);
  if (!write_chunk(ChunkType::SAMPLE_STACKS, pending_stacks_, error)) return false;
  pending_stacks_.resize(kStacksPrefix);
  pending_stack_count_ = 0;
  return true;
}

// SAMPLE_FRAMES, then SAMPLE_STACKS, then SAMPLES: a file cut after any of
// them never has a sample naming a frame or stack it does not define.
bool RecordWriter::flush_samples(std::string* error) {
  if (!flush_sample_stacks(error)) return false;
  size_t bytes = payload_size(pending_samples_);
  if (bytes == 0) return true;
  if (!write_chunk(ChunkType::SAMPLES, pending_samples_, error)) return false;
  samples_written_ += bytes / kRecordSampleBytes;
  pending_samples_.resize(kRecordChunkHeaderSize);
  return true;
}

bool RecordWriter::flush_events(std::string* error) {
  size_t bytes = payload_size(pending_);
  if (bytes == 0) return true;
  if (!write_chunk(ChunkType::EVENTS, pending_, error)) return false;
  events_written_ += bytes / sizeof(gp_event);
  pending_.resize(kRecordChunkHeaderSize);
  return true;
}

bool RecordWriter::flush_mem_events(std::string* error) {
  size_t bytes = payload_size(pending_mem_);
  if (bytes == 0) return true;
  if (!write_chunk(ChunkType::MEM_EVENTS, pending_mem_, error)) return false;
  mem_events_written_ += bytes / sizeof(gp_mem_event);
  pending_mem_.resize(kRecordChunkHeaderSize);
  return true;
}

bool RecordWriter::flush_shapes(std::string* error) {
  if (pending_shape_count_ == 0) return true;
  std::memcpy(pending_shapes_.data() + kRecordChunkHeaderSize, &pending_shape_count_, 4);
  if (!write_chunk(ChunkType::SHAPES, pending_shapes_, error)) return false;
  pending_shapes_.resize(kShapesPrefix);
  pending_shape_count_ = 0;
  return true;
}

// SHAPES before EVENTS before ENTRY_SHAPES: a file cut after any of them
// never has an entry shape naming an undefined shape or an unwritten event.
bool RecordWriter::flush_entry_shapes(std::string* error) {
  if (!flush_shapes(error) || !flush_events(error)) return false;
  if (payload_size(pending_entries_) == 0) return true;
  if (!write_chunk(ChunkType::ENTRY_SHAPES, pending_entries_, error)) return false;
  pending_entries_.resize(kRecordChunkHeaderSize);
  return true;
}

// EVENTS, SAMPLE_FRAMES and SAMPLE_STACKS before ENTRY_STACKS: a file cut
// after any of them never has an entry stack naming an unwritten event or an
// undefined stack.
bool RecordWriter::flush_entry_stacks(std::string* error) {
  if (!flush_events(error) || !flush_sample_stacks(error)) return false;
  if (payload_size(pending_entry_stacks_) == 0) return true;
  if (!write_chunk(ChunkType::ENTRY_STACKS, pending_entry_stacks_, error)) return false;
  pending_entry_stacks_.resize(kRecordChunkHeaderSize);
  return true;
}

// SAMPLE_FRAMES, SAMPLE_STACKS and SAMPLES before SAMPLE_KERNEL_STACKS: a
// file cut after any of them never has a kernel stack naming an unwritten
// sample or an undefined stack.
bool RecordWriter::flush_sample_kernel_stacks(std::string* error) {
  if (!flush_samples(error)) return false;
  if (payload_size(pending_kernel_stacks_) == 0) return true;
  if (!write_chunk(ChunkType::SAMPLE_KERNEL_STACKS, pending_kernel_stacks_, error)) return false;
  pending_kernel_stacks_.resize(kRecordChunkHeaderSize);
  return true;
}

bool RecordWriter::flush_launch_names(std::string* error) {
  if (pending_launch_name_count_ == 0) return true;
  const uint32_t first_id = launch_names_defined_ - pending_launch_name_count_;
  std::memcpy(pending_launch_names_.data() + kRecordChunkHeaderSize, &first_id, 4);
  std::memcpy(pending_launch_names_.data() + kRecordChunkHeaderSize + 4,
              &pending_launch_name_count_, 4);
  if (!write_chunk(ChunkType::LAUNCH_NAMES, pending_launch_names_, error)) return false;
  pending_launch_names_.resize(kLaunchNamesPrefix);
  pending_launch_name_count_ = 0;
  return true;
}

// LAUNCH_NAMES before LAUNCHES: a file cut after either never has a launch
// naming a name it does not define.
bool RecordWriter::flush_launches(std::string* error) {
  if (!flush_launch_names(error)) return false;
  if (payload_size(pending_launches_) == 0) return true;
  if (!write_chunk(ChunkType::LAUNCHES, pending_launches_, error)) return false;
  pending_launches_.resize(kRecordChunkHeaderSize);
  return true;
}

bool RecordWriter::flush_gpu_correlations(std::string* error) {
  if (payload_size(pending_gpu_correlations_) == 0) return true;
  if (!write_chunk(ChunkType::GPU_CORRELATIONS, pending_gpu_correlations_, error)) return false;
  pending_gpu_correlations_.resize(kRecordChunkHeaderSize);
  return true;
}

// LAUNCH_NAMES before GPU_ACTIVITIES: a file cut after either never has an
// activity naming a name it does not define.
bool RecordWriter::flush_gpu_activities(std::string* error) {
  if (!flush_launch_names(error)) return false;
  if (payload_size(pending_gpu_activities_) == 0) return true;
  if (!write_chunk(ChunkType::GPU_ACTIVITIES, pending_gpu_activities_, error)) return false;
  pending_gpu_activities_.resize(kRecordChunkHeaderSize);
  return true;
}

// Each step writes what its chunk names first, so the file gets SHAPES,
// EVENTS, ENTRY_SHAPES, MEM_EVENTS, SAMPLE_FRAMES, SAMPLE_STACKS,
// ENTRY_STACKS, SAMPLES, SAMPLE_KERNEL_STACKS, LAUNCH_NAMES, LAUNCHES,
// GPU_CORRELATIONS, GPU_ACTIVITIES (each when non-empty).
bool RecordWriter::flush(std::string* error) {
  if (!check_state(State::kBegun, "flush", error)) return false;
  return flush_entry_shapes(error) && flush_mem_events(error) && flush_entry_stacks(error) &&
         flush_sample_kernel_stacks(error) && flush_launches(error) &&
         flush_gpu_correlations(error) && flush_gpu_activities(error);
}

bool RecordWriter::finish(const RecordStats& stats, uint64_t end_monotonic_ns, std::string* error) {
  if (state_ == State::kDiskFull && fd_.get() >= 0) {
    closing_ = true;  // what is buffered is dropped: the room kept is the closing chunks'
    state_ = State::kBegun;
  } else if (!check_state(State::kBegun, "finish", error) || !flush(error)) {
    return false;
  }
  if (cuda_runtime_) {
    Encoder c;
    cuda_runtime_fields(c, *cuda_runtime_);
    if (!write_chunk(ChunkType::CUDA_RUNTIME, c.b, error)) return false;
  }
  if (cupti_shim_) {
    Encoder c;
    cupti_shim_fields(c, *cupti_shim_);
    if (!write_chunk(ChunkType::CUPTI_SHIM, c.b, error)) return false;
  }
  if (!thread_names_.empty()) {
    Encoder c;
    thread_names_fields(c, std::as_const(thread_names_));
    if (!write_chunk(ChunkType::THREAD_NAMES, c.b, error)) return false;
  }
  Encoder s, e;
  stats_fields(s, stats, GP_RECORD_FORMAT_VERSION);
  e.u64(end_monotonic_ns);
  if (!write_chunk(ChunkType::STATS, s.b, error) || !write_chunk(ChunkType::END, e.b, error))
    return false;
  if (reserved_to_ > offset_) (void)!ftruncate(fd_.get(), static_cast<off_t>(offset_));  // the room kept, given back
  if (fd_.reset() != 0) {
    *error = "cannot write " + path_ + ": " + std::strerror(errno);
    state_ = State::kFailed;
    return false;
  }
  state_ = State::kFinished;
  return true;
}

// ---- reading ----

std::optional<Recording> read_recording_bytes(std::span<const uint8_t> bytes, std::string* error,
                                              const std::string& name, CorruptChunks corrupt) {
  Source src(bytes);
  return parse(src, name, error, corrupt);
}

std::optional<Recording> read_recording(const std::string& path, std::string* error, CorruptChunks corrupt) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  struct stat st {};
  if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0) {
    *error = "cannot open " + path + ": " + std::strerror(errno);
    return std::nullopt;
  }
  if (S_ISDIR(st.st_mode)) {
    *error = path + " is a directory, not a record file";
    return std::nullopt;
  }
  if (!S_ISREG(st.st_mode)) {
    // A pipe (report <(zcat run.gpuprof.gz)) or a device: no size to seek
    // within, so it is read whole first.
    std::vector<uint8_t> bytes;
    uint8_t chunk[1 << 16];
    for (ssize_t n; (n = ::read(fd.get(), chunk, sizeof chunk)) != 0;) {
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        *error = "cannot read " + path + ": " + std::strerror(errno);
        return std::nullopt;
      }
      bytes.insert(bytes.end(), chunk, chunk + n);
    }
    return read_recording_bytes(bytes, error, path, corrupt);
  }
  Source src(std::move(fd), static_cast<uint64_t>(st.st_size), path);
  return parse(src, path, error, corrupt);
}

}  // namespace gpuprof
