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
void put(std::vector<uint8_t>& b, T v) {
  uint8_t t[sizeof v];
  std::memcpy(t, &v, sizeof v);
  b.insert(b.end(), t, t + sizeof v);
}
void put_str(std::vector<uint8_t>& b, const std::string& s) {
  put(b, static_cast<uint32_t>(s.size()));
  b.insert(b.end(), s.begin(), s.end());
}
template <typename T>
T get(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

uint32_t chunk_crc(const uint8_t* header12, const uint8_t* payload, size_t len) {
  uLong crc = crc32(0L, header12, 12);
  return static_cast<uint32_t>(crc32(crc, payload, static_cast<uInt>(len)));
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

// Bounds-checked payload decoder: a short read sets ok = false and yields 0/"".
struct Decoder {
  std::span<const uint8_t> p;
  size_t pos = 0;
  bool ok = true;

  bool take(size_t n) {
    if (!ok || p.size() - pos < n) return ok = false;
    pos += n;
    return true;
  }
  uint32_t u32() { return take(4) ? get<uint32_t>(p.data() + pos - 4) : 0; }
  uint64_t u64() { return take(8) ? get<uint64_t>(p.data() + pos - 8) : 0; }
  std::string str() {
    uint32_t n = u32();  // bounded by the payload, itself bounded by the cap
    if (!take(n)) return {};
    return std::string(reinterpret_cast<const char*>(p.data() + pos - n), n);
  }
  size_t left() const { return p.size() - pos; }
};

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
  Source(int fd, uint64_t size, std::string path) : fd_(fd), size_(size), path_(std::move(path)) {}
  ~Source() {
    if (fd_ >= 0) ::close(fd_);
  }
  Source(const Source&) = delete;
  Source& operator=(const Source&) = delete;
  uint64_t size() const { return size_; }

  // Sets *out to the n bytes at off (off + n <= size()), valid until the next
  // call. Returns false with *error on an I/O error.
  bool read(uint64_t off, size_t n, std::span<const uint8_t>* out, std::string* error) {
    if (fd_ < 0) {
      *out = mem_.subspan(off, n);
      return true;
    }
    buf_.resize(n);
    for (size_t got = 0; got < n;) {
      ssize_t r = ::pread(fd_, buf_.data() + got, n - got, static_cast<off_t>(off + got));
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
  int fd_ = -1;
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
  const std::string tname = type_name(type);
  auto first = [](bool& flag) { return !std::exchange(flag, true); };
  if ((t == ChunkType::EVENTS || t == ChunkType::STATS) && !seen.mandatory())
    return tname + " chunk before the PROCESS, CLOCK and OP_TABLE chunks";
  Decoder d{payload};
  switch (t) {
    case ChunkType::PROCESS: {
      if (!first(seen.process)) return "duplicate PROCESS chunk";
      ProcessInfo& p = rec.process;
      p.pid = static_cast<int32_t>(d.u32());
      for (std::string* str :
           {&p.comm, &p.cmdline, &p.libtorch_path, &p.libtorch_build_id, &p.hostname})
        *str = d.str();
      break;
    }
    case ChunkType::CLOCK:
      if (!first(seen.clock)) return "duplicate CLOCK chunk";
      rec.clock.start_monotonic_ns = d.u64();
      rec.clock.start_realtime_ns = d.u64();
      break;
    case ChunkType::OP_TABLE: {
      if (!first(seen.ops)) return "duplicate OP_TABLE chunk";
      uint32_t count = d.u32();
      if (count > d.left() / 12)  // each op takes at least three u32 lengths
        return "op count " + std::to_string(count) + " does not fit the payload";
      rec.ops.reserve(count);
      for (uint32_t i = 0; i < count && d.ok; ++i) {
        OpInfo& op = rec.ops.emplace_back();
        for (std::string* str : {&op.name, &op.overload, &op.symbol}) *str = d.str();
      }
      break;
    }
    case ChunkType::EVENTS: {
      if (seen.stats) return "EVENTS chunk after the STATS chunk";
      if (payload.size() % sizeof(gp_event) != 0)
        return "payload of " + std::to_string(payload.size()) +
               " bytes is not a whole number of 32-byte events";
      for (size_t i = 0; i < payload.size() / sizeof(gp_event); ++i) {
        gp_event e;
        std::memcpy(&e, payload.data() + i * sizeof e, sizeof e);
        if (!event_ok(e, rec.ops.size()))
          return "event " + std::to_string(i) + event_problem(e, rec.ops.size());
        rec.events.push_back(e);
      }
      return "";
    }
    case ChunkType::STATS: {
      if (!first(seen.stats)) return "duplicate STATS chunk";
      RecordStats& s = rec.stats;
      s.events_recorded = d.u64();
      s.events_lost = d.u64();
      s.entry_probes = d.u32();
      s.exit_probes = d.u32();
      s.ops_without_exit = d.u32();
      s.stop_reason = d.str();
      break;
    }
    case ChunkType::END:
      if (!seen.stats) return "END chunk without a STATS chunk";
      rec.clock.end_monotonic_ns = d.u64();
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
    if (size - off < kRecordChunkHeaderSize) {
      torn_bytes = size - off;
      break;
    }
    if (!src.read(off, kRecordChunkHeaderSize, &bytes, error)) return std::nullopt;
    uint8_t hdr[kRecordChunkHeaderSize];
    std::memcpy(hdr, bytes.data(), sizeof hdr);
    const uint32_t type = get<uint32_t>(hdr), len = get<uint32_t>(hdr + 4);
    if (len > kRecordMaxChunkPayload)
      return fail(where + at + "payload length " + std::to_string(len) + " exceeds the limit of " +
                  std::to_string(kRecordMaxChunkPayload) + " bytes");
    if (size - off - kRecordChunkHeaderSize < len) {
      torn_bytes = size - off;
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
  std::vector<uint8_t> b(kRecordMagic, kRecordMagic + sizeof kRecordMagic);
  put<uint32_t>(b, version);
  put<uint32_t>(b, static_cast<uint32_t>(kRecordHeaderSize));
  return b;
}

std::vector<uint8_t> encode_chunk(uint32_t type, std::span<const uint8_t> payload) {
  std::vector<uint8_t> chunk = chunk_buffer();
  chunk.insert(chunk.end(), payload.begin(), payload.end());
  seal_chunk(chunk, type);
  return chunk;
}

// ---- RecordWriter ----

RecordWriter::RecordWriter(int fd, std::string path)
    : fd_(fd), path_(std::move(path)), pending_(chunk_buffer()) {}

RecordWriter::RecordWriter(RecordWriter&& o) noexcept { *this = std::move(o); }

RecordWriter& RecordWriter::operator=(RecordWriter&& o) noexcept {
  if (this != &o) {
    close_fd();
    fd_ = std::exchange(o.fd_, -1);
    path_ = std::move(o.path_);
    state_ = std::exchange(o.state_, State::kFailed);
    pending_ = std::move(o.pending_);
    offset_ = o.offset_;
    events_written_ = o.events_written_;
    ops_count_ = o.ops_count_;
  }
  return *this;
}

RecordWriter::~RecordWriter() { close_fd(); }

void RecordWriter::close_fd() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
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
  if (state_ == want) return true;
  if (state_ == State::kFailed)
    *error = path_ + ": " + what + " after an earlier write error";
  else
    *error = path_ + ": " + what + " called out of order (internal error)";
  return false;
}

// One write loop for the whole buffer: a killed writer tears at most this one.
bool RecordWriter::write_bytes(const std::vector<uint8_t>& bytes, std::string* error) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t r = ::write(fd_, bytes.data() + done, bytes.size() - done);
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
  std::vector<uint8_t> p = chunk_buffer();
  put<uint32_t>(p, static_cast<uint32_t>(process.pid));
  for (const std::string* s : {&process.comm, &process.cmdline, &process.libtorch_path,
                               &process.libtorch_build_id, &process.hostname})
    put_str(p, *s);
  std::vector<uint8_t> c = chunk_buffer();
  put<uint64_t>(c, clock.start_monotonic_ns);
  put<uint64_t>(c, clock.start_realtime_ns);
  std::vector<uint8_t> o = chunk_buffer();
  put<uint32_t>(o, static_cast<uint32_t>(ops.size()));
  for (const OpInfo& op : ops) {
    put_str(o, op.name);
    put_str(o, op.overload);
    put_str(o, op.symbol);
  }
  if (!write_bytes(encode_record_header(), error) || !write_chunk(ChunkType::PROCESS, p, error) ||
      !write_chunk(ChunkType::CLOCK, c, error) || !write_chunk(ChunkType::OP_TABLE, o, error))
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
  std::vector<uint8_t> s = chunk_buffer();
  put<uint64_t>(s, stats.events_recorded);
  put<uint64_t>(s, stats.events_lost);
  put<uint32_t>(s, stats.entry_probes);
  put<uint32_t>(s, stats.exit_probes);
  put<uint32_t>(s, stats.ops_without_exit);
  put_str(s, stats.stop_reason);
  std::vector<uint8_t> e = chunk_buffer();
  put<uint64_t>(e, end_monotonic_ns);
  if (!write_chunk(ChunkType::STATS, s, error) || !write_chunk(ChunkType::END, e, error))
    return false;
  int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0) {
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
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *error = "cannot open " + path + ": " + std::strerror(errno);
    return std::nullopt;
  }
  struct stat st {};
  int stat_errno = ::fstat(fd, &st) == 0 ? 0 : errno;
  Source src(fd, static_cast<uint64_t>(st.st_size), path);  // owns fd from here
  if (stat_errno != 0 || !S_ISREG(st.st_mode)) {
    *error = stat_errno == 0 ? path + " is not a regular file"
                             : "cannot stat " + path + ": " + std::strerror(stat_errno);
    return std::nullopt;
  }
  return parse(src, path, error);
}

}  // namespace gpuprof
