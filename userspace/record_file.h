// record_file.h: the record file, the contract between `gpuprof record` and
// every output.
//
// A record file is self-describing (process info, clock data and the op name
// table travel with the events, so it can be reported on another machine) and
// is written as a sequence of checksummed chunks, each with a single write
// loop, so a recorder killed by SIGKILL leaves a file that is readable up to
// its last complete chunk. The reader validates everything: a truncated,
// corrupt or foreign file gives one clear error message, never a crash, a
// silently skipped bad chunk or an allocation larger than the file.
//
// Layout (all integers little-endian, fixed width; offsets in bytes):
//
//   file header, 16 bytes
//     0  char[8] magic     "GPUPROF\0"
//     8  u32     version   GP_RECORD_FORMAT_VERSION
//    12  u32     hdr_size  16 (size of this header; anything else is corrupt)
//   then chunks, back to back until the end of the file:
//     0  u32     type      ChunkType
//     4  u32     length    payload bytes, at most kRecordMaxChunkPayload
//     8  u32     reserved  0 (ignored by version-1 readers, but checksummed)
//    12  u32     crc       zlib crc32 of chunk bytes 0..11, then the payload
//    16  u8[length] payload
//
//   The crc covers the chunk header too, so a flipped type or length byte is
//   caught rather than misread as an unknown (skipped) chunk.
//
// Payloads (str = u32 byte length + bytes, no NUL):
//   PROCESS   i32 pid, str comm, str cmdline, str libtorch_path,
//             str libtorch_build_id, str hostname
//   CLOCK     u64 start_monotonic_ns, u64 start_realtime_ns
//   OP_TABLE  u32 count, then count x {str name, str overload, str symbol}
//   EVENTS    n x struct gp_event (bpf/events.h, 32 bytes, raw), n >= 0
//   STATS     u64 events_recorded, u64 events_lost, u32 entry_probes,
//             u32 exit_probes, u32 ops_without_exit, str stop_reason
//   END       u64 end_monotonic_ns; the last chunk of a finished recording
//
// A known chunk's payload must be consumed exactly: any layout change bumps
// the format version. Order: PROCESS, CLOCK and OP_TABLE once each (any
// order) before any EVENTS; then EVENTS chunks; then STATS; then END.
// Chunks of unknown type are skipped anywhere (forward compatibility within a
// version); an unknown (newer) version is an error.
//
// Reading rules:
//   - bad magic                      -> error "F is not a gpuprof record file"
//   - newer version                  -> error naming both versions
//   - the file ends in the header or before PROCESS, CLOCK and OP_TABLE are
//     complete                       -> error "F is truncated: ..."
//   - checksum mismatch, length above the cap, bad payload, bad order, data
//     after END, an event with an unknown kind or an op_id outside the op
//     table                          -> error "F: corrupt chunk N (TYPE) at
//                                       offset X: ..." (chunks count from 1)
//   - no END chunk, or the file ends inside a chunk after the mandatory ones
//     (the SIGKILLed recorder)       -> success, complete = false, events of
//     the complete chunks, incomplete_reason says how many bytes were ignored
//     (a corrupted length that points past the end of the file looks the same:
//     it is reported as a torn chunk, never ignored silently).
//
// Events: GP_EV_OP_ENTRY / GP_EV_OP_EXIT need op_id < ops.size(); GP_EV_CATCH
// carries GP_NO_OP (an op id in range is tolerated). Nothing else gets
// through, so the aggregator can index the op table without checks.
//
// Events are stored raw, so this format is defined for little-endian hosts
// only (record_file.cpp static_asserts it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "events.h"
#include "recording.h"

namespace gpuprof {

inline constexpr uint32_t GP_RECORD_FORMAT_VERSION = 1;
inline constexpr char kRecordMagic[8] = {'G', 'P', 'U', 'P', 'R', 'O', 'F', '\0'};
inline constexpr size_t kRecordHeaderSize = 16;
inline constexpr size_t kRecordChunkHeaderSize = 16;
// Largest payload a reader accepts (checked before allocating anything).
inline constexpr uint32_t kRecordMaxChunkPayload = 64u << 20;
// The writer emits an EVENTS chunk once this many payload bytes are buffered
// (2048 events); flush() emits a smaller one earlier.
inline constexpr size_t kRecordEventsChunkBytes = 64u << 10;

enum class ChunkType : uint32_t {
  PROCESS = 1,
  CLOCK = 2,
  OP_TABLE = 3,
  EVENTS = 4,
  STATS = 5,
  END = 6,
};

// The 16-byte file header for `version` (kRecordMagic, version, 16).
std::vector<uint8_t> encode_record_header(uint32_t version = GP_RECORD_FORMAT_VERSION);
// One complete chunk (header with crc, then payload). Exposed for tests and
// tools that build files by hand.
std::vector<uint8_t> encode_chunk(uint32_t type, std::span<const uint8_t> payload);

// An owned file descriptor: closed on destruction, moved, never copied.
class UniqueFd {
 public:
  explicit UniqueFd(int fd = -1) : fd_(fd) {}
  UniqueFd(UniqueFd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    reset(std::exchange(o.fd_, -1));
    return *this;
  }
  ~UniqueFd() { reset(); }
  int get() const { return fd_; }
  // Closes the fd held (if any) and takes fd; returns close()'s result.
  int reset(int fd = -1);

 private:
  int fd_;
};

// Streams one recording to a file. Usage: create, begin once, append_events
// and flush any number of times, finish once. Every chunk is written whole by
// one write loop, so a writer killed at any point leaves at most one torn
// chunk at the end of the file. After any failure the writer refuses further
// writes (appending after a torn chunk would make the file corrupt, not just
// incomplete). Not thread-safe.
class RecordWriter {
 public:
  // Opens (O_CREAT | O_TRUNC, mode 0644) path for writing.
  static std::optional<RecordWriter> create(const std::string& path, std::string* error);

  // Move-only; destruction closes the file. An unfinished recording stays
  // readable (complete = false).
  RecordWriter(RecordWriter&&) noexcept = default;
  RecordWriter& operator=(RecordWriter&&) noexcept = default;

  // Writes the file header and the PROCESS, CLOCK and OP_TABLE chunks.
  // clock.end_monotonic_ns is not stored here (finish() writes it).
  bool begin(const ProcessInfo& process, const ClockInfo& clock, const std::vector<OpInfo>& ops,
             std::string* error);
  // Buffers events; writes an EVENTS chunk each time kRecordEventsChunkBytes
  // are buffered. A batch holding an event the reader would reject (unknown
  // kind, op_id outside the op table) is refused whole, with nothing written
  // or buffered and the writer still usable.
  bool append_events(const gp_event* events, size_t count, std::string* error);
  // Writes the buffered events (if any) as one EVENTS chunk now. The collector
  // calls this periodically so a SIGKILL loses little.
  bool flush(std::string* error);
  // flush(), then the STATS and END chunks, then closes the file (a close
  // error is reported). stats are stored as given.
  bool finish(const RecordStats& stats, uint64_t end_monotonic_ns, std::string* error);

  // Bytes written to the file so far (the offset of the next chunk).
  uint64_t bytes_written() const { return offset_; }
  // Events written in EVENTS chunks so far (not counting buffered ones).
  uint64_t events_written() const { return events_written_; }

 private:
  enum class State { kCreated, kBegun, kFinished, kFailed };
  RecordWriter(int fd, std::string path);
  bool check_state(State want, const char* what, std::string* error) const;
  bool write_bytes(const std::vector<uint8_t>& bytes, std::string* error);
  bool write_chunk(ChunkType type, std::vector<uint8_t>& chunk, std::string* error);

  UniqueFd fd_;
  std::string path_;
  State state_ = State::kCreated;
  // kRecordChunkHeaderSize bytes of room for the chunk header, then the
  // buffered events: an EVENTS chunk is sealed in place, never copied.
  std::vector<uint8_t> pending_;
  uint64_t offset_ = 0;
  uint64_t events_written_ = 0;
  size_t ops_count_ = 0;  // for validating events (the reader's rules)
};

// Reads and validates a whole record file (see the rules above). On failure
// returns nullopt and sets *error to one line starting with the path.
std::optional<Recording> read_recording(const std::string& path, std::string* error);
// The same for a file already in memory; `name` stands for the path in errors.
std::optional<Recording> read_recording_bytes(std::span<const uint8_t> bytes, std::string* error,
                                              const std::string& name = "<memory>");

}  // namespace gpuprof
