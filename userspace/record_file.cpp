// record_file.cpp: RecordWriter and read_recording (format in record_file.h).
#include "record_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <utility>

namespace gpuprof {

static_assert(std::endian::native == std::endian::little,
              "the record format stores little-endian integers and raw gp_events");
static_assert(sizeof(gp_event) == 32);

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
  static const char* const names[] = {"", "PROCESS", "CLOCK", "OP_TABLE", "EVENTS", "STATS", "END"};
  return type >= 1 && type <= 6 ? names[type] : "unknown type";
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
  void str(std::string& s) {
    uint32_t n;
    get(n);  // checked against the payload, itself bounded by the cap
    ok = ok && p.size() - pos >= n;
    s.assign(ok ? reinterpret_cast<const char*>(p.data() + pos) : "", ok ? n : 0);
    pos += ok ? n : 0;
  }
  size_t left() const { return p.size() - pos; }
};

// The field lists of the PROCESS, CLOCK, OP_TABLE entry and STATS payloads,
// run by both Encoder and Decoder so writer and reader cannot disagree.
template <typename IO, typename P>
void process_fields(IO& io, P& p) {
  io.i32(p.pid);
  for (auto* s : {&p.comm, &p.cmdline, &p.libtorch_path, &p.libtorch_build_id, &p.hostname})
    io.str(*s);
}
template <typename IO, typename C>
void clock_fields(IO& io, C& c) {
  io.u64(c.start_monotonic_ns);
  io.u64(c.start_realtime_ns);
}
template <typename IO, typename O>
void op_fields(IO& io, O& op) {
  for (auto* s : {&op.name, &op.overload, &op.symbol}) io.str(*s);
}
template <typename IO, typename S>
void stats_fields(IO& io, S& s) {
  io.u64(s.events_recorded);
  io.u64(s.events_lost);
  io.u32(s.entry_probes);
  io.u32(s.exit_probes);
  io.u32(s.ops_without_exit);
  io.str(s.stop_reason);
}

// The event rules of record_file.h, shared by writer and reader.
bool event_ok(const gp_event& e, size_t nops) {
  if (e.kind == GP_EV_CATCH) return e.op_id == GP_NO_OP || e.op_id < nops;
  return (e.kind == GP_EV_OP_ENTRY || e.kind == GP_EV_OP_EXIT) && e.op_id < nops;
}
std::string event_problem(const gp_event& e, size_t nops) {
  if (e.kind < GP_EV_OP_ENTRY || e.kind > GP_EV_CATCH)
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

// Which chunks the reader has met, to enforce the order of record_file.h.
struct Seen {
  bool process = false, clock = false, ops = false, stats = false, end = false;
  bool mandatory() const { return process && clock && ops; }
};

// Decodes one checksummed chunk into rec. Returns what is wrong with it, or "".
std::string apply_chunk(uint32_t type, std::span<const uint8_t> payload, Recording& rec,
                        Seen& seen) {
  const ChunkType t = static_cast<ChunkType>(type);
  auto first = [](bool& flag) { return !std::exchange(flag, true); };
  if ((t == ChunkType::EVENTS || t == ChunkType::STATS) && !seen.mandatory())
    return std::string(type_name(type)) + " chunk before the PROCESS, CLOCK and OP_TABLE chunks";
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
      if (count > d.left() / 12)  // each op takes at least three u32 lengths
        return "op count " + std::to_string(count) + " does not fit the payload";
      rec.ops.reserve(count);
      for (uint32_t i = 0; i < count && d.ok; ++i) op_fields(d, rec.ops.emplace_back());
      break;
    }
    case ChunkType::EVENTS: {
      if (seen.stats) return "EVENTS chunk after the STATS chunk";
      if (payload.size() % sizeof(gp_event) != 0)
        return "payload of " + std::to_string(payload.size()) +
               " bytes is not a whole number of 32-byte events";
      const size_t base = rec.events.size();
      rec.events.resize(base + payload.size() / sizeof(gp_event));
      std::memcpy(rec.events.data() + base, payload.data(), payload.size());
      for (size_t i = base; i < rec.events.size(); ++i)
        if (!event_ok(rec.events[i], rec.ops.size()))
          return "event " + std::to_string(i - base) + event_problem(rec.events[i], rec.ops.size());
      return "";
    }
    case ChunkType::STATS:
      if (!first(seen.stats)) return "duplicate STATS chunk";
      stats_fields(d, rec.stats);
      break;
    case ChunkType::END:
      if (!seen.stats) return "END chunk without a STATS chunk";
      d.u64(rec.clock.end_monotonic_ns);
      seen.end = true;
      break;
    default:
      return "";  // unknown type, checksum verified: skip (forward compatibility)
  }
  if (!d.ok) return "payload too short";
  if (d.left() != 0) return std::to_string(d.left()) + " unexpected trailing payload bytes";
  return "";
}

std::optional<Recording> parse(Source& src, const std::string& name, std::string* error) {
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
  uint64_t off = kRecordHeaderSize;
  uint64_t torn_bytes = 0;  // bytes of a torn final chunk
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
    if (len > kRecordMaxChunkPayload)  // refused before anything is allocated
      return fail(where + at + "payload length " + std::to_string(len) + " exceeds the limit of " +
                  std::to_string(kRecordMaxChunkPayload) + " bytes");
    if (avail < sizeof hdr || avail - sizeof hdr < len) {  // the file ends inside this chunk
      torn_bytes = avail;
      break;
    }
    if (!src.read(off + kRecordChunkHeaderSize, len, &bytes, error)) return std::nullopt;
    if (chunk_crc(hdr, bytes.data(), len) != get<uint32_t>(hdr + 12))
      return fail(where + at + "checksum mismatch");
    if (type == static_cast<uint32_t>(ChunkType::EVENTS) && rec.events.capacity() == 0)
      rec.events.reserve(static_cast<size_t>((size - off) / sizeof(gp_event)));  // <= the file
    std::string problem = apply_chunk(type, bytes, rec, seen);
    if (!problem.empty()) return fail(where + " (" + type_name(type) + ")" + at + problem);
    off += kRecordChunkHeaderSize + len;
  }
  if (seen.end && off != size)
    return fail(name + ": corrupt: " + std::to_string(size - off) +
                " bytes after the END chunk at offset " + std::to_string(off));
  if (!seen.mandatory())
    return fail(name + " is truncated: it ends at offset " + std::to_string(size) +
                ", before the PROCESS, CLOCK and OP_TABLE chunks are complete");
  rec.complete = seen.end;
  if (!seen.end) {
    rec.incomplete_reason = "no END chunk: the recorder did not finish (was it killed?)";
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

RecordWriter::RecordWriter(int fd, std::string path)
    : fd_(fd), path_(std::move(path)), pending_(chunk_buffer()) {}

int UniqueFd::reset(int fd) {
  int rc = fd_ >= 0 ? ::close(fd_) : 0;
  fd_ = fd;
  return rc;
}

std::optional<RecordWriter> RecordWriter::create(const std::string& path, std::string* error) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    *error = "cannot create " + path + ": " + std::strerror(errno);
    return std::nullopt;
  }
  return RecordWriter(fd, path);
}

bool RecordWriter::check_state(State want, const char* what, std::string* error) const {
  if (state_ == want && fd_.get() >= 0) return true;  // fd < 0: moved from
  *error = path_ + ": " + what +
           (state_ == State::kFailed ? " after an earlier write error"
                                     : " called out of order (internal error)");
  return false;
}

// One write loop for the whole buffer: a killed writer tears at most this one.
bool RecordWriter::write_bytes(const std::vector<uint8_t>& bytes, std::string* error) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t r = ::write(fd_.get(), bytes.data() + done, bytes.size() - done);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      *error = "cannot write " + path_ + ": " + std::strerror(r < 0 ? errno : EIO);
      state_ = State::kFailed;
      return false;
    }
    done += static_cast<size_t>(r);
  }
  offset_ += bytes.size();
  return true;
}

bool RecordWriter::write_chunk(ChunkType type, std::vector<uint8_t>& chunk, std::string* error) {
  if (chunk.size() - kRecordChunkHeaderSize > kRecordMaxChunkPayload) {
    *error = path_ + ": " + type_name(static_cast<uint32_t>(type)) + " chunk of " +
             std::to_string(chunk.size() - kRecordChunkHeaderSize) + " bytes exceeds the limit";
    state_ = State::kFailed;
    return false;
  }
  seal_chunk(chunk, static_cast<uint32_t>(type));
  return write_bytes(chunk, error);
}

bool RecordWriter::begin(const ProcessInfo& process, const ClockInfo& clock,
                         const std::vector<OpInfo>& ops, std::string* error) {
  if (!check_state(State::kCreated, "begin", error)) return false;
  Encoder p, c, o;
  process_fields(p, process);
  clock_fields(c, clock);
  o.u32(static_cast<uint32_t>(ops.size()));
  for (const OpInfo& op : ops) op_fields(o, op);
  if (!write_bytes(encode_record_header(), error) || !write_chunk(ChunkType::PROCESS, p.b, error) ||
      !write_chunk(ChunkType::CLOCK, c.b, error) || !write_chunk(ChunkType::OP_TABLE, o.b, error))
    return false;
  ops_count_ = ops.size();
  state_ = State::kBegun;
  return true;
}

bool RecordWriter::append_events(const gp_event* events, size_t count, std::string* error) {
  if (!check_state(State::kBegun, "append_events", error)) return false;
  // Reject the whole batch before buffering any of it: a bad event written
  // would make the file unreadable (the reader rejects it as corrupt).
  for (size_t i = 0; i < count; ++i)
    if (!event_ok(events[i], ops_count_)) {
      *error = path_ + ": not recording event" + event_problem(events[i], ops_count_);
      return false;
    }
  const auto* src = reinterpret_cast<const uint8_t*>(events);
  size_t left = count * sizeof(gp_event);
  while (left > 0) {
    size_t buffered = pending_.size() - kRecordChunkHeaderSize;
    size_t take = std::min(left, kRecordEventsChunkBytes - buffered);
    pending_.insert(pending_.end(), src, src + take);
    src += take;
    left -= take;
    if (buffered + take >= kRecordEventsChunkBytes && !flush(error)) return false;
  }
  return true;
}

bool RecordWriter::flush(std::string* error) {
  if (!check_state(State::kBegun, "flush", error)) return false;
  size_t bytes = pending_.size() - kRecordChunkHeaderSize;
  if (bytes == 0) return true;
  if (!write_chunk(ChunkType::EVENTS, pending_, error)) return false;
  events_written_ += bytes / sizeof(gp_event);
  pending_.resize(kRecordChunkHeaderSize);
  return true;
}

bool RecordWriter::finish(const RecordStats& stats, uint64_t end_monotonic_ns, std::string* error) {
  if (!check_state(State::kBegun, "finish", error) || !flush(error)) return false;
  Encoder s, e;
  stats_fields(s, stats);
  e.u64(end_monotonic_ns);
  if (!write_chunk(ChunkType::STATS, s.b, error) || !write_chunk(ChunkType::END, e.b, error))
    return false;
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
                                              const std::string& name) {
  Source src(bytes);
  return parse(src, name, error);
}

std::optional<Recording> read_recording(const std::string& path, std::string* error) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  struct stat st {};
  if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0) {
    *error = "cannot open " + path + ": " + std::strerror(errno);
    return std::nullopt;
  }
  if (!S_ISREG(st.st_mode)) {
    *error = path + " is not a regular file";
    return std::nullopt;
  }
  Source src(std::move(fd), static_cast<uint64_t>(st.st_size), path);
  return parse(src, path, error);
}

}  // namespace gpuprof
