// record_reader.cpp: read_recording (record_file.h): walking a file chunk
// by chunk, checksums, decompression, skipping corrupt chunks (record_file.h,
// "Corrupt chunks"); each chunk's payload goes to apply_chunk
// (chunk_readers.h).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>

#include "record/chunk_codecs.h"
#include "record/chunk_prefetch.h"
#include "record/chunk_readers.h"
#include "record/chunk_salvage.h"
#include "record/record_file.h"
#include "record/record_stream.h"

namespace gpuprof {

using namespace chunk_codec;

namespace {


// Where the reader gets bytes: memory, or a file (fd >= 0, owned) read chunk
// by chunk into one reused buffer. size is fixed when the source is opened.
class Source {
 public:
  Source(std::span<const uint8_t> bytes) : size_(bytes.size()), mem_(bytes) {}
  Source(UniqueFd fd, uint64_t size, std::string path)
      : fd_(std::move(fd)), size_(size), path_(std::move(path)) {}
  uint64_t size() const { return size_; }

  // The n bytes at off (off + n <= size()), valid until the next call; an
  // error on an I/O error.
  Result<std::span<const uint8_t>> read(uint64_t off, size_t n) {
    if (fd_.get() < 0) return mem_.subspan(off, n);
    if (const int error = read_into(off, n, buf_))
      return Error("cannot read " + path_ + ": " + (error > 0 ? std::strerror(error) : "the file shrank while being read"));
    return std::span<const uint8_t>(buf_.data(), n);
  }
  // The same into `into`, for the prefetch thread (chunk_prefetch.h): 0, an
  // errno, or -1 when the file ended first.
  int read_into(uint64_t off, size_t n, std::vector<uint8_t>& into) const {
    into.resize(n);
    if (fd_.get() < 0) {
      std::memcpy(into.data(), mem_.data() + off, n);
      return 0;
    }
    for (size_t got = 0; got < n;) {
      ssize_t r = ::pread(fd_.get(), into.data() + got, n - got, static_cast<off_t>(off + got));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) return r < 0 ? errno : -1;
      got += static_cast<size_t>(r);
    }
    return 0;
  }

 private:
  UniqueFd fd_;
  uint64_t size_;
  std::string path_;
  std::span<const uint8_t> mem_;
  std::vector<uint8_t> buf_;
};

// Whether a chunk header's reserved field is one format `version` writes:
// 0, or (version 6) the size of a compressed payload (chunk_compression.h).
bool reserved_ok(uint32_t reserved, uint32_t version) {
  return reserved == 0 || (version >= 6 && reserved <= kRecordMaxChunkPayload);
}
// The payload size a version 6 header gives before compression; nullopt
// for a payload stored as it is.
std::optional<uint64_t> raw_size(const uint8_t* hdr, uint32_t version) {
  const uint32_t reserved = get<uint32_t>(hdr + 8);
  if (version < 6 || reserved == 0) return std::nullopt;
  return std::min(reserved, kRecordMaxChunkPayload);
}

// Whether a chunk that passes its checksum starts at `at`: of any type when
// any_type (where a trusted length ends), else of a known type of `version`
// with a zero reserved field (a place to go on from after a damaged length:
// anything else the writer never wrote). An error on an I/O error.
Result<bool> chunk_at(Source& src, uint64_t at, uint32_t version, bool any_type) {
  if (src.size() - at < kRecordChunkHeaderSize) return false;
  ASSIGN_OR_RETURN(std::span<const uint8_t> bytes, src.read(at, kRecordChunkHeaderSize));
  uint8_t hdr[kRecordChunkHeaderSize];
  std::memcpy(hdr, bytes.data(), sizeof hdr);
  const uint32_t len = get<uint32_t>(hdr + 4);
  if (!any_type && (find_chunk_spec(get<uint32_t>(hdr), version) == nullptr || !reserved_ok(get<uint32_t>(hdr + 8), version)))
    return false;
  if (len > kRecordMaxChunkPayload || src.size() - at - kRecordChunkHeaderSize < len) return false;
  ASSIGN_OR_RETURN(bytes, src.read(at + kRecordChunkHeaderSize, len));
  return chunk_crc(hdr, bytes.data(), len) == get<uint32_t>(hdr + 12);
}

// The first offset from `from` on where chunk_at finds a chunk of a known
// type; src.size() when there is none. An error on an I/O error.
Result<uint64_t> next_chunk(Source& src, uint64_t from, uint32_t version) {
  constexpr size_t kWindow = 64u << 10;  // header positions looked at per read
  const uint64_t size = src.size();
  std::vector<uint8_t> window;
  for (uint64_t base = from; base < size && size - base >= kRecordChunkHeaderSize;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(size - base, kWindow + kRecordChunkHeaderSize - 1));
    ASSIGN_OR_RETURN(std::span<const uint8_t> bytes, src.read(base, n));
    window.assign(bytes.begin(), bytes.end());  // chunk_at reads over the source's buffer
    const size_t positions = n - (kRecordChunkHeaderSize - 1);
    for (size_t i = 0; i < positions; ++i) {
      const uint8_t* h = window.data() + i;
      // The cheap tests first: most positions fail them.
      if (find_chunk_spec(get<uint32_t>(h), version) == nullptr || !reserved_ok(get<uint32_t>(h + 8), version) ||
          get<uint32_t>(h + 4) > size - base - i - kRecordChunkHeaderSize)
        continue;
      ASSIGN_OR_RETURN(const bool found, chunk_at(src, base + i, version, false));
      if (found) return base + i;
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
  if (len_damaged) return find_chunk_spec(said, version) != nullptr && matches(said) ? std::optional(ChunkType(said)) : std::nullopt;
  for (uint32_t type = 1; find_chunk_spec(type, version) != nullptr; ++type)
    if (type != said && matches(type)) return ChunkType(type);
  return find_chunk_spec(said, version) != nullptr ? std::optional(ChunkType(said)) : std::nullopt;
}

// Where the corrupt chunk at `off` (header hdr) ends and what it was: where
// its length says when a chunk passing its checksum starts there (or the
// file ends there) and no chunk of a known type passing its checksum starts
// before (a length damaged into pointing at a later chunk would skip good
// chunks); otherwise at the first such chunk after it (the length was
// damaged); otherwise at the end of the file.
Result<Skipped> skip_corrupt(Source& src, uint64_t off, const uint8_t* hdr, uint32_t version) {
  const uint64_t size = src.size();
  const uint32_t len = get<uint32_t>(hdr + 4);
  ASSIGN_OR_RETURN(const uint64_t next, next_chunk(src, off + 1, version));
  if (len <= kRecordMaxChunkPayload && size - off - kRecordChunkHeaderSize >= len) {
    const uint64_t end = off + kRecordChunkHeaderSize + len;
    ASSIGN_OR_RETURN(const bool ends_there, end == size ? Result<bool>(true) : chunk_at(src, end, version, true));
    if (ends_there && next >= end) {
      ASSIGN_OR_RETURN(std::span<const uint8_t> payload, src.read(off + kRecordChunkHeaderSize, len));
      return Skipped{end, damaged_type(hdr, payload, version, false), "", false};
    }
  }
  if (next == size)
    return Skipped{size, std::nullopt, " (no chunk follows it that passes its checksum: the rest of the file is lost)",
                   true};
  const uint64_t payload_bytes = next - off >= kRecordChunkHeaderSize ? next - off - kRecordChunkHeaderSize : 0;
  ASSIGN_OR_RETURN(std::span<const uint8_t> payload,
                   src.read(off + kRecordChunkHeaderSize, static_cast<size_t>(payload_bytes)));
  return Skipped{next, damaged_type(hdr, payload, version, true),
                 " (its length is damaged: the next chunk is at offset " + std::to_string(next) + ")", false};
}

// The data chunk types of format `version` that `stream` does not take
// (RecordStream::takes), as bits by type (a type past 63, were there one,
// would be taken: read, as any chunk is without this).
uint64_t data_types_passed_over(const RecordStream& stream, uint32_t version) {
  uint64_t types = 0;
  for (const ChunkSpec& spec : chunk_specs()) {
    const auto type = static_cast<uint32_t>(spec.type);
    if (type < 64 && version >= spec.since && spec.place == ChunkPlace::data && !stream.takes(spec.type))
      types |= uint64_t{1} << type;
  }
  return types;
}

// With a stream (record_stream.h): offered the recording once its mandatory
// chunks are read; an error with *whole_needed set when it must be read whole.
// prefetch: sound chunks are read, checked and decompressed ahead on a
// thread of their own (chunk_prefetch.h).
Result<Recording> parse(Source& src, const std::string& name, CorruptChunks corrupt, bool prefetch,
                        RecordStream* stream = nullptr, bool* whole_needed = nullptr) {
  auto fail = [](std::string msg) { return Error(std::move(msg)); };
  const uint64_t size = src.size();
  if (size == 0) return fail(name + " is empty: not a gpuprof record file");

  size_t head = static_cast<size_t>(std::min<uint64_t>(size, kRecordHeaderSize));
  ASSIGN_OR_RETURN(std::span<const uint8_t> bytes, src.read(0, head));
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
  std::vector<uint8_t> decompressed;  // the payload of a compressed chunk
  bool rest_lost = false;   // a corrupt chunk after which no chunk could be found
  // Whether a chunk of `type` is passed over: a data chunk of a type the
  // stream does not take, once it has the stream (RecordStream::takes).
  // Most streams take every type: they hand the prefetch thread no test.
  const uint64_t types_passed_over = stream ? data_types_passed_over(*stream, version) : 0;
  auto passes_over = [types_passed_over](uint32_t type) { return type < 64 && (types_passed_over >> type & 1) != 0; };
  std::optional<ChunkPrefetch> ahead;
  if (prefetch) {
    try {
      // A read that decodes its events has them decoded ahead too; one that
      // counts them (a stream that skips them) only needs their count.
      ahead.emplace([&src](uint64_t at, size_t n, std::vector<uint8_t>& into) { return src.read_into(at, n, into) == 0; },
                    size, version, /*unpack_op_events=*/!(stream && stream->skips_events()),
                    types_passed_over ? std::function<bool(uint32_t)>(passes_over) : nullptr,
                    /*hands_over_compressed=*/true);
      ahead->start(off);
    } catch (const std::system_error&) {
      // No thread to be had (a pids limit): every chunk is read in turn.
    }
  }
  for (uint64_t index = 1; off < size && !seen.end; ++index) {
    const std::string where = name + ": corrupt chunk " + std::to_string(index);
    const std::string at = " at offset " + std::to_string(off) + ": ";
    const uint64_t avail = size - off;
    // A chunk the thread prepared is sound and decompressed (unless it says
    // compressed); any other is read and checked here, and the thread starts
    // again after it.
    std::optional<PreparedChunk> prepared = ahead ? ahead->take(off) : std::nullopt;
    // One passed over before the stream came (a data chunk before the
    // header's: refused below) is read here.
    if (prepared && prepared->passed_over && !seen.stream) prepared.reset();
    uint8_t hdr[kRecordChunkHeaderSize] = {};
    if (prepared) {
      std::memcpy(hdr, prepared->header, sizeof hdr);
    } else if (avail >= sizeof hdr) {
      ASSIGN_OR_RETURN(bytes, src.read(off, sizeof hdr));
      std::memcpy(hdr, bytes.data(), sizeof hdr);
    }
    const uint32_t type = get<uint32_t>(hdr), len = get<uint32_t>(hdr + 4);
    // Corrupt chunks are skipped once the mandatory chunks are read (record_file.h).
    const bool skip = corrupt == CorruptChunks::skip && seen.mandatory();
    std::string damage;  // what is wrong with the chunk, "" when nothing
    if (prepared) {
      bytes = prepared->payload;
    } else if (len > kRecordMaxChunkPayload) {  // refused before anything is allocated
      damage = "payload length " + std::to_string(len) + " exceeds the limit of " +
               std::to_string(kRecordMaxChunkPayload) + " bytes";
    } else if (avail < sizeof hdr || avail - sizeof hdr < len) {  // the file ends inside this chunk
      // A torn last chunk (the recorder was killed), unless a chunk follows:
      // then the length is damaged.
      ASSIGN_OR_RETURN(const uint64_t next, skip ? next_chunk(src, off + 1, version) : Result<uint64_t>(size));
      if (next == size) {
        torn_bytes = avail;
        break;
      }
      damage = "payload length " + std::to_string(len) + " points past the end of the file";
    } else {
      ASSIGN_OR_RETURN(bytes, src.read(off + kRecordChunkHeaderSize, len));
      if (chunk_crc(hdr, bytes.data(), len) != get<uint32_t>(hdr + 12)) damage = "checksum mismatch";
    }
    if (damage.empty() && seen.stream && passes_over(type)) {
      if (ahead && !prepared) ahead->start(off + kRecordChunkHeaderSize + len);
      off += kRecordChunkHeaderSize + len;
      continue;
    }
    // A compressed payload (version 6) is read as it was before compression
    // (one the thread handed over as stored included).
    if ((!prepared || prepared->compressed) && damage.empty() && version >= 6 && get<uint32_t>(hdr + 8) != 0) {
      const uint32_t raw = get<uint32_t>(hdr + 8);
      std::string problem = raw > kRecordMaxChunkPayload
                                ? "its size before compression, " + std::to_string(raw) + " bytes, exceeds the limit"
                                : decompress_chunk(bytes, raw, decompressed);
      if (!problem.empty()) return fail(where + " (" + chunk_type_name(type) + ")" + at + problem);
      bytes = decompressed;
    }
    if (!damage.empty()) {
      if (!skip) return fail(where + at + damage);
      ASSIGN_OR_RETURN(const Skipped skipped, skip_corrupt(src, off, hdr, version));
      const uint64_t bytes_lost = skipped.end - off;
      const uint64_t payload_lost = bytes_lost > kRecordChunkHeaderSize ? bytes_lost - kRecordChunkHeaderSize : 0;
      const std::string kind =
          skipped.type ? std::string(" (") + chunk_type_name(static_cast<uint32_t>(*skipped.type)) + ")" : "";
      const std::string lost = seen.salvage.lose(skipped.type, payload_lost, raw_size(hdr, version), rec);
      rec.lost_chunks.push_back(
          {index, off, bytes_lost, where + kind + at + damage + skipped.how + "; skipped: lost " + lost});
      rest_lost = skipped.rest;
      off = skipped.end;
      if (ahead) ahead->start(off);
      continue;
    }
    if (ahead && !prepared) ahead->start(off + kRecordChunkHeaderSize + len);
    if (seen.stream) {
      // Nothing per event is held: no room reserved for the file's worth.
    } else if (type == static_cast<uint32_t>(ChunkType::EVENTS) && rec.events.capacity() == 0)
      rec.events.reserve(static_cast<size_t>((size - off) / sizeof(gp_event)));  // <= the file
    else if (type == static_cast<uint32_t>(ChunkType::SAMPLES) && rec.samples.capacity() == 0)
      rec.samples.reserve(static_cast<size_t>((size - off) / kRecordSampleBytes));  // 1.2 x file
    else if (type == static_cast<uint32_t>(ChunkType::LAUNCHES) && rec.launches.capacity() == 0)
      rec.launches.reserve(static_cast<size_t>((size - off) / kLaunchBytes));  // <= the file
    else if (type == static_cast<uint32_t>(ChunkType::GPU_CORRELATIONS) &&
        rec.gpu_correlations.capacity() == 0)  // 32 bytes each: <= the file
      rec.gpu_correlations.reserve(static_cast<size_t>((size - off) / kGpuCorrelationBytes));
    else if (type == static_cast<uint32_t>(ChunkType::GPU_ACTIVITIES) &&
        rec.gpu_activities.capacity() == 0)  // 48 bytes each: <= the file
      rec.gpu_activities.reserve(static_cast<size_t>((size - off) / kGpuActivityBytes));
    const bool had_mandatory = seen.mandatory();
    seen.unpacked = prepared && prepared->events ? &*prepared->events : nullptr;
    std::string problem = apply_chunk(type, bytes, rec, seen);
    seen.unpacked = nullptr;
    if (!problem.empty()) return fail(where + " (" + chunk_type_name(type) + ")" + at + problem);
    if (stream && !had_mandatory && seen.mandatory() && stream->wants(rec)) {
      seen.stream = stream;
      rec.streamed = true;
    }
    if (seen.stream_stopped) {
      *whole_needed = true;
      return Error(name + ": " + seen.stream_stopped + ": read the recording whole");
    }
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


Result<Recording> read_recording_bytes(std::span<const uint8_t> bytes, const std::string& name,
                                       CorruptChunks corrupt) {
  Source src(bytes);
  return parse(src, name, corrupt, /*prefetch=*/false);
}

namespace {

Result<Recording> read_file(const std::string& path, CorruptChunks corrupt, RecordStream* stream,
                            bool* whole_needed) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  struct stat st {};
  if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0) return Error("cannot open " + path + ": " + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) return Error(path + " is a directory, not a record file");
  if (!S_ISREG(st.st_mode)) {
    // A pipe (report <(zcat run.gpuprof.gz)) or a device: no size to seek
    // within, so it is read whole first.
    std::vector<uint8_t> bytes;
    uint8_t chunk[1 << 16];
    for (ssize_t n; (n = ::read(fd.get(), chunk, sizeof chunk)) != 0;) {
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return Error("cannot read " + path + ": " + std::strerror(errno));
      bytes.insert(bytes.end(), chunk, chunk + n);
    }
    Source src(bytes);
    return parse(src, path, corrupt, /*prefetch=*/true, stream, whole_needed);
  }
  Source src(std::move(fd), static_cast<uint64_t>(st.st_size), path);
  return parse(src, path, corrupt, /*prefetch=*/true, stream, whole_needed);
}

}  // namespace

Result<Recording> read_recording(const std::string& path, CorruptChunks corrupt) {
  return read_file(path, corrupt, nullptr, nullptr);
}

Result<Recording> read_recording_streamed(const std::string& path, CorruptChunks corrupt, RecordStream& stream,
                                          bool* whole_needed) {
  *whole_needed = false;
  return read_file(path, corrupt, &stream, whole_needed);
}
}  // namespace gpuprof
