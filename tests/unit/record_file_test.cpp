// record_file_test.cpp: the record file round trip and every way a file can
// be cut, corrupted or foreign (format in userspace/record/record_file.h).
#include "record/packed_events.h"
#include "record/record_file.h"
#include "record_samples.h"
#include "error_strings.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <thread>

namespace gpuprof {
namespace {

using namespace record_samples;

std::vector<uint8_t> cat(std::vector<uint8_t> a, const std::vector<uint8_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}
std::vector<uint8_t> events_payload(const std::vector<gp_event>& ev) {
  auto* p = reinterpret_cast<const uint8_t*>(ev.data());
  return {p, p + ev.size() * sizeof(gp_event)};
}

// n valid memory events of every kind, distinct per `seed`.
std::vector<gp_mem_event> make_mem_events(size_t n, uint32_t seed = 0) {
  std::vector<gp_mem_event> v(n);
  for (size_t i = 0; i < n; ++i) {
    gp_mem_event& e = v[i];
    e.ts_ns = 6'000'000'000ULL + seed * 1000003ULL + i * 13;
    e.addr = 0x7f0000000000ULL + (i / 2) * 4096;
    e.kind = static_cast<uint16_t>(i % 3 + 1);
    e.bytes = e.kind == GP_MEM_CPU_FREE ? 0 : (i % 2 ? -1 : 1) * static_cast<int64_t>(512 + i);
    e.total_allocated = e.kind == GP_MEM_DEVICE ? 1'000'000 + i : 0;
    e.tid = 100 + seed;
    e.device_type = e.kind == GP_MEM_DEVICE ? 1 : 0;
    e.device_index = e.kind == GP_MEM_DEVICE ? static_cast<int8_t>(seed % 4) : 0;
  }
  return v;
}
bool same_mem_events(const std::vector<gp_mem_event>& a, const std::vector<gp_mem_event>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(gp_mem_event)) == 0);
}
std::vector<uint8_t> mem_payload(const std::vector<gp_mem_event>& ev) {
  auto* p = reinterpret_cast<const uint8_t*>(ev.data());
  return {p, p + ev.size() * sizeof(gp_mem_event)};
}

// Little-endian payloads built by hand, independently of the writer.
struct Bytes {
  std::vector<uint8_t> b;
  template <typename T>
  Bytes& put(T v) {
    uint8_t t[sizeof v];
    std::memcpy(t, &v, sizeof v);
    b.insert(b.end(), t, t + sizeof v);
    return *this;
  }
  Bytes& i32(int32_t v) { return put(v); }
  Bytes& u32(uint32_t v) { return put(v); }
  Bytes& u64(uint64_t v) { return put(v); }
  Bytes& i64(int64_t v) { return put(v); }
  Bytes& str(const std::string& s) {
    u32(static_cast<uint32_t>(s.size()));
    b.insert(b.end(), s.begin(), s.end());
    return *this;
  }
};
std::vector<uint8_t> chunk_of(ChunkType type, const std::vector<uint8_t>& payload) {
  return encode_chunk(static_cast<uint32_t>(type), payload);
}
std::vector<uint8_t> chunk_of(ChunkType type, const Bytes& payload) {
  return chunk_of(type, payload.b);
}
// The chunk the writer writes for a payload (compressed where that makes
// it smaller).
std::vector<uint8_t> written_of(ChunkType type, const std::vector<uint8_t>& payload) {
  return encode_written_chunk(type, payload);
}
std::vector<uint8_t> written_of(ChunkType type, const Bytes& payload) { return written_of(type, payload.b); }
// The OP_EVENTS chunk the writer writes for events from first_event on.
std::vector<uint8_t> written_events(const std::vector<gp_event>& ev, uint64_t first_event = 0) {
  std::vector<uint8_t> payload;
  pack_events(ev, first_event, payload);
  return written_of(ChunkType::OP_EVENTS, payload);
}
// PROCESS and CLOCK payloads of the sample data (the same in versions 1 and 2).
Bytes process_payload() {
  ProcessInfo p = sample_process();
  Bytes b;
  b.i32(p.pid).str(p.comm).str(p.cmdline).str(p.libtorch_path).str(p.libtorch_build_id);
  b.str(p.hostname);
  return b;
}
Bytes clock_payload() {
  return Bytes().u64(sample_clock().start_monotonic_ns).u64(sample_clock().start_realtime_ns);
}
// OP_TABLE payload of `ops` in `version`'s layout.
Bytes ops_payload(const std::vector<OpInfo>& ops, uint32_t version) {
  Bytes b;
  b.u32(static_cast<uint32_t>(ops.size()));
  for (const OpInfo& op : ops) {
    b.str(op.name).str(op.overload).str(op.symbol);
    if (version >= 2) b.i32(op.arg_count).u32(op.tensor_args);
    if (version >= 5) b.u32(static_cast<uint32_t>(op.kind));
  }
  return b;
}
// A version 2 file's header and mandatory chunks but OPTIONS, by hand (with
// `version` in the header: what the writer writes is version 3, which has
// the same chunks, and STATS fields more).
std::vector<uint8_t> v2_prefix_without_options(const std::vector<OpInfo>& ops = sample_ops(), uint32_t version = 2) {
  std::vector<uint8_t> f = encode_record_header(version);
  f = cat(f, chunk_of(ChunkType::PROCESS, process_payload()));
  f = cat(f, chunk_of(ChunkType::CLOCK, clock_payload()));
  return cat(f, chunk_of(ChunkType::OP_TABLE, ops_payload(ops, std::max<uint32_t>(version, 2))));
}
// ... and with the 4-byte OPTIONS.
std::vector<uint8_t> v2_prefix(uint32_t flags, const std::vector<OpInfo>& ops = sample_ops(), uint32_t version = 2) {
  return cat(v2_prefix_without_options(ops, version), chunk_of(ChunkType::OPTIONS, Bytes().u32(flags)));
}
// ... as the writer writes it (the current version).
std::vector<uint8_t> written_prefix(uint32_t flags) { return v2_prefix(flags, sample_ops(), GP_RECORD_FORMAT_VERSION); }
// A STATS payload of zeros in the current layout.
Bytes zero_stats_payload() {
  return Bytes().u64(0).u64(0).u32(0).u32(0).u32(0).str("").u64(0).u64(0).str("").u64(0);
}
// A SHAPES payload defining `lists`.
Bytes shapes_payload(const std::vector<InputShapes>& lists) {
  Bytes b;
  b.u32(static_cast<uint32_t>(lists.size()));
  for (const InputShapes& l : lists) {
    b.u32(static_cast<uint32_t>(l.size()));
    for (const ArgShape& a : l) {
      b.i32(a ? static_cast<int32_t>(a->size()) : -1);
      if (a)
        for (int64_t d : *a) b.i64(d);
    }
  }
  return b;
}
Bytes entries_payload(const std::vector<EntryShapes>& entries) {
  Bytes b;
  for (const EntryShapes& e : entries) b.u64(e.event_index).u32(e.shape_id);
  return b;
}
using Dims = std::vector<int64_t>;

// The first n items of v: what a recording cut after n of them holds.
template <typename T>
std::vector<T> first_n(const std::vector<T>& v, size_t n) {
  return std::vector<T>(v.begin(), v.begin() + static_cast<ptrdiff_t>(n));
}

// Reading `file` fails with exactly `want`.
void expect_error(const std::vector<uint8_t>& file, const std::string& want) {
  std::string err;
  EXPECT_FALSE(noting_error(read_recording_bytes(file, "f"), &err));
  EXPECT_EQ(err, want);
}
// The " at offset N: " of an error about the chunk that follows `before`.
std::string at_offset(const std::vector<uint8_t>& before) {
  return " at offset " + std::to_string(before.size()) + ": ";
}

// ---- cutting and corrupting a finished file ----
//
// A recorder killed at any byte leaves a prefix of a finished file; a disk
// error leaves any byte changed. These read a file's chunk headers by hand
// (record_file.h), independently of the reader, to know what every prefix
// must hold.

// One chunk as its 16-byte header describes it.
struct ChunkHeader {
  uint64_t offset;  // of the header
  ChunkType type;
  uint32_t length;  // of the payload
  uint64_t end() const { return offset + kRecordChunkHeaderSize + length; }
};
// The chunks of `file` from offset `from` (a chunk boundary) to its end.
std::vector<ChunkHeader> chunk_headers(const std::vector<uint8_t>& file, uint64_t from) {
  std::vector<ChunkHeader> chunks;
  for (uint64_t off = from; off < file.size(); off = chunks.back().end()) {
    uint32_t type, length;
    std::memcpy(&type, &file[off], 4);
    std::memcpy(&length, &file[off + 4], 4);
    chunks.push_back({off, static_cast<ChunkType>(type), length});
  }
  return chunks;
}
// How many items (events, shapes, frames, launches, ...) a data chunk adds to
// the recording: its payload length over the record size, or the count its
// payload starts with (after first_id where there is one). CUDA_RUNTIME and
// CUPTI_SHIM add their one record; the mandatory chunks, STATS and END add
// none.
size_t items_in(const std::vector<uint8_t>& file, const ChunkHeader& c) {
  std::string error;
  const std::vector<uint8_t> payload =
      noting_error(chunk_payload(std::span<const uint8_t>(file).subspan(c.offset, kRecordChunkHeaderSize + c.length)), &error)
          .value_or(std::vector<uint8_t>{});
  EXPECT_EQ(error, "");
  auto count_at = [&](uint64_t payload_offset) {
    uint32_t count = 0;
    if (payload.size() >= payload_offset + 4) std::memcpy(&count, &payload[payload_offset], 4);
    return size_t{count};
  };
  const size_t length = payload.size();  // before compression
  switch (c.type) {
    case ChunkType::EVENTS:
      return length / 32;
    case ChunkType::OP_EVENTS:
      return count_at(8);  // after u64 first_event
    case ChunkType::SHAPES:
      return count_at(0);
    case ChunkType::ENTRY_SHAPES:
    case ChunkType::ENTRY_STACKS:
    case ChunkType::SAMPLE_KERNEL_STACKS:
      return length / 12;
    case ChunkType::MEM_EVENTS:
      return length / 40;
    case ChunkType::SAMPLE_FRAMES:
    case ChunkType::SAMPLE_STACKS:
    case ChunkType::LAUNCH_NAMES:
      return count_at(4);
    case ChunkType::SAMPLES:
      return length / 24;
    case ChunkType::LAUNCHES:
      return length / 64;
    case ChunkType::GPU_CORRELATIONS:
      return length / 32;
    case ChunkType::GPU_ACTIVITIES:
      return length / 48;
    case ChunkType::CUDA_RUNTIME:
    case ChunkType::CUPTI_SHIM:
      return 1;
    default:
      return 0;
  }
}

// The types and item counts (items_in) of the chunks of the file at `path`
// from offset `from` on: what a writer wrote since then, whatever their
// bytes once compressed.
using ChunkItems = std::vector<std::pair<ChunkType, size_t>>;
ChunkItems chunks_since(const std::string& path, uint64_t from) {
  const std::vector<uint8_t> file = read_bytes(path);
  ChunkItems out;
  for (const ChunkHeader& c : chunk_headers(file, from)) out.emplace_back(c.type, items_in(file, c));
  return out;
}

// A chunk boundary and what the complete chunks before it hold.
struct Boundary {
  uint64_t end;                       // where the last complete chunk ends
  std::map<ChunkType, size_t> items;  // items_in() summed by chunk type
  size_t held(ChunkType type) const {
    auto it = items.find(type);
    return it == items.end() ? 0 : it->second;
  }
};
// Every chunk boundary of `file` from `mandatory_end` (the end of the
// mandatory chunks, holding no data) on, each with what it holds.
std::vector<Boundary> boundaries(const std::vector<uint8_t>& file, uint64_t mandatory_end) {
  std::vector<Boundary> bounds{{mandatory_end, {}}};
  for (const ChunkHeader& c : chunk_headers(file, mandatory_end)) {
    Boundary b = bounds.back();
    b.end = c.end();
    // Raw and packed events count as one sequence.
    b.items[c.type == ChunkType::OP_EVENTS ? ChunkType::EVENTS : c.type] += items_in(file, c);
    bounds.push_back(b);
  }
  return bounds;
}
// The last boundary at or before a cut at `len` (bounds in file order).
const Boundary& last_boundary_before(const std::vector<Boundary>& bounds, uint64_t len) {
  const Boundary* last = &bounds.front();
  for (const Boundary& b : bounds)
    if (b.end <= len) last = &b;
  return *last;
}

// Every cut of `file` before `mandatory_end` is an error that says where the
// file ends: an empty file, a torn file header, or torn mandatory chunks.
void expect_every_cut_before_the_mandatory_end_fails(const std::vector<uint8_t>& file,
                                                     uint64_t mandatory_end) {
  for (size_t len = 0; len < mandatory_end; ++len) {
    SCOPED_TRACE("truncated to " + std::to_string(len) + " bytes");
    std::string err;
    auto rec = noting_error(read_recording_bytes(std::span(file.data(), len), "f"), &err);
    ASSERT_FALSE(rec.has_value());
    if (len == 0) {
      EXPECT_EQ(err, "f is empty: not a gpuprof record file");
    } else if (len < kRecordHeaderSize) {
      EXPECT_EQ(err, "f is truncated: it ends inside the file header (" + std::to_string(len) +
                         " of 16 bytes)");
    } else {
      EXPECT_EQ(err, "f is truncated: it ends at offset " + std::to_string(len) +
                         ", before the PROCESS, CLOCK, OP_TABLE and OPTIONS chunks are complete");
    }
  }
}
// Every cut of `file` from the first boundary up to (not including) its full
// length reads as an incomplete recording that names the torn chunk it
// ignored, if any; `check(recording, last)` compares the data with what the
// last complete boundary holds. Stops at the first fatal failure (an ASSERT
// in `check` guarding an index, say) rather than read on past it.
template <typename Check>
void expect_every_cut_reads_the_complete_chunks(const std::vector<uint8_t>& file,
                                                const std::vector<Boundary>& bounds, Check check) {
  for (size_t len = bounds.front().end; len < file.size(); ++len) {
    SCOPED_TRACE("truncated to " + std::to_string(len) + " bytes");
    std::string err;
    auto rec = noting_error(read_recording_bytes(std::span(file.data(), len), "f"), &err);
    ASSERT_TRUE(rec.has_value()) << err;
    EXPECT_FALSE(rec->complete);
    const Boundary& last = last_boundary_before(bounds, len);
    check(*rec, last);
    if (::testing::Test::HasFatalFailure()) return;
    std::string reason = "no END chunk: the recorder did not finish (killed, or its disk full)";
    if (len > last.end)
      reason += "; ignored " + std::to_string(len - last.end) +
                " bytes of a torn chunk at offset " + std::to_string(last.end);
    EXPECT_EQ(rec->incomplete_reason, reason);
  }
}
// Any single flipped byte of `file`: a clear error, or (a length pointing
// past the end) an incomplete recording that says what it ignored. Never
// complete.
// Skipping corrupt chunks instead (report without --strict): a flip in the
// file header or the four mandatory chunks reads as before; any later one
// loses its chunk alone, said in one lost_chunks entry, and every other
// chunk's events are read exactly (or, in the last chunk's length, reads as
// a torn last chunk, as before).
void expect_every_flipped_byte_is_caught(const std::vector<uint8_t>& file) {
  const std::vector<ChunkSpan> chunks = chunks_of(file);
  for (size_t i = 0; i < file.size(); ++i) {
    std::vector<uint8_t> flipped = file;
    flipped[i] ^= 0xff;
    std::string err, skip_err;
    auto rec = noting_error(read_recording_bytes(flipped, "f"), &err);
    if (rec) {
      EXPECT_FALSE(rec->complete) << "byte " << i;
      EXPECT_NE(rec->incomplete_reason.find("ignored"), std::string::npos) << "byte " << i;
    } else {
      EXPECT_EQ(err.rfind("f", 0), 0u) << err;
    }
    auto kept = noting_error(read_recording_bytes(flipped, "f", CorruptChunks::skip), &skip_err);
    const auto in = std::find_if(chunks.begin(), chunks.end(),
                                 [&](const ChunkSpan& c) { return i < c.offset + c.bytes; });
    ASSERT_NE(in, chunks.end());
    const size_t number = static_cast<size_t>(in - chunks.begin()) + 1;
    if (i < 16 || number <= 4) {  // PROCESS, CLOCK, OP_TABLE, OPTIONS: nothing reads without them
      EXPECT_EQ(kept.has_value(), rec.has_value()) << "byte " << i;
      if (!kept) {
        EXPECT_EQ(skip_err, err) << "byte " << i;
      }
      continue;
    }
    ASSERT_TRUE(kept.has_value()) << "byte " << i << ": " << skip_err;
    if (kept->lost_chunks.empty() && in + 1 == chunks.end()) {
      // The last chunk's length pointing past the end: a torn chunk, said.
      EXPECT_FALSE(kept->complete) << "byte " << i;
      EXPECT_NE(kept->incomplete_reason.find("bytes of a torn chunk at offset " + std::to_string(in->offset)),
                std::string::npos)
          << "byte " << i << ": " << kept->incomplete_reason;
      continue;
    }
    ASSERT_EQ(kept->lost_chunks.size(), 1u) << "byte " << i;
    EXPECT_EQ(kept->lost_chunks[0].index, number) << "byte " << i;
    EXPECT_EQ(kept->lost_chunks[0].offset, in->offset) << "byte " << i;
    EXPECT_EQ(kept->lost_chunks[0].bytes, in->bytes) << "byte " << i;
    EXPECT_TRUE(same_events(kept->events, events_but(file, in->offset))) << "byte " << i;
  }
}

class RecordFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpuprof_record_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/rec.gpuprof";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  RecordWriter must_create() {
    std::string err;
    auto w = noting_error(RecordWriter::create(path_), &err);
    EXPECT_TRUE(w.has_value()) << err;
    return std::move(w.value());  // throws (failing the test) when absent
  }
  // The file header plus PROCESS, CLOCK, OP_TABLE and OPTIONS for the
  // sample data.
  std::vector<uint8_t> mandatory_prefix(const RecordOptions& options = {}) {
    std::string err;
    RecordWriter w = must_create();
    EXPECT_TRUE(succeeded(w.begin(sample_process(), sample_clock(), sample_ops(), options), &err)) << err;
    return read_bytes(path_);
  }
  // A recorder killed between flushes: in a child process, begins a
  // recording of the sample data with `options`, runs `write(writer, &error)`
  // and kills itself with SIGKILL while the writer is still open (no
  // destructor runs). `write` returns false when a step fails; the child
  // then exits 1, which fails the test.
  template <typename Write>
  void write_then_sigkill(const RecordOptions& options, Write write) {
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      std::string e;
      auto w = noting_error(RecordWriter::create(path_), &e);
      if (!w || !succeeded(w->begin(sample_process(), sample_clock(), sample_ops(), options), &e) ||
          !write(*w, &e))
        _exit(1);
      raise(SIGKILL);
      _exit(1);
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
  }

  std::string dir_, path_;
};

TEST_F(RecordFileTest, RoundTripsAFullRecording) {
  std::vector<gp_event> events = make_events(13);
  std::string err;
  {
    RecordWriter w = must_create();
    ASSERT_TRUE(succeeded(w.begin(sample_process(), sample_clock(), sample_ops()), &err)) << err;
    ASSERT_TRUE(succeeded(w.append_events(events.data(), events.size()), &err)) << err;
    ASSERT_TRUE(succeeded(w.finish(sample_stats(), 9'000'000'000ULL), &err)) << err;
    EXPECT_EQ(w.events_written(), 13u);
    EXPECT_EQ(w.bytes_written(), std::filesystem::file_size(path_));
  }
  auto rec = noting_error(read_recording(path_), &err);
  ASSERT_TRUE(rec.has_value()) << err;
  EXPECT_EQ(rec->format_version, GP_RECORD_FORMAT_VERSION);
  EXPECT_EQ(rec->process, sample_process());
  ClockInfo clock = sample_clock();
  clock.end_monotonic_ns = 9'000'000'000ULL;
  EXPECT_EQ(rec->clock, clock);
  EXPECT_EQ(rec->ops, sample_ops());
  EXPECT_TRUE(same_events(rec->events, events));
  EXPECT_EQ(rec->stats, sample_stats());
  EXPECT_TRUE(rec->complete);
  EXPECT_EQ(rec->incomplete_reason, "");
  // The in-memory reader agrees with the file reader.
  auto mem = noting_error(read_recording_bytes(read_bytes(path_)), &err);
  ASSERT_TRUE(mem.has_value()) << err;
  EXPECT_TRUE(same_events(mem->events, events));
}

// report <(zcat run.gpuprof.gz): a pipe has no size to seek within; it is
// read whole, and gives what the file gives.
TEST_F(RecordFileTest, ReadsARecordingFromAPipe) {
  std::vector<gp_event> events = make_events(13);
  std::string err;
  {
    RecordWriter w = must_create();
    ASSERT_TRUE(succeeded(w.begin(sample_process(), sample_clock(), sample_ops()), &err)) << err;
    ASSERT_TRUE(succeeded(w.append_events(events.data(), events.size()), &err)) << err;
    ASSERT_TRUE(succeeded(w.finish(sample_stats(), 9'000'000'000ULL), &err)) << err;
  }
  const std::vector<uint8_t> bytes = read_bytes(path_);
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  // The writer runs alongside the reader, as zcat would (a recording may
  // be larger than the pipe's buffer).
  std::thread writer([&] {
    for (size_t at = 0; at < bytes.size();) {
      const ssize_t n = write(fds[1], bytes.data() + at, bytes.size() - at);
      if (n <= 0) break;
      at += static_cast<size_t>(n);
    }
    close(fds[1]);
  });
  auto rec = noting_error(read_recording("/dev/fd/" + std::to_string(fds[0])), &err);
  writer.join();
  close(fds[0]);
  ASSERT_TRUE(rec.has_value()) << err;
  EXPECT_EQ(rec->process, sample_process());
  EXPECT_EQ(rec->ops, sample_ops());
  EXPECT_TRUE(same_events(rec->events, events));
  EXPECT_EQ(rec->stats, sample_stats());
  EXPECT_TRUE(rec->complete);
}

TEST_F(RecordFileTest, RoundTripsEmptyStringsOpsAndEvents) {
  std::string err;
  RecordWriter w = must_create();
  ASSERT_TRUE(succeeded(w.begin(ProcessInfo{}, ClockInfo{}, {}), &err)) << err;
  ASSERT_TRUE(succeeded(w.flush(), &err)) << err;  // nothing buffered: writes no chunk
  ASSERT_TRUE(succeeded(w.finish(RecordStats{}, 0), &err)) << err;
  auto rec = noting_error(read_recording(path_), &err);
  ASSERT_TRUE(rec.has_value()) << err;
  EXPECT_EQ(rec->process, ProcessInfo{});
  EXPECT_TRUE(rec->ops.empty());
  EXPECT_TRUE(rec->events.empty());
  EXPECT_EQ(rec->stats, RecordStats{});
  EXPECT_TRUE(rec->complete);
}

TEST_F(RecordFileTest, IncrementalWriterWithSeveralFlushesAndFullChunks) {
  std::string err;
  RecordWriter w = must_create();
  ASSERT_TRUE(succeeded(w.begin(sample_process(), sample_clock(), sample_ops()), &err)) << err;
  const uint64_t begin_end = w.bytes_written();
  std::vector<gp_event> all;
  for (uint32_t round = 0; round < 4; ++round) {
    std::vector<gp_event> ev = make_events(7 + round, round);
    ASSERT_TRUE(succeeded(w.append_events(ev.data(), ev.size()), &err)) << err;
    all.insert(all.end(), ev.begin(), ev.end());
    ASSERT_TRUE(succeeded(w.flush(), &err)) << err;
    EXPECT_EQ(w.events_written(), all.size());
  }
  EXPECT_EQ(chunks_since(path_, begin_end),
            (ChunkItems{{ChunkType::OP_EVENTS, 7}, {ChunkType::OP_EVENTS, 8}, {ChunkType::OP_EVENTS, 9},
                        {ChunkType::OP_EVENTS, 10}}));
  // 5000 events: two full 2048-event chunks go out at once, 904 stay buffered.
  const uint64_t before = w.bytes_written();
  std::vector<gp_event> big = make_events(5000, 9);
  ASSERT_TRUE(succeeded(w.append_events(big.data(), big.size()), &err)) << err;
  all.insert(all.end(), big.begin(), big.end());
  EXPECT_EQ(chunks_since(path_, before), (ChunkItems{{ChunkType::OP_EVENTS, 2048}, {ChunkType::OP_EVENTS, 2048}}));
  EXPECT_EQ(w.events_written(), all.size() - 904);
  ASSERT_TRUE(succeeded(w.finish(sample_stats(), 7), &err)) << err;
  auto rec = noting_error(read_recording(path_), &err);
  ASSERT_TRUE(rec.has_value()) << err;
  EXPECT_TRUE(rec->complete);
  EXPECT_TRUE(same_events(rec->events, all));
}

// A recorder killed at any byte: the file is every prefix of a finished one.
TEST_F(RecordFileTest, EveryTruncationGivesAnErrorOrTheCompleteChunks) {
  std::string err;
  RecordWriter w = must_create();
  ASSERT_TRUE(succeeded(w.begin(sample_process(), sample_clock(), sample_ops()), &err)) << err;
  // The boundaries as the writer counts its bytes, not from the chunk
  // headers: the cuts then also check that both agree.
  std::vector<Boundary> bounds{{w.bytes_written(), {}}};
  std::vector<gp_event> all;
  for (uint32_t round = 0; round < 3; ++round) {
    std::vector<gp_event> ev = make_events(5, round);
    all.insert(all.end(), ev.begin(), ev.end());
    ASSERT_TRUE(succeeded(w.append_events(ev.data(), ev.size()), &err)) << err;
    ASSERT_TRUE(succeeded(w.flush(), &err)) << err;
    bounds.push_back({w.bytes_written(), {{ChunkType::EVENTS, all.size()}}});
  }
  ASSERT_TRUE(succeeded(w.finish(sample_stats(), 77), &err)) << err;
  const std::vector<uint8_t> file = read_bytes(path_);
  bounds.push_back({file.size() - kRecordChunkHeaderSize - 8,  // STATS end
                    {{ChunkType::EVENTS, all.size()}}});

  expect_every_cut_before_the_mandatory_end_fails(file, bounds.front().end);
  expect_every_cut_reads_the_complete_chunks(
      file, bounds, [&](const Recording& rec, const Boundary& last) {
        EXPECT_TRUE(same_events(rec.events, first_n(all, last.held(ChunkType::EVENTS))))
            << rec.events.size();
        EXPECT_EQ(rec.process, sample_process());
        EXPECT_EQ(rec.ops, sample_ops());
      });
  auto rec = noting_error(read_recording_bytes(file, "f"), &err);
  ASSERT_TRUE(rec.has_value()) << err;
  EXPECT_TRUE(rec->complete);
  EXPECT_TRUE(same_events(rec->events, all));
}

// A real SIGKILL between flushes: what was flushed is readable.
TEST_F(RecordFileTest, WriterKilledBySigkillLeavesAReadableFile) {
  std::vector<gp_event> flushed = make_events(10, 1);
  ASSERT_NO_FATAL_FAILURE(write_then_sigkill({}, [&](RecordWriter& w, std::string* e) {
    if (!succeeded(w.append_events(flushed.data(), 6), e) || !succeeded(w.flush(), e)) return false;
    if (!succeeded(w.append_events(flushed.data() + 6, 4), e) || !succeeded(w.flush(), e)) return false;
    std::vector<gp_event> lost = make_events(3, 2);
    return succeeded(w.append_events(lost.data(), lost.size()), e);  // buffered only
  }));
  std::string err;
  auto rec = noting_error(read_recording(path_), &err);
  ASSERT_TRUE(rec.has_value()) << err;
  EXPECT_FALSE(rec->complete);
  EXPECT_EQ(rec->incomplete_reason, "no END chunk: the recorder did not finish (killed, or its disk full)");
  EXPECT_TRUE(same_events(rec->events, flushed));
  EXPECT_EQ(rec->clock.end_monotonic_ns, 0u);
}

TEST_F(RecordFileTest, BadMagicIsNotARecordFile) {
  std::string text = "#!/usr/bin/env python3\nprint('hello')\n", err;
  std::vector<uint8_t> bytes(text.begin(), text.end());
  EXPECT_FALSE(noting_error(read_recording_bytes(bytes, "x.py"), &err));
  EXPECT_EQ(err, "x.py is not a gpuprof record file (no GPUPROF magic)");
  EXPECT_FALSE(noting_error(read_recording_bytes(std::span(bytes.data(), 3), "x.py"), &err));
  EXPECT_EQ(err, "x.py is not a gpuprof record file (no GPUPROF magic)");
}

TEST_F(RecordFileTest, FutureVersionNamesBothVersions) {
  std::string err;
  std::vector<uint8_t> bytes = cat(encode_record_header(7), encode_chunk(77, {}));
  EXPECT_FALSE(noting_error(read_recording_bytes(bytes, "new.gpuprof"), &err));
  EXPECT_EQ(err,
            "new.gpuprof was written by a newer gpuprof: record format version 7, "
            "this gpuprof reads version 6");
  EXPECT_FALSE(noting_error(read_recording_bytes(encode_record_header(0), "z"), &err));
  EXPECT_EQ(err, "z: unsupported record format version 0 (this gpuprof reads version 6)");
  std::vector<uint8_t> header = encode_record_header();
  header[12] = 20;
  EXPECT_FALSE(noting_error(read_recording_bytes(header, "h"), &err));
  EXPECT_EQ(err, "h: corrupt file header: header size 20 (expected 16)");
}

TEST_F(RecordFileTest, FlippedByteInAMiddleChunkIsCorrupt) {
  std::string err;
  RecordWriter w = must_create();
  ASSERT_TRUE(succeeded(w.begin(sample_process(), sample_clock(), sample_ops()), &err)) << err;
  std::vector<gp_event> ev = make_events(4);
  uint64_t second_events = 0;  // chunk 6
  for (int i = 0; i < 3; ++i) {
    if (i == 1) second_events = w.bytes_written();
    ASSERT_TRUE(succeeded(w.append_events(ev.data(), 4), &err) && succeeded(w.flush(), &err));
  }
  ASSERT_TRUE(succeeded(w.finish(sample_stats(), 1), &err)) << err;
  std::vector<uint8_t> file = read_bytes(path_);
  std::vector<uint8_t> bad = file;
  bad[second_events + 16 + 20] ^= 0x01;
  EXPECT_FALSE(noting_error(read_recording_bytes(bad, "f"), &err));
  EXPECT_EQ(
      err, "f: corrupt chunk 6 at offset " + std::to_string(second_events) + ": checksum mismatch");
  bad = file;
  bad[second_events] ^= 0x10;  // the type field is checksummed too
  EXPECT_FALSE(noting_error(read_recording_bytes(bad, "f"), &err));
  EXPECT_EQ(
      err, "f: corrupt chunk 6 at offset " + std::to_string(second_events) + ": checksum mismatch");
  expect_every_flipped_byte_is_caught(file);
}

TEST_F(RecordFileTest, EventsOutsideTheOpTableAreRejected) {
  const std::vector<uint8_t> prefix = mandatory_prefix();
  const std::string at = "f: corrupt chunk 5 (EVENTS) at offset " + std::to_string(prefix.size());
  std::string err;
  std::vector<gp_event> ev = make_events(4);
  ev[3].kind = GP_EV_OP_EXIT;
  ev[3].op_id = 3;  // the op table has 3 ops
  auto chunk = encode_chunk(static_cast<uint32_t>(ChunkType::EVENTS), events_payload(ev));
  EXPECT_FALSE(noting_error(read_recording_bytes(cat(prefix, chunk), "f"), &err));
  EXPECT_EQ(err, at + ": event 3 has op_id 3, but the op table has 3 ops");
  ev[3].op_id = GP_NO_OP;  // an entry or exit must name an op
  chunk = encode_chunk(static_cast<uint32_t>(ChunkType::EVENTS), events_payload(ev));
  EXPECT_FALSE(noting_error(read_recording_bytes(cat(prefix, chunk), "f"), &err));
  EXPECT_EQ(err, at + ": event 3 has op_id 4294967295, but the op table has 3 ops");
  ev[3].op_id = 0;
  ev[3].kind = 9;
  chunk = encode_chunk(static_cast<uint32_t>(ChunkType::EVENTS), events_payload(ev));
  EXPECT_FALSE(noting_error(read_recording_bytes(cat(prefix, chunk), "f"), &err));
  EXPECT_EQ(err, at + ": event 3 has unknown kind 9");
  ev[3].kind = GP_EV_CUT;  // a cut names no op (version 5)
  chunk = encode_chunk(static_cast<uint32_t>(ChunkType::EVENTS), events_payload(ev));
  EXPECT_FALSE(noting_error(read_recording_bytes(cat(prefix, chunk), "f"), &err));
  EXPECT_EQ(err, at + ": event 3 has op_id 0, but the op table has 3 ops");
  ev[3].op_id = GP_NO_OP;
  chunk = encode_chunk(static_cast<uint32_t>(ChunkType::EVENTS), events_payload(ev));
  EXPECT_TRUE(noting_error(read_recording_bytes(cat(prefix, chunk), "f"), &err)) << err;
  chunk = encode_chunk(static_cast<uint32_t>(ChunkType::EVENTS), std::vector<uint8_t>(33, 0));
  EXPECT_FALSE(noting_error(read_recording_bytes(cat(prefix, chunk), "f"), &err));
  EXPECT_EQ(err, at + ": payload of 33 bytes is not a whole number of 32-byte events");
}

TEST_F(RecordFileTest, WriterRefusesEventsTheReaderWouldReject) {
  std::string err;
  RecordWriter w = must_create();
  ASSERT_TRUE(succeeded(w.begin(sample_process(), sample_clock(), sample_ops()), &err)) << err;
  std::vector<gp_event> ev = make_events(3);
  ev[1].op_id = 17;
  EXPECT_FALSE(succeeded(w.append_events(ev.data(), ev.size()), &err));
  EXPECT_EQ(err, path_ + ": not recording event has op_id 17, but the op table has 3 ops");
  ev[1].op_id = 1;
  ASSERT_TRUE(succeeded(w.append_events(ev.data(), ev.size()), &err)) << err;  // still usable
  ASSERT_TRUE(succeeded(w.finish(sample_stats(), 1), &err)) << err;
  auto rec = noting_error(read_recording(path_), &err);
  ASSERT_TRUE(rec.has_value()) << err;
  EXPECT_TRUE(same_events(rec->events, ev));
}

TEST_F(RecordFileTest, UnknownChunksAreSkipped) {
  std::string err;
  std::vector<gp_event> ev = make_events(6);
  RecordWriter w = must_create();
  ASSERT_TRUE(succeeded(w.begin(sample_process(), sample_clock(), sample_ops()), &err)) << err;
  const uint64_t split = w.bytes_written();
  ASSERT_TRUE(succeeded(w.append_events(ev.data(), ev.size()), &err)) << err;
  ASSERT_TRUE(succeeded(w.finish(sample_stats(), 5), &err)) << err;
  std::vector<uint8_t> file = read_bytes(path_);
  std::vector<uint8_t> extra = cat(encode_chunk(1000, std::vector<uint8_t>{'h', 'i'}),
                                   encode_chunk(1001, {}));  // empty payload
  file.insert(file.begin() + split, extra.begin(), extra.end());
  {
    std::ofstream(path_, std::ios::binary).write(reinterpret_cast<char*>(file.data()), file.size());
  }
  auto rec = noting_error(read_recording(path_), &err);
  ASSERT_TRUE(rec.has_value()) << err;
  EXPECT_TRUE(rec->complete);
  EXPECT_TRUE(same_events(rec->events, ev));
}

TEST_F(RecordFileTest, StructuralErrorsAreCorrupt) {
  std::string err;
  const std::vector<uint8_t> prefix = mandatory_prefix();
  const std::string off = std::to_string(prefix.size());
  // A length above the cap is refused before anything is allocated.
  std::vector<uint8_t> huge = {4, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0};
  EXPECT_FALSE(noting_error(read_recording_bytes(cat(prefix, huge), "f"), &err));
  EXPECT_EQ(err, "f: corrupt chunk 5 at offset " + off +
                     ": payload length 4294967295 exceeds the limit of 67108864 bytes");
  // An op count that cannot fit its payload.
  auto ops =
      encode_chunk(static_cast<uint32_t>(ChunkType::OP_TABLE), std::vector<uint8_t>(4, 0xff));
  EXPECT_FALSE(noting_error(read_recording_bytes(cat(encode_record_header(), ops), "f"), &err));
  EXPECT_EQ(
      err,
      "f: corrupt chunk 1 (OP_TABLE) at offset 16: op count 4294967295 does not fit the payload");
  // Events before the op table.
  auto ev = encode_chunk(static_cast<uint32_t>(ChunkType::EVENTS), {});
  EXPECT_FALSE(noting_error(read_recording_bytes(cat(encode_record_header(), ev), "f"), &err));
  EXPECT_EQ(err,
            "f: corrupt chunk 1 (EVENTS) at offset 16: EVENTS chunk before the PROCESS, "
            "CLOCK, OP_TABLE and OPTIONS chunks");
  // A CLOCK payload one byte short, a duplicate CLOCK, an END without STATS.
  auto clock = encode_chunk(static_cast<uint32_t>(ChunkType::CLOCK), std::vector<uint8_t>(15, 0));
  EXPECT_FALSE(noting_error(read_recording_bytes(cat(prefix, clock), "f"), &err));
  EXPECT_EQ(err, "f: corrupt chunk 5 (CLOCK) at offset " + off + ": duplicate CLOCK chunk");
  EXPECT_FALSE(noting_error(read_recording_bytes(cat(encode_record_header(), clock), "f"), &err));
  EXPECT_EQ(err, "f: corrupt chunk 1 (CLOCK) at offset 16: payload too short");
  auto end = encode_chunk(static_cast<uint32_t>(ChunkType::END), std::vector<uint8_t>(8, 0));
  EXPECT_FALSE(noting_error(read_recording_bytes(cat(prefix, end), "f"), &err));
  EXPECT_EQ(err, "f: corrupt chunk 5 (END) at offset " + off + ": END chunk without a STATS chunk");
  // Data after the END chunk.
  RecordWriter w = must_create();
  ASSERT_TRUE(succeeded(w.begin(sample_process(), sample_clock(), sample_ops()), &err)) << err;
  ASSERT_TRUE(succeeded(w.finish(sample_stats(), 5), &err)) << err;
  std::vector<uint8_t> file = read_bytes(path_);
  EXPECT_FALSE(noting_error(read_recording_bytes(cat(file, {0, 0, 0}), "f"), &err));
  EXPECT_EQ(err,
            "f: corrupt: 3 bytes after the END chunk at offset " + std::to_string(file.size()));
}

TEST_F(RecordFileTest, EmptyMissingAndNonRegularFiles) {
  std::string err;
  { std::ofstream(path_).flush(); }
  EXPECT_FALSE(noting_error(read_recording(path_), &err));
  EXPECT_EQ(err, path_ + " is empty: not a gpuprof record file");
  std::string missing = dir_ + "/missing.gpuprof";
  EXPECT_FALSE(noting_error(read_recording(missing), &err));
  EXPECT_EQ(err, "cannot open " + missing + ": " + std::strerror(ENOENT));
  EXPECT_FALSE(noting_error(read_recording(dir_), &err));
  EXPECT_EQ(err, dir_ + " is a directory, not a record file");
  std::string nodir = dir_ + "/no/such/dir.gpuprof";
  EXPECT_FALSE(noting_error(RecordWriter::create(nodir), &err));
  EXPECT_EQ(err, "cannot create " + nodir + ": " + std::strerror(ENOENT));
}

TEST_F(RecordFileTest, WriterReportsMisuseAndWriteErrors) {
  std::string err;
  RecordWriter w = must_create();
  gp_event e = make_events(1)[0];
  EXPECT_FALSE(succeeded(w.append_events(&e, 1), &err));
  EXPECT_EQ(err, path_ + ": append_events called out of order (internal error)");
  ASSERT_TRUE(succeeded(w.begin(sample_process(), sample_clock(), sample_ops()), &err)) << err;
  EXPECT_FALSE(succeeded(w.begin(sample_process(), sample_clock(), sample_ops()), &err));
  ASSERT_TRUE(succeeded(w.finish(sample_stats(), 1), &err)) << err;
  EXPECT_FALSE(succeeded(w.finish(sample_stats(), 1), &err));
  EXPECT_EQ(err, path_ + ": finish called out of order (internal error)");

  if (access("/dev/full", W_OK) != 0) GTEST_SKIP() << "no writable /dev/full";
  auto full = noting_error(RecordWriter::create("/dev/full"), &err);
  ASSERT_TRUE(full.has_value()) << err;
  EXPECT_FALSE(succeeded(full->begin(sample_process(), sample_clock(), sample_ops()), &err));
  EXPECT_EQ(err, std::string("cannot write /dev/full: ") + std::strerror(ENOSPC));
  EXPECT_FALSE(succeeded(full->flush(), &err));
  EXPECT_EQ(err, "/dev/full: flush after an earlier write error");
}

// ---- format version 2: options, shapes, memory events ----

TEST_F(RecordFileTest, WriterOutputMatchesTheDocumentedLayout) {
  // The mandatory chunks as record_file.h describes them, built by hand.
  EXPECT_EQ(mandatory_prefix(RecordOptions{true, true}), written_prefix(3));
  EXPECT_EQ(mandatory_prefix(RecordOptions{false, true}), written_prefix(2));
  EXPECT_EQ(mandatory_prefix(), written_prefix(0));
  // ... and a flush: SHAPES, EVENTS, ENTRY_SHAPES, MEM_EVENTS, in this order.
  std::string err;
  RecordWriter w = must_create();
  ASSERT_TRUE(succeeded(w.begin(sample_process(), sample_clock(), sample_ops(), {true, true}), &err)) << err;
  std::vector<gp_event> ev = make_events(4);
  ev[3].payload_bytes = 200;  // the ring buffer's business: stored as 0
  std::vector<gp_mem_event> mem = make_mem_events(3);
  InputShapes shapes = {Dims{2, 3}, Dims{}, std::nullopt};
  ASSERT_TRUE(succeeded(w.append_mem_events(mem.data(), mem.size()), &err)) << err;
  ASSERT_TRUE(succeeded(w.append_events(ev.data(), ev.size()), &err)) << err;
  ASSERT_TRUE(succeeded(w.append_shapes(3, shapes), &err)) << err;
  EXPECT_FALSE(succeeded(w.append_shapes(3, shapes), &err));  // refused: changes nothing
  ASSERT_TRUE(succeeded(w.flush(), &err)) << err;
  ev[3].payload_bytes = 0;
  std::vector<uint8_t> expect = written_prefix(3);
  expect = cat(expect, written_of(ChunkType::SHAPES, shapes_payload({shapes})));
  expect = cat(expect, written_events(ev));
  expect = cat(expect, written_of(ChunkType::ENTRY_SHAPES, entries_payload({{3, 0}})));
  expect = cat(expect, written_of(ChunkType::MEM_EVENTS, mem_payload(mem)));
  EXPECT_EQ(read_bytes(path_), expect);
  EXPECT_EQ(w.bytes_written(), expect.size());
}

TEST_F(RecordFileTest, RoundTripsShapesEntryShapesAndMemoryEvents) {
  // Batches of 9 events cycling ENTRY, EXIT, CATCH: entries at 0, 3, 6, ...
  const InputShapes a = {Dims{2, 3}, Dims{}, std::nullopt};  // an unknown argument
  const InputShapes b = {Dims{}, Dims{}};                    // no tensors
  const InputShapes c = {std::nullopt, std::nullopt};
  const InputShapes d = {};  // no arguments
  const InputShapes e = {Dims(64, 7), Dims{INT64_MAX, 0, -1, 1}};
  std::string err;
  RecordWriter w = must_create();
  ASSERT_TRUE(succeeded(w.begin(sample_process(), sample_clock(), sample_ops(), {true, true}), &err)) << err;
  std::vector<gp_event> all;
  std::vector<gp_mem_event> all_mem;
  auto events = [&](uint32_t seed) {
    std::vector<gp_event> ev = make_events(9, seed);
    for (gp_event& x : ev) x.payload_bytes = x.kind == GP_EV_OP_ENTRY ? 48 : 0;
    EXPECT_EQ(w.events_appended(), all.size());
    ASSERT_TRUE(succeeded(w.append_events(ev.data(), ev.size()), &err)) << err;
    for (gp_event& x : ev) x.payload_bytes = 0;
    all.insert(all.end(), ev.begin(), ev.end());
  };
  auto mem = [&](size_t n, uint32_t seed) {
    std::vector<gp_mem_event> m = make_mem_events(n, seed);
    ASSERT_TRUE(succeeded(w.append_mem_events(m.data(), m.size()), &err)) << err;
    all_mem.insert(all_mem.end(), m.begin(), m.end());
  };
  auto shapes = [&](uint64_t index, const InputShapes& s) {
    ASSERT_TRUE(succeeded(w.append_shapes(index, s), &err)) << err;
  };
  events(0);  // events 0..8
  shapes(0, a);
  mem(5, 0);
  ASSERT_TRUE(succeeded(w.flush(), &err)) << err;
  events(1);     // 9..17
  shapes(3, b);  // an event of the previous flush
  shapes(6, a);  // a repeat
  ASSERT_TRUE(succeeded(w.flush(), &err)) << err;
  shapes(9, c);  // no new events in this flush
  shapes(12, d);
  mem(4, 1);
  ASSERT_TRUE(succeeded(w.flush(), &err)) << err;
  ASSERT_TRUE(succeeded(w.flush(), &err)) << err;  // nothing pending: no chunk
  events(2);                          // 18..26
  shapes(15, e);
  shapes(21, a);
  shapes(24, b);
  EXPECT_EQ(w.shapes_defined(), 5u);
  ASSERT_TRUE(succeeded(w.finish(sample_stats(), 42), &err)) << err;
  EXPECT_EQ(w.mem_events_written(), 9u);
  EXPECT_EQ(w.bytes_written(), std::filesystem::file_size(path_));

  auto rec = noting_error(read_recording(path_), &err);
  ASSERT_TRUE(rec.has_value()) << err;
  EXPECT_EQ(rec->format_version, GP_RECORD_FORMAT_VERSION);
  EXPECT_TRUE(rec->complete);
  EXPECT_EQ(rec->options, (RecordOptions{true, true}));
  EXPECT_EQ(rec->ops, sample_ops());
  EXPECT_EQ(rec->ops[2].arg_count, -1);
  EXPECT_TRUE(same_events(rec->events, all));
  // Interned in first-use order; unknown arguments stay nullopt, not [].
  EXPECT_EQ(rec->shapes, (std::vector<InputShapes>{a, b, c, d, e}));
  ASSERT_EQ(rec->shapes.size(), 5u);
  EXPECT_FALSE(rec->shapes[0][2].has_value());
  EXPECT_TRUE(rec->shapes[1][0].has_value() && rec->shapes[1][0]->empty());
  EXPECT_EQ(rec->entry_shapes,
            (std::vector<EntryShapes>{
                {0, 0}, {3, 1}, {6, 0}, {9, 2}, {12, 3}, {15, 4}, {21, 0}, {24, 1}}));
  for (const EntryShapes& es : rec->entry_shapes)
    EXPECT_EQ(rec->events[es.event_index].kind, GP_EV_OP_ENTRY);
  EXPECT_TRUE(same_mem_events(rec->mem_events, all_mem));
  EXPECT_EQ(rec->stats, sample_stats());
}

TEST_F(RecordFileTest, ManyDistinctShapesWithRepeatsSpanSeveralChunks) {
  // 20000 entries, 2500 distinct shape lists, each used 8 times.
  auto shape_of = [](uint64_t i) {
    uint64_t k = i % 2500;
    return InputShapes{Dims{static_cast<int64_t>(k), 3},
                       k % 5 == 0 ? ArgShape{} : ArgShape{Dims{}}};
  };
  std::string err;
  RecordWriter w = must_create();
  ASSERT_TRUE(succeeded(w.begin(sample_process(), sample_clock(), sample_ops(), {true, false}), &err)) << err;
  std::vector<gp_event> ev = make_events(1000);
  for (gp_event& e : ev) {
    e.kind = GP_EV_OP_ENTRY;
    e.op_id = 1;
  }
  uint64_t written_mid = 0;
  for (uint64_t batch = 0; batch < 20; ++batch) {
    ASSERT_TRUE(succeeded(w.append_events(ev.data(), ev.size()), &err)) << err;
    for (uint64_t i = batch * 1000; i < (batch + 1) * 1000; ++i)
      ASSERT_TRUE(succeeded(w.append_shapes(i, shape_of(i)), &err)) << err;
    if (batch == 9) written_mid = w.bytes_written();
  }
  EXPECT_EQ(w.shapes_defined(), 2500u);
  // No explicit flush: the writer flushed on its own once 64 KiB of entry
  // shapes were pending, and the file read now (unfinished) is consistent.
  EXPECT_GT(written_mid, 0u);
  auto partial = noting_error(read_recording(path_), &err);
  ASSERT_TRUE(partial.has_value()) << err;
  EXPECT_FALSE(partial->complete);
  EXPECT_GT(partial->entry_shapes.size(), 5000u);
  EXPECT_LT(partial->entry_shapes.size(), 20000u);
  ASSERT_TRUE(succeeded(w.finish(sample_stats(), 1), &err)) << err;

  auto rec = noting_error(read_recording(path_), &err);
  ASSERT_TRUE(rec.has_value()) << err;
  ASSERT_EQ(rec->events.size(), 20000u);
  ASSERT_EQ(rec->shapes.size(), 2500u);
  ASSERT_EQ(rec->entry_shapes.size(), 20000u);
  for (uint64_t i = 0; i < 20000; ++i) {
    const EntryShapes& es = rec->entry_shapes[i];
    ASSERT_EQ(es.event_index, i);
    ASSERT_EQ(es.shape_id, i % 2500);  // ids in first-use order
    ASSERT_EQ(rec->shapes[es.shape_id], shape_of(i)) << i;
  }
  EXPECT_TRUE(rec->mem_events.empty());
  EXPECT_EQ(rec->options, (RecordOptions{true, false}));
}

// The writer forgets which old events were entries (it keeps one bit per
// event since the last entry shape); the checks still hold afterwards.
TEST_F(RecordFileTest, LongRecordingsWithShapesStayChecked) {
  std::string err;
  RecordWriter w = must_create();
  ASSERT_TRUE(succeeded(w.begin(sample_process(), sample_clock(), sample_ops(), {true, false}), &err)) << err;
  std::vector<gp_event> ev = make_events(3000);  // entries at multiples of 3
  uint64_t entries = 0;
  for (int batch = 0; batch < 70; ++batch) {  // 210000 events
    const uint64_t first = w.events_appended();
    ASSERT_TRUE(succeeded(w.append_events(ev.data(), ev.size()), &err)) << err;
    for (uint64_t i = first; i < w.events_appended(); i += 300, ++entries)
      ASSERT_TRUE(succeeded(w.append_shapes(i, {Dims{static_cast<int64_t>(i % 7)}}), &err)) << err;
  }
  const uint64_t last = w.events_appended() - 300;
  EXPECT_FALSE(succeeded(w.append_shapes(last - 300, {}), &err));
  EXPECT_EQ(err, path_ + ": not recording the shapes of event " + std::to_string(last - 300) +
                     ": not above the previous entry shape's event " + std::to_string(last));
  EXPECT_FALSE(succeeded(w.append_shapes(last + 1, {}), &err));
  EXPECT_EQ(err, path_ + ": not recording the shapes of event " + std::to_string(last + 1) +
                     ": it is not an ENTRY event");
  EXPECT_FALSE(succeeded(w.append_shapes(last + 2, {}), &err));
  ASSERT_TRUE(succeeded(w.append_shapes(last + 3, {}), &err)) << err;
  ASSERT_TRUE(succeeded(w.finish(sample_stats(), 1), &err)) << err;
  auto rec = noting_error(read_recording(path_), &err);
  ASSERT_TRUE(rec.has_value()) << err;
  EXPECT_EQ(rec->events.size(), 210000u);
  EXPECT_EQ(rec->entry_shapes.size(), entries + 1);
  EXPECT_EQ(rec->shapes.size(), 8u);  // [[0]] .. [[6]] and []
}

TEST_F(RecordFileTest, ManyMemoryEventsGoOutInFullChunks) {
  std::string err;
  RecordWriter w = must_create();
  ASSERT_TRUE(succeeded(w.begin(sample_process(), sample_clock(), sample_ops(), {false, true}), &err)) << err;
  const uint64_t before = w.bytes_written();
  std::vector<gp_mem_event> mem = make_mem_events(4000, 3);
  ASSERT_TRUE(succeeded(w.append_mem_events(mem.data(), mem.size()), &err)) << err;
  // 1600-event chunks: two go out at once, 800 events stay buffered.
  EXPECT_EQ(chunks_since(path_, before), (ChunkItems{{ChunkType::MEM_EVENTS, 1600}, {ChunkType::MEM_EVENTS, 1600}}));
  EXPECT_EQ(w.mem_events_written(), 3200u);
  ASSERT_TRUE(succeeded(w.finish(sample_stats(), 1), &err)) << err;
  auto rec = noting_error(read_recording(path_), &err);
  ASSERT_TRUE(rec.has_value()) << err;
  EXPECT_TRUE(same_mem_events(rec->mem_events, mem));
  EXPECT_TRUE(rec->entry_shapes.empty());
}

TEST_F(RecordFileTest, Version1FilesAreStillRead) {
  std::vector<OpInfo> ops = sample_ops();
  for (OpInfo& op : ops) op = {op.name, op.overload, op.symbol};  // arg_count -1
  std::vector<gp_event> ev = make_events(9);
  RecordStats stats = sample_stats();
  Bytes s;
  s.u64(stats.events_recorded).u64(stats.events_lost).u32(stats.entry_probes);
  s.u32(stats.exit_probes).u32(stats.ops_without_exit).str(stats.stop_reason);
  std::vector<uint8_t> file = encode_record_header(1);
  file = cat(file, chunk_of(ChunkType::PROCESS, process_payload()));
  file = cat(file, chunk_of(ChunkType::CLOCK, clock_payload()));
  file = cat(file, chunk_of(ChunkType::OP_TABLE, ops_payload(ops, 1)));
  const size_t mandatory_end = file.size();
  // Types 7..15 meant nothing in version 1: skipped like any unknown chunk.
  file = cat(file, chunk_of(ChunkType::SHAPES, std::vector<uint8_t>{1, 2, 3}));
  file = cat(file, chunk_of(ChunkType::EVENTS, events_payload(ev)));
  file = cat(file, chunk_of(ChunkType::MEM_EVENTS, std::vector<uint8_t>{9}));
  file = cat(file, chunk_of(ChunkType::SAMPLE_FRAMES, std::vector<uint8_t>{1}));
  file = cat(file, chunk_of(ChunkType::SAMPLES, std::vector<uint8_t>{2}));
  file = cat(file, chunk_of(ChunkType::ENTRY_STACKS, std::vector<uint8_t>{3}));
  file = cat(file, chunk_of(ChunkType::SAMPLE_KERNEL_STACKS, std::vector<uint8_t>{4}));
  file = cat(file, chunk_of(ChunkType::STATS, s));
  file = cat(file, chunk_of(ChunkType::END, Bytes().u64(99)));
  std::string err;
  auto rec = noting_error(read_recording_bytes(file, "old"), &err);
  ASSERT_TRUE(rec.has_value()) << err;
  EXPECT_EQ(rec->format_version, 1u);
  EXPECT_TRUE(rec->complete);
  EXPECT_EQ(rec->process, sample_process());
  EXPECT_EQ(rec->clock.end_monotonic_ns, 99u);
  EXPECT_EQ(rec->ops, ops);
  for (const OpInfo& op : rec->ops) EXPECT_EQ(op.arg_count, -1);
  EXPECT_TRUE(same_events(rec->events, ev));
  EXPECT_EQ(rec->options, RecordOptions{});
  EXPECT_TRUE(rec->shapes.empty() && rec->entry_shapes.empty() && rec->mem_events.empty());
  EXPECT_TRUE(rec->entry_stacks.empty() && rec->sample_kernel_stacks.empty());
  RecordStats v1_stats = stats;
  v1_stats.mem_events_lost = 0;
  v1_stats.shapes_unknown = 0;
  v1_stats.tensor_layout = "";
  v1_stats.samples_lost = 0;
  EXPECT_EQ(rec->stats, v1_stats);
  // Version 1 needs no OPTIONS chunk and keeps its messages.
  auto cut = noting_error(read_recording_bytes(std::span(file.data(), mandatory_end), "old"), &err);
  ASSERT_TRUE(cut.has_value()) << err;
  EXPECT_FALSE(cut->complete);
  EXPECT_FALSE(noting_error(read_recording_bytes(std::span(file.data(), mandatory_end - 1), "old"), &err));
  EXPECT_EQ(err, "old is truncated: it ends at offset " + std::to_string(mandatory_end - 1) +
                     ", before the PROCESS, CLOCK and OP_TABLE chunks are complete");
  // The version 2 layouts are not version 1's.
  std::vector<uint8_t> bad = encode_record_header(1);
  bad = cat(bad, chunk_of(ChunkType::OP_TABLE, ops_payload({ops[0]}, 2)));
  EXPECT_FALSE(noting_error(read_recording_bytes(bad, "old"), &err));
  EXPECT_EQ(err,
            "old: corrupt chunk 1 (OP_TABLE) at offset 16: 8 unexpected trailing payload bytes");
  bad = cat(std::vector<uint8_t>(file.begin(), file.begin() + mandatory_end),
            chunk_of(ChunkType::STATS, Bytes(s).u64(1).u64(2).str("")));
  EXPECT_FALSE(noting_error(read_recording_bytes(bad, "old"), &err));
  EXPECT_EQ(err, "old: corrupt chunk 4 (STATS) at offset " + std::to_string(mandatory_end) +
                     ": 20 unexpected trailing payload bytes");
}

TEST_F(RecordFileTest, CorruptOptionsOpTablesAndEventsAreRejected) {
  const std::vector<uint8_t> prefix = v2_prefix(3);
  const std::string off = std::to_string(prefix.size());
  const std::vector<uint8_t> no_options = v2_prefix_without_options();
  const std::string opt_off = std::to_string(no_options.size());
  expect_error(cat(no_options, chunk_of(ChunkType::OPTIONS, Bytes().u32(0x25))),
               "f: corrupt chunk 4 (OPTIONS) at offset " + opt_off + ": unknown option flags 0x20");
  expect_error(cat(no_options, chunk_of(ChunkType::OPTIONS, Bytes().u32(1).u32(0))),
               "f: corrupt chunk 4 (OPTIONS) at offset " + opt_off +
                   ": 4 unexpected trailing payload bytes");
  expect_error(cat(no_options, chunk_of(ChunkType::OPTIONS, std::vector<uint8_t>{1})),
               "f: corrupt chunk 4 (OPTIONS) at offset " + opt_off + ": payload too short");
  expect_error(cat(prefix, chunk_of(ChunkType::OPTIONS, Bytes().u32(1))),
               "f: corrupt chunk 5 (OPTIONS) at offset " + off + ": duplicate OPTIONS chunk");
  // OPTIONS is mandatory in version 2: no data before it.
  for (ChunkType t : {ChunkType::EVENTS, ChunkType::SHAPES, ChunkType::ENTRY_SHAPES,
                      ChunkType::MEM_EVENTS, ChunkType::STATS}) {
    std::string name = t == ChunkType::EVENTS         ? "EVENTS"
                       : t == ChunkType::SHAPES       ? "SHAPES"
                       : t == ChunkType::ENTRY_SHAPES ? "ENTRY_SHAPES"
                       : t == ChunkType::MEM_EVENTS   ? "MEM_EVENTS"
                                                      : "STATS";
    expect_error(cat(no_options, chunk_of(t, std::vector<uint8_t>{})),
                 "f: corrupt chunk 4 (" + name + ") at offset " + opt_off + ": " + name +
                     " chunk before the PROCESS, CLOCK, OP_TABLE and OPTIONS chunks");
  }
  expect_error(no_options, "f is truncated: it ends at offset " + opt_off +
                               ", before the PROCESS, CLOCK, OP_TABLE and OPTIONS chunks are "
                               "complete");
  // The new data chunks need their option.
  expect_error(cat(v2_prefix(2), chunk_of(ChunkType::SHAPES, shapes_payload({}))),
               "f: corrupt chunk 5 (SHAPES) at offset " + off +
                   ": SHAPES chunk in a recording without the shapes option");
  expect_error(cat(v2_prefix(2), chunk_of(ChunkType::ENTRY_SHAPES, std::vector<uint8_t>{})),
               "f: corrupt chunk 5 (ENTRY_SHAPES) at offset " + off +
                   ": ENTRY_SHAPES chunk in a recording without the shapes option");
  expect_error(cat(v2_prefix(1), chunk_of(ChunkType::MEM_EVENTS, std::vector<uint8_t>{})),
               "f: corrupt chunk 5 (MEM_EVENTS) at offset " + off +
                   ": MEM_EVENTS chunk in a recording without the memory option");
  // Data after STATS.
  const std::vector<uint8_t> with_stats =
      cat(prefix, chunk_of(ChunkType::STATS, zero_stats_payload()));
  expect_error(cat(with_stats, chunk_of(ChunkType::MEM_EVENTS, std::vector<uint8_t>{})),
               "f: corrupt chunk 6 (MEM_EVENTS) at offset " + std::to_string(with_stats.size()) +
                   ": MEM_EVENTS chunk after the STATS chunk");
  expect_error(cat(with_stats, chunk_of(ChunkType::SHAPES, shapes_payload({}))),
               "f: corrupt chunk 6 (SHAPES) at offset " + std::to_string(with_stats.size()) +
                   ": SHAPES chunk after the STATS chunk");
  // A STATS chunk in the version 1 layout.
  Bytes v1_stats;
  v1_stats.u64(0).u64(0).u32(0).u32(0).u32(0).str("");
  expect_error(cat(prefix, chunk_of(ChunkType::STATS, v1_stats)),
               "f: corrupt chunk 5 (STATS) at offset " + off + ": payload too short");
  // Op tables: arg_count >= -1, tensor_args <= max(arg_count, 0).
  const std::string ops_off = std::to_string(16 + 16 + process_payload().b.size() + 16 + 16);
  std::vector<OpInfo> ops = sample_ops();
  ops[1].arg_count = -2;
  ops[1].tensor_args = 0;
  expect_error(v2_prefix(0, ops), "f: corrupt chunk 3 (OP_TABLE) at offset " + ops_off +
                                      ": op 1 has arg_count -2 and tensor_args 0");
  ops[1] = {"aten::mm", "", "mm", 2, 3};
  expect_error(v2_prefix(0, ops), "f: corrupt chunk 3 (OP_TABLE) at offset " + ops_off +
                                      ": op 1 has arg_count 2 and tensor_args 3");
  ops[1] = {"aten::mm", "", "mm", -1, 1};
  expect_error(v2_prefix(0, ops), "f: corrupt chunk 3 (OP_TABLE) at offset " + ops_off +
                                      ": op 1 has arg_count -1 and tensor_args 1");
  // The op count check uses the version 2 entry size (20 bytes at least).
  expect_error(cat(encode_record_header(),
                   chunk_of(ChunkType::OP_TABLE, Bytes().u32(2).u64(0).u64(0).u64(0).u64(0).b)),
               "f: corrupt chunk 1 (OP_TABLE) at offset 16: op count 2 does not fit the payload");
  // payload_bytes is always 0 in a file.
  std::vector<gp_event> ev = make_events(4);
  ev[2].payload_bytes = 8;
  expect_error(cat(prefix, chunk_of(ChunkType::EVENTS, events_payload(ev))),
               "f: corrupt chunk 5 (EVENTS) at offset " + off +
                   ": event 2 has payload_bytes 8 (always 0 in a record file)");
}

TEST_F(RecordFileTest, CorruptShapesEntryShapesAndMemoryEventsAreRejected) {
  std::string err;
  const std::vector<uint8_t> prefix = v2_prefix(3);
  const std::string at5 = " at offset " + std::to_string(prefix.size()) + ": ";
  auto shapes_file = [&](const Bytes& payload) {
    return cat(prefix, chunk_of(ChunkType::SHAPES, payload));
  };
  // SHAPES: ndim -1..64, counts that fit, exact length.
  expect_error(
      shapes_file(Bytes().u32(1).u32(1).i32(-2)),
      "f: corrupt chunk 5 (SHAPES)" + at5 + "shape 0: argument 0 has ndim -2 (expected -1..64)");
  expect_error(
      shapes_file(Bytes().u32(2).u32(0).u32(2).i32(-1).i32(65)),
      "f: corrupt chunk 5 (SHAPES)" + at5 + "shape 1: argument 1 has ndim 65 (expected -1..64)");
  expect_error(shapes_file(Bytes().u32(5).u32(0)),
               "f: corrupt chunk 5 (SHAPES)" + at5 + "shape count 5 does not fit the payload");
  expect_error(
      shapes_file(Bytes().u32(0xffffffff)),
      "f: corrupt chunk 5 (SHAPES)" + at5 + "shape count 4294967295 does not fit the payload");
  expect_error(
      shapes_file(Bytes().u32(1).u32(3).i32(-1)),
      "f: corrupt chunk 5 (SHAPES)" + at5 + "shape 0: argument count 3 does not fit the payload");
  expect_error(shapes_file(Bytes().u32(1).u32(1).i32(2).i64(5)),
               "f: corrupt chunk 5 (SHAPES)" + at5 + "payload too short");
  expect_error(shapes_file(Bytes().u32(1).u32(1).i32(64)),
               "f: corrupt chunk 5 (SHAPES)" + at5 + "payload too short");
  expect_error(shapes_file(Bytes().u32(2).u32(0)),
               "f: corrupt chunk 5 (SHAPES)" + at5 + "shape count 2 does not fit the payload");
  expect_error(shapes_file(Bytes().u32(2).u32(1).i32(-1)),
               "f: corrupt chunk 5 (SHAPES)" + at5 + "payload too short");
  expect_error(shapes_file(Bytes().u32(1).u32(0).u32(0)),
               "f: corrupt chunk 5 (SHAPES)" + at5 + "4 unexpected trailing payload bytes");
  expect_error(shapes_file(Bytes()), "f: corrupt chunk 5 (SHAPES)" + at5 + "payload too short");
  // ENTRY_SHAPES: a defined shape, an earlier ENTRY event, increasing indices.
  std::vector<gp_event> ev = make_events(6);  // entries at 0 and 3
  std::vector<uint8_t> base = cat(shapes_file(shapes_payload({{Dims{1}}})),
                                  chunk_of(ChunkType::EVENTS, events_payload(ev)));
  const std::string at7 =
      "f: corrupt chunk 7 (ENTRY_SHAPES) at offset " + std::to_string(base.size()) + ": ";
  auto entries_file = [&](const std::vector<EntryShapes>& e) {
    return cat(base, chunk_of(ChunkType::ENTRY_SHAPES, entries_payload(e)));
  };
  ASSERT_TRUE(noting_error(read_recording_bytes(entries_file({{0, 0}, {3, 0}}), "f"), &err)) << err;
  expect_error(entries_file({{0, 1}}),
               at7 + "entry shape 0 has shape_id 1, but 1 shapes are defined");
  expect_error(entries_file({{0, 0}, {1, 0}}),
               at7 + "entry shape 1 has event_index 1, which is not an ENTRY event (kind 2)");
  expect_error(entries_file({{2, 0}}),
               at7 + "entry shape 0 has event_index 2, which is not an ENTRY event (kind 3)");
  expect_error(entries_file({{6, 0}}),
               at7 + "entry shape 0 has event_index 6, but only 6 events precede it");
  expect_error(
      entries_file({{UINT64_MAX, 0}}),
      at7 + "entry shape 0 has event_index 18446744073709551615, but only 6 events precede it");
  expect_error(entries_file({{3, 0}, {0, 0}}),
               at7 + "entry shape 1 has event_index 0, not above the previous 3");
  expect_error(entries_file({{3, 0}, {3, 0}}),
               at7 + "entry shape 1 has event_index 3, not above the previous 3");
  // ... across chunks too.
  std::vector<uint8_t> two = entries_file({{3, 0}});
  expect_error(cat(two, chunk_of(ChunkType::ENTRY_SHAPES, entries_payload({{0, 0}}))),
               "f: corrupt chunk 8 (ENTRY_SHAPES) at offset " + std::to_string(two.size()) +
                   ": entry shape 0 has event_index 0, not above the previous 3");
  // A shape defined only after the entry that uses it.
  std::vector<uint8_t> late = cat(prefix, chunk_of(ChunkType::EVENTS, events_payload(ev)));
  expect_error(cat(late, chunk_of(ChunkType::ENTRY_SHAPES, entries_payload({{0, 0}}))),
               "f: corrupt chunk 6 (ENTRY_SHAPES) at offset " + std::to_string(late.size()) +
                   ": entry shape 0 has shape_id 0, but 0 shapes are defined");
  expect_error(cat(base, chunk_of(ChunkType::ENTRY_SHAPES, std::vector<uint8_t>(13, 0))),
               at7 + "payload of 13 bytes is not a whole number of 12-byte entry shapes");
  // MEM_EVENTS: whole 40-byte events of a known kind.
  std::vector<gp_mem_event> mem = make_mem_events(3);
  expect_error(cat(prefix, chunk_of(ChunkType::MEM_EVENTS, std::vector<uint8_t>(41, 0))),
               "f: corrupt chunk 5 (MEM_EVENTS)" + at5 +
                   "payload of 41 bytes is not a whole number of 40-byte memory events");
  mem[1].kind = 4;
  expect_error(cat(prefix, chunk_of(ChunkType::MEM_EVENTS, mem_payload(mem))),
               "f: corrupt chunk 5 (MEM_EVENTS)" + at5 + "memory event 1 has unknown kind 4");
  mem[1].kind = 0;
  expect_error(cat(prefix, chunk_of(ChunkType::MEM_EVENTS, mem_payload(mem))),
               "f: corrupt chunk 5 (MEM_EVENTS)" + at5 + "memory event 1 has unknown kind 0");
  mem[1].kind = GP_MEM_CPU_FREE;
  auto ok = noting_error(read_recording_bytes(cat(prefix, chunk_of(ChunkType::MEM_EVENTS, mem_payload(mem))), "f"), &err);
  ASSERT_TRUE(ok.has_value()) << err;
  EXPECT_TRUE(same_mem_events(ok->mem_events, mem));
  // Empty data chunks are valid.
  ok = noting_error(read_recording_bytes(cat(cat(prefix, chunk_of(ChunkType::SHAPES, shapes_payload({}))),
                                             cat(chunk_of(ChunkType::ENTRY_SHAPES, std::vector<uint8_t>{}),
                                                 chunk_of(ChunkType::MEM_EVENTS, std::vector<uint8_t>{}))), "f"), &err);
  ASSERT_TRUE(ok.has_value()) << err;
}

TEST_F(RecordFileTest, WriterRefusesShapesAndMemoryEventsTheReaderWouldReject) {
  std::string err;
  RecordWriter w = must_create();
  std::vector<OpInfo> ops = sample_ops();
  ops[2].tensor_args = 1;  // with arg_count -1
  EXPECT_FALSE(succeeded(w.begin(sample_process(), sample_clock(), ops, {true, false}), &err));
  EXPECT_EQ(err, path_ + ": not recording op table: op 2 has arg_count -1 and tensor_args 1");
  EXPECT_EQ(w.bytes_written(), 0u);
  ASSERT_TRUE(succeeded(w.begin(sample_process(), sample_clock(), sample_ops(), {true, false}), &err)) << err;
  std::vector<gp_event> ev = make_events(6);  // entries at 0 and 3
  ASSERT_TRUE(succeeded(w.append_events(ev.data(), ev.size()), &err)) << err;
  const InputShapes ok = {Dims{4}, std::nullopt};
  const std::string p = path_ + ": not recording the shapes of event ";
  EXPECT_FALSE(succeeded(w.append_shapes(1, ok), &err));
  EXPECT_EQ(err, p + "1: it is not an ENTRY event");
  EXPECT_FALSE(succeeded(w.append_shapes(6, ok), &err));
  EXPECT_EQ(err, p + "6: only 6 events were appended");
  EXPECT_FALSE(succeeded(w.append_shapes(3, {Dims(65, 1)}), &err));
  EXPECT_EQ(err, p + "3: argument 0 has 65 dims (at most 64)");
  ASSERT_TRUE(succeeded(w.append_shapes(3, ok), &err)) << err;
  EXPECT_FALSE(succeeded(w.append_shapes(0, ok), &err));
  EXPECT_EQ(err, p + "0: not above the previous entry shape's event 3");
  EXPECT_FALSE(succeeded(w.append_shapes(3, ok), &err));
  EXPECT_EQ(err, p + "3: not above the previous entry shape's event 3");
  std::vector<gp_mem_event> mem = make_mem_events(2);
  EXPECT_FALSE(succeeded(w.append_mem_events(mem.data(), mem.size()), &err));
  EXPECT_EQ(err, path_ +
                     ": not recording memory events: the recording was begun without the "
                     "memory option");
  EXPECT_EQ(w.shapes_defined(), 1u);
  ASSERT_TRUE(succeeded(w.finish(sample_stats(), 1), &err)) << err;  // still usable
  auto rec = noting_error(read_recording(path_), &err);
  ASSERT_TRUE(rec.has_value()) << err;
  EXPECT_EQ(rec->shapes, std::vector<InputShapes>{ok});
  EXPECT_EQ(rec->entry_shapes, (std::vector<EntryShapes>{{3, 0}}));

  std::string path2 = dir_ + "/mem.gpuprof";
  auto w2 = noting_error(RecordWriter::create(path2), &err);
  ASSERT_TRUE(w2.has_value()) << err;
  ASSERT_TRUE(succeeded(w2->begin(sample_process(), sample_clock(), sample_ops(), {false, true}), &err));
  ASSERT_TRUE(succeeded(w2->append_events(ev.data(), ev.size()), &err)) << err;
  EXPECT_FALSE(succeeded(w2->append_shapes(0, ok), &err));
  EXPECT_EQ(err, path2 +
                     ": not recording the shapes of event 0: the recording was begun without "
                     "the shapes option");
  mem[1].kind = 9;
  EXPECT_FALSE(succeeded(w2->append_mem_events(mem.data(), mem.size()), &err));
  EXPECT_EQ(err, path2 + ": not recording memory event 1 of the batch: unknown kind 9");
  mem[1].kind = GP_MEM_DEVICE;
  ASSERT_TRUE(succeeded(w2->append_mem_events(mem.data(), mem.size()), &err)) << err;
  ASSERT_TRUE(succeeded(w2->finish(sample_stats(), 1), &err)) << err;
  rec = noting_error(read_recording(path2), &err);
  ASSERT_TRUE(rec.has_value()) << err;
  EXPECT_TRUE(same_mem_events(rec->mem_events, mem));
  EXPECT_TRUE(rec->shapes.empty());
}

// Cut a recording with every kind of chunk at every byte: an error before the
// mandatory chunks are complete, else exactly the data of the complete
// chunks, never an entry shape without its event or its shape.
TEST_F(RecordFileTest, EveryTruncationOfARecordingWithShapesAndMemoryEvents) {
  std::string err;
  RecordWriter w = must_create();
  ASSERT_TRUE(succeeded(w.begin(sample_process(), sample_clock(), sample_ops(), {true, true}), &err)) << err;
  const uint64_t mandatory_end = w.bytes_written();
  uint64_t next = 0;
  for (uint32_t round = 0; round < 4; ++round) {
    std::vector<gp_event> ev = make_events(6, round);  // entries at 0, 3 of each batch
    ASSERT_TRUE(succeeded(w.append_events(ev.data(), ev.size()), &err)) << err;
    if (round != 2) {  // round 2's entries get their shapes in round 3
      for (; next < w.events_appended(); next += 3)
        ASSERT_TRUE(succeeded(w.append_shapes(next, {Dims{next % 2 ? 1 : 2}, std::nullopt}), &err)) << err;
    }
    std::vector<gp_mem_event> mem = make_mem_events(2 + round, round);
    ASSERT_TRUE(succeeded(w.append_mem_events(mem.data(), mem.size()), &err)) << err;
    ASSERT_TRUE(succeeded(w.flush(), &err)) << err;
  }
  ASSERT_TRUE(succeeded(w.finish(sample_stats(), 5), &err)) << err;
  const std::vector<uint8_t> file = read_bytes(path_);
  auto full = noting_error(read_recording_bytes(file, "f"), &err);
  ASSERT_TRUE(full.has_value()) << err;
  ASSERT_EQ(full->entry_shapes.size(), 8u);
  ASSERT_EQ(full->shapes.size(), 2u);

  // Every kind of chunk this test is about is in the file, so the cuts tear each.
  const std::vector<ChunkHeader> chunks = chunk_headers(file, mandatory_end);
  for (ChunkType type : {ChunkType::SHAPES, ChunkType::ENTRY_SHAPES, ChunkType::MEM_EVENTS}) {
    EXPECT_TRUE(std::ranges::any_of(chunks, [&](const ChunkHeader& c) { return c.type == type; }))
        << "no chunk of type " << static_cast<uint32_t>(type);
  }
  expect_every_cut_before_the_mandatory_end_fails(file, mandatory_end);
  expect_every_cut_reads_the_complete_chunks(
      file, boundaries(file, mandatory_end), [&](const Recording& rec, const Boundary& last) {
        EXPECT_EQ(rec.options, (RecordOptions{true, true}));
        EXPECT_TRUE(same_events(rec.events, first_n(full->events, last.held(ChunkType::EVENTS))));
        EXPECT_EQ(rec.shapes, first_n(full->shapes, last.held(ChunkType::SHAPES)));
        EXPECT_EQ(rec.entry_shapes,
                  first_n(full->entry_shapes, last.held(ChunkType::ENTRY_SHAPES)));
        EXPECT_TRUE(same_mem_events(rec.mem_events,
                                    first_n(full->mem_events, last.held(ChunkType::MEM_EVENTS))));
      });
  // And any single flipped byte: a clear error or an incomplete recording.
  expect_every_flipped_byte_is_caught(file);
}

// A real SIGKILL with shapes and memory events pending: what was flushed is
// readable, entry shapes included.
TEST_F(RecordFileTest, WriterKilledBySigkillKeepsFlushedShapesAndMemoryEvents) {
  std::vector<gp_event> ev = make_events(9, 1);  // entries at 0, 3, 6
  std::vector<gp_mem_event> mem = make_mem_events(5, 1);
  const InputShapes s0 = {Dims{8, 8}}, s1 = {std::nullopt};
  ASSERT_NO_FATAL_FAILURE(write_then_sigkill({true, true}, [&](RecordWriter& w, std::string* e) {
    if (!succeeded(w.append_events(ev.data(), 6), e) || !succeeded(w.append_shapes(0, s0), e) ||
        !succeeded(w.append_mem_events(mem.data(), 3), e) || !succeeded(w.flush(), e))
      return false;
    if (!succeeded(w.append_shapes(3, s1), e) || !succeeded(w.flush(), e)) return false;  // after its event's chunk
    return succeeded(w.append_events(ev.data() + 6, 3), e) && succeeded(w.append_shapes(6, s0), e) &&
           succeeded(w.append_mem_events(mem.data() + 3, 2), e);  // buffered only
  }));
  std::string err;
  auto rec = noting_error(read_recording(path_), &err);
  ASSERT_TRUE(rec.has_value()) << err;
  EXPECT_FALSE(rec->complete);
  EXPECT_TRUE(same_events(rec->events, first_n(ev, 6)));
  EXPECT_EQ(rec->shapes, (std::vector<InputShapes>{s0, s1}));
  EXPECT_EQ(rec->entry_shapes, (std::vector<EntryShapes>{{0, 0}, {3, 1}}));
  EXPECT_TRUE(same_mem_events(rec->mem_events, first_n(mem, 3)));
}

// ---- CPU samples (record -F HZ, --no-ops) ----

RecordOptions sampled_options(uint32_t hz = 997, bool ops = true) {
  RecordOptions o;
  o.sample_hz = hz;
  o.ops = ops;
  return o;
}
// A version 2 file's header and mandatory chunks with the sampled OPTIONS
// layout (flags | sampled, then sample_hz), by hand.
std::vector<uint8_t> v2_sampled_prefix(uint32_t flags, uint32_t hz, uint32_t version = 2) {
  return cat(v2_prefix_without_options(sample_ops(), version),
             chunk_of(ChunkType::OPTIONS, Bytes().u32(flags | 4).u32(hz)));
}
std::vector<uint8_t> written_sampled_prefix(uint32_t flags, uint32_t hz) {
  return v2_sampled_prefix(flags, hz, GP_RECORD_FORMAT_VERSION);
}
Bytes frames_payload(uint32_t first_id, const std::vector<std::string>& names) {
  Bytes b;
  b.u32(first_id).u32(static_cast<uint32_t>(names.size()));
  for (const std::string& n : names) b.str(n);
  return b;
}
Bytes samples_payload(const std::vector<CpuSample>& samples) {
  Bytes b;
  for (const CpuSample& s : samples)
    b.u64(s.ts_ns).u32(s.tid).u32(s.frame_id).u32(s.python_stack).u32(s.in_kernel);
  return b;
}
// A SAMPLE_STACKS payload: stacks numbered from first_id.
Bytes stacks_payload(uint32_t first_id, const std::vector<std::vector<uint32_t>>& stacks) {
  Bytes b;
  b.u32(first_id).u32(static_cast<uint32_t>(stacks.size()));
  for (const auto& st : stacks) {
    b.u32(static_cast<uint32_t>(st.size()));
    for (uint32_t f : st) b.u32(f);
  }
  return b;
}
// n samples over `frames` frames, distinct per `seed`, some in the kernel.
std::vector<CpuSample> make_samples(size_t n, uint32_t frames, uint32_t seed = 0) {
  std::vector<CpuSample> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = {7'000'000'000ULL + seed * 1000003ULL + i * 1001, 100 + seed + static_cast<uint32_t>(i % 3),
            static_cast<uint32_t>((i * 7 + seed) % frames), i % 5 == 1};
  return v;
}

TEST_F(RecordFileTest, SampledWriterOutputMatchesTheDocumentedLayout) {
  EXPECT_EQ(mandatory_prefix(sampled_options(99)), written_sampled_prefix(0, 99));
  EXPECT_EQ(mandatory_prefix(sampled_options(99, false)), written_sampled_prefix(8, 99));
  RecordOptions all = sampled_options(4000, false);
  all.shapes = all.memory = true;
  EXPECT_EQ(mandatory_prefix(all), written_sampled_prefix(3 | 8, 4000));
  // --no-ops without sampling: the 4-byte form.
  RecordOptions no_ops;
  no_ops.ops = false;
  EXPECT_EQ(mandatory_prefix(no_ops), written_prefix(8));
  // A flush: ..., MEM_EVENTS, SAMPLE_FRAMES, SAMPLES.
  std::string err;
  RecordOptions o = sampled_options(99);
  o.memory = true;
  RecordWriter w = must_create();
  ASSERT_TRUE(succeeded(w.begin(sample_process(), sample_clock(), sample_ops(), o), &err)) << err;
  ASSERT_TRUE(succeeded(w.add_sample_frame("libtorch_cpu.so!at::native::add"), &err)) << err;
  ASSERT_TRUE(succeeded(w.add_sample_frame(""), &err)) << err;
  EXPECT_EQ(w.sample_frames_defined(), 2u);
  std::vector<CpuSample> samples = {{10, 7, 1, true}, {20, 8, 0, false}};
  ASSERT_TRUE(succeeded(w.append_samples(samples.data(), samples.size()), &err)) << err;
  std::vector<gp_mem_event> mem = make_mem_events(2);
  ASSERT_TRUE(succeeded(w.append_mem_events(mem.data(), mem.size()), &err)) << err;
  std::vector<gp_event> ev = make_events(3);
  ASSERT_TRUE(succeeded(w.append_events(ev.data(), ev.size()), &err)) << err;
  ASSERT_TRUE(succeeded(w.flush(), &err)) << err;
  std::vector<uint8_t> expect = written_sampled_prefix(2, 99);
  expect = cat(expect, written_events(ev));
  expect = cat(expect, written_of(ChunkType::MEM_EVENTS, mem_payload(mem)));
  expect = cat(expect, written_of(ChunkType::SAMPLE_FRAMES,
                                frames_payload(0, {"libtorch_cpu.so!at::native::add", ""})));
  expect = cat(expect, written_of(ChunkType::SAMPLES, samples_payload(samples)));
  // Frames only: the next ids.
  ASSERT_TRUE(succeeded(w.add_sample_frame("[unknown]"), &err)) << err;
  ASSERT_TRUE(succeeded(w.flush(), &err)) << err;
  expect = cat(expect, written_of(ChunkType::SAMPLE_FRAMES, frames_payload(2, {"[unknown]"})));
  EXPECT_EQ(read_bytes(path_), expect);
  EXPECT_EQ(w.bytes_written(), expect.size());
  EXPECT_EQ(w.samples_written(), 2u);
  auto rec = noting_error(read_recording_bytes(expect, "f"), &err);
  ASSERT_TRUE(rec.has_value()) << err;
  EXPECT_EQ(rec->samples, samples);
  EXPECT_EQ(rec->sample_frames,
            (std::vector<std::string>{"libtorch_cpu.so!at::native::add", "", "[unknown]"}));
  EXPECT_EQ(rec->options, o);
}

TEST_F(RecordFileTest, RoundTripsCpuSamplesAcrossFlushesAndChunks) {
  std::string err;
  RecordWriter w = must_create();
  ASSERT_TRUE(succeeded(w.begin(sample_process(), sample_clock(), sample_ops(), sampled_options(997)), &err))
      << err;
  std::vector<std::string> frames;
  std::vector<CpuSample> all;
  auto define = [&](uint32_t n) {
    for (uint32_t i = 0; i < n; ++i) {
      EXPECT_EQ(w.sample_frames_defined(), frames.size());
      frames.push_back("libfoo.so!frame_" + std::to_string(frames.size()));
      ASSERT_TRUE(succeeded(w.add_sample_frame(frames.back()), &err)) << err;
    }
  };
  auto samples = [&](size_t n, uint32_t seed) {
    std::vector<CpuSample> s = make_samples(n, static_cast<uint32_t>(frames.size()), seed);
    ASSERT_TRUE(succeeded(w.append_samples(s.data(), s.size()), &err)) << err;
    all.insert(all.end(), s.begin(), s.end());
  };
  std::vector<gp_event> ev = make_events(6);
  ASSERT_TRUE(succeeded(w.append_events(ev.data(), ev.size()), &err)) << err;
  define(3);
  samples(10, 0);
  ASSERT_TRUE(succeeded(w.flush(), &err)) << err;
  EXPECT_EQ(w.samples_written(), 10u);
  define(2);  // ids 3, 4: defined in a later flush
  samples(5, 1);
  ASSERT_TRUE(succeeded(w.flush(), &err)) << err;
  ASSERT_TRUE(succeeded(w.append_samples(nullptr, 0), &err)) << err;
  ASSERT_TRUE(succeeded(w.flush(), &err)) << err;  // nothing pending: no chunk
  // 8000 samples: two full chunks go out at once (with the pending frames
  // before them), 8000 - 2 * 2730 stay buffered.
  define(4);
  const uint64_t before = w.bytes_written();
  samples(8000, 2);
  const size_t frames_chunk = kRecordChunkHeaderSize + 8 + 4 * (4 + 17);  // "libfoo.so!frame_5"
  EXPECT_EQ(w.bytes_written(),
            before + frames_chunk + 2 * (kRecordChunkHeaderSize + kRecordSamplesChunkBytes));
  EXPECT_EQ(w.samples_written(), 15u + 2 * 2730);
  // Enough frame definitions to go out on their own (64 KiB).
  define(4000);
  samples(100, 3);
  EXPECT_EQ(w.sample_frames_defined(), frames.size());
  RecordStats stats = sample_stats();
  ASSERT_TRUE(succeeded(w.finish(stats, 11), &err)) << err;
  EXPECT_EQ(w.samples_written(), all.size());

  auto rec = noting_error(read_recording(path_), &err);
  ASSERT_TRUE(rec.has_value()) << err;
  EXPECT_TRUE(rec->complete);
  EXPECT_EQ(rec->options, sampled_options(997));
  EXPECT_EQ(rec->options.sample_hz, 997u);
  EXPECT_TRUE(rec->options.ops);
  EXPECT_TRUE(same_events(rec->events, ev));
  EXPECT_EQ(rec->sample_frames, frames);
  ASSERT_EQ(rec->samples.size(), all.size());
  EXPECT_EQ(rec->samples, all);
  size_t kernel = 0;
  for (const CpuSample& s : rec->samples) kernel += s.in_kernel;
  EXPECT_GT(kernel, 0u);
  EXPECT_LT(kernel, all.size());
  EXPECT_EQ(rec->stats, stats);
  EXPECT_EQ(rec->stats.samples_lost, 19u);
}

TEST_F(RecordFileTest, RecordingsWithoutSamplingReadAsNotSampled) {
  std::string err;
  {
    RecordWriter w = must_create();
    ASSERT_TRUE(succeeded(w.begin(sample_process(), sample_clock(), sample_ops(), {true, true}), &err)) << err;
    ASSERT_TRUE(succeeded(w.append_samples(nullptr, 0), &err)) << err;  // an empty batch is fine
    ASSERT_TRUE(succeeded(w.finish(sample_stats(), 1), &err)) << err;
  }
  auto rec = noting_error(read_recording(path_), &err);
  ASSERT_TRUE(rec.has_value()) << err;
  EXPECT_EQ(rec->options.sample_hz, 0u);
  EXPECT_TRUE(rec->options.ops);
  EXPECT_TRUE(rec->samples.empty() && rec->sample_frames.empty());
  // The 4-byte OPTIONS of files written before sampling existed.
  for (uint32_t flags : {0u, 1u, 2u, 3u}) {
    auto old = noting_error(read_recording_bytes(v2_prefix(flags), "f"), &err);
    ASSERT_TRUE(old.has_value()) << err;
    EXPECT_EQ(old->options, (RecordOptions{(flags & 1) != 0, (flags & 2) != 0, 0, true}));
  }
}

TEST_F(RecordFileTest, NoOpsRecordingsRoundTrip) {
  std::string err;
  RecordWriter w = must_create();
  ASSERT_TRUE(succeeded(w.begin(sample_process(), sample_clock(), {}, sampled_options(49, false)), &err))
      << err;
  std::vector<gp_event> ev = make_events(1);
  ev[0].kind = GP_EV_CATCH;  // valid without ops, but there are no op events at all
  EXPECT_FALSE(succeeded(w.append_events(ev.data(), ev.size()), &err));
  EXPECT_EQ(err,
            path_ + ": not recording events: the recording was begun without ops (no-ops option)");
  ASSERT_TRUE(succeeded(w.append_events(ev.data(), 0), &err)) << err;
  ASSERT_TRUE(succeeded(w.add_sample_frame("a"), &err)) << err;
  std::vector<CpuSample> s = {{1, 2, 0, true}};
  ASSERT_TRUE(succeeded(w.append_samples(s.data(), s.size()), &err)) << err;
  ASSERT_TRUE(succeeded(w.finish(sample_stats(), 3), &err)) << err;
  auto rec = noting_error(read_recording(path_), &err);
  ASSERT_TRUE(rec.has_value()) << err;
  EXPECT_FALSE(rec->options.ops);
  EXPECT_EQ(rec->options, sampled_options(49, false));
  EXPECT_TRUE(rec->events.empty() && rec->ops.empty());
  EXPECT_EQ(rec->samples, s);
  EXPECT_EQ(rec->sample_frames, std::vector<std::string>{"a"});
  // An EVENTS chunk in a no-ops recording, even an empty one, is corrupt.
  std::vector<uint8_t> prefix = v2_sampled_prefix(8, 49);
  EXPECT_FALSE(
      noting_error(read_recording_bytes(cat(prefix, chunk_of(ChunkType::EVENTS, std::vector<uint8_t>{})),
                                        "f"), &err));
  EXPECT_EQ(err, "f: corrupt chunk 5 (EVENTS) at offset " + std::to_string(prefix.size()) +
                     ": EVENTS chunk in a recording without ops (the no-ops option)");
  // --no-ops without sampling is stored too (bit 3 alone).
  auto bare = noting_error(read_recording_bytes(v2_prefix(8), "f"), &err);
  ASSERT_TRUE(bare.has_value()) << err;
  EXPECT_FALSE(bare->options.ops);
  EXPECT_EQ(bare->options.sample_hz, 0u);
}

TEST_F(RecordFileTest, CorruptSampleFramesAndSamplesAreRejected) {
  std::string err;
  // OPTIONS: the sampled flag needs a non-zero sample_hz after the flags.
  const std::vector<uint8_t> no_options = v2_prefix_without_options();
  const std::string opt = "f: corrupt chunk 4 (OPTIONS) at offset " +
                          std::to_string(no_options.size()) + ": ";
  expect_error(cat(no_options, chunk_of(ChunkType::OPTIONS, Bytes().u32(4))),
               opt + "payload too short");
  expect_error(cat(no_options, chunk_of(ChunkType::OPTIONS, Bytes().u32(4).u32(0))),
               opt + "sampled option with sample_hz 0");
  expect_error(cat(no_options, chunk_of(ChunkType::OPTIONS, Bytes().u32(4).u32(99).u32(0))),
               opt + "4 unexpected trailing payload bytes");
  expect_error(cat(no_options, chunk_of(ChunkType::OPTIONS, Bytes().u32(8).u32(99))),
               opt + "4 unexpected trailing payload bytes");  // no sample_hz without bit 2
  expect_error(cat(no_options, chunk_of(ChunkType::OPTIONS, Bytes().u32(0x24).u32(99))),
               opt + "unknown option flags 0x20");

  const std::vector<uint8_t> prefix = v2_sampled_prefix(0, 99);
  const std::string at5 = " at offset " + std::to_string(prefix.size()) + ": ";
  // Both chunks need the sampled option.
  const std::vector<uint8_t> unsampled = v2_prefix(3);
  const std::string u5 = " at offset " + std::to_string(unsampled.size()) + ": ";
  expect_error(cat(unsampled, chunk_of(ChunkType::SAMPLE_FRAMES, frames_payload(0, {"a"}))),
               "f: corrupt chunk 5 (SAMPLE_FRAMES)" + u5 +
                   "SAMPLE_FRAMES chunk in a recording without CPU sampling (sample_hz 0) or "
                   "the with_stack option");
  expect_error(cat(unsampled, chunk_of(ChunkType::SAMPLES, std::vector<uint8_t>{})),
               "f: corrupt chunk 5 (SAMPLES)" + u5 +
                   "SAMPLES chunk in a recording without CPU sampling (sample_hz 0)");
  // ... and come after the mandatory chunks, before STATS.
  expect_error(cat(no_options, chunk_of(ChunkType::SAMPLES, std::vector<uint8_t>{})),
               "f: corrupt chunk 4 (SAMPLES) at offset " + std::to_string(no_options.size()) +
                   ": SAMPLES chunk before the PROCESS, CLOCK, OP_TABLE and OPTIONS chunks");
  const std::vector<uint8_t> with_stats =
      cat(prefix, chunk_of(ChunkType::STATS, zero_stats_payload()));
  expect_error(cat(with_stats, chunk_of(ChunkType::SAMPLE_FRAMES, frames_payload(0, {}))),
               "f: corrupt chunk 6 (SAMPLE_FRAMES) at offset " +
                   std::to_string(with_stats.size()) +
                   ": SAMPLE_FRAMES chunk after the STATS chunk");
  // SAMPLE_FRAMES: sequential ids, a count that fits, exact length.
  auto frames_file = [&](const Bytes& payload) {
    return cat(prefix, chunk_of(ChunkType::SAMPLE_FRAMES, payload));
  };
  const std::string f5 = "f: corrupt chunk 5 (SAMPLE_FRAMES)" + at5;
  expect_error(frames_file(frames_payload(1, {"a"})), f5 + "first_id 1, but 0 frames are defined");
  std::vector<uint8_t> two = frames_file(frames_payload(0, {"a", "b"}));
  const std::string f6 = "f: corrupt chunk 6 (SAMPLE_FRAMES) at offset " +
                         std::to_string(two.size()) + ": ";
  expect_error(cat(two, chunk_of(ChunkType::SAMPLE_FRAMES, frames_payload(0, {"c"}))),
               f6 + "first_id 0, but 2 frames are defined");
  expect_error(cat(two, chunk_of(ChunkType::SAMPLE_FRAMES, frames_payload(3, {"c"}))),
               f6 + "first_id 3, but 2 frames are defined");
  ASSERT_TRUE(noting_error(read_recording_bytes(
      cat(two, chunk_of(ChunkType::SAMPLE_FRAMES, frames_payload(2, {"c"}))), "f"), &err))
      << err;
  expect_error(frames_file(Bytes().u32(0).u32(2).str("a")),
               f5 + "frame count 2 does not fit the payload");
  expect_error(frames_file(Bytes().u32(0).u32(0xffffffff)),
               f5 + "frame count 4294967295 does not fit the payload");
  expect_error(frames_file(Bytes().u32(0).u32(2).u32(1).u32(0)), f5 + "payload too short");
  expect_error(frames_file(Bytes().u32(0).u32(1).u32(5).u32(0)), f5 + "payload too short");
  expect_error(frames_file(Bytes().u32(0)), f5 + "payload too short");
  expect_error(frames_file(frames_payload(0, {"a"}).u32(0)),
               f5 + "4 unexpected trailing payload bytes");
  // SAMPLES: whole 24-byte samples naming defined frames, known flags.
  const std::string s6 =
      "f: corrupt chunk 6 (SAMPLES) at offset " + std::to_string(two.size()) + ": ";
  auto samples_file = [&](const std::vector<uint8_t>& payload) {
    return cat(two, chunk_of(ChunkType::SAMPLES, payload));
  };
  auto ok = noting_error(read_recording_bytes(samples_file(samples_payload({{1, 2, 1, true}, {3, 4, 0, false}}).b), "f"), &err);
  ASSERT_TRUE(ok.has_value()) << err;
  EXPECT_EQ(ok->samples, (std::vector<CpuSample>{{1, 2, 1, true}, {3, 4, 0, false}}));
  expect_error(samples_file(samples_payload({{1, 2, 1, false}, {3, 4, 2, false}}).b),
               s6 + "sample 1 has frame_id 2, but 2 frames are defined");
  expect_error(samples_file(samples_payload({{1, 2, UINT32_MAX, false}}).b),
               s6 + "sample 0 has frame_id 4294967295, but 2 frames are defined");
  expect_error(cat(prefix, chunk_of(ChunkType::SAMPLES, samples_payload({{1, 2, 0, false}}))),
               "f: corrupt chunk 5 (SAMPLES)" + at5 + "sample 0 has frame_id 0, but 0 frames are defined");
  // A frame defined only after the sample that names it.
  std::vector<uint8_t> late = cat(prefix, chunk_of(ChunkType::SAMPLES, samples_payload({{1, 2, 0, false}})));
  EXPECT_FALSE(noting_error(read_recording_bytes(cat(late, chunk_of(ChunkType::SAMPLE_FRAMES, frames_payload(0, {"a"}))), "f"), &err));
  EXPECT_EQ(err, "f: corrupt chunk 5 (SAMPLES)" + at5 + "sample 0 has frame_id 0, but 0 frames are defined");
  expect_error(samples_file(Bytes().u64(1).u32(2).u32(0).u32(kNoPythonStack).u32(3).b),
               s6 + "sample 0 has unknown flags 0x2");
  expect_error(samples_file(std::vector<uint8_t>(25, 0)),
               s6 + "payload of 25 bytes is not a whole number of 24-byte samples");
  expect_error(samples_file(std::vector<uint8_t>(20, 0)),
               s6 + "payload of 20 bytes is not a whole number of 24-byte samples");
  // STATS without samples_lost (the earlier version 2 layout) is short.
  Bytes short_stats;
  short_stats.u64(0).u64(0).u32(0).u32(0).u32(0).str("").u64(0).u64(0).str("");
  expect_error(cat(prefix, chunk_of(ChunkType::STATS, short_stats)),
               "f: corrupt chunk 5 (STATS)" + at5 + "payload too short");
  // Empty chunks are valid.
  ASSERT_TRUE(noting_error(read_recording_bytes(cat(frames_file(frames_payload(0, {})),
                                                    chunk_of(ChunkType::SAMPLES, std::vector<uint8_t>{})), "f"), &err))
      << err;
}

TEST_F(RecordFileTest, WriterRefusesSamplesTheReaderWouldReject) {
  std::string err;
  RecordWriter w = must_create();
  CpuSample s{5, 6, 0, false};
  EXPECT_FALSE(succeeded(w.add_sample_frame("a"), &err));
  EXPECT_EQ(err, path_ + ": add_sample_frame called out of order (internal error)");
  EXPECT_FALSE(succeeded(w.append_samples(&s, 1), &err));
  EXPECT_EQ(err, path_ + ": append_samples called out of order (internal error)");
  ASSERT_TRUE(succeeded(w.begin(sample_process(), sample_clock(), sample_ops()), &err)) << err;
  EXPECT_FALSE(succeeded(w.add_sample_frame("a"), &err));
  EXPECT_EQ(err, path_ +
                     ": not defining sample frame 0: the recording was begun without CPU "
                     "sampling or the with_stack option");
  EXPECT_FALSE(succeeded(w.append_samples(&s, 1), &err));
  EXPECT_EQ(err, path_ + ": not recording samples: the recording was begun without CPU sampling");
  EXPECT_EQ(w.sample_frames_defined(), 0u);
  ASSERT_TRUE(succeeded(w.finish(sample_stats(), 1), &err)) << err;
  auto rec = noting_error(read_recording(path_), &err);
  ASSERT_TRUE(rec.has_value()) << err;
  EXPECT_TRUE(rec->samples.empty() && rec->sample_frames.empty());

  std::string path2 = dir_ + "/sampled.gpuprof";
  auto w2 = noting_error(RecordWriter::create(path2), &err);
  ASSERT_TRUE(w2.has_value()) << err;
  ASSERT_TRUE(succeeded(w2->begin(sample_process(), sample_clock(), sample_ops(), sampled_options()), &err));
  EXPECT_FALSE(succeeded(w2->append_samples(&s, 1), &err));
  EXPECT_EQ(err, path2 + ": not recording sample 0 of the batch: frame_id 0, but 0 frames are "
                         "defined");
  ASSERT_TRUE(succeeded(w2->add_sample_frame("a"), &err)) << err;
  ASSERT_TRUE(succeeded(w2->add_sample_frame("b"), &err)) << err;
  std::vector<CpuSample> batch = {{1, 1, 1, true}, {2, 1, 0, false}, {3, 1, 2, false}};
  EXPECT_FALSE(succeeded(w2->append_samples(batch.data(), batch.size()), &err));
  EXPECT_EQ(err, path2 + ": not recording sample 2 of the batch: frame_id 2, but 2 frames are "
                         "defined");
  ASSERT_TRUE(succeeded(w2->flush(), &err)) << err;  // nothing of the refused batch was buffered
  ASSERT_TRUE(succeeded(w2->add_sample_frame("c"), &err)) << err;
  ASSERT_TRUE(succeeded(w2->append_samples(batch.data(), batch.size()), &err)) << err;  // still usable
  ASSERT_TRUE(succeeded(w2->finish(sample_stats(), 1), &err)) << err;
  rec = noting_error(read_recording(path2), &err);
  ASSERT_TRUE(rec.has_value()) << err;
  EXPECT_EQ(rec->samples, batch);
  EXPECT_EQ(rec->sample_frames, (std::vector<std::string>{"a", "b", "c"}));
}

TEST_F(RecordFileTest, RoundTripsPythonStacksOfSamples) {
  std::string err;
  RecordWriter w = must_create();
  ASSERT_TRUE(succeeded(w.begin(sample_process(), sample_clock(), sample_ops(), sampled_options(99)), &err))
      << err;
  ASSERT_TRUE(succeeded(w.add_sample_frame("libtorch_cpu.so!at::native::add"), &err)) << err;
  ASSERT_TRUE(succeeded(w.add_sample_frame("train.py(42): main"), &err)) << err;
  ASSERT_TRUE(succeeded(w.add_sample_frame("model.py(7): forward"), &err)) << err;
  EXPECT_EQ(w.sample_stacks_defined(), 0u);
  ASSERT_TRUE(succeeded(w.add_sample_stack({1, 2}), &err)) << err;
  ASSERT_TRUE(succeeded(w.add_sample_stack({}), &err)) << err;  // an empty stack is a stack
  EXPECT_EQ(w.sample_stacks_defined(), 2u);
  std::vector<CpuSample> samples = {
      {10, 7, 0, false, 0}, {20, 7, 0, true, kNoPythonStack}, {30, 8, 2, false, 1}};
  ASSERT_TRUE(succeeded(w.append_samples(samples.data(), samples.size()), &err)) << err;
  ASSERT_TRUE(succeeded(w.flush(), &err)) << err;
  // A flush: SAMPLE_FRAMES, SAMPLE_STACKS, SAMPLES.
  std::vector<uint8_t> expect = written_sampled_prefix(4, 99);
  expect = cat(expect, written_of(ChunkType::SAMPLE_FRAMES,
                                frames_payload(0, {"libtorch_cpu.so!at::native::add",
                                                   "train.py(42): main", "model.py(7): forward"})));
  expect = cat(expect, written_of(ChunkType::SAMPLE_STACKS, stacks_payload(0, {{1, 2}, {}})));
  expect = cat(expect, written_of(ChunkType::SAMPLES, samples_payload(samples)));
  // Stacks only: the next ids.
  ASSERT_TRUE(succeeded(w.add_sample_stack({2, 2, 1}), &err)) << err;
  ASSERT_TRUE(succeeded(w.flush(), &err)) << err;
  expect = cat(expect, written_of(ChunkType::SAMPLE_STACKS, stacks_payload(2, {{2, 2, 1}})));
  EXPECT_EQ(read_bytes(path_), expect);
  EXPECT_EQ(w.bytes_written(), expect.size());
  // A full SAMPLES chunk written early takes the pending frames and stacks
  // with it, in order.
  ASSERT_TRUE(succeeded(w.add_sample_frame("x.py(1): <module>"), &err)) << err;
  ASSERT_TRUE(succeeded(w.add_sample_stack({3}), &err)) << err;
  std::vector<CpuSample> many = make_samples(2730, 4, 5);
  for (size_t i = 0; i < many.size(); ++i)
    many[i].python_stack = i % 4 == 0 ? kNoPythonStack : static_cast<uint32_t>(i % 4);
  const uint64_t before = w.bytes_written();
  ASSERT_TRUE(succeeded(w.append_samples(many.data(), many.size()), &err)) << err;
  const std::vector<uint8_t> file = read_bytes(path_);
  ASSERT_EQ(file.size(), w.bytes_written());
  std::vector<uint8_t> early(file.begin() + static_cast<ptrdiff_t>(before), file.end());
  std::vector<uint8_t> want = cat(chunk_of(ChunkType::SAMPLE_FRAMES, frames_payload(3, {"x.py(1): <module>"})),
                                  chunk_of(ChunkType::SAMPLE_STACKS, stacks_payload(3, {{3}})));
  want = cat(want, chunk_of(ChunkType::SAMPLES, samples_payload(many)));
  EXPECT_EQ(early, want);
  // Enough stack definitions to go out on their own (64 KiB), frames first.
  ASSERT_TRUE(succeeded(w.add_sample_frame("y.py(2): f"), &err)) << err;
  std::vector<std::vector<uint32_t>> stacks = {{1, 2}, {}, {2, 2, 1}, {3}};
  const uint64_t before_stacks = w.bytes_written();
  for (uint32_t i = 0; i < 2100; ++i) {  // 32 bytes each
    stacks.push_back({1, 2, 3, 4, i % 5, 0, 1});
    ASSERT_TRUE(succeeded(w.add_sample_stack(stacks.back()), &err)) << err;
  }
  EXPECT_GT(w.bytes_written(), before_stacks);
  EXPECT_EQ(w.sample_stacks_defined(), stacks.size());
  std::vector<CpuSample> last = {{99, 9, 4, false, 2103}};
  ASSERT_TRUE(succeeded(w.append_samples(last.data(), last.size()), &err)) << err;
  ASSERT_TRUE(succeeded(w.finish(sample_stats(), 100), &err)) << err;

  auto rec = noting_error(read_recording(path_), &err);
  ASSERT_TRUE(rec.has_value()) << err;
  EXPECT_TRUE(rec->complete);
  EXPECT_EQ(rec->sample_stacks, stacks);
  std::vector<CpuSample> all = samples;
  all.insert(all.end(), many.begin(), many.end());
  all.insert(all.end(), last.begin(), last.end());
  EXPECT_EQ(rec->samples, all);
  EXPECT_EQ(rec->samples[1].python_stack, kNoPythonStack);
  EXPECT_EQ(rec->sample_frames.size(), 5u);
}

TEST_F(RecordFileTest, CorruptSampleStacksAreRejected) {
  std::string err;
  const std::vector<uint8_t> prefix = v2_sampled_prefix(0, 99);
  // Needs the sampled option, and comes after the mandatory chunks.
  const std::vector<uint8_t> unsampled = v2_prefix(3);
  expect_error(cat(unsampled, chunk_of(ChunkType::SAMPLE_STACKS, stacks_payload(0, {}))),
               "f: corrupt chunk 5 (SAMPLE_STACKS) at offset " + std::to_string(unsampled.size()) +
                   ": SAMPLE_STACKS chunk in a recording without CPU sampling (sample_hz 0) or "
                   "the with_stack option");
  const std::vector<uint8_t> no_options = v2_prefix_without_options();
  expect_error(cat(no_options, chunk_of(ChunkType::SAMPLE_STACKS, stacks_payload(0, {}))),
               "f: corrupt chunk 4 (SAMPLE_STACKS) at offset " +
                   std::to_string(no_options.size()) +
                   ": SAMPLE_STACKS chunk before the PROCESS, CLOCK, OP_TABLE and OPTIONS chunks");
  // Two frames defined.
  const std::vector<uint8_t> two =
      cat(prefix, chunk_of(ChunkType::SAMPLE_FRAMES, frames_payload(0, {"a", "b"})));
  auto stacks_file = [&](const Bytes& payload) {
    return cat(two, chunk_of(ChunkType::SAMPLE_STACKS, payload));
  };
  const std::string k6 =
      "f: corrupt chunk 6 (SAMPLE_STACKS) at offset " + std::to_string(two.size()) + ": ";
  auto ok = noting_error(read_recording_bytes(stacks_file(stacks_payload(0, {{0, 1}, {}, {1}})), "f"), &err);
  ASSERT_TRUE(ok.has_value()) << err;
  EXPECT_EQ(ok->sample_stacks, (std::vector<std::vector<uint32_t>>{{0, 1}, {}, {1}}));
  expect_error(stacks_file(stacks_payload(1, {{0}})), k6 + "first_id 1, but 0 stacks are defined");
  expect_error(stacks_file(stacks_payload(0, {{0}, {0, 2}})),
               k6 + "stack 1 has frame_id 2, but 2 frames are defined");
  expect_error(stacks_file(stacks_payload(0, {{UINT32_MAX}})),
               k6 + "stack 0 has frame_id 4294967295, but 2 frames are defined");
  // A stack naming a frame defined only after it.
  expect_error(cat(prefix, chunk_of(ChunkType::SAMPLE_STACKS, stacks_payload(0, {{0}}))),
               "f: corrupt chunk 5 (SAMPLE_STACKS) at offset " + std::to_string(prefix.size()) +
                   ": stack 0 has frame_id 0, but 0 frames are defined");
  expect_error(stacks_file(Bytes().u32(0).u32(2).u32(0)),
               k6 + "stack count 2 does not fit the payload");
  expect_error(stacks_file(Bytes().u32(0).u32(0xffffffff)),
               k6 + "stack count 4294967295 does not fit the payload");
  expect_error(stacks_file(Bytes().u32(0).u32(1).u32(3).u32(0)),
               k6 + "stack 0 has 3 frames: payload too short");
  expect_error(stacks_file(Bytes().u32(0).u32(1).u32(4097)),
               k6 + "stack 0 has 4097 frames (at most 4096)");
  expect_error(stacks_file(Bytes().u32(0)), k6 + "payload too short");
  expect_error(stacks_file(stacks_payload(0, {{0}}).u32(0)),
               k6 + "4 unexpected trailing payload bytes");
  // The deepest stack allowed.
  ASSERT_TRUE(noting_error(read_recording_bytes(
      stacks_file(stacks_payload(0, {std::vector<uint32_t>(kRecordMaxSampleStackDepth, 1)})),
      "f"), &err))
      << err;
  // Sequential ids across chunks.
  const std::vector<uint8_t> one = stacks_file(stacks_payload(0, {{1}}));
  const std::string k7 =
      "f: corrupt chunk 7 (SAMPLE_STACKS) at offset " + std::to_string(one.size()) + ": ";
  expect_error(cat(one, chunk_of(ChunkType::SAMPLE_STACKS, stacks_payload(0, {{1}}))),
               k7 + "first_id 0, but 1 stacks are defined");
  ASSERT_TRUE(noting_error(read_recording_bytes(
      cat(one, chunk_of(ChunkType::SAMPLE_STACKS, stacks_payload(1, {{0}}))), "f"), &err))
      << err;
  // SAMPLES: python_stack is kNoPythonStack or a stack defined before.
  const std::string s7 =
      "f: corrupt chunk 7 (SAMPLES) at offset " + std::to_string(one.size()) + ": ";
  auto samples_file = [&](const std::vector<CpuSample>& s) {
    return cat(one, chunk_of(ChunkType::SAMPLES, samples_payload(s)));
  };
  auto good = noting_error(read_recording_bytes(
      samples_file({{1, 2, 0, false, 0}, {2, 2, 1, true, kNoPythonStack}}), "f"), &err);
  ASSERT_TRUE(good.has_value()) << err;
  EXPECT_EQ(good->samples[0].python_stack, 0u);
  EXPECT_EQ(good->samples[1].python_stack, kNoPythonStack);
  expect_error(samples_file({{1, 2, 0, false, 0}, {2, 2, 0, false, 1}}),
               s7 + "sample 1 has python_stack 1, but 1 stacks are defined");
  expect_error(samples_file({{1, 2, 0, false, 0xfffffffe}}),
               s7 + "sample 0 has python_stack 4294967294, but 1 stacks are defined");
  // A stack defined only after the sample that names it.
  expect_error(cat(cat(two, chunk_of(ChunkType::SAMPLES, samples_payload({{1, 2, 0, false, 0}}))),
                   chunk_of(ChunkType::SAMPLE_STACKS, stacks_payload(0, {{0}}))),
               "f: corrupt chunk 6 (SAMPLES) at offset " + std::to_string(two.size()) +
                   ": sample 0 has python_stack 0, but 0 stacks are defined");
}

TEST_F(RecordFileTest, WriterRefusesSampleStacksTheReaderWouldReject) {
  std::string err;
  RecordWriter w = must_create();
  EXPECT_FALSE(succeeded(w.add_sample_stack({}), &err));
  EXPECT_EQ(err, path_ + ": add_sample_stack called out of order (internal error)");
  ASSERT_TRUE(succeeded(w.begin(sample_process(), sample_clock(), sample_ops()), &err)) << err;
  EXPECT_FALSE(succeeded(w.add_sample_stack({}), &err));
  EXPECT_EQ(err, path_ +
                     ": not defining sample stack 0: the recording was begun without CPU "
                     "sampling or the with_stack option");
  EXPECT_EQ(w.sample_stacks_defined(), 0u);

  std::string path2 = dir_ + "/stacks.gpuprof";
  auto w2 = noting_error(RecordWriter::create(path2), &err);
  ASSERT_TRUE(w2.has_value()) << err;
  ASSERT_TRUE(succeeded(w2->begin(sample_process(), sample_clock(), sample_ops(), sampled_options()), &err));
  EXPECT_FALSE(succeeded(w2->add_sample_stack({0}), &err));
  EXPECT_EQ(err, path2 + ": not defining sample stack 0: frame 0 is frame_id 0, but 0 frames are "
                         "defined");
  ASSERT_TRUE(succeeded(w2->add_sample_frame("a"), &err)) << err;
  ASSERT_TRUE(succeeded(w2->add_sample_frame("b"), &err)) << err;
  EXPECT_FALSE(succeeded(w2->add_sample_stack({0, 1, 2}), &err));
  EXPECT_EQ(err, path2 + ": not defining sample stack 0: frame 2 is frame_id 2, but 2 frames are "
                         "defined");
  EXPECT_FALSE(succeeded(w2->add_sample_stack(std::vector<uint32_t>(kRecordMaxSampleStackDepth + 1, 0)), &err));
  EXPECT_EQ(err, path2 + ": not defining sample stack 0: 4097 frames (at most 4096)");
  EXPECT_EQ(w2->sample_stacks_defined(), 0u);  // refusals change nothing
  ASSERT_TRUE(succeeded(w2->add_sample_stack(std::vector<uint32_t>(kRecordMaxSampleStackDepth, 1)), &err))
      << err;
  ASSERT_TRUE(succeeded(w2->add_sample_stack({1, 0}), &err)) << err;
  EXPECT_EQ(w2->sample_stacks_defined(), 2u);
  // Samples naming a stack not yet defined are refused whole.
  std::vector<CpuSample> batch = {
      {1, 1, 1, true, 0}, {2, 1, 0, false, kNoPythonStack}, {3, 1, 0, false, 2}};
  EXPECT_FALSE(succeeded(w2->append_samples(batch.data(), batch.size()), &err));
  EXPECT_EQ(err, path2 + ": not recording sample 2 of the batch: python_stack 2, but 2 stacks are "
                         "defined");
  ASSERT_TRUE(succeeded(w2->flush(), &err)) << err;  // nothing of the refused batch was buffered
  ASSERT_TRUE(succeeded(w2->add_sample_stack({0}), &err)) << err;
  ASSERT_TRUE(succeeded(w2->append_samples(batch.data(), batch.size()), &err)) << err;  // still usable
  ASSERT_TRUE(succeeded(w2->finish(sample_stats(), 1), &err)) << err;
  auto rec = noting_error(read_recording(path2), &err);
  ASSERT_TRUE(rec.has_value()) << err;
  EXPECT_EQ(rec->samples, batch);
  ASSERT_EQ(rec->sample_stacks.size(), 3u);
  EXPECT_EQ(rec->sample_stacks[0].size(), kRecordMaxSampleStackDepth);
  EXPECT_EQ(rec->sample_stacks[1], (std::vector<uint32_t>{1, 0}));
  EXPECT_EQ(rec->sample_stacks[2], (std::vector<uint32_t>{0}));
}

// Cut a sampled recording at every byte: exactly the frames and samples of
// the complete chunks, never a sample naming a missing frame; a torn SAMPLES
// chunk is reported and ignored.
TEST_F(RecordFileTest, EveryTruncationOfASampledRecording) {
  std::string err;
  RecordWriter w = must_create();
  ASSERT_TRUE(succeeded(w.begin(sample_process(), sample_clock(), sample_ops(), sampled_options()), &err))
      << err;
  const uint64_t mandatory_end = w.bytes_written();
  for (uint32_t round = 0; round < 4; ++round) {
    for (uint32_t i = 0; i < round + 1; ++i)
      ASSERT_TRUE(succeeded(w.add_sample_frame("f" + std::to_string(w.sample_frames_defined())), &err));
    const uint32_t top = w.sample_frames_defined() - 1;
    ASSERT_TRUE(succeeded(w.add_sample_stack({0, top}), &err)) << err;
    std::vector<CpuSample> s = make_samples(3 + round, w.sample_frames_defined(), round);
    for (size_t i = 0; i < s.size(); i += 2) s[i].python_stack = w.sample_stacks_defined() - 1;
    ASSERT_TRUE(succeeded(w.append_samples(s.data(), s.size()), &err)) << err;
    if (round != 1) {
      ASSERT_TRUE(succeeded(w.flush(), &err)) << err;
    }
  }
  ASSERT_TRUE(succeeded(w.finish(sample_stats(), 5), &err)) << err;
  const std::vector<uint8_t> file = read_bytes(path_);
  auto full = noting_error(read_recording_bytes(file, "f"), &err);
  ASSERT_TRUE(full.has_value()) << err;
  ASSERT_EQ(full->sample_frames.size(), 10u);
  ASSERT_EQ(full->samples.size(), 18u);
  ASSERT_EQ(full->sample_stacks.size(), 4u);
  EXPECT_EQ(full->sample_stacks[3], (std::vector<uint32_t>{0, 9}));

  const std::vector<Boundary> bounds = boundaries(file, mandatory_end);
  ASSERT_EQ(bounds.size(), 1u + 9 + 2);  // 3 flushes of 3 chunks, STATS, END
  expect_every_cut_reads_the_complete_chunks(
      file, bounds, [&](const Recording& rec, const Boundary& last) {
        EXPECT_EQ(rec.options, sampled_options());
        EXPECT_EQ(rec.sample_frames,
                  first_n(full->sample_frames, last.held(ChunkType::SAMPLE_FRAMES)));
        EXPECT_EQ(rec.samples, first_n(full->samples, last.held(ChunkType::SAMPLES)));
        EXPECT_EQ(rec.sample_stacks,
                  first_n(full->sample_stacks, last.held(ChunkType::SAMPLE_STACKS)));
        for (const CpuSample& s : rec.samples) {
          EXPECT_LT(s.frame_id, rec.sample_frames.size());
          if (s.python_stack != kNoPythonStack) {
            EXPECT_LT(s.python_stack, rec.sample_stacks.size());
          }
        }
        for (const auto& st : rec.sample_stacks)
          for (uint32_t f : st) EXPECT_LT(f, rec.sample_frames.size());
      });
  // And any single flipped byte: a clear error or an incomplete recording.
  expect_every_flipped_byte_is_caught(file);
}

// ---- stacks of op entries (record --with-stack) and kernel stacks of samples ----

RecordOptions stack_options(uint32_t hz = 0) {
  RecordOptions o;
  o.with_stack = true;
  o.sample_hz = hz;
  return o;
}
Bytes entry_stacks_payload(const std::vector<EntryStack>& entries) {
  Bytes b;
  for (const EntryStack& e : entries) b.u64(e.event_index).u32(e.stack_id);
  return b;
}
Bytes kernel_stacks_payload(const std::vector<SampleKernelStack>& stacks) {
  Bytes b;
  for (const SampleKernelStack& k : stacks) b.u64(k.sample_index).u32(k.stack_id);
  return b;
}

TEST_F(RecordFileTest, StackWriterOutputMatchesTheDocumentedLayout) {
  EXPECT_EQ(mandatory_prefix(stack_options()), written_prefix(16));
  EXPECT_EQ(mandatory_prefix(stack_options(99)), written_sampled_prefix(16, 99));
  // A flush with every kind of data chunk pending writes each after what it
  // names: SHAPES, EVENTS, ENTRY_SHAPES, MEM_EVENTS, SAMPLE_FRAMES,
  // SAMPLE_STACKS, ENTRY_STACKS, SAMPLES, SAMPLE_KERNEL_STACKS.
  std::string err;
  RecordOptions o = stack_options(99);
  o.shapes = o.memory = true;
  RecordWriter w = must_create();
  ASSERT_TRUE(succeeded(w.begin(sample_process(), sample_clock(), sample_ops(), o), &err)) << err;
  std::vector<gp_event> ev = make_events(6);  // entries at 0 and 3
  ASSERT_TRUE(succeeded(w.append_events(ev.data(), ev.size()), &err)) << err;
  const InputShapes shape = {Dims{2, 3}};
  ASSERT_TRUE(succeeded(w.append_shapes(0, shape), &err)) << err;
  std::vector<gp_mem_event> mem = make_mem_events(2);
  ASSERT_TRUE(succeeded(w.append_mem_events(mem.data(), mem.size()), &err)) << err;
  ASSERT_TRUE(succeeded(w.add_sample_frame("train.py(42): main"), &err)) << err;
  ASSERT_TRUE(succeeded(w.add_sample_frame("[k] do_syscall_64"), &err)) << err;
  ASSERT_TRUE(succeeded(w.add_sample_stack({0}), &err)) << err;
  ASSERT_TRUE(succeeded(w.add_sample_stack({1}), &err)) << err;
  ASSERT_TRUE(succeeded(w.append_entry_stack(0, 0), &err)) << err;
  ASSERT_TRUE(succeeded(w.append_entry_stack(3, 0), &err)) << err;
  std::vector<CpuSample> samples = {{10, 7, 1, true, 0}, {20, 8, 0, false, kNoPythonStack}};
  EXPECT_EQ(w.samples_appended(), 0u);
  ASSERT_TRUE(succeeded(w.append_samples(samples.data(), samples.size()), &err)) << err;
  EXPECT_EQ(w.samples_appended(), 2u);
  EXPECT_EQ(w.samples_written(), 0u);
  ASSERT_TRUE(succeeded(w.append_sample_kernel_stack(0, 1), &err)) << err;
  ASSERT_TRUE(succeeded(w.flush(), &err)) << err;
  std::vector<uint8_t> expect = written_sampled_prefix(1 | 2 | 16, 99);
  expect = cat(expect, written_of(ChunkType::SHAPES, shapes_payload({shape})));
  expect = cat(expect, written_events(ev));
  expect = cat(expect, written_of(ChunkType::ENTRY_SHAPES, entries_payload({{0, 0}})));
  expect = cat(expect, written_of(ChunkType::MEM_EVENTS, mem_payload(mem)));
  expect = cat(expect, written_of(ChunkType::SAMPLE_FRAMES,
                                frames_payload(0, {"train.py(42): main", "[k] do_syscall_64"})));
  expect = cat(expect, written_of(ChunkType::SAMPLE_STACKS, stacks_payload(0, {{0}, {1}})));
  expect = cat(expect, written_of(ChunkType::ENTRY_STACKS, entry_stacks_payload({{0, 0}, {3, 0}})));
  expect = cat(expect, written_of(ChunkType::SAMPLES, samples_payload(samples)));
  expect = cat(expect, written_of(ChunkType::SAMPLE_KERNEL_STACKS, kernel_stacks_payload({{0, 1}})));
  EXPECT_EQ(read_bytes(path_), expect);
  EXPECT_EQ(w.bytes_written(), expect.size());
  EXPECT_EQ(w.samples_written(), 2u);
  EXPECT_EQ(w.samples_appended(), 2u);
  auto rec = noting_error(read_recording_bytes(expect, "f"), &err);
  ASSERT_TRUE(rec.has_value()) << err;
  EXPECT_EQ(rec->options, o);
  EXPECT_TRUE(rec->options.with_stack);
  EXPECT_EQ(rec->entry_stacks, (std::vector<EntryStack>{{0, 0}, {3, 0}}));
  EXPECT_EQ(rec->sample_kernel_stacks, (std::vector<SampleKernelStack>{{0, 1}}));
  EXPECT_EQ(rec->entry_shapes, (std::vector<EntryShapes>{{0, 0}}));
  EXPECT_EQ(rec->samples, samples);
}

TEST_F(RecordFileTest, RoundTripsEntryStacksWithoutSampling) {
  std::string err;
  RecordWriter w = must_create();
  ASSERT_TRUE(succeeded(w.begin(sample_process(), sample_clock(), sample_ops(), stack_options()), &err))
      << err;
  // Frames and stacks need no sampling with the with_stack option; samples do.
  ASSERT_TRUE(succeeded(w.add_sample_frame("train.py(42): main"), &err)) << err;
  ASSERT_TRUE(succeeded(w.add_sample_frame("model.py(7): forward"), &err)) << err;
  ASSERT_TRUE(succeeded(w.add_sample_stack({0}), &err)) << err;
  ASSERT_TRUE(succeeded(w.add_sample_stack({0, 1}), &err)) << err;
  CpuSample s{1, 2, 0, true};
  EXPECT_FALSE(succeeded(w.append_samples(&s, 1), &err));
  EXPECT_EQ(err, path_ + ": not recording samples: the recording was begun without CPU sampling");
  std::vector<EntryStack> all;
  auto entry = [&](uint64_t event_index, uint32_t stack_id) {
    ASSERT_TRUE(succeeded(w.append_entry_stack(event_index, stack_id), &err)) << err;
    all.push_back({event_index, stack_id});
  };
  std::vector<gp_event> ev = make_events(9);  // entries at 0, 3 and 6
  ASSERT_TRUE(succeeded(w.append_events(ev.data(), 6), &err)) << err;
  entry(0, 1);
  ASSERT_TRUE(succeeded(w.flush(), &err)) << err;
  // An entry whose event went out in an earlier flush, under a stack defined
  // after it; then one whose event is still buffered.
  ASSERT_TRUE(succeeded(w.add_sample_stack({1}), &err)) << err;
  entry(3, 2);
  ASSERT_TRUE(succeeded(w.append_events(ev.data() + 6, 3), &err)) << err;
  entry(6, 0);
  ASSERT_TRUE(succeeded(w.flush(), &err)) << err;
  ASSERT_TRUE(succeeded(w.flush(), &err)) << err;  // nothing pending: no chunk
  // Enough entry stacks to go out on their own (5462 of 12 bytes reach 64
  // KiB), with the events and the stack they name before them.
  std::vector<gp_event> many = make_events(3 * 6000, 1);
  ASSERT_TRUE(succeeded(w.append_events(many.data(), many.size()), &err)) << err;
  ASSERT_TRUE(succeeded(w.add_sample_stack({1, 0}), &err)) << err;  // id 3
  const uint64_t before = w.bytes_written();
  for (uint64_t i = 9; i < w.events_appended(); i += 3) entry(i, static_cast<uint32_t>(i % 4));
  EXPECT_GT(w.bytes_written(), before);
  auto part = noting_error(read_recording(path_), &err);
  ASSERT_TRUE(part.has_value()) << err;
  EXPECT_FALSE(part->complete);
  EXPECT_EQ(part->entry_stacks, first_n(all, 3 + 5462));
  EXPECT_EQ(part->sample_stacks.size(), 4u);
  ASSERT_TRUE(succeeded(w.finish(sample_stats(), 9), &err)) << err;

  auto rec = noting_error(read_recording(path_), &err);
  ASSERT_TRUE(rec.has_value()) << err;
  EXPECT_TRUE(rec->complete);
  EXPECT_EQ(rec->options, stack_options());
  EXPECT_EQ(rec->options.sample_hz, 0u);
  EXPECT_EQ(rec->events.size(), 9u + many.size());
  EXPECT_EQ(rec->sample_frames,
            (std::vector<std::string>{"train.py(42): main", "model.py(7): forward"}));
  EXPECT_EQ(rec->sample_stacks, (std::vector<std::vector<uint32_t>>{{0}, {0, 1}, {1}, {1, 0}}));
  EXPECT_EQ(rec->entry_stacks, all);
  EXPECT_TRUE(rec->samples.empty() && rec->sample_kernel_stacks.empty());
}

// BACKWARD_STACKS: (event index, stack id) pairs of evaluate_function
// entries (record --with-modules), on their own cursor beside the entry
// stacks', checked as they are, read back into Recording::backward_stacks.
TEST_F(RecordFileTest, RoundTripsBackwardStacksOnTheirOwnCursor) {
  RecordWriter w = must_create();
  ASSERT_TRUE(w.begin(sample_process(), sample_clock(), sample_ops(), stack_options()));
  ASSERT_TRUE(w.add_sample_frame("train.py(42): main"));
  ASSERT_TRUE(w.add_sample_stack({0}));
  std::vector<gp_event> ev = make_events(9);  // entries at 0, 3 and 6
  ASSERT_TRUE(w.append_events(ev.data(), ev.size()));
  ASSERT_TRUE(w.append_entry_stack(6, 0));     // the entry stacks' cursor past 3 ...
  ASSERT_TRUE(w.append_backward_stack(3, 0));  // ... not the backward stacks'
  const std::string p = path_ + ": not recording the forward stack of event ";
  Result<void> refused = w.append_backward_stack(4, 0);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error(), p + "4: it is not an ENTRY event");
  refused = w.append_backward_stack(3, 0);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error(), p + "3: not above the previous backward stack's event 3");
  refused = w.append_backward_stack(6, 7);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().find(p + "6: "), std::string::npos) << refused.error();
  ASSERT_TRUE(w.append_backward_stack(6, 0));
  ASSERT_TRUE(w.finish(sample_stats(), 1));
  Result<Recording> rec = read_recording(path_);
  ASSERT_TRUE(rec) << rec.error();
  EXPECT_EQ(rec->backward_stacks, (std::vector<EntryStack>{{3, 0}, {6, 0}}));
  EXPECT_EQ(rec->entry_stacks, (std::vector<EntryStack>{{6, 0}}));

  RecordWriter plain = must_create();
  ASSERT_TRUE(plain.begin(sample_process(), sample_clock(), sample_ops(), RecordOptions{}));
  ASSERT_TRUE(plain.append_events(ev.data(), ev.size()));
  refused = plain.append_backward_stack(0, 0);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error(), p + "0: the recording was begun without the with_stack option");
}

// The writer keeps which events are entries from the lower of its two entry
// cursors on: entry stacks may lag far behind entry shapes, and the reverse.
TEST_F(RecordFileTest, EntryShapesAndEntryStacksKeepTheirOwnOrder) {
  std::string err;
  RecordOptions o = stack_options();
  o.shapes = true;
  RecordWriter w = must_create();
  ASSERT_TRUE(succeeded(w.begin(sample_process(), sample_clock(), sample_ops(), o), &err)) << err;
  ASSERT_TRUE(succeeded(w.add_sample_frame("a.py(1): f"), &err)) << err;
  ASSERT_TRUE(succeeded(w.add_sample_stack({0}), &err)) << err;
  std::vector<gp_event> ev = make_events(3000);  // entries at multiples of 3
  uint64_t shapes = 0, stacks = 0;
  for (int batch = 0; batch < 70; ++batch) {  // 210000 events
    const uint64_t first = w.events_appended();
    ASSERT_TRUE(succeeded(w.append_events(ev.data(), ev.size()), &err)) << err;
    for (uint64_t i = first; i < w.events_appended(); i += 300, ++shapes)
      ASSERT_TRUE(succeeded(w.append_shapes(i, {Dims{1}}), &err)) << err;
  }
  // The stacks' cursor is still at 0: the oldest entries are still known.
  const std::string p = path_ + ": not recording the stack of event ";
  EXPECT_FALSE(succeeded(w.append_entry_stack(4, 0), &err));
  EXPECT_EQ(err, p + "4: it is not an ENTRY event");
  ASSERT_TRUE(succeeded(w.append_entry_stack(3, 0), &err)) << err;
  ++stacks;
  EXPECT_FALSE(succeeded(w.append_entry_stack(3, 0), &err));
  EXPECT_EQ(err, p + "3: not above the previous entry stack's event 3");
  for (uint64_t i = 6; i < w.events_appended(); i += 3000, ++stacks)
    ASSERT_TRUE(succeeded(w.append_entry_stack(i, 0), &err)) << err;
  // Now the shapes lag: stacks go to the end of a new batch first.
  const uint64_t first = w.events_appended();
  ASSERT_TRUE(succeeded(w.append_events(ev.data(), ev.size()), &err)) << err;
  for (uint64_t i = first; i < w.events_appended(); i += 3, ++stacks)
    ASSERT_TRUE(succeeded(w.append_entry_stack(i, 0), &err)) << err;
  EXPECT_FALSE(succeeded(w.append_shapes(first + 1, {}), &err));
  EXPECT_EQ(err, path_ + ": not recording the shapes of event " + std::to_string(first + 1) +
                     ": it is not an ENTRY event");
  ASSERT_TRUE(succeeded(w.append_shapes(first, {}), &err)) << err;
  ASSERT_TRUE(succeeded(w.append_shapes(first + 2997, {}), &err)) << err;
  shapes += 2;
  ASSERT_TRUE(succeeded(w.finish(sample_stats(), 1), &err)) << err;
  auto rec = noting_error(read_recording(path_), &err);
  ASSERT_TRUE(rec.has_value()) << err;
  EXPECT_EQ(rec->events.size(), 213000u);
  EXPECT_EQ(rec->entry_shapes.size(), shapes);
  EXPECT_EQ(rec->entry_stacks.size(), stacks);
}

TEST_F(RecordFileTest, RoundTripsKernelStacksOfSamples) {
  std::string err;
  RecordWriter w = must_create();
  ASSERT_TRUE(succeeded(w.begin(sample_process(), sample_clock(), sample_ops(), sampled_options(997)), &err))
      << err;
  ASSERT_TRUE(succeeded(w.add_sample_frame("libc.so.6!read"), &err)) << err;
  ASSERT_TRUE(succeeded(w.add_sample_frame("[k] do_syscall_64"), &err)) << err;
  ASSERT_TRUE(succeeded(w.add_sample_frame("[k] ksys_read"), &err)) << err;
  ASSERT_TRUE(succeeded(w.add_sample_stack({1, 2}), &err)) << err;
  std::vector<CpuSample> all;
  std::vector<SampleKernelStack> kernel;
  auto samples = [&](size_t n, uint32_t seed) {
    std::vector<CpuSample> s = make_samples(n, 3, seed);  // in the kernel at 1, 6, 11, ...
    EXPECT_EQ(w.samples_appended(), all.size());
    ASSERT_TRUE(succeeded(w.append_samples(s.data(), s.size()), &err)) << err;
    all.insert(all.end(), s.begin(), s.end());
    EXPECT_EQ(w.samples_appended(), all.size());
  };
  auto stack = [&](uint64_t sample_index, uint32_t stack_id) {
    ASSERT_TRUE(succeeded(w.append_sample_kernel_stack(sample_index, stack_id), &err)) << err;
    kernel.push_back({sample_index, stack_id});
  };
  samples(10, 0);
  stack(1, 0);
  ASSERT_TRUE(succeeded(w.flush(), &err)) << err;
  EXPECT_EQ(w.samples_written(), 10u);
  // A sample written in an earlier flush, under a stack defined after it.
  ASSERT_TRUE(succeeded(w.add_sample_stack({1}), &err)) << err;
  stack(6, 1);
  ASSERT_TRUE(succeeded(w.flush(), &err)) << err;
  // 30000 samples (full SAMPLES chunks go out as they fill) and a kernel
  // stack for each of the 6000 in the kernel: 5462 reach 64 KiB and go out
  // on their own, after the samples they name.
  samples(30000, 1);
  const uint64_t before = w.bytes_written();
  for (uint64_t i = 10; i < all.size(); ++i)
    if (all[i].in_kernel) stack(i, static_cast<uint32_t>(i % 2));
  EXPECT_GT(w.bytes_written(), before);
  auto part = noting_error(read_recording(path_), &err);
  ASSERT_TRUE(part.has_value()) << err;
  EXPECT_EQ(part->sample_kernel_stacks, first_n(kernel, 2 + 5462));
  ASSERT_TRUE(succeeded(w.finish(sample_stats(), 5), &err)) << err;

  auto rec = noting_error(read_recording(path_), &err);
  ASSERT_TRUE(rec.has_value()) << err;
  EXPECT_TRUE(rec->complete);
  EXPECT_EQ(rec->options, sampled_options(997));
  EXPECT_FALSE(rec->options.with_stack);
  EXPECT_EQ(rec->samples, all);
  EXPECT_EQ(rec->sample_stacks, (std::vector<std::vector<uint32_t>>{{1, 2}, {1}}));
  EXPECT_EQ(rec->sample_kernel_stacks, kernel);
  EXPECT_EQ(kernel.size(), 2u + 6000);
  EXPECT_TRUE(rec->entry_stacks.empty());
}

TEST_F(RecordFileTest, WriterRefusesEntryStacksTheReaderWouldReject) {
  std::string err;
  RecordWriter w = must_create();
  EXPECT_FALSE(succeeded(w.append_entry_stack(0, 0), &err));
  EXPECT_EQ(err, path_ + ": append_entry_stack called out of order (internal error)");
  ASSERT_TRUE(succeeded(w.begin(sample_process(), sample_clock(), sample_ops(), {true, false}), &err)) << err;
  std::vector<gp_event> ev = make_events(6);  // entries at 0 and 3
  ASSERT_TRUE(succeeded(w.append_events(ev.data(), ev.size()), &err)) << err;
  EXPECT_FALSE(succeeded(w.append_entry_stack(0, 0), &err));
  EXPECT_EQ(err, path_ +
                     ": not recording the stack of event 0: the recording was begun without the "
                     "with_stack option");
  ASSERT_TRUE(succeeded(w.finish(sample_stats(), 1), &err)) << err;  // still usable
  auto rec = noting_error(read_recording(path_), &err);
  ASSERT_TRUE(rec.has_value()) << err;
  EXPECT_TRUE(rec->entry_stacks.empty());

  std::string path2 = dir_ + "/stacks.gpuprof";
  auto w2 = noting_error(RecordWriter::create(path2), &err);
  ASSERT_TRUE(w2.has_value()) << err;
  ASSERT_TRUE(succeeded(w2->begin(sample_process(), sample_clock(), sample_ops(), stack_options()), &err));
  ASSERT_TRUE(succeeded(w2->append_events(ev.data(), ev.size()), &err)) << err;
  const std::string p = path2 + ": not recording the stack of event ";
  EXPECT_FALSE(succeeded(w2->append_entry_stack(0, 0), &err));
  EXPECT_EQ(err, p + "0: stack_id 0, but 0 stacks are defined");
  ASSERT_TRUE(succeeded(w2->add_sample_frame("a"), &err)) << err;
  ASSERT_TRUE(succeeded(w2->add_sample_stack({0}), &err)) << err;
  EXPECT_FALSE(succeeded(w2->append_entry_stack(0, 1), &err));
  EXPECT_EQ(err, p + "0: stack_id 1, but 1 stacks are defined");
  EXPECT_FALSE(succeeded(w2->append_entry_stack(0, kNoPythonStack), &err));
  EXPECT_EQ(err, p + "0: stack_id 4294967295, but 1 stacks are defined");
  EXPECT_FALSE(succeeded(w2->append_entry_stack(1, 0), &err));
  EXPECT_EQ(err, p + "1: it is not an ENTRY event");
  EXPECT_FALSE(succeeded(w2->append_entry_stack(2, 0), &err));
  EXPECT_EQ(err, p + "2: it is not an ENTRY event");
  EXPECT_FALSE(succeeded(w2->append_entry_stack(6, 0), &err));
  EXPECT_EQ(err, p + "6: only 6 events were appended");
  EXPECT_FALSE(succeeded(w2->append_entry_stack(UINT64_MAX, 0), &err));
  EXPECT_EQ(err, p + "18446744073709551615: only 6 events were appended");
  ASSERT_TRUE(succeeded(w2->append_entry_stack(3, 0), &err)) << err;
  EXPECT_FALSE(succeeded(w2->append_entry_stack(0, 0), &err));
  EXPECT_EQ(err, p + "0: not above the previous entry stack's event 3");
  EXPECT_FALSE(succeeded(w2->append_entry_stack(3, 0), &err));
  EXPECT_EQ(err, p + "3: not above the previous entry stack's event 3");
  // Refusals changed nothing; the writer is still usable.
  ASSERT_TRUE(succeeded(w2->flush(), &err)) << err;
  ASSERT_TRUE(succeeded(w2->add_sample_stack({0, 0}), &err)) << err;
  ASSERT_TRUE(succeeded(w2->append_events(ev.data(), ev.size()), &err)) << err;  // entries at 6 and 9
  ASSERT_TRUE(succeeded(w2->append_entry_stack(9, 1), &err)) << err;
  ASSERT_TRUE(succeeded(w2->finish(sample_stats(), 1), &err)) << err;
  rec = noting_error(read_recording(path2), &err);
  ASSERT_TRUE(rec.has_value()) << err;
  EXPECT_EQ(rec->entry_stacks, (std::vector<EntryStack>{{3, 0}, {9, 1}}));
  EXPECT_EQ(rec->sample_stacks, (std::vector<std::vector<uint32_t>>{{0}, {0, 0}}));
}

TEST_F(RecordFileTest, WriterRefusesSampleKernelStacksTheReaderWouldReject) {
  std::string err;
  RecordWriter w = must_create();
  EXPECT_FALSE(succeeded(w.append_sample_kernel_stack(0, 0), &err));
  EXPECT_EQ(err, path_ + ": append_sample_kernel_stack called out of order (internal error)");
  ASSERT_TRUE(succeeded(w.begin(sample_process(), sample_clock(), sample_ops(), stack_options()), &err))
      << err;
  ASSERT_TRUE(succeeded(w.add_sample_frame("[k] a"), &err)) << err;
  ASSERT_TRUE(succeeded(w.add_sample_stack({0}), &err)) << err;
  EXPECT_FALSE(succeeded(w.append_sample_kernel_stack(0, 0), &err));
  EXPECT_EQ(err, path_ +
                     ": not recording the kernel stack of sample 0: the recording was begun "
                     "without CPU sampling");
  ASSERT_TRUE(succeeded(w.finish(sample_stats(), 1), &err)) << err;

  std::string path2 = dir_ + "/kernel.gpuprof";
  auto w2 = noting_error(RecordWriter::create(path2), &err);
  ASSERT_TRUE(w2.has_value()) << err;
  ASSERT_TRUE(succeeded(w2->begin(sample_process(), sample_clock(), sample_ops(), sampled_options()), &err));
  ASSERT_TRUE(succeeded(w2->add_sample_frame("a"), &err)) << err;
  ASSERT_TRUE(succeeded(w2->add_sample_frame("[k] b"), &err)) << err;
  ASSERT_TRUE(succeeded(w2->add_sample_stack({1}), &err)) << err;
  std::vector<CpuSample> s = {{1, 2, 0, true}, {2, 2, 1, false}, {3, 2, 0, true}};
  ASSERT_TRUE(succeeded(w2->append_samples(s.data(), s.size()), &err)) << err;
  const std::string p = path2 + ": not recording the kernel stack of sample ";
  EXPECT_FALSE(succeeded(w2->append_sample_kernel_stack(1, 0), &err));
  EXPECT_EQ(err, p + "1: it is not an in-kernel sample");
  EXPECT_FALSE(succeeded(w2->append_sample_kernel_stack(3, 0), &err));
  EXPECT_EQ(err, p + "3: only 3 samples were appended");
  EXPECT_FALSE(succeeded(w2->append_sample_kernel_stack(0, 1), &err));
  EXPECT_EQ(err, p + "0: stack_id 1, but 1 stacks are defined");
  EXPECT_FALSE(succeeded(w2->append_sample_kernel_stack(0, kNoPythonStack), &err));
  EXPECT_EQ(err, p + "0: stack_id 4294967295, but 1 stacks are defined");
  ASSERT_TRUE(succeeded(w2->append_sample_kernel_stack(2, 0), &err)) << err;
  EXPECT_FALSE(succeeded(w2->append_sample_kernel_stack(0, 0), &err));
  EXPECT_EQ(err, p + "0: not above the previous kernel stack's sample 2");
  EXPECT_FALSE(succeeded(w2->append_sample_kernel_stack(2, 0), &err));
  EXPECT_EQ(err, p + "2: not above the previous kernel stack's sample 2");
  // Refusals changed nothing; the writer is still usable.
  ASSERT_TRUE(succeeded(w2->flush(), &err)) << err;
  ASSERT_TRUE(succeeded(w2->append_samples(s.data(), s.size()), &err)) << err;  // in the kernel: 3 and 5
  ASSERT_TRUE(succeeded(w2->append_sample_kernel_stack(5, 0), &err)) << err;
  ASSERT_TRUE(succeeded(w2->finish(sample_stats(), 1), &err)) << err;
  auto rec = noting_error(read_recording(path2), &err);
  ASSERT_TRUE(rec.has_value()) << err;
  EXPECT_EQ(rec->sample_kernel_stacks, (std::vector<SampleKernelStack>{{2, 0}, {5, 0}}));
  EXPECT_EQ(rec->samples.size(), 6u);
}

TEST_F(RecordFileTest, CorruptEntryStacksAreRejected) {
  std::string err;
  // OPTIONS bit 4 is with_stack, with the 4-byte form when not sampled.
  const std::vector<uint8_t> prefix = v2_prefix(16);
  auto bare = noting_error(read_recording_bytes(prefix, "f"), &err);
  ASSERT_TRUE(bare.has_value()) << err;
  EXPECT_EQ(bare->options, stack_options());
  const std::vector<uint8_t> no_options = v2_prefix_without_options();
  expect_error(
      cat(no_options, chunk_of(ChunkType::OPTIONS, Bytes().u32(0x30))),
      "f: corrupt chunk 4 (OPTIONS)" + at_offset(no_options) + "unknown option flags 0x20");
  // Frames and stacks are allowed with with_stack alone; samples and
  // kernel stacks are not.
  const std::vector<uint8_t> two =
      cat(prefix, chunk_of(ChunkType::SAMPLE_FRAMES, frames_payload(0, {"a", "b"})));
  const std::vector<uint8_t> one_stack =
      cat(two, chunk_of(ChunkType::SAMPLE_STACKS, stacks_payload(0, {{0, 1}})));
  auto ok = noting_error(read_recording_bytes(one_stack, "f"), &err);
  ASSERT_TRUE(ok.has_value()) << err;
  EXPECT_EQ(ok->sample_stacks, (std::vector<std::vector<uint32_t>>{{0, 1}}));
  expect_error(cat(one_stack, chunk_of(ChunkType::SAMPLES, std::vector<uint8_t>{})),
               "f: corrupt chunk 7 (SAMPLES)" + at_offset(one_stack) +
                   "SAMPLES chunk in a recording without CPU sampling (sample_hz 0)");
  // ENTRY_STACKS needs the with_stack option, sampled or not, and comes
  // after the mandatory chunks, before STATS.
  for (const std::vector<uint8_t>& other : {v2_prefix(3), v2_sampled_prefix(0, 99)})
    expect_error(cat(other, chunk_of(ChunkType::ENTRY_STACKS, std::vector<uint8_t>{})),
                 "f: corrupt chunk 5 (ENTRY_STACKS)" + at_offset(other) +
                     "ENTRY_STACKS chunk in a recording without the with_stack option");
  expect_error(cat(no_options, chunk_of(ChunkType::ENTRY_STACKS, std::vector<uint8_t>{})),
               "f: corrupt chunk 4 (ENTRY_STACKS)" + at_offset(no_options) +
                   "ENTRY_STACKS chunk before the PROCESS, CLOCK, OP_TABLE and OPTIONS chunks");
  const std::vector<uint8_t> with_stats =
      cat(prefix, chunk_of(ChunkType::STATS, zero_stats_payload()));
  expect_error(cat(with_stats, chunk_of(ChunkType::ENTRY_STACKS, std::vector<uint8_t>{})),
               "f: corrupt chunk 6 (ENTRY_STACKS)" + at_offset(with_stats) +
                   "ENTRY_STACKS chunk after the STATS chunk");
  // Pairs: an earlier ENTRY event, increasing indices, a defined stack.
  std::vector<gp_event> ev = make_events(6);  // entries at 0 and 3
  const std::vector<uint8_t> base = cat(one_stack, chunk_of(ChunkType::EVENTS, events_payload(ev)));
  const std::string e8 = "f: corrupt chunk 8 (ENTRY_STACKS)" + at_offset(base);
  auto entries_file = [&](const std::vector<EntryStack>& e) {
    return cat(base, chunk_of(ChunkType::ENTRY_STACKS, entry_stacks_payload(e)));
  };
  ok = noting_error(read_recording_bytes(entries_file({{0, 0}, {3, 0}}), "f"), &err);
  ASSERT_TRUE(ok.has_value()) << err;
  EXPECT_EQ(ok->entry_stacks, (std::vector<EntryStack>{{0, 0}, {3, 0}}));
  expect_error(entries_file({{0, 1}}),
               e8 + "entry stack 0 has stack_id 1, but 1 stacks are defined");
  expect_error(entries_file({{0, 0}, {1, 0}}),
               e8 + "entry stack 1 has event_index 1, which is not an ENTRY event (kind 2)");
  expect_error(entries_file({{2, 0}}),
               e8 + "entry stack 0 has event_index 2, which is not an ENTRY event (kind 3)");
  expect_error(entries_file({{6, 0}}),
               e8 + "entry stack 0 has event_index 6, but only 6 events precede it");
  expect_error(
      entries_file({{UINT64_MAX, 0}}),
      e8 + "entry stack 0 has event_index 18446744073709551615, but only 6 events precede it");
  expect_error(entries_file({{3, 0}, {0, 0}}),
               e8 + "entry stack 1 has event_index 0, not above the previous 3");
  expect_error(entries_file({{3, 0}, {3, 0}}),
               e8 + "entry stack 1 has event_index 3, not above the previous 3");
  // ... across chunks too.
  const std::vector<uint8_t> first = entries_file({{3, 0}});
  expect_error(cat(first, chunk_of(ChunkType::ENTRY_STACKS, entry_stacks_payload({{0, 0}}))),
               "f: corrupt chunk 9 (ENTRY_STACKS)" + at_offset(first) +
                   "entry stack 0 has event_index 0, not above the previous 3");
  expect_error(cat(base, chunk_of(ChunkType::ENTRY_STACKS, std::vector<uint8_t>(13, 0))),
               e8 + "payload of 13 bytes is not a whole number of 12-byte entry stacks");
  // A stack defined only after the entry that names it.
  const std::vector<uint8_t> no_stack = cat(two, chunk_of(ChunkType::EVENTS, events_payload(ev)));
  expect_error(cat(cat(no_stack, chunk_of(ChunkType::ENTRY_STACKS, entry_stacks_payload({{0, 0}}))),
                   chunk_of(ChunkType::SAMPLE_STACKS, stacks_payload(0, {{0}}))),
               "f: corrupt chunk 7 (ENTRY_STACKS)" + at_offset(no_stack) +
                   "entry stack 0 has stack_id 0, but 0 stacks are defined");
  // An event written only after the entry stack that names it.
  expect_error(
      cat(cat(one_stack, chunk_of(ChunkType::ENTRY_STACKS, entry_stacks_payload({{0, 0}}))),
          chunk_of(ChunkType::EVENTS, events_payload(ev))),
      "f: corrupt chunk 7 (ENTRY_STACKS)" + at_offset(one_stack) +
          "entry stack 0 has event_index 0, but only 0 events precede it");
  // Entry shapes and entry stacks keep separate orders: both may name the
  // same ENTRY, and a stack may name an entry before the last entry shape.
  std::vector<uint8_t> both = v2_prefix(1 | 16);
  both = cat(both, chunk_of(ChunkType::SHAPES, shapes_payload({{Dims{1}}})));
  both = cat(both, chunk_of(ChunkType::EVENTS, events_payload(ev)));
  both = cat(both, chunk_of(ChunkType::ENTRY_SHAPES, entries_payload({{3, 0}})));
  both = cat(both, chunk_of(ChunkType::SAMPLE_FRAMES, frames_payload(0, {"a"})));
  both = cat(both, chunk_of(ChunkType::SAMPLE_STACKS, stacks_payload(0, {{0}})));
  both = cat(both, chunk_of(ChunkType::ENTRY_STACKS, entry_stacks_payload({{0, 0}, {3, 0}})));
  ok = noting_error(read_recording_bytes(both, "f"), &err);
  ASSERT_TRUE(ok.has_value()) << err;
  EXPECT_EQ(ok->entry_shapes, (std::vector<EntryShapes>{{3, 0}}));
  EXPECT_EQ(ok->entry_stacks, (std::vector<EntryStack>{{0, 0}, {3, 0}}));
  // An empty chunk is valid.
  ASSERT_TRUE(noting_error(read_recording_bytes(
      cat(prefix, chunk_of(ChunkType::ENTRY_STACKS, std::vector<uint8_t>{})), "f"), &err))
      << err;
}

TEST_F(RecordFileTest, CorruptSampleKernelStacksAreRejected) {
  std::string err;
  // SAMPLE_KERNEL_STACKS needs the sampled option (with_stack is not
  // enough), and comes after the mandatory chunks, before STATS.
  for (const std::vector<uint8_t>& other : {v2_prefix(16), v2_prefix(3)})
    expect_error(
        cat(other, chunk_of(ChunkType::SAMPLE_KERNEL_STACKS, std::vector<uint8_t>{})),
        "f: corrupt chunk 5 (SAMPLE_KERNEL_STACKS)" + at_offset(other) +
            "SAMPLE_KERNEL_STACKS chunk in a recording without CPU sampling (sample_hz 0)");
  const std::vector<uint8_t> no_options = v2_prefix_without_options();
  expect_error(cat(no_options, chunk_of(ChunkType::SAMPLE_KERNEL_STACKS, std::vector<uint8_t>{})),
               "f: corrupt chunk 4 (SAMPLE_KERNEL_STACKS)" + at_offset(no_options) +
                   "SAMPLE_KERNEL_STACKS chunk before the PROCESS, CLOCK, OP_TABLE and OPTIONS "
                   "chunks");
  const std::vector<uint8_t> prefix = v2_sampled_prefix(0, 99);
  const std::vector<uint8_t> with_stats =
      cat(prefix, chunk_of(ChunkType::STATS, zero_stats_payload()));
  expect_error(cat(with_stats, chunk_of(ChunkType::SAMPLE_KERNEL_STACKS, std::vector<uint8_t>{})),
               "f: corrupt chunk 6 (SAMPLE_KERNEL_STACKS)" + at_offset(with_stats) +
                   "SAMPLE_KERNEL_STACKS chunk after the STATS chunk");
  // Pairs: an earlier in-kernel sample, increasing indices, a defined stack.
  const std::vector<uint8_t> frames =
      cat(prefix, chunk_of(ChunkType::SAMPLE_FRAMES, frames_payload(0, {"a", "[k] b"})));
  const std::vector<uint8_t> one_stack =
      cat(frames, chunk_of(ChunkType::SAMPLE_STACKS, stacks_payload(0, {{1}})));
  const std::vector<CpuSample> samples = {{1, 2, 0, false}, {2, 2, 1, true}, {3, 2, 1, true}};
  const std::vector<uint8_t> base =
      cat(one_stack, chunk_of(ChunkType::SAMPLES, samples_payload(samples)));
  const std::string k8 = "f: corrupt chunk 8 (SAMPLE_KERNEL_STACKS)" + at_offset(base);
  auto kernel_file = [&](const std::vector<SampleKernelStack>& k) {
    return cat(base, chunk_of(ChunkType::SAMPLE_KERNEL_STACKS, kernel_stacks_payload(k)));
  };
  auto ok = noting_error(read_recording_bytes(kernel_file({{1, 0}, {2, 0}}), "f"), &err);
  ASSERT_TRUE(ok.has_value()) << err;
  EXPECT_EQ(ok->sample_kernel_stacks, (std::vector<SampleKernelStack>{{1, 0}, {2, 0}}));
  expect_error(kernel_file({{0, 0}}),
               k8 + "kernel stack 0 has sample_index 0, which is not an in-kernel sample");
  expect_error(kernel_file({{3, 0}}),
               k8 + "kernel stack 0 has sample_index 3, but only 3 samples precede it");
  expect_error(kernel_file({{1, 1}}),
               k8 + "kernel stack 0 has stack_id 1, but 1 stacks are defined");
  expect_error(kernel_file({{2, 0}, {1, 0}}),
               k8 + "kernel stack 1 has sample_index 1, not above the previous 2");
  expect_error(kernel_file({{1, 0}, {1, 0}}),
               k8 + "kernel stack 1 has sample_index 1, not above the previous 1");
  // ... across chunks too.
  const std::vector<uint8_t> first = kernel_file({{2, 0}});
  expect_error(
      cat(first, chunk_of(ChunkType::SAMPLE_KERNEL_STACKS, kernel_stacks_payload({{1, 0}}))),
      "f: corrupt chunk 9 (SAMPLE_KERNEL_STACKS)" + at_offset(first) +
          "kernel stack 0 has sample_index 1, not above the previous 2");
  expect_error(cat(base, chunk_of(ChunkType::SAMPLE_KERNEL_STACKS, std::vector<uint8_t>(11, 0))),
               k8 + "payload of 11 bytes is not a whole number of 12-byte kernel stacks");
  // A sample written only after the kernel stack that names it.
  expect_error(cat(cat(one_stack,
                       chunk_of(ChunkType::SAMPLE_KERNEL_STACKS, kernel_stacks_payload({{1, 0}}))),
                   chunk_of(ChunkType::SAMPLES, samples_payload(samples))),
               "f: corrupt chunk 7 (SAMPLE_KERNEL_STACKS)" + at_offset(one_stack) +
                   "kernel stack 0 has sample_index 1, but only 0 samples precede it");
  // A stack defined only after the kernel stack that names it.
  const std::vector<uint8_t> no_stack =
      cat(frames, chunk_of(ChunkType::SAMPLES, samples_payload(samples)));
  expect_error(
      cat(cat(no_stack, chunk_of(ChunkType::SAMPLE_KERNEL_STACKS, kernel_stacks_payload({{1, 0}}))),
          chunk_of(ChunkType::SAMPLE_STACKS, stacks_payload(0, {{1}}))),
      "f: corrupt chunk 7 (SAMPLE_KERNEL_STACKS)" + at_offset(no_stack) +
          "kernel stack 0 has stack_id 0, but 0 stacks are defined");
  // An empty chunk is valid.
  ASSERT_TRUE(noting_error(read_recording_bytes(
      cat(prefix, chunk_of(ChunkType::SAMPLE_KERNEL_STACKS, std::vector<uint8_t>{})), "f"), &err))
      << err;
}

// Cut a recording with entry stacks and kernel stacks at every byte: exactly
// the data of the complete chunks, never an entry stack or a kernel stack
// naming an event, sample or stack the file does not hold.
TEST_F(RecordFileTest, EveryTruncationOfARecordingWithStacks) {
  std::string err;
  RecordWriter w = must_create();
  ASSERT_TRUE(succeeded(w.begin(sample_process(), sample_clock(), sample_ops(), stack_options(997)), &err))
      << err;
  const uint64_t mandatory_end = w.bytes_written();
  for (uint32_t round = 0; round < 4; ++round) {
    ASSERT_TRUE(succeeded(w.add_sample_frame("f" + std::to_string(round)), &err)) << err;
    ASSERT_TRUE(succeeded(w.add_sample_stack({0, round}), &err)) << err;
    const uint32_t stack = w.sample_stacks_defined() - 1;
    const uint64_t first_event = w.events_appended();
    std::vector<gp_event> ev = make_events(6, round);  // entries at 0 and 3
    ASSERT_TRUE(succeeded(w.append_events(ev.data(), ev.size()), &err)) << err;
    ASSERT_TRUE(succeeded(w.append_entry_stack(first_event, stack), &err)) << err;
    ASSERT_TRUE(succeeded(w.append_entry_stack(first_event + 3, 0), &err)) << err;
    const uint64_t first_sample = w.samples_appended();
    std::vector<CpuSample> s = make_samples(6, w.sample_frames_defined(), round);
    s[4].in_kernel = true;  // and 1
    ASSERT_TRUE(succeeded(w.append_samples(s.data(), s.size()), &err)) << err;
    ASSERT_TRUE(succeeded(w.append_sample_kernel_stack(first_sample + 1, stack), &err)) << err;
    ASSERT_TRUE(succeeded(w.append_sample_kernel_stack(first_sample + 4, 0), &err)) << err;
    if (round != 1) {
      ASSERT_TRUE(succeeded(w.flush(), &err)) << err;
    }
  }
  ASSERT_TRUE(succeeded(w.finish(sample_stats(), 5), &err)) << err;
  const std::vector<uint8_t> file = read_bytes(path_);
  auto full = noting_error(read_recording_bytes(file, "f"), &err);
  ASSERT_TRUE(full.has_value()) << err;
  ASSERT_EQ(full->entry_stacks.size(), 8u);
  ASSERT_EQ(full->sample_kernel_stacks.size(), 8u);
  ASSERT_EQ(full->sample_stacks.size(), 4u);

  const std::vector<Boundary> bounds = boundaries(file, mandatory_end);
  ASSERT_EQ(bounds.size(), 1u + 3 * 6 + 2);  // 3 flushes of 6 chunks, STATS, END
  expect_every_cut_reads_the_complete_chunks(
      file, bounds, [&](const Recording& rec, const Boundary& last) {
        EXPECT_EQ(rec.events.size(), last.held(ChunkType::EVENTS));
        EXPECT_EQ(rec.sample_frames.size(), last.held(ChunkType::SAMPLE_FRAMES));
        EXPECT_EQ(rec.sample_stacks.size(), last.held(ChunkType::SAMPLE_STACKS));
        EXPECT_EQ(rec.samples.size(), last.held(ChunkType::SAMPLES));
        EXPECT_EQ(rec.entry_stacks,
                  first_n(full->entry_stacks, last.held(ChunkType::ENTRY_STACKS)));
        EXPECT_EQ(rec.sample_kernel_stacks,
                  first_n(full->sample_kernel_stacks, last.held(ChunkType::SAMPLE_KERNEL_STACKS)));
        for (const EntryStack& e : rec.entry_stacks) {
          ASSERT_LT(e.event_index, rec.events.size());
          EXPECT_EQ(rec.events[e.event_index].kind, GP_EV_OP_ENTRY);
          EXPECT_LT(e.stack_id, rec.sample_stacks.size());
        }
        for (const SampleKernelStack& k : rec.sample_kernel_stacks) {
          ASSERT_LT(k.sample_index, rec.samples.size());
          EXPECT_TRUE(rec.samples[k.sample_index].in_kernel);
          EXPECT_LT(k.stack_id, rec.sample_stacks.size());
        }
      });
  // And any single flipped byte: a clear error or an incomplete recording.
  expect_every_flipped_byte_is_caught(file);
}

// A real SIGKILL with entry stacks and kernel stacks pending: what was
// flushed is readable, stacks included.
TEST_F(RecordFileTest, WriterKilledBySigkillKeepsFlushedStacks) {
  std::vector<gp_event> ev = make_events(9, 1);  // entries at 0, 3 and 6
  const std::vector<CpuSample> s = {{1, 2, 0, true}, {2, 2, 0, false}, {3, 2, 1, true}};
  auto write = [&](RecordWriter& w, std::string* e) {
    if (!succeeded(w.add_sample_frame("a.py(1): f"), e) || !succeeded(w.add_sample_frame("[k] b"), e) ||
        !succeeded(w.add_sample_stack({0}), e) || !succeeded(w.add_sample_stack({1}), e))
      return false;
    if (!succeeded(w.append_events(ev.data(), 6), e) || !succeeded(w.append_entry_stack(0, 0), e) ||
        !succeeded(w.append_samples(s.data(), 2), e) || !succeeded(w.append_sample_kernel_stack(0, 1), e) || !succeeded(w.flush(), e))
      return false;
    if (!succeeded(w.append_entry_stack(3, 0), e) || !succeeded(w.flush(), e)) return false;  // after its event's chunk
    return succeeded(w.append_events(ev.data() + 6, 3), e) && succeeded(w.add_sample_stack({0, 1}), e) &&
           succeeded(w.append_entry_stack(6, 2), e) && succeeded(w.append_samples(s.data() + 2, 1), e) &&
           succeeded(w.append_sample_kernel_stack(2, 2), e);  // buffered only
  };
  ASSERT_NO_FATAL_FAILURE(write_then_sigkill(stack_options(997), write));
  std::string err;
  auto rec = noting_error(read_recording(path_), &err);
  ASSERT_TRUE(rec.has_value()) << err;
  EXPECT_FALSE(rec->complete);
  EXPECT_TRUE(same_events(rec->events, first_n(ev, 6)));
  EXPECT_EQ(rec->sample_stacks, (std::vector<std::vector<uint32_t>>{{0}, {1}}));
  EXPECT_EQ(rec->entry_stacks, (std::vector<EntryStack>{{0, 0}, {3, 0}}));
  EXPECT_EQ(rec->samples, first_n(s, 2));
  EXPECT_EQ(rec->sample_kernel_stacks, (std::vector<SampleKernelStack>{{0, 1}}));
}

// ---- CUDA kernel launches (traced with the ops) ----

// A LAUNCH_NAMES payload: names numbered from first_id.
Bytes launch_names_payload(uint32_t first_id, const std::vector<std::string>& names) {
  Bytes b;
  b.u32(first_id).u32(static_cast<uint32_t>(names.size()));
  for (const std::string& n : names) b.str(n);
  return b;
}
// A LAUNCHES payload: 64 bytes a launch, reserved fields 0.
Bytes launches_payload(const std::vector<CudaLaunch>& launches) {
  Bytes b;
  for (const CudaLaunch& l : launches) {
    b.u64(l.ts_ns).u64(l.function).u64(l.stream);
    for (uint32_t g : l.grid) b.u32(g);
    for (uint32_t k : l.block) b.u32(k);
    b.u32(l.tid).put(l.api).put(uint16_t{0}).u32(l.name_id).u32(0);
  }
  return b;
}
Bytes cuda_runtime_payload(const CudaRuntimeInfo& c) {
  return Bytes().str(c.libcudart_path).u32(c.entry_points).u64(c.launches_lost);
}
// The STATS payload of sample_stats().
Bytes sample_stats_payload(uint32_t version = 2) {
  RecordStats s = sample_stats();
  Bytes b;
  b.u64(s.events_recorded).u64(s.events_lost).u32(s.entry_probes).u32(s.exit_probes);
  b.u32(s.ops_without_exit).str(s.stop_reason).u64(s.mem_events_lost).u64(s.shapes_unknown);
  b.str(s.tensor_layout).u64(s.samples_lost);
  if (version >= 3) {
    b.u64(s.symbols_unresolved).u32(static_cast<uint32_t>(s.problems.size()));
    for (const std::string& problem : s.problems) b.str(problem);
  }
  return b;
}
Bytes written_stats_payload() { return sample_stats_payload(GP_RECORD_FORMAT_VERSION); }
CudaRuntimeInfo sample_cuda_runtime() {
  return {"/usr/local/cuda/lib64/libcudart.so.12.1.105", 6, 3};
}
// n launches over `names` names, distinct per `seed`, of every api.
std::vector<CudaLaunch> make_launches(size_t n, uint32_t names, uint32_t seed = 0) {
  std::vector<CudaLaunch> v(n);
  for (size_t i = 0; i < n; ++i) {
    const uint32_t k = static_cast<uint32_t>(i);
    v[i] = {8'000'000'000ULL + seed * 1000003ULL + i * 101,
            0x7f1200000000ULL + (k % 7) * 0x40,
            i % 4 == 0 ? 0 : 0x55550000ULL + seed,
            {k % 1024 + 1, 2, 1},
            {128, seed % 4 + 1, 1},
            200 + seed + k % 2,
            static_cast<uint16_t>(k % 5 + 1),  // every api, driver ones too
            (k * 5 + seed) % names};
  }
  return v;
}

TEST_F(RecordFileTest, LaunchWriterOutputMatchesTheDocumentedLayout) {
  // A flush writes LAUNCH_NAMES, then LAUNCHES, after every other chunk;
  // finish() writes CUDA_RUNTIME right before STATS.
  std::string err;
  RecordWriter w = must_create();
  ASSERT_TRUE(succeeded(w.begin(sample_process(), sample_clock(), sample_ops(), sampled_options(99)), &err))
      << err;
  std::vector<gp_event> ev = make_events(3);
  ASSERT_TRUE(succeeded(w.append_events(ev.data(), ev.size()), &err)) << err;
  ASSERT_TRUE(succeeded(w.add_sample_frame("[k] do_syscall_64"), &err)) << err;
  ASSERT_TRUE(succeeded(w.add_sample_stack({0}), &err)) << err;
  std::vector<CpuSample> samples = {{10, 7, 0, true}};
  ASSERT_TRUE(succeeded(w.append_samples(samples.data(), samples.size()), &err)) << err;
  ASSERT_TRUE(succeeded(w.append_sample_kernel_stack(0, 0), &err)) << err;
  EXPECT_EQ(w.launch_names_defined(), 0u);
  ASSERT_TRUE(succeeded(w.add_launch_name("void at::native::kernel<float>(float*)"), &err)) << err;
  ASSERT_TRUE(succeeded(w.add_launch_name("[CUDA graph]"), &err)) << err;
  EXPECT_EQ(w.launch_names_defined(), 2u);
  std::vector<CudaLaunch> launches = {
      {100, 0x7f0000001000, 0, {4, 1, 1}, {256, 1, 1}, 7, GP_LAUNCH_KERNEL, 0},
      {200, 0x5500aa00, 0x7f00beef, {0, 0, 0}, {0, 0, 0}, 8, GP_LAUNCH_GRAPH, 1},
      {300, 0x7f0000001000, 0x7f00beef, {1, 2, 3}, {32, 4, 2}, 7, GP_LAUNCH_KERNEL_EXC, 0}};
  ASSERT_TRUE(succeeded(w.append_launches(launches.data(), launches.size()), &err)) << err;
  ASSERT_TRUE(succeeded(w.flush(), &err)) << err;
  std::vector<uint8_t> expect = written_sampled_prefix(0, 99);
  expect = cat(expect, written_events(ev));
  expect =
      cat(expect, chunk_of(ChunkType::SAMPLE_FRAMES, frames_payload(0, {"[k] do_syscall_64"})));
  expect = cat(expect, written_of(ChunkType::SAMPLE_STACKS, stacks_payload(0, {{0}})));
  expect = cat(expect, written_of(ChunkType::SAMPLES, samples_payload(samples)));
  expect = cat(expect, written_of(ChunkType::SAMPLE_KERNEL_STACKS, kernel_stacks_payload({{0, 0}})));
  expect = cat(expect, written_of(ChunkType::LAUNCH_NAMES,
                                launch_names_payload(0, {"void at::native::kernel<float>(float*)",
                                                         "[CUDA graph]"})));
  expect = cat(expect, written_of(ChunkType::LAUNCHES, launches_payload(launches)));
  EXPECT_EQ(read_bytes(path_), expect);
  EXPECT_EQ(w.bytes_written(), expect.size());
  // The launch layout by offset: ts, function, stream, grid, block, tid, api,
  // reserved, name_id, reserved.
  const size_t second = expect.size() - 64 * 2;
  uint16_t api;
  uint32_t name_id, grid0;
  std::memcpy(&api, &expect[second + 52], 2);
  std::memcpy(&name_id, &expect[second + 56], 4);
  std::memcpy(&grid0, &expect[second + 64 + 24], 4);
  EXPECT_EQ(api, GP_LAUNCH_GRAPH);
  EXPECT_EQ(name_id, 1u);
  EXPECT_EQ(grid0, 1u);
  // Names only: the next ids, and no LAUNCHES chunk. The last CUDA runtime
  // set wins.
  ASSERT_TRUE(succeeded(w.add_launch_name("[unknown kernel 0x1234]"), &err)) << err;
  CudaRuntimeInfo first{"/old/libcudart.so", 1, 0};
  ASSERT_TRUE(succeeded(w.set_cuda_runtime(first), &err)) << err;
  ASSERT_TRUE(succeeded(w.set_cuda_runtime(sample_cuda_runtime()), &err)) << err;
  EXPECT_EQ(w.bytes_written(), expect.size());  // nothing written before finish
  ASSERT_TRUE(succeeded(w.finish(sample_stats(), 9), &err)) << err;
  expect = cat(expect, written_of(ChunkType::LAUNCH_NAMES,
                                launch_names_payload(2, {"[unknown kernel 0x1234]"})));
  expect =
      cat(expect, chunk_of(ChunkType::CUDA_RUNTIME, cuda_runtime_payload(sample_cuda_runtime())));
  expect = cat(expect, written_of(ChunkType::STATS, written_stats_payload()));
  expect = cat(expect, written_of(ChunkType::END, Bytes().u64(9)));
  EXPECT_EQ(read_bytes(path_), expect);
  auto rec = noting_error(read_recording_bytes(expect, "f"), &err);
  ASSERT_TRUE(rec.has_value()) << err;
  EXPECT_TRUE(rec->complete);
  EXPECT_EQ(rec->launches, launches);
  EXPECT_EQ(rec->launch_names,
            (std::vector<std::string>{"void at::native::kernel<float>(float*)", "[CUDA graph]",
                                      "[unknown kernel 0x1234]"}));
  ASSERT_TRUE(rec->cuda_runtime.has_value());
  EXPECT_EQ(*rec->cuda_runtime, sample_cuda_runtime());
  EXPECT_EQ(rec->stats, sample_stats());
  EXPECT_EQ(rec->samples, samples);
}

TEST_F(RecordFileTest, RoundTripsCudaLaunchesAcrossFlushesAndChunks) {
  std::string err;
  RecordWriter w = must_create();
  ASSERT_TRUE(succeeded(w.begin(sample_process(), sample_clock(), sample_ops()), &err)) << err;
  std::vector<std::string> names;
  std::vector<CudaLaunch> all;
  auto define = [&](uint32_t n) {
    for (uint32_t i = 0; i < n; ++i) {
      EXPECT_EQ(w.launch_names_defined(), names.size());
      names.push_back("void ns::kernel_" + std::to_string(names.size()) + "<float>(float*)");
      ASSERT_TRUE(succeeded(w.add_launch_name(names.back()), &err)) << err;
    }
  };
  auto launch = [&](size_t n, uint32_t seed) {
    std::vector<CudaLaunch> l = make_launches(n, static_cast<uint32_t>(names.size()), seed);
    ASSERT_TRUE(succeeded(w.append_launches(l.data(), l.size()), &err)) << err;
    all.insert(all.end(), l.begin(), l.end());
  };
  std::vector<gp_event> ev = make_events(6);
  ASSERT_TRUE(succeeded(w.append_events(ev.data(), ev.size()), &err)) << err;
  define(3);
  launch(10, 0);
  ASSERT_TRUE(succeeded(w.flush(), &err)) << err;
  define(2);  // ids 3, 4: defined in a later flush
  launch(5, 1);
  ASSERT_TRUE(succeeded(w.flush(), &err)) << err;
  ASSERT_TRUE(succeeded(w.append_launches(nullptr, 0), &err)) << err;
  const uint64_t idle = w.bytes_written();
  ASSERT_TRUE(succeeded(w.flush(), &err)) << err;  // nothing pending: no chunk
  EXPECT_EQ(w.bytes_written(), idle);
  // 2500 launches: two full chunks of 1024 go out at once (with the pending
  // names before them), 452 stay buffered.
  define(1);  // "void ns::kernel_5<float>(float*)": 32 bytes
  const uint64_t before = w.bytes_written();
  launch(2500, 2);
  EXPECT_EQ(chunks_since(path_, before),
            (ChunkItems{{ChunkType::LAUNCH_NAMES, 1}, {ChunkType::LAUNCHES, 1024}, {ChunkType::LAUNCHES, 1024}}));
  // Enough name definitions to go out on their own (64 KiB) without a flush.
  const uint64_t before_names = w.bytes_written();
  define(2500);
  EXPECT_GT(w.bytes_written(), before_names);
  launch(100, 3);
  EXPECT_EQ(w.launch_names_defined(), names.size());
  ASSERT_TRUE(succeeded(w.set_cuda_runtime(sample_cuda_runtime()), &err)) << err;
  ASSERT_TRUE(succeeded(w.finish(sample_stats(), 11), &err)) << err;

  auto rec = noting_error(read_recording(path_), &err);
  ASSERT_TRUE(rec.has_value()) << err;
  EXPECT_TRUE(rec->complete);
  EXPECT_TRUE(same_events(rec->events, ev));
  EXPECT_EQ(rec->launch_names, names);
  ASSERT_EQ(rec->launches.size(), all.size());
  EXPECT_EQ(rec->launches, all);
  ASSERT_TRUE(rec->cuda_runtime.has_value());
  EXPECT_EQ(*rec->cuda_runtime, sample_cuda_runtime());
  EXPECT_EQ(rec->stats, sample_stats());
  // Every api and every name id survive.
  size_t graphs = 0;
  for (const CudaLaunch& l : rec->launches) graphs += l.api == GP_LAUNCH_GRAPH;
  EXPECT_GT(graphs, 0u);
  EXPECT_LT(graphs, all.size());
  // The in-memory reader agrees.
  auto mem = noting_error(read_recording_bytes(read_bytes(path_)), &err);
  ASSERT_TRUE(mem.has_value()) << err;
  EXPECT_EQ(mem->launches, all);
}

TEST_F(RecordFileTest, LaunchesWithoutCudaRuntimeReadAsNullopt) {
  std::string err;
  {
    RecordWriter w = must_create();
    ASSERT_TRUE(succeeded(w.begin(sample_process(), sample_clock(), sample_ops()), &err)) << err;
    ASSERT_TRUE(succeeded(w.add_launch_name("k"), &err)) << err;
    std::vector<CudaLaunch> l = make_launches(4, 1);
    ASSERT_TRUE(succeeded(w.append_launches(l.data(), l.size()), &err)) << err;
    ASSERT_TRUE(succeeded(w.finish(sample_stats(), 1), &err)) << err;
  }
  auto rec = noting_error(read_recording(path_), &err);
  ASSERT_TRUE(rec.has_value()) << err;
  EXPECT_TRUE(rec->complete);
  EXPECT_EQ(rec->launches, make_launches(4, 1));
  EXPECT_EQ(rec->launch_names, std::vector<std::string>{"k"});
  EXPECT_EQ(rec->cuda_runtime, std::nullopt);
  // Nor does a recording without launches, or a file without any of the
  // three chunks (an earlier version 2 build's).
  auto bare = noting_error(read_recording_bytes(v2_prefix(0), "f"), &err);
  ASSERT_TRUE(bare.has_value()) << err;
  EXPECT_TRUE(bare->launches.empty() && bare->launch_names.empty());
  EXPECT_EQ(bare->cuda_runtime, std::nullopt);
  // A CUDA runtime that probed nothing (no libcudart mapped) is still there.
  auto empty = noting_error(read_recording_bytes(
      cat(v2_prefix(0), chunk_of(ChunkType::CUDA_RUNTIME, cuda_runtime_payload({}))), "f"), &err);
  ASSERT_TRUE(empty.has_value()) << err;
  ASSERT_TRUE(empty->cuda_runtime.has_value());
  EXPECT_EQ(*empty->cuda_runtime, CudaRuntimeInfo{});
  // Types 16..18 meant nothing in version 1: skipped like any unknown chunk.
  std::vector<uint8_t> v1 = encode_record_header(1);
  v1 = cat(v1, chunk_of(ChunkType::PROCESS, process_payload()));
  v1 = cat(v1, chunk_of(ChunkType::CLOCK, clock_payload()));
  v1 = cat(v1, chunk_of(ChunkType::OP_TABLE, ops_payload({}, 1)));
  v1 = cat(v1, chunk_of(ChunkType::LAUNCH_NAMES, std::vector<uint8_t>{1}));
  v1 = cat(v1, chunk_of(ChunkType::LAUNCHES, std::vector<uint8_t>{2}));
  v1 = cat(v1, chunk_of(ChunkType::CUDA_RUNTIME, std::vector<uint8_t>{3}));
  auto old = noting_error(read_recording_bytes(v1, "old"), &err);
  ASSERT_TRUE(old.has_value()) << err;
  EXPECT_TRUE(old->launches.empty() && old->launch_names.empty());
  EXPECT_EQ(old->cuda_runtime, std::nullopt);
}

TEST_F(RecordFileTest, WriterRefusesLaunchesTheReaderWouldReject) {
  std::string err;
  CudaLaunch l = make_launches(1, 1)[0];
  RecordWriter w = must_create();
  EXPECT_FALSE(succeeded(w.add_launch_name("a"), &err));
  EXPECT_EQ(err, path_ + ": add_launch_name called out of order (internal error)");
  EXPECT_FALSE(succeeded(w.append_launches(&l, 1), &err));
  EXPECT_EQ(err, path_ + ": append_launches called out of order (internal error)");
  EXPECT_FALSE(succeeded(w.set_cuda_runtime(sample_cuda_runtime()), &err));
  EXPECT_EQ(err, path_ + ": set_cuda_runtime called out of order (internal error)");
  // A --no-ops recording has no launches.
  ASSERT_TRUE(succeeded(w.begin(sample_process(), sample_clock(), {}, sampled_options(49, false)), &err))
      << err;
  EXPECT_FALSE(succeeded(w.add_launch_name("a"), &err));
  EXPECT_EQ(err, path_ +
                     ": not defining launch name 0: the recording was begun without ops (no-ops "
                     "option)");
  EXPECT_EQ(w.launch_names_defined(), 0u);
  EXPECT_FALSE(succeeded(w.append_launches(&l, 1), &err));
  EXPECT_EQ(err, path_ +
                     ": not recording launches: the recording was begun without ops (no-ops "
                     "option)");
  EXPECT_FALSE(succeeded(w.set_cuda_runtime(sample_cuda_runtime()), &err));
  EXPECT_EQ(err, path_ +
                     ": not recording the CUDA runtime: the recording was begun without ops "
                     "(no-ops option)");
  ASSERT_TRUE(succeeded(w.append_launches(&l, 0), &err)) << err;  // an empty batch is fine
  // Still usable: samples go on, and nothing of the launches reaches the file.
  ASSERT_TRUE(succeeded(w.add_sample_frame("f"), &err)) << err;
  CpuSample s{1, 2, 0, false};
  ASSERT_TRUE(succeeded(w.append_samples(&s, 1), &err)) << err;
  ASSERT_TRUE(succeeded(w.finish(sample_stats(), 1), &err)) << err;
  auto rec = noting_error(read_recording(path_), &err);
  ASSERT_TRUE(rec.has_value()) << err;
  EXPECT_TRUE(rec->launches.empty() && rec->launch_names.empty());
  EXPECT_EQ(rec->cuda_runtime, std::nullopt);
  EXPECT_EQ(rec->samples, std::vector<CpuSample>{s});

  // With ops: a bad api or an undefined name_id refuses the whole batch.
  std::string path2 = dir_ + "/launches.gpuprof";
  auto w2 = noting_error(RecordWriter::create(path2), &err);
  ASSERT_TRUE(w2.has_value()) << err;
  ASSERT_TRUE(succeeded(w2->begin(sample_process(), sample_clock(), sample_ops()), &err)) << err;
  const uint64_t begun = w2->bytes_written();
  l.name_id = 0;
  EXPECT_FALSE(succeeded(w2->append_launches(&l, 1), &err));
  EXPECT_EQ(err, path2 +
                     ": not recording launch 0 of the batch: name_id 0, but 0 launch names "
                     "are defined");
  ASSERT_TRUE(succeeded(w2->add_launch_name("a"), &err)) << err;
  ASSERT_TRUE(succeeded(w2->add_launch_name("b"), &err)) << err;
  std::vector<CudaLaunch> batch = make_launches(3, 2);
  batch[1].api = 0;
  EXPECT_FALSE(succeeded(w2->append_launches(batch.data(), batch.size()), &err));
  EXPECT_EQ(err, path2 + ": not recording launch 1 of the batch: api 0 (expected 1..5)");
  batch[1].api = 6;
  EXPECT_FALSE(succeeded(w2->append_launches(batch.data(), batch.size()), &err));
  EXPECT_EQ(err, path2 + ": not recording launch 1 of the batch: api 6 (expected 1..5)");
  batch[1].api = GP_LAUNCH_GRAPH;
  batch[2].name_id = 2;
  EXPECT_FALSE(succeeded(w2->append_launches(batch.data(), batch.size()), &err));
  EXPECT_EQ(err, path2 +
                     ": not recording launch 2 of the batch: name_id 2, but 2 launch names "
                     "are defined");
  // Nothing of the refused batches was buffered: a flush writes the names
  // alone.
  ASSERT_TRUE(succeeded(w2->flush(), &err)) << err;
  EXPECT_EQ(w2->bytes_written(), begun + kRecordChunkHeaderSize + 8 + 2 * (4 + 1));
  auto part = noting_error(read_recording(path2), &err);
  ASSERT_TRUE(part.has_value()) << err;
  EXPECT_TRUE(part->launches.empty());
  EXPECT_EQ(part->launch_names, (std::vector<std::string>{"a", "b"}));
  // ... and the writer is still usable.
  ASSERT_TRUE(succeeded(w2->add_launch_name("c"), &err)) << err;
  ASSERT_TRUE(succeeded(w2->append_launches(batch.data(), batch.size()), &err)) << err;
  ASSERT_TRUE(succeeded(w2->set_cuda_runtime(sample_cuda_runtime()), &err)) << err;
  ASSERT_TRUE(succeeded(w2->finish(sample_stats(), 1), &err)) << err;
  rec = noting_error(read_recording(path2), &err);
  ASSERT_TRUE(rec.has_value()) << err;
  EXPECT_EQ(rec->launches, batch);
  EXPECT_EQ(rec->launch_names, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(rec->cuda_runtime, sample_cuda_runtime());
}

TEST_F(RecordFileTest, CorruptLaunchNamesLaunchesAndCudaRuntimeAreRejected) {
  std::string err;
  const std::vector<uint8_t> prefix = v2_prefix(0);
  const std::vector<CudaLaunch> one = {
      {1, 0x1000, 0, {1, 1, 1}, {32, 1, 1}, 7, GP_LAUNCH_KERNEL, 0}};
  // All three need the ops: refused in a --no-ops recording, sampled or not.
  for (const std::vector<uint8_t>& no_ops : {v2_prefix(8), v2_sampled_prefix(8, 49)}) {
    expect_error(cat(no_ops, chunk_of(ChunkType::LAUNCHES, std::vector<uint8_t>{})),
                 "f: corrupt chunk 5 (LAUNCHES)" + at_offset(no_ops) +
                     "LAUNCHES chunk in a recording without ops (the no-ops option)");
    expect_error(cat(no_ops, chunk_of(ChunkType::LAUNCH_NAMES, launch_names_payload(0, {"a"}))),
                 "f: corrupt chunk 5 (LAUNCH_NAMES)" + at_offset(no_ops) +
                     "LAUNCH_NAMES chunk in a recording without ops (the no-ops option)");
    expect_error(
        cat(no_ops, chunk_of(ChunkType::CUDA_RUNTIME, cuda_runtime_payload(sample_cuda_runtime()))),
        "f: corrupt chunk 5 (CUDA_RUNTIME)" + at_offset(no_ops) +
            "CUDA_RUNTIME chunk in a recording without ops (the no-ops option)");
  }
  // ... and come after the mandatory chunks, before STATS.
  const std::vector<uint8_t> no_options = v2_prefix_without_options();
  expect_error(cat(no_options, chunk_of(ChunkType::LAUNCHES, std::vector<uint8_t>{})),
               "f: corrupt chunk 4 (LAUNCHES)" + at_offset(no_options) +
                   "LAUNCHES chunk before the PROCESS, CLOCK, OP_TABLE and OPTIONS chunks");
  const std::vector<uint8_t> with_stats =
      cat(prefix, chunk_of(ChunkType::STATS, sample_stats_payload()));
  expect_error(cat(with_stats, chunk_of(ChunkType::LAUNCH_NAMES, launch_names_payload(0, {}))),
               "f: corrupt chunk 6 (LAUNCH_NAMES)" + at_offset(with_stats) +
                   "LAUNCH_NAMES chunk after the STATS chunk");
  expect_error(cat(with_stats,
                   chunk_of(ChunkType::CUDA_RUNTIME, cuda_runtime_payload(sample_cuda_runtime()))),
               "f: corrupt chunk 6 (CUDA_RUNTIME)" + at_offset(with_stats) +
                   "CUDA_RUNTIME chunk after the STATS chunk");
  // LAUNCH_NAMES: sequential ids, a count that fits, exact length.
  auto names_file = [&](const Bytes& payload) {
    return cat(prefix, chunk_of(ChunkType::LAUNCH_NAMES, payload));
  };
  const std::string n5 = "f: corrupt chunk 5 (LAUNCH_NAMES)" + at_offset(prefix);
  expect_error(names_file(launch_names_payload(1, {"a"})),
               n5 + "first_id 1, but 0 launch names are defined");
  const std::vector<uint8_t> two = names_file(launch_names_payload(0, {"a", "b"}));
  const std::string n6 = "f: corrupt chunk 6 (LAUNCH_NAMES)" + at_offset(two);
  expect_error(cat(two, chunk_of(ChunkType::LAUNCH_NAMES, launch_names_payload(0, {"c"}))),
               n6 + "first_id 0, but 2 launch names are defined");
  expect_error(cat(two, chunk_of(ChunkType::LAUNCH_NAMES, launch_names_payload(3, {"c"}))),
               n6 + "first_id 3, but 2 launch names are defined");
  auto three = noting_error(read_recording_bytes(
      cat(two, chunk_of(ChunkType::LAUNCH_NAMES, launch_names_payload(2, {"c"}))), "f"), &err);
  ASSERT_TRUE(three.has_value()) << err;
  EXPECT_EQ(three->launch_names, (std::vector<std::string>{"a", "b", "c"}));
  expect_error(names_file(Bytes().u32(0).u32(2).str("a")),
               n5 + "launch name count 2 does not fit the payload");
  expect_error(names_file(Bytes().u32(0).u32(1).u32(5).u32(0)), n5 + "payload too short");
  expect_error(names_file(Bytes().u32(0)), n5 + "payload too short");
  expect_error(names_file(launch_names_payload(0, {"a"}).u32(0)),
               n5 + "4 unexpected trailing payload bytes");
  // LAUNCHES: whole 64-byte launches of a known api, naming defined names,
  // reserved fields 0.
  auto launches_file = [&](const std::vector<uint8_t>& payload) {
    return cat(two, chunk_of(ChunkType::LAUNCHES, payload));
  };
  const std::string l6 = "f: corrupt chunk 6 (LAUNCHES)" + at_offset(two);
  std::vector<CudaLaunch> good = make_launches(3, 2);
  auto ok = noting_error(read_recording_bytes(launches_file(launches_payload(good).b), "f"), &err);
  ASSERT_TRUE(ok.has_value()) << err;
  EXPECT_EQ(ok->launches, good);
  // Launches before their names.
  expect_error(cat(prefix, chunk_of(ChunkType::LAUNCHES, launches_payload(one))),
               "f: corrupt chunk 5 (LAUNCHES)" + at_offset(prefix) +
                   "launch 0 has name_id 0, but 0 launch names are defined");
  const std::vector<uint8_t> early =
      cat(prefix, chunk_of(ChunkType::LAUNCHES, launches_payload(one)));
  expect_error(cat(early, chunk_of(ChunkType::LAUNCH_NAMES, launch_names_payload(0, {"a"}))),
               "f: corrupt chunk 5 (LAUNCHES)" + at_offset(prefix) +
                   "launch 0 has name_id 0, but 0 launch names are defined");
  // A name_id out of range.
  std::vector<CudaLaunch> bad = good;
  bad[1].name_id = 2;
  expect_error(launches_file(launches_payload(bad).b),
               l6 + "launch 1 has name_id 2, but 2 launch names are defined");
  bad[1].name_id = UINT32_MAX;
  expect_error(launches_file(launches_payload(bad).b),
               l6 + "launch 1 has name_id 4294967295, but 2 launch names are defined");
  // A bad api.
  bad = good;
  for (uint16_t api : {uint16_t{0}, uint16_t{6}, uint16_t{0xffff}}) {
    bad[2].api = api;
    expect_error(launches_file(launches_payload(bad).b),
                 l6 + "launch 2 has api " + std::to_string(api) + " (expected 1..5)");
  }
  // Non-zero reserved fields (bytes 54..55 and 60..63 of a launch).
  std::vector<uint8_t> reserved = launches_payload(good).b;
  reserved[64 + 55] = 0x80;
  expect_error(launches_file(reserved),
               l6 + "launch 1 has reserved field 0x8000 at byte 54 (must be 0)");
  reserved = launches_payload(good).b;
  reserved[2 * 64 + 60] = 1;
  expect_error(launches_file(reserved),
               l6 + "launch 2 has reserved field 0x1 at byte 60 (must be 0)");
  reserved = launches_payload(good).b;
  reserved[63] = 0xff;
  expect_error(launches_file(reserved),
               l6 + "launch 0 has reserved field 0xff000000 at byte 60 (must be 0)");
  // Not a whole number of launches.
  expect_error(launches_file(std::vector<uint8_t>(65, 0)),
               l6 + "payload of 65 bytes is not a whole number of 64-byte launches");
  std::vector<uint8_t> short_launch = launches_payload(good).b;
  short_launch.pop_back();
  expect_error(launches_file(short_launch),
               l6 + "payload of 191 bytes is not a whole number of 64-byte launches");
  // CUDA_RUNTIME: at most once, exact length.
  const std::vector<uint8_t> runtime =
      cat(prefix, chunk_of(ChunkType::CUDA_RUNTIME, cuda_runtime_payload(sample_cuda_runtime())));
  auto rt = noting_error(read_recording_bytes(runtime, "f"), &err);
  ASSERT_TRUE(rt.has_value()) << err;
  EXPECT_EQ(rt->cuda_runtime, sample_cuda_runtime());
  expect_error(
      cat(runtime, chunk_of(ChunkType::CUDA_RUNTIME, cuda_runtime_payload({}))),
      "f: corrupt chunk 6 (CUDA_RUNTIME)" + at_offset(runtime) + "duplicate CUDA_RUNTIME chunk");
  const std::string r5 = "f: corrupt chunk 5 (CUDA_RUNTIME)" + at_offset(prefix);
  expect_error(cat(prefix, chunk_of(ChunkType::CUDA_RUNTIME, Bytes().str("x").u32(6))),
               r5 + "payload too short");
  expect_error(cat(prefix, chunk_of(ChunkType::CUDA_RUNTIME, Bytes().u32(100).u32(6).u64(0))),
               r5 + "payload too short");
  expect_error(cat(prefix, chunk_of(ChunkType::CUDA_RUNTIME,
                                    cuda_runtime_payload(sample_cuda_runtime()).u32(0))),
               r5 + "4 unexpected trailing payload bytes");
  // Empty LAUNCH_NAMES and LAUNCHES chunks are valid.
  auto empty = noting_error(read_recording_bytes(cat(names_file(launch_names_payload(0, {})),
                                                     chunk_of(ChunkType::LAUNCHES, std::vector<uint8_t>{})), "f"), &err);
  ASSERT_TRUE(empty.has_value()) << err;
  EXPECT_TRUE(empty->launches.empty() && empty->launch_names.empty());
}

// Cut a recording with launches at every byte: exactly the names and
// launches of the complete chunks, never a launch naming a missing name; a
// torn LAUNCHES chunk is reported and ignored; CUDA_RUNTIME only once its
// chunk is complete.
TEST_F(RecordFileTest, EveryTruncationOfARecordingWithLaunches) {
  std::string err;
  RecordWriter w = must_create();
  ASSERT_TRUE(succeeded(w.begin(sample_process(), sample_clock(), sample_ops()), &err)) << err;
  const uint64_t mandatory_end = w.bytes_written();
  for (uint32_t round = 0; round < 4; ++round) {
    for (uint32_t i = 0; i < round + 1; ++i)
      ASSERT_TRUE(succeeded(w.add_launch_name("k" + std::to_string(w.launch_names_defined())), &err)) << err;
    std::vector<gp_event> ev = make_events(3, round);
    ASSERT_TRUE(succeeded(w.append_events(ev.data(), ev.size()), &err)) << err;
    std::vector<CudaLaunch> l = make_launches(2 + round, w.launch_names_defined(), round);
    l.back().name_id = w.launch_names_defined() - 1;  // the newest name
    ASSERT_TRUE(succeeded(w.append_launches(l.data(), l.size()), &err)) << err;
    if (round != 1) {
      ASSERT_TRUE(succeeded(w.flush(), &err)) << err;
    }
  }
  ASSERT_TRUE(succeeded(w.set_cuda_runtime(sample_cuda_runtime()), &err)) << err;
  ASSERT_TRUE(succeeded(w.finish(sample_stats(), 5), &err)) << err;
  const std::vector<uint8_t> file = read_bytes(path_);
  auto full = noting_error(read_recording_bytes(file, "f"), &err);
  ASSERT_TRUE(full.has_value()) << err;
  ASSERT_EQ(full->launch_names.size(), 10u);
  ASSERT_EQ(full->launches.size(), 14u);
  ASSERT_EQ(full->events.size(), 12u);
  EXPECT_EQ(full->cuda_runtime, sample_cuda_runtime());

  const std::vector<Boundary> bounds = boundaries(file, mandatory_end);
  ASSERT_EQ(bounds.size(), 1u + 3 * 3 + 3);  // 3 flushes of 3 chunks, CUDA_RUNTIME, STATS, END
  // The offsets of the LAUNCHES chunks, for the cut inside the second one below.
  std::vector<uint64_t> launches_offsets;
  for (const ChunkHeader& c : chunk_headers(file, mandatory_end))
    if (c.type == ChunkType::LAUNCHES) launches_offsets.push_back(c.offset);
  ASSERT_GE(launches_offsets.size(), 2u);
  const uint64_t second_launches = launches_offsets[1];
  expect_every_cut_reads_the_complete_chunks(
      file, bounds, [&](const Recording& rec, const Boundary& last) {
        EXPECT_EQ(rec.events.size(), last.held(ChunkType::EVENTS));
        EXPECT_EQ(rec.launch_names,
                  first_n(full->launch_names, last.held(ChunkType::LAUNCH_NAMES)));
        EXPECT_EQ(rec.launches, first_n(full->launches, last.held(ChunkType::LAUNCHES)));
        EXPECT_EQ(rec.cuda_runtime.has_value(), last.held(ChunkType::CUDA_RUNTIME) > 0);
        for (const CudaLaunch& l : rec.launches) EXPECT_LT(l.name_id, rec.launch_names.size());
      });
  // Cut inside the second LAUNCHES chunk: the launches of the first chunk.
  const size_t cut = second_launches + 16 + 64 + 10;
  auto torn = noting_error(read_recording_bytes(std::span(file.data(), cut), "f"), &err);
  ASSERT_TRUE(torn.has_value()) << err;
  EXPECT_FALSE(torn->complete);
  EXPECT_EQ(torn->launches, first_n(full->launches, 2));
  EXPECT_EQ(torn->incomplete_reason,
            "no END chunk: the recorder did not finish (killed, or its disk full); ignored " +
                std::to_string(16 + 64 + 10) + " bytes of a torn chunk at offset " +
                std::to_string(second_launches));
  // And any single flipped byte: a clear error or an incomplete recording.
  expect_every_flipped_byte_is_caught(file);
}

// ---- GPU activities from the CUPTI shim (traced with the ops) ----

// A GPU_CORRELATIONS payload: 32 bytes a correlation, reserved field 0.
Bytes gpu_correlations_payload(const std::vector<GpuCorrelation>& correlations) {
  Bytes b;
  for (const GpuCorrelation& c : correlations)
    b.u64(c.ts_ns).u64(c.correlation_id).u32(c.tid).u32(c.cbid).u32(c.domain).u32(0);
  return b;
}
// A GPU_ACTIVITIES payload: 48 bytes an activity, reserved field 0.
Bytes gpu_activities_payload(const std::vector<GpuActivity>& activities) {
  Bytes b;
  for (const GpuActivity& a : activities) {
    b.u64(a.start_ns).u64(a.end_ns).u64(a.correlation_id).u64(a.bytes).u32(a.device);
    b.u32(a.stream).put(static_cast<uint16_t>(a.kind)).put(uint16_t{0}).u32(a.name_id);
  }
  return b;
}
Bytes cupti_shim_payload(const CuptiShimInfo& s) {
  return Bytes().str(s.shim_path).u32(s.state).u64(s.records_dropped).u64(s.events_lost);
}
CuptiShimInfo sample_cupti_shim() {
  return {"/opt/gpuprof/lib/libgpuprof_cupti.so", 1, 7, 2};
}
// n correlations of both domains, distinct per `seed`.
std::vector<GpuCorrelation> make_gpu_correlations(size_t n, uint32_t seed = 0) {
  std::vector<GpuCorrelation> v(n);
  for (size_t i = 0; i < n; ++i) {
    const uint32_t k = static_cast<uint32_t>(i);
    v[i] = {9'000'000'000ULL + seed * 1000003ULL + i * 37, 100'000ULL * seed + i + 1,
            300 + seed + k % 3, k % 2 ? 211u : 13u, k % 2 + 1};
  }
  return v;
}
// n activities of every kind over `names` names, distinct per `seed`; some
// take no time (end_ns == start_ns).
std::vector<GpuActivity> make_gpu_activities(size_t n, uint32_t names, uint32_t seed = 0) {
  std::vector<GpuActivity> v(n);
  for (size_t i = 0; i < n; ++i) {
    const uint32_t k = static_cast<uint32_t>(i);
    GpuActivity& a = v[i];
    a.kind = static_cast<GpuActivityKind>(k % 3 + 1);
    a.start_ns = 9'500'000'000ULL + seed * 1000003ULL + i * 53;
    a.end_ns = a.start_ns + (k % 5) * 1000;
    a.correlation_id = 100'000ULL * seed + i + 1;
    a.bytes = a.kind == GpuActivityKind::kernel   ? 0
              : a.kind == GpuActivityKind::memcpy ? (uint64_t{k % 4 + 1} << 56) | (4096 + k)
                                                  : 4096 + k;
    a.device = seed % 2;
    a.stream = 7 + k % 3;
    a.name_id = (k * 3 + seed) % names;
  }
  return v;
}

TEST_F(RecordFileTest, GpuWriterOutputMatchesTheDocumentedLayout) {
  // A flush writes GPU_CORRELATIONS, then GPU_ACTIVITIES, after LAUNCHES,
  // with the pending LAUNCH_NAMES before both; finish() writes CUPTI_SHIM
  // after CUDA_RUNTIME, right before STATS.
  std::string err;
  RecordWriter w = must_create();
  ASSERT_TRUE(succeeded(w.begin(sample_process(), sample_clock(), sample_ops()), &err)) << err;
  std::vector<gp_event> ev = make_events(3);
  ASSERT_TRUE(succeeded(w.append_events(ev.data(), ev.size()), &err)) << err;
  ASSERT_TRUE(succeeded(w.add_launch_name("void at::native::kernel<float>(float*)"), &err)) << err;
  std::vector<CudaLaunch> launches = {
      {100, 0x7f0000001000, 0, {4, 1, 1}, {256, 1, 1}, 7, GP_LAUNCH_KERNEL, 0}};
  ASSERT_TRUE(succeeded(w.append_launches(launches.data(), launches.size()), &err)) << err;
  ASSERT_TRUE(succeeded(w.add_launch_name("[memcpy HtoD]"), &err)) << err;  // named by an activity only
  std::vector<GpuCorrelation> correlations = {{101, 41, 7, 211, 2}, {150, 42, 8, 13, 1}};
  ASSERT_TRUE(succeeded(w.append_gpu_correlations(correlations.data(), correlations.size()), &err)) << err;
  std::vector<GpuActivity> activities = {
      {120, 180, 41, 0, 0, 7, GpuActivityKind::kernel, 0},
      {160, 160, 42, (uint64_t{1} << 56) | 4096, 1, 13, GpuActivityKind::memcpy, 1}};
  ASSERT_TRUE(succeeded(w.append_gpu_activities(activities.data(), activities.size()), &err)) << err;
  ASSERT_TRUE(succeeded(w.flush(), &err)) << err;
  std::vector<uint8_t> expect = written_prefix(0);
  expect = cat(expect, written_events(ev));
  expect = cat(expect, written_of(ChunkType::LAUNCH_NAMES,
                                launch_names_payload(0, {"void at::native::kernel<float>(float*)",
                                                         "[memcpy HtoD]"})));
  expect = cat(expect, written_of(ChunkType::LAUNCHES, launches_payload(launches)));
  expect =
      cat(expect, chunk_of(ChunkType::GPU_CORRELATIONS, gpu_correlations_payload(correlations)));
  const size_t correlations_at = expect.size() - 32 * 2;
  expect = cat(expect, written_of(ChunkType::GPU_ACTIVITIES, gpu_activities_payload(activities)));
  const size_t activities_at = expect.size() - 48 * 2;
  EXPECT_EQ(read_bytes(path_), expect);
  EXPECT_EQ(w.bytes_written(), expect.size());
  // The layouts by offset. A correlation: ts, correlation_id, tid, cbid,
  // domain, reserved.
  uint64_t correlation_id;
  uint32_t cbid, domain, reserved32;
  std::memcpy(&correlation_id, &expect[correlations_at + 8], 8);
  std::memcpy(&cbid, &expect[correlations_at + 20], 4);
  std::memcpy(&domain, &expect[correlations_at + 24], 4);
  std::memcpy(&reserved32, &expect[correlations_at + 28], 4);
  EXPECT_EQ(correlation_id, 41u);
  EXPECT_EQ(cbid, 211u);
  EXPECT_EQ(domain, 2u);
  EXPECT_EQ(reserved32, 0u);
  // An activity: start, end, correlation_id, bytes, device, stream, kind,
  // reserved, name_id.
  const size_t second = activities_at + 48;
  uint64_t end_ns, bytes;
  uint32_t device, stream, name_id;
  uint16_t kind, reserved16;
  std::memcpy(&end_ns, &expect[second + 8], 8);
  std::memcpy(&bytes, &expect[second + 24], 8);
  std::memcpy(&device, &expect[second + 32], 4);
  std::memcpy(&stream, &expect[second + 36], 4);
  std::memcpy(&kind, &expect[second + 40], 2);
  std::memcpy(&reserved16, &expect[second + 42], 2);
  std::memcpy(&name_id, &expect[second + 44], 4);
  EXPECT_EQ(end_ns, 160u);
  EXPECT_EQ(bytes, (uint64_t{1} << 56) | 4096);
  EXPECT_EQ(device, 1u);
  EXPECT_EQ(stream, 13u);
  EXPECT_EQ(kind, 2u);
  EXPECT_EQ(reserved16, 0u);
  EXPECT_EQ(name_id, 1u);
  // A new name and an activity naming it, without launches: LAUNCH_NAMES,
  // then GPU_ACTIVITIES. The last CUPTI shim set wins; it goes out after
  // CUDA_RUNTIME.
  ASSERT_TRUE(succeeded(w.add_launch_name("[memset]"), &err)) << err;
  std::vector<GpuActivity> later = {{200, 210, 43, 512, 0, 7, GpuActivityKind::memset, 2}};
  ASSERT_TRUE(succeeded(w.append_gpu_activities(later.data(), later.size()), &err)) << err;
  ASSERT_TRUE(succeeded(w.set_cupti_shim({"/old/libgpuprof_cupti.so", 2, 0, 0}), &err)) << err;
  ASSERT_TRUE(succeeded(w.set_cupti_shim(sample_cupti_shim()), &err)) << err;
  ASSERT_TRUE(succeeded(w.set_cuda_runtime(sample_cuda_runtime()), &err)) << err;
  EXPECT_EQ(w.bytes_written(), expect.size());  // nothing written before finish
  ASSERT_TRUE(succeeded(w.finish(sample_stats(), 9), &err)) << err;
  expect = cat(expect, written_of(ChunkType::LAUNCH_NAMES, launch_names_payload(2, {"[memset]"})));
  expect = cat(expect, written_of(ChunkType::GPU_ACTIVITIES, gpu_activities_payload(later)));
  expect =
      cat(expect, chunk_of(ChunkType::CUDA_RUNTIME, cuda_runtime_payload(sample_cuda_runtime())));
  expect = cat(expect, written_of(ChunkType::CUPTI_SHIM, cupti_shim_payload(sample_cupti_shim())));
  expect = cat(expect, written_of(ChunkType::STATS, written_stats_payload()));
  expect = cat(expect, written_of(ChunkType::END, Bytes().u64(9)));
  EXPECT_EQ(read_bytes(path_), expect);
  auto rec = noting_error(read_recording_bytes(expect, "f"), &err);
  ASSERT_TRUE(rec.has_value()) << err;
  EXPECT_TRUE(rec->complete);
  EXPECT_EQ(rec->launches, launches);
  EXPECT_EQ(rec->gpu_correlations, correlations);
  activities.push_back(later[0]);
  EXPECT_EQ(rec->gpu_activities, activities);
  EXPECT_EQ(rec->launch_names,
            (std::vector<std::string>{"void at::native::kernel<float>(float*)", "[memcpy HtoD]",
                                      "[memset]"}));
  EXPECT_EQ(rec->cupti_shim, sample_cupti_shim());
  EXPECT_EQ(rec->cuda_runtime, sample_cuda_runtime());
  EXPECT_EQ(rec->stats, sample_stats());
}

TEST_F(RecordFileTest, RoundTripsGpuCorrelationsAndActivitiesAcrossFlushesAndChunks) {
  std::string err;
  RecordWriter w = must_create();
  ASSERT_TRUE(succeeded(w.begin(sample_process(), sample_clock(), sample_ops()), &err)) << err;
  std::vector<std::string> names;
  std::vector<GpuCorrelation> correlations;
  std::vector<GpuActivity> activities;
  std::vector<CudaLaunch> launches;
  auto define = [&](uint32_t n) {
    for (uint32_t i = 0; i < n; ++i) {
      names.push_back("void ns::kernel_" + std::to_string(names.size()) + "<float>(float*)");
      ASSERT_TRUE(succeeded(w.add_launch_name(names.back()), &err)) << err;
    }
  };
  auto correlate = [&](size_t n, uint32_t seed) {
    std::vector<GpuCorrelation> c = make_gpu_correlations(n, seed);
    ASSERT_TRUE(succeeded(w.append_gpu_correlations(c.data(), c.size()), &err)) << err;
    correlations.insert(correlations.end(), c.begin(), c.end());
  };
  auto run = [&](size_t n, uint32_t seed) {
    std::vector<GpuActivity> a =
        make_gpu_activities(n, static_cast<uint32_t>(names.size()), seed);
    ASSERT_TRUE(succeeded(w.append_gpu_activities(a.data(), a.size()), &err)) << err;
    activities.insert(activities.end(), a.begin(), a.end());
  };
  define(3);
  correlate(10, 0);
  run(10, 0);
  std::vector<CudaLaunch> l = make_launches(4, 3);
  ASSERT_TRUE(succeeded(w.append_launches(l.data(), l.size()), &err)) << err;
  launches = l;
  ASSERT_TRUE(succeeded(w.flush(), &err)) << err;
  define(2);  // ids 3, 4: defined in a later flush, shared with launches
  run(5, 1);
  correlate(7, 1);
  ASSERT_TRUE(succeeded(w.flush(), &err)) << err;
  ASSERT_TRUE(succeeded(w.append_gpu_correlations(nullptr, 0), &err)) << err;
  ASSERT_TRUE(succeeded(w.append_gpu_activities(nullptr, 0), &err)) << err;
  const uint64_t idle = w.bytes_written();
  ASSERT_TRUE(succeeded(w.flush(), &err)) << err;  // nothing pending: no chunk
  EXPECT_EQ(w.bytes_written(), idle);
  // 2500 correlations: one full chunk of 2048 (64 KiB) goes out at once,
  // 452 stay buffered.
  uint64_t before = w.bytes_written();
  correlate(2500, 2);
  EXPECT_EQ(chunks_since(path_, before), (ChunkItems{{ChunkType::GPU_CORRELATIONS, 2048}}));
  // 3000 activities: two full chunks of 1366 (65,568 bytes) go out at once,
  // the pending name before them; 268 stay buffered.
  define(1);  // "void ns::kernel_5<float>(float*)": 32 bytes
  before = w.bytes_written();
  run(3000, 3);
  EXPECT_EQ(chunks_since(path_, before), (ChunkItems{{ChunkType::LAUNCH_NAMES, 1}, {ChunkType::GPU_ACTIVITIES, 1366},
                                                    {ChunkType::GPU_ACTIVITIES, 1366}}));
  define(1);
  run(100, 4);
  correlate(100, 4);
  ASSERT_TRUE(succeeded(w.set_cupti_shim(sample_cupti_shim()), &err)) << err;
  ASSERT_TRUE(succeeded(w.finish(sample_stats(), 11), &err)) << err;

  auto rec = noting_error(read_recording(path_), &err);
  ASSERT_TRUE(rec.has_value()) << err;
  EXPECT_TRUE(rec->complete);
  EXPECT_EQ(rec->launch_names, names);
  EXPECT_EQ(rec->launches, launches);
  ASSERT_EQ(rec->gpu_correlations.size(), correlations.size());
  EXPECT_EQ(rec->gpu_correlations, correlations);
  ASSERT_EQ(rec->gpu_activities.size(), activities.size());
  EXPECT_EQ(rec->gpu_activities, activities);
  EXPECT_EQ(rec->cupti_shim, sample_cupti_shim());
  EXPECT_EQ(rec->cuda_runtime, std::nullopt);
  EXPECT_EQ(rec->stats, sample_stats());
  // Every kind and both domains survive.
  std::map<GpuActivityKind, size_t> kinds;
  for (const GpuActivity& a : rec->gpu_activities) ++kinds[a.kind];
  EXPECT_EQ(kinds.size(), 3u);
  size_t driver = 0;
  for (const GpuCorrelation& c : rec->gpu_correlations) driver += c.domain == 1;
  EXPECT_GT(driver, 0u);
  EXPECT_LT(driver, correlations.size());
  // The in-memory reader agrees.
  auto mem = noting_error(read_recording_bytes(read_bytes(path_)), &err);
  ASSERT_TRUE(mem.has_value()) << err;
  EXPECT_EQ(mem->gpu_correlations, correlations);
  EXPECT_EQ(mem->gpu_activities, activities);
}

TEST_F(RecordFileTest, RecordingsWithoutTheCuptiShimReadWithoutGpuData) {
  std::string err;
  {
    RecordWriter w = must_create();
    ASSERT_TRUE(succeeded(w.begin(sample_process(), sample_clock(), sample_ops()), &err)) << err;
    ASSERT_TRUE(succeeded(w.add_launch_name("k"), &err)) << err;
    std::vector<GpuActivity> a = make_gpu_activities(4, 1);
    ASSERT_TRUE(succeeded(w.append_gpu_activities(a.data(), a.size()), &err)) << err;
    ASSERT_TRUE(succeeded(w.finish(sample_stats(), 1), &err)) << err;
  }
  // Activities without set_cupti_shim: no CUPTI_SHIM chunk (nullopt).
  auto rec = noting_error(read_recording(path_), &err);
  ASSERT_TRUE(rec.has_value()) << err;
  EXPECT_TRUE(rec->complete);
  EXPECT_EQ(rec->gpu_activities, make_gpu_activities(4, 1));
  EXPECT_TRUE(rec->gpu_correlations.empty());
  EXPECT_EQ(rec->cupti_shim, std::nullopt);
  // A file without any of the three chunks (an earlier version 2 build's).
  auto bare = noting_error(read_recording_bytes(v2_prefix(0), "f"), &err);
  ASSERT_TRUE(bare.has_value()) << err;
  EXPECT_TRUE(bare->gpu_correlations.empty() && bare->gpu_activities.empty());
  EXPECT_EQ(bare->cupti_shim, std::nullopt);
  // A shim found but not tracing, with an empty path, is still there.
  auto empty = noting_error(read_recording_bytes(
      cat(v2_prefix(0), chunk_of(ChunkType::CUPTI_SHIM, cupti_shim_payload({}))), "f"), &err);
  ASSERT_TRUE(empty.has_value()) << err;
  EXPECT_EQ(empty->cupti_shim, CuptiShimInfo{});
  // Types 19..21 meant nothing in version 1: skipped like any unknown chunk.
  std::vector<uint8_t> v1 = encode_record_header(1);
  v1 = cat(v1, chunk_of(ChunkType::PROCESS, process_payload()));
  v1 = cat(v1, chunk_of(ChunkType::CLOCK, clock_payload()));
  v1 = cat(v1, chunk_of(ChunkType::OP_TABLE, ops_payload({}, 1)));
  v1 = cat(v1, chunk_of(ChunkType::GPU_CORRELATIONS, std::vector<uint8_t>{1}));
  v1 = cat(v1, chunk_of(ChunkType::GPU_ACTIVITIES, std::vector<uint8_t>{2}));
  v1 = cat(v1, chunk_of(ChunkType::CUPTI_SHIM, std::vector<uint8_t>{3}));
  auto old = noting_error(read_recording_bytes(v1, "old"), &err);
  ASSERT_TRUE(old.has_value()) << err;
  EXPECT_TRUE(old->gpu_correlations.empty() && old->gpu_activities.empty());
  EXPECT_EQ(old->cupti_shim, std::nullopt);
  // Type 23 is unknown in version 2 too: skipped.
  auto newer = noting_error(read_recording_bytes(cat(v2_prefix(0), encode_chunk(23, std::vector<uint8_t>{4})), "f"), &err);
  ASSERT_TRUE(newer.has_value()) << err;
}

Bytes thread_names_payload(const std::vector<ThreadName>& names) {
  Bytes b;
  b.u32(static_cast<uint32_t>(names.size()));
  for (const ThreadName& t : names) b.u32(t.tid).str(t.name);
  return b;
}
std::vector<ThreadName> sample_thread_names() {
  return {{4242, "python3"}, {4250, "pt_autograd_0"}, {4251, ""}};
}

TEST_F(RecordFileTest, ThreadNamesAreWrittenByFinishBeforeStatsAndReadBack) {
  std::string err;
  RecordWriter w = must_create();
  ASSERT_TRUE(succeeded(w.begin(sample_process(), sample_clock(), sample_ops()), &err)) << err;
  const size_t before = w.bytes_written();
  ASSERT_TRUE(succeeded(w.set_thread_names({{1, "old"}}), &err)) << err;
  ASSERT_TRUE(succeeded(w.set_thread_names(sample_thread_names()), &err)) << err;  // the last call wins
  ASSERT_TRUE(succeeded(w.set_cupti_shim(sample_cupti_shim()), &err)) << err;
  EXPECT_EQ(w.bytes_written(), before);  // nothing written before finish
  ASSERT_TRUE(succeeded(w.finish(sample_stats(), 9), &err)) << err;
  const std::vector<uint8_t> file = read_bytes(path_);
  const std::vector<uint8_t> tail =
      cat(cat(chunk_of(ChunkType::CUPTI_SHIM, cupti_shim_payload(sample_cupti_shim())),
              chunk_of(ChunkType::THREAD_NAMES, thread_names_payload(sample_thread_names()))),
          cat(chunk_of(ChunkType::STATS, written_stats_payload()), chunk_of(ChunkType::END, Bytes().u64(9))));
  ASSERT_GE(file.size(), tail.size());
  EXPECT_EQ(std::vector<uint8_t>(file.end() - static_cast<std::ptrdiff_t>(tail.size()), file.end()), tail);
  auto rec = noting_error(read_recording_bytes(file, "f"), &err);
  ASSERT_TRUE(rec.has_value()) << err;
  EXPECT_EQ(rec->thread_names, sample_thread_names());
  // None set: no chunk.
  RecordWriter plain = must_create();
  ASSERT_TRUE(succeeded(plain.begin(sample_process(), sample_clock(), sample_ops()), &err)) << err;
  ASSERT_TRUE(succeeded(plain.finish(sample_stats(), 9), &err)) << err;
  for (const ChunkHeader& c : chunk_headers(read_bytes(path_), kRecordHeaderSize))
    EXPECT_NE(c.type, ChunkType::THREAD_NAMES);
}

TEST_F(RecordFileTest, ThreadNamesTheReaderWouldRejectAreRefused) {
  std::string err;
  RecordWriter w = must_create();
  ASSERT_TRUE(succeeded(w.begin(sample_process(), sample_clock(), sample_ops()), &err)) << err;
  EXPECT_FALSE(succeeded(w.set_thread_names({{7, "a"}, {0, "b"}}), &err));
  EXPECT_EQ(err, path_ + ": not recording the thread names: thread name 1 has tid 0");
  EXPECT_FALSE(succeeded(w.set_thread_names({{7, "a"}, {7, "b"}}), &err));
  EXPECT_EQ(err, path_ + ": not recording the thread names: thread name 1 repeats tid 7");
  EXPECT_FALSE(succeeded(w.set_thread_names({{7, std::string(256, 'x')}}), &err));
  EXPECT_EQ(err, path_ + ": not recording the thread names: thread name 0 is 256 bytes long (at most 255)");
  EXPECT_TRUE(succeeded(w.set_thread_names({{7, std::string(255, 'x')}}), &err)) << err;
}

TEST_F(RecordFileTest, CorruptThreadNamesAreClearErrors) {
  std::string err;
  const std::vector<uint8_t> prefix = v2_prefix(0);
  auto expect_error = [&](const std::vector<uint8_t>& bytes, const std::string& expected) {
    std::string e;
    EXPECT_FALSE(noting_error(read_recording_bytes(bytes, "f"), &e).has_value()) << expected;
    EXPECT_EQ(e, expected);
  };
  const std::vector<uint8_t> good =
      cat(prefix, chunk_of(ChunkType::THREAD_NAMES, thread_names_payload(sample_thread_names())));
  auto read = noting_error(read_recording_bytes(good, "f"), &err);
  ASSERT_TRUE(read.has_value()) << err;
  EXPECT_EQ(read->thread_names, sample_thread_names());
  EXPECT_FALSE(read->complete);
  expect_error(cat(good, chunk_of(ChunkType::THREAD_NAMES, thread_names_payload({}))),
               "f: corrupt chunk 6 (THREAD_NAMES)" + at_offset(good) + "duplicate THREAD_NAMES chunk");
  const std::string t5 = "f: corrupt chunk 5 (THREAD_NAMES)" + at_offset(prefix);
  expect_error(cat(prefix, chunk_of(ChunkType::THREAD_NAMES, thread_names_payload({{3, "a"}, {0, "b"}}))),
               t5 + "thread name 1 has tid 0");
  expect_error(cat(prefix, chunk_of(ChunkType::THREAD_NAMES, thread_names_payload({{3, "a"}, {3, "b"}}))),
               t5 + "thread name 1 repeats tid 3");
  expect_error(cat(prefix, chunk_of(ChunkType::THREAD_NAMES, thread_names_payload({{3, std::string(300, 'n')}}))),
               t5 + "thread name 0 is 300 bytes long (at most 255)");
  // A count the payload cannot hold, a name running past the end, trailing bytes.
  expect_error(cat(prefix, chunk_of(ChunkType::THREAD_NAMES, Bytes().u32(1000000).u32(3).str("a"))),
               t5 + "payload too short");
  expect_error(cat(prefix, chunk_of(ChunkType::THREAD_NAMES, Bytes().u32(1).u32(3).u32(50).u32(0))),
               t5 + "payload too short");
  expect_error(cat(prefix, chunk_of(ChunkType::THREAD_NAMES, thread_names_payload({{3, "a"}}).u32(0))),
               t5 + "4 unexpected trailing payload bytes");
  // Any single flipped byte of a finished file with names: a clear error or
  // an incomplete recording, never a crash.
  RecordWriter w = must_create();
  ASSERT_TRUE(succeeded(w.begin(sample_process(), sample_clock(), sample_ops()), &err)) << err;
  ASSERT_TRUE(succeeded(w.set_thread_names(sample_thread_names()), &err)) << err;
  ASSERT_TRUE(succeeded(w.finish(sample_stats(), 9), &err)) << err;
  expect_every_flipped_byte_is_caught(read_bytes(path_));
}

TEST_F(RecordFileTest, WriterRefusesGpuDataTheReaderWouldReject) {
  std::string err;
  GpuCorrelation c = make_gpu_correlations(1)[0];
  GpuActivity a = make_gpu_activities(1, 1)[0];
  RecordWriter w = must_create();
  EXPECT_FALSE(succeeded(w.append_gpu_correlations(&c, 1), &err));
  EXPECT_EQ(err, path_ + ": append_gpu_correlations called out of order (internal error)");
  EXPECT_FALSE(succeeded(w.append_gpu_activities(&a, 1), &err));
  EXPECT_EQ(err, path_ + ": append_gpu_activities called out of order (internal error)");
  EXPECT_FALSE(succeeded(w.set_cupti_shim(sample_cupti_shim()), &err));
  EXPECT_EQ(err, path_ + ": set_cupti_shim called out of order (internal error)");
  // A --no-ops recording has no GPU data.
  ASSERT_TRUE(succeeded(w.begin(sample_process(), sample_clock(), {}, sampled_options(49, false)), &err))
      << err;
  const uint64_t begun = w.bytes_written();
  EXPECT_FALSE(succeeded(w.append_gpu_correlations(&c, 1), &err));
  EXPECT_EQ(err, path_ +
                     ": not recording GPU correlations: the recording was begun without ops "
                     "(no-ops option)");
  EXPECT_FALSE(succeeded(w.append_gpu_activities(&a, 1), &err));
  EXPECT_EQ(err, path_ +
                     ": not recording GPU activities: the recording was begun without ops "
                     "(no-ops option)");
  EXPECT_FALSE(succeeded(w.set_cupti_shim(sample_cupti_shim()), &err));
  EXPECT_EQ(err, path_ +
                     ": not recording the CUPTI shim: the recording was begun without ops "
                     "(no-ops option)");
  ASSERT_TRUE(succeeded(w.append_gpu_correlations(&c, 0), &err)) << err;  // empty batches are fine
  ASSERT_TRUE(succeeded(w.append_gpu_activities(&a, 0), &err)) << err;
  ASSERT_TRUE(succeeded(w.flush(), &err)) << err;
  EXPECT_EQ(w.bytes_written(), begun);
  // Still usable: samples go on, and nothing of the GPU data reaches the file.
  ASSERT_TRUE(succeeded(w.add_sample_frame("f"), &err)) << err;
  CpuSample s{1, 2, 0, false};
  ASSERT_TRUE(succeeded(w.append_samples(&s, 1), &err)) << err;
  ASSERT_TRUE(succeeded(w.finish(sample_stats(), 1), &err)) << err;
  auto rec = noting_error(read_recording(path_), &err);
  ASSERT_TRUE(rec.has_value()) << err;
  EXPECT_TRUE(rec->gpu_correlations.empty() && rec->gpu_activities.empty());
  EXPECT_EQ(rec->cupti_shim, std::nullopt);
  EXPECT_EQ(rec->samples, std::vector<CpuSample>{s});

  // With ops: a bad domain, a bad kind, an end before its start or an
  // undefined name_id refuses the whole batch.
  std::string path2 = dir_ + "/gpu.gpuprof";
  auto w2 = noting_error(RecordWriter::create(path2), &err);
  ASSERT_TRUE(w2.has_value()) << err;
  ASSERT_TRUE(succeeded(w2->begin(sample_process(), sample_clock(), sample_ops()), &err)) << err;
  const uint64_t begun2 = w2->bytes_written();
  std::vector<GpuCorrelation> cs = make_gpu_correlations(3, 1);
  for (uint32_t domain : {0u, 3u, UINT32_MAX}) {
    cs[2].domain = domain;
    EXPECT_FALSE(succeeded(w2->append_gpu_correlations(cs.data(), cs.size()), &err));
    EXPECT_EQ(err, path2 + ": not recording GPU correlation 2 of the batch: domain " +
                       std::to_string(domain) + " (expected 1 or 2)");
  }
  cs[2].domain = 2;
  a.name_id = 0;
  EXPECT_FALSE(succeeded(w2->append_gpu_activities(&a, 1), &err));
  EXPECT_EQ(err, path2 +
                     ": not recording GPU activity 0 of the batch: name_id 0, but 0 launch "
                     "names are defined");
  ASSERT_TRUE(succeeded(w2->add_launch_name("a"), &err)) << err;
  ASSERT_TRUE(succeeded(w2->add_launch_name("b"), &err)) << err;
  std::vector<GpuActivity> batch = make_gpu_activities(3, 2, 1);
  for (uint16_t kind : {uint16_t{0}, uint16_t{4}, uint16_t{0xffff}}) {
    batch[1].kind = static_cast<GpuActivityKind>(kind);
    EXPECT_FALSE(succeeded(w2->append_gpu_activities(batch.data(), batch.size()), &err));
    EXPECT_EQ(err, path2 + ": not recording GPU activity 1 of the batch: kind " +
                       std::to_string(kind) + " (expected 1..3)");
  }
  batch[1].kind = GpuActivityKind::memset;
  batch[0].end_ns = batch[0].start_ns - 1;
  EXPECT_FALSE(succeeded(w2->append_gpu_activities(batch.data(), batch.size()), &err));
  EXPECT_EQ(err, path2 + ": not recording GPU activity 0 of the batch: end_ns " +
                     std::to_string(batch[0].start_ns - 1) + ", before its start_ns " +
                     std::to_string(batch[0].start_ns));
  batch[0].end_ns = batch[0].start_ns;  // no time at all is fine
  batch[2].name_id = 2;
  EXPECT_FALSE(succeeded(w2->append_gpu_activities(batch.data(), batch.size()), &err));
  EXPECT_EQ(err, path2 +
                     ": not recording GPU activity 2 of the batch: name_id 2, but 2 launch "
                     "names are defined");
  // Nothing of the refused batches was buffered: a flush writes the names
  // alone.
  ASSERT_TRUE(succeeded(w2->flush(), &err)) << err;
  EXPECT_EQ(w2->bytes_written(), begun2 + kRecordChunkHeaderSize + 8 + 2 * (4 + 1));
  auto part = noting_error(read_recording(path2), &err);
  ASSERT_TRUE(part.has_value()) << err;
  EXPECT_TRUE(part->gpu_correlations.empty() && part->gpu_activities.empty());
  EXPECT_EQ(part->launch_names, (std::vector<std::string>{"a", "b"}));
  // ... and the writer is still usable.
  ASSERT_TRUE(succeeded(w2->add_launch_name("c"), &err)) << err;
  ASSERT_TRUE(succeeded(w2->append_gpu_activities(batch.data(), batch.size()), &err)) << err;
  ASSERT_TRUE(succeeded(w2->append_gpu_correlations(cs.data(), cs.size()), &err)) << err;
  ASSERT_TRUE(succeeded(w2->set_cupti_shim(sample_cupti_shim()), &err)) << err;
  ASSERT_TRUE(succeeded(w2->finish(sample_stats(), 1), &err)) << err;
  rec = noting_error(read_recording(path2), &err);
  ASSERT_TRUE(rec.has_value()) << err;
  EXPECT_EQ(rec->gpu_activities, batch);
  EXPECT_EQ(rec->gpu_correlations, cs);
  EXPECT_EQ(rec->launch_names, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(rec->cupti_shim, sample_cupti_shim());
}

TEST_F(RecordFileTest, CorruptGpuCorrelationsActivitiesAndCuptiShimAreRejected) {
  std::string err;
  const std::vector<uint8_t> prefix = v2_prefix(0);
  const std::vector<GpuCorrelation> one_correlation = make_gpu_correlations(1);
  const std::vector<GpuActivity> one_activity = make_gpu_activities(1, 1);
  // All three need the ops: refused in a --no-ops recording, sampled or not.
  for (const std::vector<uint8_t>& no_ops : {v2_prefix(8), v2_sampled_prefix(8, 49)}) {
    expect_error(cat(no_ops, chunk_of(ChunkType::GPU_CORRELATIONS, std::vector<uint8_t>{})),
                 "f: corrupt chunk 5 (GPU_CORRELATIONS)" + at_offset(no_ops) +
                     "GPU_CORRELATIONS chunk in a recording without ops (the no-ops option)");
    expect_error(cat(no_ops, chunk_of(ChunkType::GPU_ACTIVITIES, std::vector<uint8_t>{})),
                 "f: corrupt chunk 5 (GPU_ACTIVITIES)" + at_offset(no_ops) +
                     "GPU_ACTIVITIES chunk in a recording without ops (the no-ops option)");
    expect_error(
        cat(no_ops, chunk_of(ChunkType::CUPTI_SHIM, cupti_shim_payload(sample_cupti_shim()))),
        "f: corrupt chunk 5 (CUPTI_SHIM)" + at_offset(no_ops) +
            "CUPTI_SHIM chunk in a recording without ops (the no-ops option)");
  }
  // ... and come after the mandatory chunks, before STATS.
  const std::vector<uint8_t> no_options = v2_prefix_without_options();
  expect_error(cat(no_options, chunk_of(ChunkType::GPU_CORRELATIONS, std::vector<uint8_t>{})),
               "f: corrupt chunk 4 (GPU_CORRELATIONS)" + at_offset(no_options) +
                   "GPU_CORRELATIONS chunk before the PROCESS, CLOCK, OP_TABLE and OPTIONS "
                   "chunks");
  expect_error(cat(no_options, chunk_of(ChunkType::GPU_ACTIVITIES, std::vector<uint8_t>{})),
               "f: corrupt chunk 4 (GPU_ACTIVITIES)" + at_offset(no_options) +
                   "GPU_ACTIVITIES chunk before the PROCESS, CLOCK, OP_TABLE and OPTIONS chunks");
  expect_error(
      cat(no_options, chunk_of(ChunkType::CUPTI_SHIM, cupti_shim_payload(sample_cupti_shim()))),
      "f: corrupt chunk 4 (CUPTI_SHIM)" + at_offset(no_options) +
          "CUPTI_SHIM chunk before the PROCESS, CLOCK, OP_TABLE and OPTIONS chunks");
  const std::vector<uint8_t> with_stats =
      cat(prefix, chunk_of(ChunkType::STATS, sample_stats_payload()));
  expect_error(cat(with_stats, chunk_of(ChunkType::GPU_CORRELATIONS,
                                        gpu_correlations_payload(one_correlation))),
               "f: corrupt chunk 6 (GPU_CORRELATIONS)" + at_offset(with_stats) +
                   "GPU_CORRELATIONS chunk after the STATS chunk");
  expect_error(cat(with_stats, chunk_of(ChunkType::GPU_ACTIVITIES, std::vector<uint8_t>{})),
               "f: corrupt chunk 6 (GPU_ACTIVITIES)" + at_offset(with_stats) +
                   "GPU_ACTIVITIES chunk after the STATS chunk");
  expect_error(
      cat(with_stats, chunk_of(ChunkType::CUPTI_SHIM, cupti_shim_payload(sample_cupti_shim()))),
      "f: corrupt chunk 6 (CUPTI_SHIM)" + at_offset(with_stats) +
          "CUPTI_SHIM chunk after the STATS chunk");

  // GPU_CORRELATIONS: whole 32-byte correlations of domain 1 or 2, reserved
  // field 0.
  auto correlations_file = [&](const std::vector<uint8_t>& payload) {
    return cat(prefix, chunk_of(ChunkType::GPU_CORRELATIONS, payload));
  };
  const std::string c5 = "f: corrupt chunk 5 (GPU_CORRELATIONS)" + at_offset(prefix);
  const std::vector<GpuCorrelation> good_correlations = make_gpu_correlations(3);
  auto ok = noting_error(read_recording_bytes(correlations_file(gpu_correlations_payload(good_correlations).b), "f"), &err);
  ASSERT_TRUE(ok.has_value()) << err;
  EXPECT_EQ(ok->gpu_correlations, good_correlations);
  std::vector<GpuCorrelation> bad_correlations = good_correlations;
  for (uint32_t domain : {0u, 3u, UINT32_MAX}) {
    bad_correlations[1].domain = domain;
    expect_error(correlations_file(gpu_correlations_payload(bad_correlations).b),
                 c5 + "GPU correlation 1 has domain " + std::to_string(domain) +
                     " (expected 1 or 2)");
  }
  std::vector<uint8_t> reserved = gpu_correlations_payload(good_correlations).b;
  reserved[2 * 32 + 28] = 1;
  expect_error(correlations_file(reserved),
               c5 + "GPU correlation 2 has reserved field 0x1 at byte 28 (must be 0)");
  reserved = gpu_correlations_payload(good_correlations).b;
  reserved[31] = 0x80;
  expect_error(correlations_file(reserved),
               c5 + "GPU correlation 0 has reserved field 0x80000000 at byte 28 (must be 0)");
  expect_error(correlations_file(std::vector<uint8_t>(33, 0)),
               c5 + "payload of 33 bytes is not a whole number of 32-byte GPU correlations");
  std::vector<uint8_t> short_correlation = gpu_correlations_payload(good_correlations).b;
  short_correlation.pop_back();
  expect_error(correlations_file(short_correlation),
               c5 + "payload of 95 bytes is not a whole number of 32-byte GPU correlations");

  // GPU_ACTIVITIES: whole 48-byte activities of a known kind, not ending
  // before they start, naming defined names, reserved field 0.
  const std::vector<uint8_t> two =
      cat(prefix, chunk_of(ChunkType::LAUNCH_NAMES, launch_names_payload(0, {"a", "b"})));
  auto activities_file = [&](const std::vector<uint8_t>& payload) {
    return cat(two, chunk_of(ChunkType::GPU_ACTIVITIES, payload));
  };
  const std::string a6 = "f: corrupt chunk 6 (GPU_ACTIVITIES)" + at_offset(two);
  const std::vector<GpuActivity> good = make_gpu_activities(3, 2);
  ASSERT_EQ(good[0].end_ns, good[0].start_ns);  // an activity taking no time is valid
  ok = noting_error(read_recording_bytes(activities_file(gpu_activities_payload(good).b), "f"), &err);
  ASSERT_TRUE(ok.has_value()) << err;
  EXPECT_EQ(ok->gpu_activities, good);
  // Activities before their names: the names are LAUNCH_NAMES', defined
  // before the activity chunk, whatever follows it.
  const std::vector<uint8_t> early =
      cat(prefix, chunk_of(ChunkType::GPU_ACTIVITIES, gpu_activities_payload(one_activity)));
  expect_error(early, "f: corrupt chunk 5 (GPU_ACTIVITIES)" + at_offset(prefix) +
                          "GPU activity 0 has name_id 0, but 0 launch names are defined");
  expect_error(cat(early, chunk_of(ChunkType::LAUNCH_NAMES, launch_names_payload(0, {"a"}))),
               "f: corrupt chunk 5 (GPU_ACTIVITIES)" + at_offset(prefix) +
                   "GPU activity 0 has name_id 0, but 0 launch names are defined");
  // A name_id out of range.
  std::vector<GpuActivity> bad = good;
  bad[1].name_id = 2;
  expect_error(activities_file(gpu_activities_payload(bad).b),
               a6 + "GPU activity 1 has name_id 2, but 2 launch names are defined");
  bad[1].name_id = UINT32_MAX;
  expect_error(activities_file(gpu_activities_payload(bad).b),
               a6 + "GPU activity 1 has name_id 4294967295, but 2 launch names are defined");
  // A bad kind.
  bad = good;
  for (uint16_t kind : {uint16_t{0}, uint16_t{4}, uint16_t{0xffff}}) {
    bad[2].kind = static_cast<GpuActivityKind>(kind);
    expect_error(activities_file(gpu_activities_payload(bad).b),
                 a6 + "GPU activity 2 has kind " + std::to_string(kind) + " (expected 1..3)");
  }
  // An end before the start.
  bad = good;
  bad[1].end_ns = bad[1].start_ns - 1;
  expect_error(activities_file(gpu_activities_payload(bad).b),
               a6 + "GPU activity 1 has end_ns " + std::to_string(bad[1].end_ns) +
                   ", before its start_ns " + std::to_string(bad[1].start_ns));
  bad[1].start_ns = UINT64_MAX;
  bad[1].end_ns = 0;
  expect_error(activities_file(gpu_activities_payload(bad).b),
               a6 + "GPU activity 1 has end_ns 0, before its start_ns 18446744073709551615");
  // A non-zero reserved field (bytes 42..43 of an activity).
  reserved = gpu_activities_payload(good).b;
  reserved[48 + 43] = 0x80;
  expect_error(activities_file(reserved),
               a6 + "GPU activity 1 has reserved field 0x8000 at byte 42 (must be 0)");
  reserved = gpu_activities_payload(good).b;
  reserved[2 * 48 + 42] = 1;
  expect_error(activities_file(reserved),
               a6 + "GPU activity 2 has reserved field 0x1 at byte 42 (must be 0)");
  // Not a whole number of activities.
  expect_error(activities_file(std::vector<uint8_t>(49, 0)),
               a6 + "payload of 49 bytes is not a whole number of 48-byte GPU activities");
  std::vector<uint8_t> short_activity = gpu_activities_payload(good).b;
  short_activity.pop_back();
  expect_error(activities_file(short_activity),
               a6 + "payload of 143 bytes is not a whole number of 48-byte GPU activities");

  // CUPTI_SHIM: at most once, exact length.
  const std::vector<uint8_t> shim =
      cat(prefix, chunk_of(ChunkType::CUPTI_SHIM, cupti_shim_payload(sample_cupti_shim())));
  auto found = noting_error(read_recording_bytes(shim, "f"), &err);
  ASSERT_TRUE(found.has_value()) << err;
  EXPECT_EQ(found->cupti_shim, sample_cupti_shim());
  expect_error(cat(shim, chunk_of(ChunkType::CUPTI_SHIM, cupti_shim_payload({}))),
               "f: corrupt chunk 6 (CUPTI_SHIM)" + at_offset(shim) + "duplicate CUPTI_SHIM chunk");
  const std::string s5 = "f: corrupt chunk 5 (CUPTI_SHIM)" + at_offset(prefix);
  expect_error(cat(prefix, chunk_of(ChunkType::CUPTI_SHIM, Bytes().str("x").u32(1).u64(0))),
               s5 + "payload too short");
  expect_error(
      cat(prefix, chunk_of(ChunkType::CUPTI_SHIM, Bytes().u32(100).u32(1).u64(0).u64(0))),
      s5 + "payload too short");
  expect_error(cat(prefix, chunk_of(ChunkType::CUPTI_SHIM,
                                    cupti_shim_payload(sample_cupti_shim()).u32(0))),
               s5 + "4 unexpected trailing payload bytes");
  // Empty GPU_CORRELATIONS and GPU_ACTIVITIES chunks are valid.
  auto empty = noting_error(read_recording_bytes(
      cat(correlations_file({}), chunk_of(ChunkType::GPU_ACTIVITIES, std::vector<uint8_t>{})), "f"), &err);
  ASSERT_TRUE(empty.has_value()) << err;
  EXPECT_TRUE(empty->gpu_correlations.empty() && empty->gpu_activities.empty());
}

// Cut a recording with GPU activities at every byte: exactly the names,
// correlations and activities of the complete chunks, never an activity
// naming a missing name; a torn GPU_ACTIVITIES chunk is reported and
// ignored; CUPTI_SHIM only once its chunk is complete.
TEST_F(RecordFileTest, EveryTruncationOfARecordingWithGpuActivities) {
  std::string err;
  RecordWriter w = must_create();
  ASSERT_TRUE(succeeded(w.begin(sample_process(), sample_clock(), sample_ops()), &err)) << err;
  const uint64_t mandatory_end = w.bytes_written();
  for (uint32_t round = 0; round < 4; ++round) {
    for (uint32_t i = 0; i < round + 1; ++i)
      ASSERT_TRUE(succeeded(w.add_launch_name("k" + std::to_string(w.launch_names_defined())), &err)) << err;
    std::vector<GpuCorrelation> c = make_gpu_correlations(3 + round, round);
    ASSERT_TRUE(succeeded(w.append_gpu_correlations(c.data(), c.size()), &err)) << err;
    std::vector<GpuActivity> a = make_gpu_activities(2 + round, w.launch_names_defined(), round);
    a.back().name_id = w.launch_names_defined() - 1;  // the newest name
    ASSERT_TRUE(succeeded(w.append_gpu_activities(a.data(), a.size()), &err)) << err;
    if (round == 3) {  // launches too: LAUNCHES between the names and the GPU chunks
      std::vector<CudaLaunch> l = make_launches(2, w.launch_names_defined(), round);
      ASSERT_TRUE(succeeded(w.append_launches(l.data(), l.size()), &err)) << err;
    }
    if (round != 1) {
      ASSERT_TRUE(succeeded(w.flush(), &err)) << err;
    }
  }
  ASSERT_TRUE(succeeded(w.set_cupti_shim(sample_cupti_shim()), &err)) << err;
  ASSERT_TRUE(succeeded(w.finish(sample_stats(), 5), &err)) << err;
  const std::vector<uint8_t> file = read_bytes(path_);
  auto full = noting_error(read_recording_bytes(file, "f"), &err);
  ASSERT_TRUE(full.has_value()) << err;
  ASSERT_EQ(full->launch_names.size(), 10u);
  ASSERT_EQ(full->gpu_correlations.size(), 18u);
  ASSERT_EQ(full->gpu_activities.size(), 14u);
  ASSERT_EQ(full->launches.size(), 2u);
  EXPECT_EQ(full->cupti_shim, sample_cupti_shim());

  const std::vector<Boundary> bounds = boundaries(file, mandatory_end);
  // 3 flushes of 3 chunks, LAUNCHES in the last, CUPTI_SHIM, STATS, END.
  ASSERT_EQ(bounds.size(), 1u + 3 * 3 + 1 + 3);
  std::vector<ChunkType> order;
  std::vector<uint64_t> activities_offsets;
  for (const ChunkHeader& c : chunk_headers(file, mandatory_end)) {
    order.push_back(c.type);
    if (c.type == ChunkType::GPU_ACTIVITIES) activities_offsets.push_back(c.offset);
  }
  EXPECT_EQ(std::vector<ChunkType>(order.end() - 7, order.end()),
            (std::vector<ChunkType>{ChunkType::LAUNCH_NAMES, ChunkType::LAUNCHES,
                                    ChunkType::GPU_CORRELATIONS, ChunkType::GPU_ACTIVITIES,
                                    ChunkType::CUPTI_SHIM, ChunkType::STATS, ChunkType::END}));
  ASSERT_EQ(activities_offsets.size(), 3u);
  expect_every_cut_reads_the_complete_chunks(
      file, bounds, [&](const Recording& rec, const Boundary& last) {
        EXPECT_EQ(rec.launch_names,
                  first_n(full->launch_names, last.held(ChunkType::LAUNCH_NAMES)));
        EXPECT_EQ(rec.gpu_correlations,
                  first_n(full->gpu_correlations, last.held(ChunkType::GPU_CORRELATIONS)));
        EXPECT_EQ(rec.gpu_activities,
                  first_n(full->gpu_activities, last.held(ChunkType::GPU_ACTIVITIES)));
        EXPECT_EQ(rec.launches, first_n(full->launches, last.held(ChunkType::LAUNCHES)));
        EXPECT_EQ(rec.cupti_shim.has_value(), last.held(ChunkType::CUPTI_SHIM) > 0);
        for (const GpuActivity& a : rec.gpu_activities)
          EXPECT_LT(a.name_id, rec.launch_names.size());
      });
  // Cut inside the second GPU_ACTIVITIES chunk: the activities of the first
  // chunk, with every name and correlation written before it.
  const uint64_t second = activities_offsets[1];
  const size_t cut = second + 16 + 48 + 10;
  auto torn = noting_error(read_recording_bytes(std::span(file.data(), cut), "f"), &err);
  ASSERT_TRUE(torn.has_value()) << err;
  EXPECT_FALSE(torn->complete);
  EXPECT_EQ(torn->gpu_activities, first_n(full->gpu_activities, 2));
  EXPECT_EQ(torn->gpu_correlations, first_n(full->gpu_correlations, 3 + 4 + 5));
  EXPECT_EQ(torn->launch_names, first_n(full->launch_names, 1 + 2 + 3));
  EXPECT_EQ(torn->cupti_shim, std::nullopt);
  EXPECT_EQ(torn->incomplete_reason,
            "no END chunk: the recorder did not finish (killed, or its disk full); ignored " +
                std::to_string(16 + 48 + 10) + " bytes of a torn chunk at offset " +
                std::to_string(second));
  // And any single flipped byte: a clear error or an incomplete recording.
  expect_every_flipped_byte_is_caught(file);
}

TEST_F(RecordFileTest, WriterKilledBySigkillKeepsFlushedGpuActivities) {
  const std::vector<GpuCorrelation> c = make_gpu_correlations(8);
  const std::vector<GpuActivity> a = make_gpu_activities(8, 2);
  ASSERT_NO_FATAL_FAILURE(write_then_sigkill({}, [&](RecordWriter& w, std::string* e) {
    if (!succeeded(w.add_launch_name("a"), e) || !succeeded(w.add_launch_name("b"), e) ||
        !succeeded(w.append_gpu_correlations(c.data(), 5), e) || !succeeded(w.append_gpu_activities(a.data(), 5), e) ||
        !succeeded(w.set_cupti_shim(sample_cupti_shim()), e) || !succeeded(w.flush(), e))
      return false;
    return succeeded(w.add_launch_name("c"), e) && succeeded(w.append_gpu_correlations(c.data() + 5, 3), e) &&
           succeeded(w.append_gpu_activities(a.data() + 5, 3), e);  // buffered only
  }));
  std::string err;
  auto rec = noting_error(read_recording(path_), &err);
  ASSERT_TRUE(rec.has_value()) << err;
  EXPECT_FALSE(rec->complete);
  EXPECT_EQ(rec->incomplete_reason, "no END chunk: the recorder did not finish (killed, or its disk full)");
  EXPECT_EQ(rec->launch_names, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(rec->gpu_correlations, first_n(c, 5));
  EXPECT_EQ(rec->gpu_activities, first_n(a, 5));
  EXPECT_EQ(rec->cupti_shim, std::nullopt);  // written by finish() only
}

// Version 3 STATS: the problems the recorder warned about and the samples or
// launches without a symbol travel with the file, byte for byte as documented.
TEST_F(RecordFileTest, StatsProblemsAndUnresolvedSymbolsRoundTrip) {
  std::string err;
  RecordWriter w = must_create();
  ASSERT_TRUE(succeeded(w.begin(sample_process(), sample_clock(), sample_ops()), &err)) << err;
  RecordStats stats = sample_stats();
  stats.symbols_unresolved = 23;
  stats.problems = {"no memory columns: libc10 has no ProfiledCPUMemoryReporter::New", "", "no GPU times: x"};
  ASSERT_TRUE(succeeded(w.finish(stats, 9), &err)) << err;
  const std::vector<uint8_t> file = read_bytes(path_);
  Bytes payload = sample_stats_payload(2);
  payload.u64(23).u32(3);
  for (const std::string& p : stats.problems) payload.str(p);
  const std::vector<uint8_t> tail = cat(chunk_of(ChunkType::STATS, payload), chunk_of(ChunkType::END, Bytes().u64(9)));
  ASSERT_GE(file.size(), tail.size());
  EXPECT_EQ(std::vector<uint8_t>(file.end() - static_cast<std::ptrdiff_t>(tail.size()), file.end()), tail);
  auto rec = noting_error(read_recording_bytes(file, "f"), &err);
  ASSERT_TRUE(rec.has_value()) << err;
  EXPECT_EQ(rec->stats, stats);
  // A problem count larger than the payload can hold is corrupt, not a huge allocation.
  Bytes bad = sample_stats_payload(2);
  bad.u64(0).u32(0x7fffffff);
  std::vector<uint8_t> bytes = cat(written_prefix(0), chunk_of(ChunkType::STATS, bad));
  EXPECT_FALSE(noting_error(read_recording_bytes(bytes, "f"), &err));
  EXPECT_NE(err.find("corrupt chunk 5 (STATS)"), std::string::npos) << err;
}


// System-wide recordings (record -a): PROCESSES, THREAD_PROCESSES, MORE_OPS.
ProcessInfo listed_process(int32_t pid, const std::string& comm, const std::string& libtorch = "") {
  return {pid, comm, comm + " job.py", libtorch, "", ""};
}
Bytes processes_payload(const std::vector<ProcessInfo>& processes) {
  Bytes b;
  b.u32(static_cast<uint32_t>(processes.size()));
  for (const ProcessInfo& p : processes) b.i32(p.pid).str(p.comm).str(p.cmdline).str(p.libtorch_path).str(p.libtorch_build_id);
  return b;
}

TEST_F(RecordFileTest, SystemWideTablesRoundTripAndExtendTheOpTable) {
  std::string err;
  RecordWriter w = must_create();
  ASSERT_TRUE(succeeded(w.begin(sample_process(), sample_clock(), {}), &err)) << err;
  EXPECT_EQ(w.ops_defined(), 0u);
  // Events may name ops only once a MORE_OPS chunk defined them.
  gp_event e = make_events(1)[0];
  e.kind = GP_EV_OP_ENTRY;
  e.op_id = 1;
  EXPECT_FALSE(succeeded(w.append_events(&e, 1), &err));
  ASSERT_TRUE(succeeded(w.add_ops(sample_ops()), &err)) << err;
  EXPECT_EQ(w.ops_defined(), sample_ops().size());
  ASSERT_TRUE(succeeded(w.append_events(&e, 1), &err)) << err;
  const std::vector<OpInfo> more = {{"aten::mm", "", "_ZN2at4_ops2mm4callE", 2, 2}};
  ASSERT_TRUE(succeeded(w.add_ops(more), &err)) << err;
  e.op_id = static_cast<uint32_t>(sample_ops().size());  // the second file's first op
  ASSERT_TRUE(succeeded(w.append_events(&e, 1), &err)) << err;
  ASSERT_TRUE(succeeded(w.add_processes({listed_process(10, "python3"), listed_process(11, "bash")}), &err)) << err;
  ASSERT_TRUE(succeeded(w.add_thread_processes({{10, 10}, {12, 10}, {11, 11}}), &err)) << err;
  // A process defined again (it loaded libtorch later) keeps its place.
  ASSERT_TRUE(succeeded(w.add_processes({listed_process(10, "python3", "/usr/lib/libtorch_cpu.so")}), &err)) << err;
  ASSERT_TRUE(succeeded(w.finish(sample_stats(), 9), &err)) << err;
  auto rec = noting_error(read_recording(path_), &err);
  ASSERT_TRUE(rec.has_value()) << err;
  std::vector<OpInfo> all = sample_ops();
  all.push_back(more[0]);
  EXPECT_EQ(rec->ops, all);
  ASSERT_EQ(rec->events.size(), 2u);
  EXPECT_EQ(rec->events[1].op_id, sample_ops().size());
  EXPECT_EQ(rec->processes, (std::vector<ProcessInfo>{listed_process(10, "python3", "/usr/lib/libtorch_cpu.so"),
                                                      listed_process(11, "bash")}));
  EXPECT_EQ(rec->thread_processes, (std::vector<ThreadProcess>{{10, 10}, {12, 10}, {11, 11}}));
  expect_every_flipped_byte_is_caught(read_bytes(path_));
}

TEST_F(RecordFileTest, BadSystemWideTablesAreRefusedAndClearErrors) {
  std::string err;
  RecordWriter w = must_create();
  ASSERT_TRUE(succeeded(w.begin(sample_process(), sample_clock(), sample_ops()), &err)) << err;
  EXPECT_FALSE(succeeded(w.add_processes({listed_process(0, "swapper")}), &err));
  EXPECT_EQ(err, path_ + ": not recording a process: it has pid 0");
  ASSERT_TRUE(succeeded(w.add_thread_processes({{5, 5}}), &err)) << err;
  EXPECT_FALSE(succeeded(w.add_thread_processes({{6, 5}, {5, 5}}), &err));
  EXPECT_EQ(err, path_ + ": not recording a thread's process: thread repeats tid 5");
  EXPECT_FALSE(succeeded(w.add_thread_processes({{7, 0}}), &err));
  EXPECT_FALSE(succeeded(w.add_ops({{"aten::x", "", "s", -2, 0}}), &err));
  EXPECT_EQ(w.ops_defined(), sample_ops().size());  // a refused call changes nothing
  ASSERT_TRUE(succeeded(w.add_thread_processes({{6, 5}}), &err)) << err;  // 6 was not kept by the refused call

  const std::vector<uint8_t> prefix = v2_prefix(0, sample_ops(), GP_RECORD_FORMAT_VERSION);
  auto expect_error = [&](ChunkType type, const Bytes& payload, const std::string& problem) {
    std::string e;
    const std::vector<uint8_t> file = cat(prefix, chunk_of(type, payload));
    EXPECT_FALSE(noting_error(read_recording_bytes(file, "f"), &e).has_value()) << problem;
    EXPECT_EQ(e, "f: corrupt chunk 5 (" + std::string(type == ChunkType::PROCESSES ? "PROCESSES"
                                                       : type == ChunkType::MORE_OPS ? "MORE_OPS"
                                                                                     : "THREAD_PROCESSES") +
                     ")" + at_offset(prefix) + problem);
  };
  expect_error(ChunkType::PROCESSES, processes_payload({listed_process(-3, "x")}), "process 0 has pid -3");
  expect_error(ChunkType::PROCESSES, Bytes().u32(1000000), "process count 1000000 does not fit the payload");
  expect_error(ChunkType::THREAD_PROCESSES, Bytes().u32(1).u32(1).u32(1).u32(1), "thread 1 repeats tid 1");
  expect_error(ChunkType::THREAD_PROCESSES, Bytes().u32(1).u32(0), "thread 0 has tid 1, pid 0");
  expect_error(ChunkType::THREAD_PROCESSES, Bytes().u32(1), "payload of 4 bytes is not a whole number of 8-byte thread processes");
  expect_error(ChunkType::MORE_OPS, Bytes().u32(0).u32(0), "first_id 0 but 3 ops are defined");
  // Version 3 files never had them: skipped there as unknown chunks.
  const std::vector<uint8_t> v3 = cat(v2_prefix(0, sample_ops(), 3), chunk_of(ChunkType::PROCESSES, Bytes().u32(1000000)));
  auto old = noting_error(read_recording_bytes(v3, "f"), &err);
  ASSERT_TRUE(old.has_value()) << err;
  EXPECT_TRUE(old->processes.empty());
}
}  // namespace
}  // namespace gpuprof


namespace gpuprof {
namespace {

Bytes probe_costs_payload(const ProbeCosts& c) {
  Bytes b;
  for (const ProbeCost& p : {c.entry, c.exit, c.entry_stepped, c.exit_stepped}) b.u32(p.before_ns).u32(p.after_ns);
  return b.str(std::string(c.op_sites.begin(), c.op_sites.end())).u32(c.calls).u32(c.rounds).u32(c.spread_permille)
      .u64(c.took_ns);
}
ProbeCosts sample_probe_costs() {
  ProbeCosts c;
  c.entry = {5100, 910};
  c.exit = {5090, 840};
  c.entry_stepped = {5200, 17700};
  c.exit_stepped = {5100, 17500};
  c.op_sites = {0, kEntrySingleStepped, 0, kEntrySingleStepped | kExitSingleStepped};
  c.calls = 600;
  c.rounds = 4;
  c.spread_permille = 14;
  c.took_ns = 250'000'000;
  return c;
}

TEST_F(RecordFileTest, ProbeCostsAreWrittenAtOnceAndReadBack) {
  std::string err;
  {
    RecordWriter w = must_create();
    ASSERT_TRUE(succeeded(w.begin(sample_process(), sample_clock(), sample_ops()), &err)) << err;
    ASSERT_TRUE(succeeded(w.set_probe_costs(sample_probe_costs()), &err)) << err;
    // Written at once: a killed recorder's file has them.
    const std::vector<uint8_t> expect =
        cat(written_prefix(0), chunk_of(ChunkType::PROBE_COSTS, probe_costs_payload(sample_probe_costs())));
    EXPECT_EQ(read_bytes(path_), expect);
    ASSERT_TRUE(succeeded(w.finish(sample_stats(), 1), &err)) << err;
  }
  auto rec = noting_error(read_recording(path_), &err);
  ASSERT_TRUE(rec.has_value()) << err;
  EXPECT_EQ(rec->probe_costs, sample_probe_costs());  // one calibration: no totals of two
  EXPECT_EQ(rec->probe_costs->attach_total_ns, 0u);
  EXPECT_EQ(rec->probe_costs->entry_of(1), sample_probe_costs().entry_stepped);
  EXPECT_EQ(rec->probe_costs->exit_of(1), sample_probe_costs().exit);
  EXPECT_EQ(rec->probe_costs->exit_of(3), sample_probe_costs().exit_stepped);
  EXPECT_EQ(rec->probe_costs->entry_of(99), sample_probe_costs().entry);  // named at run time: emulated
  EXPECT_EQ(rec->probe_costs->ops_single_stepped(), 2u);
}

// The calibration through the recording (written at detach) supersedes
// attach's, whichever is lower, and both totals are said; a third is refused.
TEST_F(RecordFileTest, TheRecordingsCalibrationSupersedesAttachs) {
  ProbeCosts low = sample_probe_costs();
  ProbeCosts high = sample_probe_costs();
  high.entry.before_ns += 2000;  // a transient slow phase at one of them
  high.rounds = 7;
  const uint32_t low_total = low.total_ns(), high_total = high.total_ns();
  ASSERT_EQ(high_total, low_total + 2000);
  for (bool detach_lower : {true, false}) {
    SCOPED_TRACE(detach_lower ? "the recording's lower" : "attach's lower");
    std::string err;
    const ProbeCosts& at_attach = detach_lower ? high : low;
    const ProbeCosts& at_detach = detach_lower ? low : high;
    {
      RecordWriter w = must_create();
      ASSERT_TRUE(succeeded(w.begin(sample_process(), sample_clock(), sample_ops()), &err)) << err;
      ASSERT_TRUE(succeeded(w.set_probe_costs(at_attach), &err)) << err;
      ASSERT_TRUE(succeeded(w.set_probe_costs(at_detach), &err)) << err;
      EXPECT_FALSE(succeeded(w.set_probe_costs(low), &err));
      EXPECT_NE(err.find("attach's and the recording's already recorded"), std::string::npos) << err;
      ASSERT_TRUE(succeeded(w.finish(sample_stats(), 1), &err)) << err;
    }
    auto rec = noting_error(read_recording(path_), &err);
    ASSERT_TRUE(rec.has_value()) << err;
    ProbeCosts want = at_detach;
    want.attach_total_ns = at_attach.total_ns();
    want.recording_total_ns = at_detach.total_ns();
    EXPECT_EQ(rec->probe_costs, want);
  }
}

TEST_F(RecordFileTest, ProbeCostsChunksAreChecked) {
  std::string err;
  const std::vector<uint8_t> prefix = written_prefix(0);
  ProbeCosts bad = sample_probe_costs();
  bad.op_sites[2] = 4;  // no such bit
  expect_error(cat(prefix, chunk_of(ChunkType::PROBE_COSTS, probe_costs_payload(bad))),
               "f: corrupt chunk 5 (PROBE_COSTS)" + at_offset(prefix) + "op 2's probe sites are 4, not 0 to 3");
  const Bytes one = probe_costs_payload(sample_probe_costs());
  const std::vector<uint8_t> with_one = cat(prefix, chunk_of(ChunkType::PROBE_COSTS, one));
  const std::vector<uint8_t> with_two = cat(with_one, chunk_of(ChunkType::PROBE_COSTS, one));
  expect_error(cat(with_two, chunk_of(ChunkType::PROBE_COSTS, one)),
               "f: corrupt chunk 7 (PROBE_COSTS)" + at_offset(with_two) +
                   "a third PROBE_COSTS chunk (at most attach's and the recording's)");
  const std::vector<uint8_t> no_ops = written_prefix(8);
  expect_error(cat(no_ops, chunk_of(ChunkType::PROBE_COSTS, one)),
               "f: corrupt chunk 5 (PROBE_COSTS)" + at_offset(no_ops) +
                   "PROBE_COSTS chunk in a recording without ops (the no-ops option)");
  // Type 26 meant nothing in version 4: skipped like any unknown chunk.
  auto v4 = noting_error(read_recording_bytes(cat(v2_prefix(0, sample_ops(), 4), chunk_of(ChunkType::PROBE_COSTS, one)), "f"), &err);
  ASSERT_TRUE(v4.has_value()) << err;
  EXPECT_EQ(v4->probe_costs, std::nullopt);
}

}  // namespace
}  // namespace gpuprof

namespace gpuprof {
namespace {

// record --with-modules: MODULE_NAMES (docs/record-file.md, docs/modules.md).
TEST_F(RecordFileTest, ModuleNamesRoundTripAfterTheFramesTheyName) {
  std::string err;
  RecordOptions options;
  options.with_stack = true;
  RecordWriter w = must_create();
  ASSERT_TRUE(succeeded(w.begin(sample_process(), sample_clock(), sample_ops(), options), &err)) << err;
  for (const char* frame : {"nn.Module: Net_0", "nn.Module: Conv2d_0", "nn.Module: ReLU_0"})
    ASSERT_TRUE(succeeded(w.add_sample_frame(frame), &err)) << err;
  const std::vector<ModuleName> names = {{0, 1, "conv", 0}, {0, 2, "act", 7}};
  ASSERT_TRUE(succeeded(w.add_module_names(names), &err)) << err;
  // What the reader would refuse, the writer refuses, and writes nothing.
  EXPECT_FALSE(succeeded(w.add_module_names({{0, 1, "ok"}, {0, 3, "fc"}}), &err));
  EXPECT_EQ(err, path_ + ": not recording module names: name 1 names frame 3, but 3 frames are defined");
  EXPECT_FALSE(succeeded(w.add_module_names({{0, 1, ""}}), &err));
  EXPECT_EQ(err, path_ + ": not recording module names: name 0 has a name of 0 bytes (1 to 255)");
  ASSERT_TRUE(succeeded(w.add_module_names({}), &err)) << err;  // nothing to write
  ASSERT_TRUE(succeeded(w.finish(sample_stats(), 9), &err)) << err;
  const std::vector<uint8_t> file = read_bytes(path_);
  auto rec = noting_error(read_recording(path_), &err);
  ASSERT_TRUE(rec.has_value()) << err;
  EXPECT_EQ(rec->module_names, names);
  // The frames they name come first in the file: a file cut between the
  // two never names an undefined frame.
  std::vector<uint32_t> types;
  for (const ChunkSpan& c : chunks_of(file)) types.push_back(c.type);
  const auto frames_at = std::find(types.begin(), types.end(), static_cast<uint32_t>(ChunkType::SAMPLE_FRAMES));
  const auto names_at = std::find(types.begin(), types.end(), static_cast<uint32_t>(ChunkType::MODULE_NAMES));
  ASSERT_NE(names_at, types.end());
  EXPECT_LT(frames_at, names_at);
  EXPECT_EQ(std::count(types.begin(), types.end(), static_cast<uint32_t>(ChunkType::MODULE_NAMES)), 1);
  expect_every_flipped_byte_is_caught(file);
}

TEST_F(RecordFileTest, BadModuleNamesAreRefusedWithClearErrors) {
  std::string err;
  RecordWriter w = must_create();
  ASSERT_TRUE(succeeded(w.begin(sample_process(), sample_clock(), sample_ops()), &err)) << err;  // no with_stack
  EXPECT_FALSE(succeeded(w.add_module_names({{0, 1, "conv"}}), &err));
  EXPECT_EQ(err, path_ + ": not recording module names: the recording was begun without the with_stack option");

  constexpr uint32_t kWithStack = 1u << 4;  // OPTIONS bit 4
  const std::vector<uint8_t> prefix = written_prefix(kWithStack);
  auto expect_error = [&](const Bytes& payload, const std::string& problem) {
    std::string e;
    EXPECT_FALSE(noting_error(read_recording_bytes(cat(prefix, chunk_of(ChunkType::MODULE_NAMES, payload)), "f"), &e).has_value())
        << problem;
    EXPECT_EQ(e, "f: corrupt chunk 5 (MODULE_NAMES)" + at_offset(prefix) + problem);
  };
  expect_error(Bytes().u32(1).u32(0).u32(1).str("conv").u32(0), "module name 0 names frame 0, but 0 frames are defined");
  expect_error(Bytes().u32(1000000), "payload too short");
  // Without the with_stack option the chunk is not allowed at all.
  std::string e;
  const std::vector<uint8_t> plain = cat(written_prefix(0), chunk_of(ChunkType::MODULE_NAMES, Bytes().u32(0)));
  EXPECT_FALSE(noting_error(read_recording_bytes(plain, "f"), &e).has_value());
  EXPECT_NE(e.find("MODULE_NAMES"), std::string::npos) << e;
}


// The writer's one pending-chunk path: flush() writes every chunk type in
// record_file.h's order, and a chunk due early takes the pending chunks it
// names with it, before it.
TEST_F(RecordFileTest, PendingChunksGoOutAfterWhatTheyName) {
  std::string err;
  RecordOptions o = stack_options(997);
  o.shapes = o.memory = true;
  RecordWriter w = must_create();
  ASSERT_TRUE(succeeded(w.begin(sample_process(), sample_clock(), sample_ops(), o), &err)) << err;
  std::vector<gp_event> ev = make_events(3);  // an entry at 0
  ASSERT_TRUE(succeeded(w.append_events(ev.data(), ev.size()), &err)) << err;
  ASSERT_TRUE(succeeded(w.append_shapes(0, {Dims{2}}), &err)) << err;
  std::vector<gp_mem_event> mem = make_mem_events(1);
  ASSERT_TRUE(succeeded(w.append_mem_events(mem.data(), mem.size()), &err)) << err;
  ASSERT_TRUE(succeeded(w.add_sample_frame("a.py(1): f"), &err)) << err;
  ASSERT_TRUE(succeeded(w.add_sample_stack({0}), &err)) << err;
  ASSERT_TRUE(succeeded(w.append_entry_stack(0, 0), &err)) << err;
  std::vector<CpuSample> samples = make_samples(2, 1);  // sample 1 in the kernel
  ASSERT_TRUE(succeeded(w.append_samples(samples.data(), samples.size()), &err)) << err;
  ASSERT_TRUE(succeeded(w.append_sample_kernel_stack(1, 0), &err)) << err;
  ASSERT_TRUE(succeeded(w.add_launch_name("void k()"), &err)) << err;
  std::vector<CudaLaunch> launches = make_launches(1, 1);
  ASSERT_TRUE(succeeded(w.append_launches(launches.data(), launches.size()), &err)) << err;
  std::vector<GpuCorrelation> correlations = make_gpu_correlations(1);
  ASSERT_TRUE(succeeded(w.append_gpu_correlations(correlations.data(), correlations.size()), &err)) << err;
  std::vector<GpuActivity> activities = make_gpu_activities(1, 1);
  ASSERT_TRUE(succeeded(w.append_gpu_activities(activities.data(), activities.size()), &err)) << err;
  uint64_t before = w.bytes_written();
  ASSERT_TRUE(succeeded(w.flush(), &err)) << err;
  EXPECT_EQ(chunks_since(path_, before),
            (ChunkItems{{ChunkType::SHAPES, 1}, {ChunkType::OP_EVENTS, 3},
                        {ChunkType::ENTRY_SHAPES, 1}, {ChunkType::MEM_EVENTS, 1},
                        {ChunkType::SAMPLE_FRAMES, 1}, {ChunkType::SAMPLE_STACKS, 1},
                        {ChunkType::ENTRY_STACKS, 1}, {ChunkType::SAMPLES, 2},
                        {ChunkType::SAMPLE_KERNEL_STACKS, 1}, {ChunkType::LAUNCH_NAMES, 1},
                        {ChunkType::LAUNCHES, 1}, {ChunkType::GPU_CORRELATIONS, 1},
                        {ChunkType::GPU_ACTIVITIES, 1}}));

  // 5462 entry stacks (64 KiB) go out at once, after the 2 events left
  // pending (8 chunks of 2048 went out as they came) and the new frame and
  // stack.
  const uint64_t first = w.events_appended();
  ev = make_events(3 * 5462);  // entries at multiples of 3
  ASSERT_TRUE(succeeded(w.append_events(ev.data(), ev.size()), &err)) << err;
  ASSERT_TRUE(succeeded(w.add_sample_frame("b.py(2): g"), &err)) << err;
  ASSERT_TRUE(succeeded(w.add_sample_stack({0, 1}), &err)) << err;
  before = w.bytes_written();
  for (uint64_t k = 0; k < 5462; ++k) ASSERT_TRUE(succeeded(w.append_entry_stack(first + 3 * k, 1), &err)) << err;
  EXPECT_EQ(chunks_since(path_, before),
            (ChunkItems{{ChunkType::OP_EVENTS, 2}, {ChunkType::SAMPLE_FRAMES, 1},
                        {ChunkType::SAMPLE_STACKS, 1}, {ChunkType::ENTRY_STACKS, 5462}}));

  // 5462 kernel stacks go out at once, after the new frame and stack and
  // the 10 samples left pending (10 chunks of 2730 went out as they came).
  const uint64_t first_sample = w.samples_appended();
  samples = make_samples(5 * 5462, 2);  // in the kernel at 1, 6, 11, ...
  ASSERT_TRUE(succeeded(w.append_samples(samples.data(), samples.size()), &err)) << err;
  ASSERT_TRUE(succeeded(w.add_sample_frame("[k] do_syscall_64"), &err)) << err;
  ASSERT_TRUE(succeeded(w.add_sample_stack({2}), &err)) << err;
  before = w.bytes_written();
  for (uint64_t k = 0; k < 5462; ++k)
    ASSERT_TRUE(succeeded(w.append_sample_kernel_stack(first_sample + 5 * k + 1, 2), &err)) << err;
  EXPECT_EQ(chunks_since(path_, before),
            (ChunkItems{{ChunkType::SAMPLE_FRAMES, 1}, {ChunkType::SAMPLE_STACKS, 1},
                        {ChunkType::SAMPLES, 10}, {ChunkType::SAMPLE_KERNEL_STACKS, 5462}}));
  ASSERT_TRUE(succeeded(w.finish(sample_stats(), 1), &err)) << err;
  auto rec = noting_error(read_recording(path_), &err);
  ASSERT_TRUE(rec.has_value()) << err;
  EXPECT_EQ(rec->entry_stacks.size(), 5463u);
  EXPECT_EQ(rec->sample_kernel_stacks.size(), 5463u);
  EXPECT_EQ(rec->samples.size(), 2u + 5 * 5462);
}

}  // namespace
}  // namespace gpuprof

namespace gpuprof {
namespace {

// JOB_RANKS: the job ranks of processes (docs/record-file.md, docs/fleet.md).
JobRank full_rank() {
  JobRank r;
  r.pid = 4242;
  r.rank = 3;
  r.local_rank = 1;
  r.world_size = 8;
  r.local_world_size = 2;
  r.group_rank = 1;
  r.master_port = 29500;
  r.run_id = "job-42";
  r.master_addr = "node0.example";
  return r;
}

TEST_F(RecordFileTest, JobRanksRoundTripAndAPidDefinedAgainIsReplaced) {
  std::string err;
  RecordWriter w = must_create();
  ASSERT_TRUE(succeeded(w.begin(sample_process(), sample_clock(), sample_ops()), &err)) << err;
  JobRank bare;  // RANK alone: every other number absent
  bare.pid = 77;
  bare.rank = 0;
  ASSERT_TRUE(succeeded(w.add_job_ranks({full_rank(), bare}), &err)) << err;
  // What the reader would refuse, the writer refuses, and writes nothing.
  JobRank bad = bare;
  bad.pid = 0;
  EXPECT_FALSE(succeeded(w.add_job_ranks({full_rank(), bad}), &err));
  EXPECT_EQ(err, path_ + ": not recording job ranks: rank 1 has pid 0");
  bad = bare;
  bad.run_id = std::string(256, 'x');
  EXPECT_FALSE(succeeded(w.add_job_ranks({bad}), &err));
  EXPECT_EQ(err, path_ + ": not recording job ranks: rank 0 has a text of 256 bytes (at most 255)");
  ASSERT_TRUE(succeeded(w.add_job_ranks({}), &err)) << err;  // nothing to write
  JobRank again = bare;  // -a: read again once the process exec'd
  again.rank = 5;
  ASSERT_TRUE(succeeded(w.add_job_ranks({again}), &err)) << err;
  ASSERT_TRUE(succeeded(w.finish(sample_stats(), 9), &err)) << err;
  const std::vector<uint8_t> file = read_bytes(path_);
  auto rec = noting_error(read_recording(path_), &err);
  ASSERT_TRUE(rec.has_value()) << err;
  EXPECT_EQ(rec->job_ranks, (std::vector<JobRank>{full_rank(), again}));
  ASSERT_NE(job_rank_of(rec->job_ranks, 4242), nullptr);
  EXPECT_EQ(job_rank_of(rec->job_ranks, 4242)->master_addr, "node0.example");
  EXPECT_EQ(job_rank_of(rec->job_ranks, 1), nullptr);
  std::vector<uint32_t> types;
  for (const ChunkSpan& c : chunks_of(file)) types.push_back(c.type);
  EXPECT_EQ(std::count(types.begin(), types.end(), static_cast<uint32_t>(ChunkType::JOB_RANKS)), 2);
  expect_every_flipped_byte_is_caught(file);
}

TEST_F(RecordFileTest, JobRanksByHandAndTheirRefusals) {
  const std::vector<uint8_t> prefix = written_prefix(0);
  const uint32_t kAbsent = 0xffffffffu;
  // By hand, as record_file.h lays it out.
  const Bytes one = Bytes().u32(1).i32(9).u32(2).u32(kAbsent).u32(4).u32(kAbsent).u32(kAbsent).u32(29500).str("r").str("");
  std::string err;
  auto rec = noting_error(read_recording_bytes(cat(prefix, chunk_of(ChunkType::JOB_RANKS, one)), "f"), &err);
  ASSERT_TRUE(rec.has_value()) << err;
  ASSERT_EQ(rec->job_ranks.size(), 1u);
  JobRank want;
  want.pid = 9;
  want.rank = 2;
  want.world_size = 4;
  want.master_port = 29500;
  want.run_id = "r";
  EXPECT_EQ(rec->job_ranks[0], want);
  auto expect_error = [&](const Bytes& payload, const std::string& problem) {
    std::string e;
    EXPECT_FALSE(noting_error(read_recording_bytes(cat(prefix, chunk_of(ChunkType::JOB_RANKS, payload)), "f"), &e).has_value())
        << problem;
    EXPECT_EQ(e, "f: corrupt chunk 5 (JOB_RANKS)" + at_offset(prefix) + problem);
  };
  expect_error(Bytes().u32(1).i32(-3).u32(0).u32(0).u32(0).u32(0).u32(0).u32(0).str("").str(""),
               "job rank 0 has pid -3");
  expect_error(Bytes().u32(1).i32(3).u32(kAbsent).u32(0).u32(0).u32(0).u32(0).u32(0).str("").str(""),
               "job rank 0 has rank 4294967295");
  expect_error(Bytes().u32(1).i32(3).u32(0).u32(0x80000000u).u32(0).u32(0).u32(0).u32(0).str("").str(""),
               "job rank 0 has a number 2147483648 out of range");
  expect_error(Bytes().u32(1000000), "payload too short");
  expect_error(Bytes().u32(0).u32(7), "4 unexpected trailing payload bytes");
}

// A file from before JOB_RANKS reads as before; a build before it skips the
// chunk as unknown (type 29 means nothing in version 5).
TEST_F(RecordFileTest, JobRanksAreNewInVersion6AndOlderFilesHaveNone) {
  std::string err;
  RecordWriter w = must_create();
  ASSERT_TRUE(succeeded(w.begin(sample_process(), sample_clock(), sample_ops()), &err)) << err;
  ASSERT_TRUE(succeeded(w.finish(sample_stats(), 9), &err)) << err;
  auto plain = noting_error(read_recording(path_), &err);
  ASSERT_TRUE(plain.has_value()) << err;
  EXPECT_TRUE(plain->job_ranks.empty());
  const Bytes none = Bytes().u32(0);
  auto v5 = noting_error(read_recording_bytes(cat(v2_prefix(0, sample_ops(), 5), chunk_of(ChunkType::JOB_RANKS, Bytes().u32(7))), "f"), &err);
  ASSERT_TRUE(v5.has_value()) << err;  // skipped unread: its payload is not even looked at
  EXPECT_TRUE(v5->job_ranks.empty());
  auto empty = noting_error(read_recording_bytes(cat(written_prefix(0), chunk_of(ChunkType::JOB_RANKS, none)), "f"), &err);
  ASSERT_TRUE(empty.has_value()) << err;
  EXPECT_TRUE(empty->job_ranks.empty());
}

}  // namespace
}  // namespace gpuprof

namespace gpuprof {
namespace {

// NATIVE_FILES: the native files the samples' frames name, with their build
// ids (docs/record-file.md, docs/pprof.md).
TEST_F(RecordFileTest, NativeFilesRoundTripInOrderAndTheWriterRefusesWhatTheReaderWould) {
  std::string err;
  RecordWriter w = must_create();
  ASSERT_TRUE(succeeded(w.begin(sample_process(), sample_clock(), sample_ops(), sampled_options(99)), &err)) << err;
  const NativeFile libc{.pid = 4242, .path = "/usr/lib/x86_64-linux-gnu/libc.so.6", .build_id = "0a1b2c3d"};
  const NativeFile stripped{.pid = 4242, .path = "/opt/app/libplain.so", .build_id = ""};
  const NativeFile other{.pid = 7, .path = "/srv/root/usr/bin/python3.11", .build_id = "ff00"};
  ASSERT_TRUE(succeeded(w.add_native_files({libc, stripped}), &err)) << err;
  NativeFile bad = libc;
  bad.pid = 0;
  EXPECT_FALSE(succeeded(w.add_native_files({libc, bad}), &err));
  EXPECT_EQ(err, path_ + ": not recording native files: file 1 has pid 0");
  bad = libc;
  bad.path = "libc.so.6";
  EXPECT_FALSE(succeeded(w.add_native_files({bad}), &err));
  EXPECT_EQ(err, path_ + ": not recording native files: file 0 has a path of 9 bytes not starting with / (1 to 4096)");
  bad = libc;
  bad.build_id = "ABC";
  EXPECT_FALSE(succeeded(w.add_native_files({bad}), &err));
  EXPECT_EQ(err, path_ + ": not recording native files: file 0 has a build id that is not 0 to 128 lowercase hex "
                         "digits, paired");
  ASSERT_TRUE(succeeded(w.add_native_files({}), &err)) << err;  // nothing to write
  ASSERT_TRUE(succeeded(w.add_native_files({other}), &err)) << err;
  ASSERT_TRUE(succeeded(w.finish(sample_stats(), 9), &err)) << err;
  const std::vector<uint8_t> file = read_bytes(path_);
  auto rec = noting_error(read_recording(path_), &err);
  ASSERT_TRUE(rec.has_value()) << err;
  EXPECT_EQ(rec->native_files, (std::vector<NativeFile>{libc, stripped, other}));
  std::vector<uint32_t> types;
  for (const ChunkSpan& c : chunks_of(file)) types.push_back(c.type);
  EXPECT_EQ(std::count(types.begin(), types.end(), static_cast<uint32_t>(ChunkType::NATIVE_FILES)), 2);
  expect_every_flipped_byte_is_caught(file);
}

TEST_F(RecordFileTest, NativeFilesByHandTheirRefusalsAndOlderFiles) {
  const std::vector<uint8_t> prefix = written_sampled_prefix(0, 99);
  // By hand, as record_file.h lays it out.
  const Bytes one = Bytes().u32(1).i32(9).str("/lib/libm.so.6").str("beef");
  std::string err;
  auto rec = noting_error(read_recording_bytes(cat(prefix, chunk_of(ChunkType::NATIVE_FILES, one)), "f"), &err);
  ASSERT_TRUE(rec.has_value()) << err;
  EXPECT_EQ(rec->native_files, (std::vector<NativeFile>{{.pid = 9, .path = "/lib/libm.so.6", .build_id = "beef"}}));
  auto expect_error = [&](const std::vector<uint8_t>& start, const Bytes& payload, const std::string& problem) {
    std::string e;
    EXPECT_FALSE(noting_error(read_recording_bytes(cat(start, chunk_of(ChunkType::NATIVE_FILES, payload)), "f"), &e).has_value())
        << problem;
    EXPECT_EQ(e, "f: corrupt chunk 5 (NATIVE_FILES)" + at_offset(start) + problem);
  };
  expect_error(prefix, Bytes().u32(1).i32(-3).str("/a").str(""), "native file 0 has pid -3");
  expect_error(prefix, Bytes().u32(1).i32(3).str("").str(""),
               "native file 0 has a path of 0 bytes not starting with / (1 to 4096)");
  expect_error(prefix, Bytes().u32(1).i32(3).str("/a").str("abc"),
               "native file 0 has a build id that is not 0 to 128 lowercase hex digits, paired");
  expect_error(prefix, Bytes().u32(1000000), "payload too short");
  // Needs the sample_hz option: a recording without samples has no frames to name files.
  std::string e;
  EXPECT_FALSE(noting_error(read_recording_bytes(cat(written_prefix(0), chunk_of(ChunkType::NATIVE_FILES, one)), "f"), &e));
  EXPECT_NE(e.find("NATIVE_FILES chunk in a recording without"), std::string::npos) << e;
  // A file from before NATIVE_FILES has none; a build before it skips the
  // chunk as unknown (type 30 means nothing in version 5).
  auto v5 = noting_error(read_recording_bytes(cat(v2_sampled_prefix(0, 99, 5), chunk_of(ChunkType::NATIVE_FILES, Bytes().u32(7))), "f"), &err);
  ASSERT_TRUE(v5.has_value()) << err;
  EXPECT_TRUE(v5->native_files.empty());
}

}  // namespace
}  // namespace gpuprof
