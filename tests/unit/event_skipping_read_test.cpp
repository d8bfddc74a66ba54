// event_skipping_read_test.cpp: a streaming read for a stream that skips
// the op events (RecordStream::skips_events; report's first read,
// cli/report_reads.cpp): it counts them without decoding them, so every
// pair it hands on names the event a decoding read names, in packed
// (version 6) and raw (version 5) files alike; it leaves them unchecked for
// the read that takes them; and past a lost chunk it decodes them again, as
// only decoded events give a lost MORE_OPS chunk's ops their placeholders.
#include <gtest/gtest.h>

#include <functional>
#include <span>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

#include "cli/report_reads.h"
#include "error_strings.h"
#include "random_event_streams.h"
#include "record/packed_events.h"
#include "record/record_file.h"
#include "record/record_stream.h"
#include "record_samples.h"
#include "test_files.h"

namespace gpuprof {
namespace {

using namespace ::gpuprof::test;
using record_samples::chunks_of;
using record_samples::ChunkSpan;
using record_samples::read_bytes;

constexpr uint32_t kOpEvents = static_cast<uint32_t>(ChunkType::OP_EVENTS);

// What a read hands a stream: the events, and every pair (kind, event
// index, id) in order.
class Noting : public RecordStream {
 public:
  explicit Noting(bool skips) : skips_(skips) {}
  bool wants(const Recording&) override { return true; }
  bool skips_events() const override { return skips_; }
  void on_events(std::span<const gp_event> events, uint64_t first) override {
    if (handed == 0) first_handed = first;
    handed += events.size();
  }
  void on_entry_stack(uint64_t index, uint32_t id) override { pairs.emplace_back('s', index, id); }
  void on_entry_shape(uint64_t index, uint32_t id) override { pairs.emplace_back('h', index, id); }
  void on_backward_stack(uint64_t index, uint32_t id) override { pairs.emplace_back('b', index, id); }
  bool on_mem_events(std::span<const gp_mem_event>) override { return true; }
  bool on_gpu_activities(std::span<const GpuActivity>) override { return true; }
  uint64_t handed = 0;
  uint64_t first_handed = UINT64_MAX;  // the index of the first event handed on
  std::vector<std::tuple<char, uint64_t, uint32_t>> pairs;

 private:
  bool skips_;
};

class EventSkippingRead : public ::testing::Test {
 protected:
  // A finished recording of the random streams' ops, written by `write`.
  void record(const RecordOptions& options, const std::function<void(RecordWriter&)>& write) {
    std::string error;
    auto writer = noting_error(RecordWriter::create(path_), &error);
    ASSERT_TRUE(writer) << error;
    ProcessInfo process;
    process.pid = 4242;
    process.comm = "python3";
    ASSERT_TRUE(succeeded(writer->begin(process, ClockInfo{}, ops_of_the_streams(), options), &error)) << error;
    write(*writer);
    ASSERT_TRUE(succeeded(writer->finish(RecordStats{}, 0), &error)) << error;
  }
  void rewrite(const std::vector<uint8_t>& bytes) {
    FILE* f = std::fopen(path_.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(std::fwrite(bytes.data(), 1, bytes.size(), f), bytes.size());
    std::fclose(f);
  }
  Result<Recording> read(Noting& stream, CorruptChunks corrupt = CorruptChunks::refuse) {
    bool whole_needed = false;
    Result<Recording> read = read_recording_streamed(path_, corrupt, stream, &whole_needed);
    EXPECT_FALSE(whole_needed);
    return read;
  }

  TempFile file_{"event-skipping"};
  const std::string& path_ = file_.path();
};

// Each write step must succeed.
void must(Result<void> step) {
  std::string error;
  EXPECT_TRUE(succeeded(std::move(step), &error)) << error;
}

TEST_F(EventSkippingRead, HandsOnEveryPairAsADecodingReadDoes) {
  const std::vector<gp_event> events = random_events(11, 30000);
  RecordOptions options;
  options.shapes = true;
  options.with_stack = true;
  record(options, [&](RecordWriter& w) {
    must(w.add_sample_frame("train.py(3): main"));
    must(w.add_sample_stack({0}));
    const InputShapes shapes[2] = {{std::vector<int64_t>{2, 3}}, {std::vector<int64_t>{7}}};
    // Chunks of 1,000 events with their pairs after them, as a recorder
    // flushes; the writer's own chunking on top.
    for (size_t at = 0; at < events.size(); at += 1000) {
      must(w.append_events(&events[at], 1000));
      for (size_t i = at; i < at + 1000; i++) {
        if (events[i].kind != GP_EV_OP_ENTRY) continue;
        if (i % 3 == 0) must(w.append_entry_stack(i, 0));
        if (i % 5 == 0) must(w.append_shapes(i, shapes[i % 2]));
        if (i % 7 == 0) must(w.append_backward_stack(i, 0));
      }
      must(w.flush());
    }
  });
  size_t packed_chunks = 0;
  for (const ChunkSpan& c : chunks_of(read_bytes(path_))) packed_chunks += c.type == kOpEvents;
  ASSERT_GE(packed_chunks, 30u);
  std::string error;
  Noting decoding(false), skipping(true);
  const auto decoded = noting_error(read(decoding), &error);
  ASSERT_TRUE(decoded) << error;
  const auto counted = noting_error(read(skipping), &error);
  ASSERT_TRUE(counted) << error;
  EXPECT_EQ(decoding.handed, events.size());
  EXPECT_EQ(skipping.handed, 0u);
  EXPECT_EQ(counted->streamed_events, events.size());
  EXPECT_EQ(skipping.pairs, decoding.pairs);
  EXPECT_GT(decoding.pairs.size(), 5000u);  // or the comparison proves little
  EXPECT_EQ(counted->ops, decoded->ops);
  EXPECT_EQ(counted->shapes, decoded->shapes);
  EXPECT_EQ(counted->streamed_entry_stacks, decoded->streamed_entry_stacks);
  EXPECT_TRUE(counted->complete);
}

// tests/golden/record_v5.gpuprof: raw EVENTS chunks (record_versions_test.cpp).
TEST_F(EventSkippingRead, CountsAVersion5FilesRawEvents) {
  const std::string golden = (golden_dir() / "record_v5.gpuprof").string();
  std::string error;
  Noting decoding(false), skipping(true);
  bool whole_needed = false;
  const auto decoded = noting_error(read_recording_streamed(golden, CorruptChunks::refuse, decoding, &whole_needed), &error);
  ASSERT_TRUE(decoded) << error;
  const auto counted = noting_error(read_recording_streamed(golden, CorruptChunks::refuse, skipping, &whole_needed), &error);
  ASSERT_TRUE(counted) << error;
  EXPECT_EQ(decoding.handed, 6u);
  EXPECT_EQ(skipping.handed, 0u);
  EXPECT_EQ(counted->streamed_events, 6u);
  const std::vector<std::tuple<char, uint64_t, uint32_t>> pairs = {{'h', 0, 0}, {'h', 4, 0}, {'s', 0, 0}};
  EXPECT_EQ(decoding.pairs, pairs);
  EXPECT_EQ(skipping.pairs, pairs);
}

// An OP_EVENTS chunk that passes its checksum but holds an event of an
// unknown kind: the counting read does not look; the read that takes the
// events refuses it, so report still says the file is corrupt.
TEST_F(EventSkippingRead, LeavesTheEventsCheckToTheReadThatTakesThem) {
  const std::vector<gp_event> events = random_events(12, 3000);
  record({}, [&](RecordWriter& w) {
    must(w.append_events(events.data(), events.size()));
    must(w.flush());
  });
  std::vector<uint8_t> file = read_bytes(path_);
  ChunkSpan chunk{0, 0, 0};
  for (const ChunkSpan& c : chunks_of(file))
    if (c.type == kOpEvents) chunk = c;
  ASSERT_EQ(chunk.type, kOpEvents);
  std::string error;
  const auto payload = noting_error(chunk_payload(std::span<const uint8_t>(file).subspan(chunk.offset, chunk.bytes)), &error);
  ASSERT_TRUE(payload) << error;
  uint64_t first = 0;
  std::vector<gp_event> packed;
  ASSERT_EQ(unpack_events(*payload, &first, packed), "");
  packed[17].kind = 9;
  std::vector<uint8_t> bad_payload;
  pack_events(packed, first, bad_payload);
  const std::vector<uint8_t> bad_chunk = encode_written_chunk(ChunkType::OP_EVENTS, bad_payload);
  file.erase(file.begin() + static_cast<ptrdiff_t>(chunk.offset),
             file.begin() + static_cast<ptrdiff_t>(chunk.offset + chunk.bytes));
  file.insert(file.begin() + static_cast<ptrdiff_t>(chunk.offset), bad_chunk.begin(), bad_chunk.end());
  rewrite(file);

  Noting skipping(true), decoding(false);
  const auto counted = noting_error(read(skipping, CorruptChunks::skip), &error);
  ASSERT_TRUE(counted) << error;
  EXPECT_EQ(counted->streamed_events, events.size());
  EXPECT_FALSE(noting_error(read(decoding, CorruptChunks::skip), &error));
  EXPECT_NE(error.find("(OP_EVENTS) at offset " + std::to_string(chunk.offset) + ": event 17 "), std::string::npos)
      << error;
  for (bool strict : {false, true}) {
    auto table = cli::read_for_table(path_, strict, false, false, {});
    ASSERT_TRUE(std::holds_alternative<int>(table)) << "strict " << strict;
    EXPECT_EQ(std::get<int>(table), 1);
  }
}

// A lost MORE_OPS chunk: the events after it that name its ops give them
// placeholders, so a skipping read decodes the events past a lost chunk,
// and its ops are the decoding read's.
TEST_F(EventSkippingRead, DecodesTheEventsPastALostChunk) {
  const uint32_t added = static_cast<uint32_t>(ops_of_the_streams().size());
  record({}, [&](RecordWriter& w) {
    std::vector<gp_event> before = random_events(13, 2000), after = random_events(14, 2000);
    must(w.append_events(before.data(), before.size()));
    must(w.flush());
    must(w.add_ops({OpInfo{.name = "aten::added_a"}, OpInfo{.name = "aten::added_b"}}));
    must(w.flush());
    for (gp_event& e : after)
      if (e.op_id == 1) e.op_id = added + 1;  // the second added op
    must(w.append_events(after.data(), after.size()));
    must(w.flush());
  });
  std::vector<uint8_t> file = read_bytes(path_);
  bool lost = false;
  for (const ChunkSpan& c : chunks_of(file))
    if (c.type == static_cast<uint32_t>(ChunkType::MORE_OPS)) {
      file[c.offset + c.bytes - 1] ^= 0x01;  // its checksum fails
      lost = true;
    }
  ASSERT_TRUE(lost);
  rewrite(file);
  std::string error;
  Noting decoding(false), skipping(true);
  const auto decoded = noting_error(read(decoding, CorruptChunks::skip), &error);
  ASSERT_TRUE(decoded) << error;
  const auto counted = noting_error(read(skipping, CorruptChunks::skip), &error);
  ASSERT_TRUE(counted) << error;
  ASSERT_EQ(decoded->lost_chunks.size(), 1u);
  ASSERT_EQ(decoded->ops.size(), added + 2u);  // both lost ops' placeholders, the second named
  EXPECT_EQ(counted->ops, decoded->ops);
  EXPECT_EQ(decoding.handed, 4000u);
  EXPECT_EQ(skipping.handed, 2000u);  // those past the loss, counted after those before it
  EXPECT_EQ(skipping.first_handed, 2000u);
  EXPECT_EQ(counted->streamed_events, 4000u);
}

}  // namespace
}  // namespace gpuprof
