// record_file_test.cpp: the record file round trip and every way a file can
// be cut, corrupted or foreign (format in userspace/record_file.h).
#include "record_file.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace gpuprof {
namespace {

ProcessInfo sample_process() {
  return {4242,
          "python3",
          "python3 train.py --epochs 1",
          "/opt/torch/lib/libtorch_cpu.so",
          "0123456789abcdef",
          "gpu-node-7"};
}
ClockInfo sample_clock() { return {1'000'000'000ULL, 1'700'000'000'000'000'000ULL, 0}; }
std::vector<OpInfo> sample_ops() {
  return {{"aten::add", "Tensor", "_ZN2at4_ops10add_Tensor4callE"},
          {"aten::mm", "", "_ZN2at4_ops2mm4callE"},
          {"aten::conv2d", "", "_ZN2at4_ops6conv2d4callE"}};
}
RecordStats sample_stats() { return {13, 2, 3, 5, 1, "signal"}; }

// n valid events, distinct per `seed`: entries, exits and catches.
std::vector<gp_event> make_events(size_t n, uint32_t seed = 0) {
  std::vector<gp_event> v(n);
  for (size_t i = 0; i < n; ++i) {
    gp_event& e = v[i];
    e.ts_ns = 5'000'000'000ULL + seed * 1000003ULL + i * 17;
    e.sp = 0x7ffd00000000ULL + i * 8;
    e.tid = 100 + seed;
    e.pid = 4242;
    e.kind = static_cast<uint16_t>(i % 3 + 1);
    e.op_id = e.kind == GP_EV_CATCH ? GP_NO_OP : static_cast<uint32_t>((i + seed) % 3);
    e.pad = 0;
  }
  return v;
}

bool same_events(const std::vector<gp_event>& a, const std::vector<gp_event>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(gp_event)) == 0);
}

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

std::vector<uint8_t> cat(std::vector<uint8_t> a, const std::vector<uint8_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}
std::vector<uint8_t> events_payload(const std::vector<gp_event>& ev) {
  auto* p = reinterpret_cast<const uint8_t*>(ev.data());
  return {p, p + ev.size() * sizeof(gp_event)};
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
    auto w = RecordWriter::create(path_, &err);
    EXPECT_TRUE(w.has_value()) << err;
    return std::move(w.value());  // throws (failing the test) when absent
  }
  // The file header plus PROCESS, CLOCK and OP_TABLE for the sample data.
  std::vector<uint8_t> mandatory_prefix() {
    std::string err;
    RecordWriter w = must_create();
    EXPECT_TRUE(w.begin(sample_process(), sample_clock(), sample_ops(), &err)) << err;
    return read_bytes(path_);
  }

  std::string dir_, path_;
};

TEST_F(RecordFileTest, RoundTripsAFullRecording) {
  std::vector<gp_event> events = make_events(13);
  std::string err;
  {
    RecordWriter w = must_create();
    ASSERT_TRUE(w.begin(sample_process(), sample_clock(), sample_ops(), &err)) << err;
    ASSERT_TRUE(w.append_events(events.data(), events.size(), &err)) << err;
    ASSERT_TRUE(w.finish(sample_stats(), 9'000'000'000ULL, &err)) << err;
    EXPECT_EQ(w.events_written(), 13u);
    EXPECT_EQ(w.bytes_written(), std::filesystem::file_size(path_));
  }
  auto rec = read_recording(path_, &err);
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
  auto mem = read_recording_bytes(read_bytes(path_), &err);
  ASSERT_TRUE(mem.has_value()) << err;
  EXPECT_TRUE(same_events(mem->events, events));
}

TEST_F(RecordFileTest, RoundTripsEmptyStringsOpsAndEvents) {
  std::string err;
  RecordWriter w = must_create();
  ASSERT_TRUE(w.begin(ProcessInfo{}, ClockInfo{}, {}, &err)) << err;
  ASSERT_TRUE(w.flush(&err)) << err;  // nothing buffered: writes no chunk
  ASSERT_TRUE(w.finish(RecordStats{}, 0, &err)) << err;
  auto rec = read_recording(path_, &err);
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
  ASSERT_TRUE(w.begin(sample_process(), sample_clock(), sample_ops(), &err)) << err;
  const uint64_t begin_end = w.bytes_written();
  std::vector<gp_event> all;
  for (uint32_t round = 0; round < 4; ++round) {
    std::vector<gp_event> ev = make_events(7 + round, round);
    ASSERT_TRUE(w.append_events(ev.data(), ev.size(), &err)) << err;
    all.insert(all.end(), ev.begin(), ev.end());
    ASSERT_TRUE(w.flush(&err)) << err;
    EXPECT_EQ(w.events_written(), all.size());
  }
  EXPECT_EQ(w.bytes_written(), begin_end + 4 * kRecordChunkHeaderSize + all.size() * 32);
  // 5000 events: two full 2048-event chunks go out at once, 904 stay buffered.
  const uint64_t before = w.bytes_written();
  std::vector<gp_event> big = make_events(5000, 9);
  ASSERT_TRUE(w.append_events(big.data(), big.size(), &err)) << err;
  all.insert(all.end(), big.begin(), big.end());
  EXPECT_EQ(w.bytes_written(), before + 2 * (kRecordChunkHeaderSize + kRecordEventsChunkBytes));
  EXPECT_EQ(w.events_written(), all.size() - 904);
  ASSERT_TRUE(w.finish(sample_stats(), 7, &err)) << err;
  auto rec = read_recording(path_, &err);
  ASSERT_TRUE(rec.has_value()) << err;
  EXPECT_TRUE(rec->complete);
  EXPECT_TRUE(same_events(rec->events, all));
}

// A recorder killed at any byte: the file is every prefix of a finished one.
TEST_F(RecordFileTest, EveryTruncationGivesAnErrorOrTheCompleteChunks) {
  std::string err;
  RecordWriter w = must_create();
  ASSERT_TRUE(w.begin(sample_process(), sample_clock(), sample_ops(), &err)) << err;
  struct Boundary {
    uint64_t end;
    size_t events;
  };
  std::vector<Boundary> bounds{{w.bytes_written(), 0}};
  std::vector<gp_event> all;
  for (uint32_t round = 0; round < 3; ++round) {
    std::vector<gp_event> ev = make_events(5, round);
    all.insert(all.end(), ev.begin(), ev.end());
    ASSERT_TRUE(w.append_events(ev.data(), ev.size(), &err)) << err;
    ASSERT_TRUE(w.flush(&err)) << err;
    bounds.push_back({w.bytes_written(), all.size()});
  }
  ASSERT_TRUE(w.finish(sample_stats(), 77, &err)) << err;
  const std::vector<uint8_t> file = read_bytes(path_);
  bounds.push_back({file.size() - kRecordChunkHeaderSize - 8, all.size()});  // STATS end
  const uint64_t mandatory_end = bounds.front().end;

  for (size_t len = 0; len <= file.size(); ++len) {
    SCOPED_TRACE("truncated to " + std::to_string(len) + " bytes");
    auto rec = read_recording_bytes(std::span(file.data(), len), &err, "f");
    if (len == 0) {
      ASSERT_FALSE(rec.has_value());
      EXPECT_EQ(err, "f is empty: not a gpuprof record file");
    } else if (len < kRecordHeaderSize) {
      ASSERT_FALSE(rec.has_value());
      EXPECT_EQ(err, "f is truncated: it ends inside the file header (" + std::to_string(len) +
                         " of 16 bytes)");
    } else if (len < mandatory_end) {
      ASSERT_FALSE(rec.has_value());
      EXPECT_EQ(err, "f is truncated: it ends at offset " + std::to_string(len) +
                         ", before the PROCESS, CLOCK and OP_TABLE chunks are complete");
    } else if (len < file.size()) {
      ASSERT_TRUE(rec.has_value()) << err;
      EXPECT_FALSE(rec->complete);
      Boundary last = bounds.front();
      for (const Boundary& b : bounds)
        if (b.end <= len) last = b;
      std::vector<gp_event> expect(all.begin(), all.begin() + last.events);
      EXPECT_TRUE(same_events(rec->events, expect)) << rec->events.size();
      std::string reason = "no END chunk: the recorder did not finish (was it killed?)";
      if (len > last.end)
        reason += "; ignored " + std::to_string(len - last.end) +
                  " bytes of a torn chunk at offset " + std::to_string(last.end);
      EXPECT_EQ(rec->incomplete_reason, reason);
      EXPECT_EQ(rec->process, sample_process());
      EXPECT_EQ(rec->ops, sample_ops());
    } else {
      ASSERT_TRUE(rec.has_value()) << err;
      EXPECT_TRUE(rec->complete);
      EXPECT_TRUE(same_events(rec->events, all));
    }
  }
}

// A real SIGKILL between flushes: what was flushed is readable.
TEST_F(RecordFileTest, WriterKilledBySigkillLeavesAReadableFile) {
  std::vector<gp_event> flushed = make_events(10, 1);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::string e;
    auto w = RecordWriter::create(path_, &e);
    if (!w || !w->begin(sample_process(), sample_clock(), sample_ops(), &e)) _exit(1);
    if (!w->append_events(flushed.data(), 6, &e) || !w->flush(&e)) _exit(1);
    if (!w->append_events(flushed.data() + 6, 4, &e) || !w->flush(&e)) _exit(1);
    std::vector<gp_event> lost = make_events(3, 2);
    if (!w->append_events(lost.data(), lost.size(), &e)) _exit(1);  // buffered only
    raise(SIGKILL);
    _exit(1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
  std::string err;
  auto rec = read_recording(path_, &err);
  ASSERT_TRUE(rec.has_value()) << err;
  EXPECT_FALSE(rec->complete);
  EXPECT_EQ(rec->incomplete_reason, "no END chunk: the recorder did not finish (was it killed?)");
  EXPECT_TRUE(same_events(rec->events, flushed));
  EXPECT_EQ(rec->clock.end_monotonic_ns, 0u);
}

TEST_F(RecordFileTest, BadMagicIsNotARecordFile) {
  std::string text = "#!/usr/bin/env python3\nprint('hello')\n", err;
  std::vector<uint8_t> bytes(text.begin(), text.end());
  EXPECT_FALSE(read_recording_bytes(bytes, &err, "x.py"));
  EXPECT_EQ(err, "x.py is not a gpuprof record file (no GPUPROF magic)");
  EXPECT_FALSE(read_recording_bytes(std::span(bytes.data(), 3), &err, "x.py"));
  EXPECT_EQ(err, "x.py is not a gpuprof record file (no GPUPROF magic)");
}

TEST_F(RecordFileTest, FutureVersionNamesBothVersions) {
  std::string err;
  std::vector<uint8_t> bytes = cat(encode_record_header(2), encode_chunk(77, {}));
  EXPECT_FALSE(read_recording_bytes(bytes, &err, "new.gpuprof"));
  EXPECT_EQ(err,
            "new.gpuprof was written by a newer gpuprof: record format version 2, "
            "this gpuprof reads version 1");
  EXPECT_FALSE(read_recording_bytes(encode_record_header(0), &err, "z"));
  EXPECT_EQ(err, "z: unsupported record format version 0 (this gpuprof reads version 1)");
  std::vector<uint8_t> header = encode_record_header();
  header[12] = 20;
  EXPECT_FALSE(read_recording_bytes(header, &err, "h"));
  EXPECT_EQ(err, "h: corrupt file header: header size 20 (expected 16)");
}

TEST_F(RecordFileTest, FlippedByteInAMiddleChunkIsCorrupt) {
  std::string err;
  RecordWriter w = must_create();
  ASSERT_TRUE(w.begin(sample_process(), sample_clock(), sample_ops(), &err)) << err;
  std::vector<gp_event> ev = make_events(4);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(w.append_events(ev.data(), 4, &err) && w.flush(&err));
  const uint64_t second_events = w.bytes_written() - 2 * (16 + 128);  // chunk 5
  ASSERT_TRUE(w.finish(sample_stats(), 1, &err)) << err;
  std::vector<uint8_t> file = read_bytes(path_);
  std::vector<uint8_t> bad = file;
  bad[second_events + 16 + 40] ^= 0x01;
  EXPECT_FALSE(read_recording_bytes(bad, &err, "f"));
  EXPECT_EQ(
      err, "f: corrupt chunk 5 at offset " + std::to_string(second_events) + ": checksum mismatch");
  bad = file;
  bad[second_events] ^= 0x10;  // the type field is checksummed too
  EXPECT_FALSE(read_recording_bytes(bad, &err, "f"));
  EXPECT_EQ(
      err, "f: corrupt chunk 5 at offset " + std::to_string(second_events) + ": checksum mismatch");
  // Any single flipped byte: a clear error, or (a length pointing past the
  // end) an incomplete recording that says what it ignored. Never complete.
  for (size_t i = 0; i < file.size(); ++i) {
    bad = file;
    bad[i] ^= 0xff;
    auto rec = read_recording_bytes(bad, &err, "f");
    if (rec) {
      EXPECT_FALSE(rec->complete) << "byte " << i;
      EXPECT_NE(rec->incomplete_reason.find("ignored"), std::string::npos) << "byte " << i;
    } else {
      EXPECT_EQ(err.rfind("f", 0), 0u) << err;
    }
  }
}

TEST_F(RecordFileTest, EventsOutsideTheOpTableAreRejected) {
  const std::vector<uint8_t> prefix = mandatory_prefix();
  const std::string at = "f: corrupt chunk 4 (EVENTS) at offset " + std::to_string(prefix.size());
  std::string err;
  std::vector<gp_event> ev = make_events(4);
  ev[3].kind = GP_EV_OP_EXIT;
  ev[3].op_id = 3;  // the op table has 3 ops
  auto chunk = encode_chunk(static_cast<uint32_t>(ChunkType::EVENTS), events_payload(ev));
  EXPECT_FALSE(read_recording_bytes(cat(prefix, chunk), &err, "f"));
  EXPECT_EQ(err, at + ": event 3 has op_id 3, but the op table has 3 ops");
  ev[3].op_id = GP_NO_OP;  // an entry or exit must name an op
  chunk = encode_chunk(static_cast<uint32_t>(ChunkType::EVENTS), events_payload(ev));
  EXPECT_FALSE(read_recording_bytes(cat(prefix, chunk), &err, "f"));
  EXPECT_EQ(err, at + ": event 3 has op_id 4294967295, but the op table has 3 ops");
  ev[3].op_id = 0;
  ev[3].kind = 9;
  chunk = encode_chunk(static_cast<uint32_t>(ChunkType::EVENTS), events_payload(ev));
  EXPECT_FALSE(read_recording_bytes(cat(prefix, chunk), &err, "f"));
  EXPECT_EQ(err, at + ": event 3 has unknown kind 9");
  chunk = encode_chunk(static_cast<uint32_t>(ChunkType::EVENTS), std::vector<uint8_t>(33, 0));
  EXPECT_FALSE(read_recording_bytes(cat(prefix, chunk), &err, "f"));
  EXPECT_EQ(err, at + ": payload of 33 bytes is not a whole number of 32-byte events");
}

TEST_F(RecordFileTest, WriterRefusesEventsTheReaderWouldReject) {
  std::string err;
  RecordWriter w = must_create();
  ASSERT_TRUE(w.begin(sample_process(), sample_clock(), sample_ops(), &err)) << err;
  std::vector<gp_event> ev = make_events(3);
  ev[1].op_id = 17;
  EXPECT_FALSE(w.append_events(ev.data(), ev.size(), &err));
  EXPECT_EQ(err, path_ + ": not recording event has op_id 17, but the op table has 3 ops");
  ev[1].op_id = 1;
  ASSERT_TRUE(w.append_events(ev.data(), ev.size(), &err)) << err;  // still usable
  ASSERT_TRUE(w.finish(sample_stats(), 1, &err)) << err;
  auto rec = read_recording(path_, &err);
  ASSERT_TRUE(rec.has_value()) << err;
  EXPECT_TRUE(same_events(rec->events, ev));
}

TEST_F(RecordFileTest, UnknownChunksAreSkipped) {
  std::string err;
  std::vector<gp_event> ev = make_events(6);
  RecordWriter w = must_create();
  ASSERT_TRUE(w.begin(sample_process(), sample_clock(), sample_ops(), &err)) << err;
  const uint64_t split = w.bytes_written();
  ASSERT_TRUE(w.append_events(ev.data(), ev.size(), &err)) << err;
  ASSERT_TRUE(w.finish(sample_stats(), 5, &err)) << err;
  std::vector<uint8_t> file = read_bytes(path_);
  std::vector<uint8_t> extra = cat(encode_chunk(1000, std::vector<uint8_t>{'h', 'i'}),
                                   encode_chunk(1001, {}));  // empty payload
  file.insert(file.begin() + split, extra.begin(), extra.end());
  {
    std::ofstream(path_, std::ios::binary).write(reinterpret_cast<char*>(file.data()), file.size());
  }
  auto rec = read_recording(path_, &err);
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
  EXPECT_FALSE(read_recording_bytes(cat(prefix, huge), &err, "f"));
  EXPECT_EQ(err, "f: corrupt chunk 4 at offset " + off +
                     ": payload length 4294967295 exceeds the limit of 67108864 bytes");
  // An op count that cannot fit its payload.
  auto ops =
      encode_chunk(static_cast<uint32_t>(ChunkType::OP_TABLE), std::vector<uint8_t>(4, 0xff));
  EXPECT_FALSE(read_recording_bytes(cat(encode_record_header(), ops), &err, "f"));
  EXPECT_EQ(
      err,
      "f: corrupt chunk 1 (OP_TABLE) at offset 16: op count 4294967295 does not fit the payload");
  // Events before the op table.
  auto ev = encode_chunk(static_cast<uint32_t>(ChunkType::EVENTS), {});
  EXPECT_FALSE(read_recording_bytes(cat(encode_record_header(), ev), &err, "f"));
  EXPECT_EQ(err,
            "f: corrupt chunk 1 (EVENTS) at offset 16: EVENTS chunk before the PROCESS, "
            "CLOCK and OP_TABLE chunks");
  // A CLOCK payload one byte short, a duplicate CLOCK, an END without STATS.
  auto clock = encode_chunk(static_cast<uint32_t>(ChunkType::CLOCK), std::vector<uint8_t>(15, 0));
  EXPECT_FALSE(read_recording_bytes(cat(prefix, clock), &err, "f"));
  EXPECT_EQ(err, "f: corrupt chunk 4 (CLOCK) at offset " + off + ": duplicate CLOCK chunk");
  EXPECT_FALSE(read_recording_bytes(cat(encode_record_header(), clock), &err, "f"));
  EXPECT_EQ(err, "f: corrupt chunk 1 (CLOCK) at offset 16: payload too short");
  auto end = encode_chunk(static_cast<uint32_t>(ChunkType::END), std::vector<uint8_t>(8, 0));
  EXPECT_FALSE(read_recording_bytes(cat(prefix, end), &err, "f"));
  EXPECT_EQ(err, "f: corrupt chunk 4 (END) at offset " + off + ": END chunk without a STATS chunk");
  // Data after the END chunk.
  RecordWriter w = must_create();
  ASSERT_TRUE(w.begin(sample_process(), sample_clock(), sample_ops(), &err)) << err;
  ASSERT_TRUE(w.finish(sample_stats(), 5, &err)) << err;
  std::vector<uint8_t> file = read_bytes(path_);
  EXPECT_FALSE(read_recording_bytes(cat(file, {0, 0, 0}), &err, "f"));
  EXPECT_EQ(err,
            "f: corrupt: 3 bytes after the END chunk at offset " + std::to_string(file.size()));
}

TEST_F(RecordFileTest, EmptyMissingAndNonRegularFiles) {
  std::string err;
  { std::ofstream(path_).flush(); }
  EXPECT_FALSE(read_recording(path_, &err));
  EXPECT_EQ(err, path_ + " is empty: not a gpuprof record file");
  std::string missing = dir_ + "/missing.gpuprof";
  EXPECT_FALSE(read_recording(missing, &err));
  EXPECT_EQ(err, "cannot open " + missing + ": " + std::strerror(ENOENT));
  EXPECT_FALSE(read_recording(dir_, &err));
  EXPECT_EQ(err, dir_ + " is not a regular file");
  std::string nodir = dir_ + "/no/such/dir.gpuprof";
  EXPECT_FALSE(RecordWriter::create(nodir, &err));
  EXPECT_EQ(err, "cannot create " + nodir + ": " + std::strerror(ENOENT));
}

TEST_F(RecordFileTest, WriterReportsMisuseAndWriteErrors) {
  std::string err;
  RecordWriter w = must_create();
  gp_event e = make_events(1)[0];
  EXPECT_FALSE(w.append_events(&e, 1, &err));
  EXPECT_EQ(err, path_ + ": append_events called out of order (internal error)");
  ASSERT_TRUE(w.begin(sample_process(), sample_clock(), sample_ops(), &err)) << err;
  EXPECT_FALSE(w.begin(sample_process(), sample_clock(), sample_ops(), &err));
  ASSERT_TRUE(w.finish(sample_stats(), 1, &err)) << err;
  EXPECT_FALSE(w.finish(sample_stats(), 1, &err));
  EXPECT_EQ(err, path_ + ": finish called out of order (internal error)");

  if (access("/dev/full", W_OK) != 0) GTEST_SKIP() << "no writable /dev/full";
  auto full = RecordWriter::create("/dev/full", &err);
  ASSERT_TRUE(full.has_value()) << err;
  EXPECT_FALSE(full->begin(sample_process(), sample_clock(), sample_ops(), &err));
  EXPECT_EQ(err, std::string("cannot write /dev/full: ") + std::strerror(ENOSPC));
  EXPECT_FALSE(full->flush(&err));
  EXPECT_EQ(err, "/dev/full: flush after an earlier write error");
}

}  // namespace
}  // namespace gpuprof
