// corrupt_chunks_test.cpp: reading on past a corrupt chunk (record_file.h,
// "Corrupt chunks"; chunk_salvage.h): the chunk is skipped and said, every
// other chunk is read exactly, what named the lost chunk's data reads with
// placeholders; CorruptChunks::refuse (report --strict) keeps the error.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <functional>

#include "record/chunk_salvage.h"
#include "record/record_file.h"
#include "record_samples.h"
#include "error_strings.h"

namespace gpuprof {
namespace {

using namespace record_samples;

// The writer's event chunks (packed, version 6).
constexpr uint32_t kEvents = static_cast<uint32_t>(ChunkType::OP_EVENTS);
// A byte in the middle of a chunk's payload.
size_t mid_payload(const ChunkSpan& c) { return c.offset + 16 + (c.bytes - 16) / 2; }
// What a lost OP_EVENTS chunk says: its count comes with the next one.
std::string lost_events_from(uint64_t first) {
  return "the op events of a chunk (from event " + std::to_string(first) + " on: the next such chunk says how many)";
}

class CorruptChunksTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpuprof_corrupt_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // The bytes of a finished recording with `options`, written by `write`.
  std::vector<uint8_t> recording(const RecordOptions& options, const std::function<void(RecordWriter&)>& write) {
    std::string err, path = dir_ + "/rec.gpuprof";
    auto w = noting_error(RecordWriter::create(path), &err);
    EXPECT_TRUE(w.has_value()) << err;
    if (!w) return {};
    EXPECT_TRUE(succeeded(w->begin(sample_process(), sample_clock(), sample_ops(), options), &err)) << err;
    write(*w);
    EXPECT_TRUE(succeeded(w->finish(sample_stats(), 9'000'000'000ULL), &err)) << err;
    return read_bytes(path);
  }

  std::string dir_;
};

// The n-th chunk of `type` in file (from 0).
ChunkSpan nth(const std::vector<uint8_t>& file, uint32_t type, size_t n) {
  for (const ChunkSpan& c : chunks_of(file))
    if (c.type == type && n-- == 0) return c;
  ADD_FAILURE() << "no chunk " << n << " of type " << type;
  return {0, 0, 0};
}
// Its number in the file, from 1.
size_t number_of(const std::vector<uint8_t>& file, const ChunkSpan& chunk) {
  const auto chunks = chunks_of(file);
  for (size_t i = 0; i < chunks.size(); ++i)
    if (chunks[i].offset == chunk.offset) return i + 1;
  return 0;
}

Result<Recording> skipping(const std::vector<uint8_t>& file, std::string* err) {
  return noting_error(read_recording_bytes(file, "f", CorruptChunks::skip), err);
}

// Three EVENTS chunks of distinct events (4, 6 and 5 of them).
std::function<void(RecordWriter&)> three_event_chunks() {
  return [](RecordWriter& w) {
    std::string err;
    const size_t sizes[3] = {4, 6, 5};
    for (uint32_t seed : {0u, 1u, 2u}) {
      std::vector<gp_event> ev = make_events(sizes[seed], seed + 1);
      ASSERT_TRUE(succeeded(w.append_events(ev.data(), ev.size()), &err) && succeeded(w.flush(), &err)) << err;
    }
  };
}

TEST_F(CorruptChunksTest, ACorruptEventsChunkIsSkippedAndEveryOtherEventKept) {
  const std::vector<uint8_t> file = recording({}, three_event_chunks());
  const ChunkSpan middle = nth(file, kEvents, 1);
  std::vector<uint8_t> bad = file;
  bad[mid_payload(middle)] ^= 0x01;  // one bit of the payload
  const std::string at = "f: corrupt chunk " + std::to_string(number_of(file, middle));
  const std::string offset = " at offset " + std::to_string(middle.offset) + ": checksum mismatch";
  std::string err;
  // Refused (report --strict): the error of old, word for word.
  EXPECT_FALSE(noting_error(read_recording_bytes(bad, "f"), &err));
  EXPECT_EQ(err, at + offset);
  auto rec = skipping(bad, &err);
  ASSERT_TRUE(rec.has_value()) << err;
  EXPECT_TRUE(rec->complete);
  EXPECT_TRUE(same_events(rec->events, events_but(file, middle.offset)));
  EXPECT_EQ(rec->events.size(), 4u + 5u);
  ASSERT_EQ(rec->lost_chunks.size(), 1u);
  EXPECT_EQ(rec->lost_chunks[0].message, at + " (OP_EVENTS)" + offset + "; skipped: lost " + lost_events_from(4));
  EXPECT_EQ(rec->lost_chunks[0].index, number_of(file, middle));
  EXPECT_EQ(rec->lost_chunks[0].offset, middle.offset);
  EXPECT_EQ(rec->lost_chunks[0].bytes, middle.bytes);
  EXPECT_EQ(rec->stats.events_recorded, sample_stats().events_recorded);  // STATS after it read
  // An intact file reads the same either way, with nothing lost.
  auto whole = skipping(file, &err);
  ASSERT_TRUE(whole.has_value()) << err;
  EXPECT_TRUE(whole->lost_chunks.empty());
  EXPECT_TRUE(same_events(whole->events, events_but(file)));
}

TEST_F(CorruptChunksTest, ADamagedTypeFieldIsFoundByTheChecksum) {
  const std::vector<uint8_t> file = recording({}, three_event_chunks());
  const ChunkSpan middle = nth(file, kEvents, 1);
  std::vector<uint8_t> bad = file;
  bad[middle.offset] = 12;  // says SAMPLES; only OP_EVENTS passes the checksum with this payload
  std::string err;
  auto rec = skipping(bad, &err);
  ASSERT_TRUE(rec.has_value()) << err;
  ASSERT_EQ(rec->lost_chunks.size(), 1u);
  EXPECT_NE(rec->lost_chunks[0].message.find("(OP_EVENTS) at offset"), std::string::npos) << rec->lost_chunks[0].message;
  EXPECT_TRUE(same_events(rec->events, events_but(file, middle.offset)));
}

TEST_F(CorruptChunksTest, ADamagedLengthSkipsToTheNextChunkThatPassesItsChecksum) {
  const std::vector<uint8_t> file = recording({}, three_event_chunks());
  const ChunkSpan middle = nth(file, kEvents, 1);
  const ChunkSpan last = nth(file, kEvents, 2);
  const std::string next = "the next chunk is at offset " + std::to_string(last.offset) + ")";
  // Shorter: it would end inside its own payload. Longer than the file:
  // it would look torn, but a chunk follows. Above the cap.
  for (uint8_t byte : {uint8_t{0x08}, uint8_t{0x80}}) {
    for (size_t at : {size_t{4}, size_t{6}, size_t{7}}) {
      std::vector<uint8_t> bad = file;
      bad[middle.offset + at] ^= byte;
      SCOPED_TRACE("length byte " + std::to_string(at) + " ^ " + std::to_string(byte));
      std::string err;
      auto strict = noting_error(read_recording_bytes(bad, "f"), &err);  // an error, or a torn last chunk
      EXPECT_TRUE(!strict || !strict->complete);
      auto rec = skipping(bad, &err);
      ASSERT_TRUE(rec.has_value()) << err;
      ASSERT_EQ(rec->lost_chunks.size(), 1u);
      const std::string& said = rec->lost_chunks[0].message;
      EXPECT_NE(said.find("its length is damaged: " + next), std::string::npos) << said;
      // Only the length was damaged: the checksum confirms the type.
      EXPECT_NE(said.find("(OP_EVENTS)"), std::string::npos) << said;
      EXPECT_NE(said.find("; skipped: lost " + lost_events_from(4)), std::string::npos) << said;
      EXPECT_TRUE(same_events(rec->events, events_but(file, middle.offset)));
      EXPECT_TRUE(rec->complete);
    }
  }
}

TEST_F(CorruptChunksTest, NothingAfterTheCorruptChunkPassingItsChecksumLosesTheRest) {
  const std::vector<uint8_t> file = recording({}, three_event_chunks());
  const ChunkSpan last = nth(file, kEvents, 2);
  std::vector<uint8_t> bad = file;
  bad[last.offset + 7] ^= 0x40;  // a length past the cap
  for (size_t i = last.offset + last.bytes; i < bad.size(); ++i) bad[i] ^= 0x55;  // STATS, END damaged
  std::string err;
  auto rec = skipping(bad, &err);
  ASSERT_TRUE(rec.has_value()) << err;
  EXPECT_FALSE(rec->complete);
  EXPECT_EQ(rec->incomplete_reason, "its end was lost with a corrupt chunk");
  ASSERT_EQ(rec->lost_chunks.size(), 1u);
  EXPECT_EQ(rec->lost_chunks[0].bytes, file.size() - last.offset);
  EXPECT_NE(rec->lost_chunks[0].message.find("the rest of the file is lost"), std::string::npos);
  EXPECT_TRUE(same_events(rec->events, events_but(std::vector<uint8_t>(file.begin(), file.begin() + last.offset))));
}

TEST_F(CorruptChunksTest, BeforeTheMandatoryChunksACorruptChunkIsStillAnError) {
  const std::vector<uint8_t> file = recording({}, three_event_chunks());
  const ChunkSpan ops = nth(file, static_cast<uint32_t>(ChunkType::OP_TABLE), 0);
  std::vector<uint8_t> bad = file;
  bad[ops.offset + 20] ^= 0x01;
  std::string err;
  EXPECT_FALSE(skipping(bad, &err));
  EXPECT_EQ(err, "f: corrupt chunk 3 at offset " + std::to_string(ops.offset) + ": checksum mismatch");
}

TEST_F(CorruptChunksTest, ALostStatsChunkLetsTheEndBeRead) {
  const std::vector<uint8_t> file = recording({}, three_event_chunks());
  const ChunkSpan stats = nth(file, static_cast<uint32_t>(ChunkType::STATS), 0);
  std::vector<uint8_t> bad = file;
  bad[stats.offset + 17] ^= 0x01;
  std::string err;
  auto rec = skipping(bad, &err);
  ASSERT_TRUE(rec.has_value()) << err;
  EXPECT_TRUE(rec->complete);
  EXPECT_EQ(rec->clock.end_monotonic_ns, 9'000'000'000ULL);
  EXPECT_EQ(rec->stats.events_recorded, 0u);
  ASSERT_EQ(rec->lost_chunks.size(), 1u);
  EXPECT_NE(rec->lost_chunks[0].message.find("(STATS)"), std::string::npos);
  EXPECT_TRUE(same_events(rec->events, events_but(file)));
}

// Entry shapes and stacks name events by their index among all the file's:
// past a lost EVENTS chunk they still name the right ones, and those of its
// events are dropped.
TEST_F(CorruptChunksTest, EntryShapesAndStacksStillNameTheirEventsPastALostEventsChunk) {
  RecordOptions options;
  options.shapes = true;
  options.with_stack = true;
  const InputShapes shapes[3] = {{std::vector<int64_t>{2, 3}}, {std::vector<int64_t>{4}}, {std::nullopt}};
  const std::vector<uint8_t> file = recording(options, [&](RecordWriter& w) {
    std::string err;
    ASSERT_TRUE(succeeded(w.add_sample_frame("train.py(1): main"), &err) && succeeded(w.add_sample_stack({0}), &err)) << err;
    for (uint32_t chunk = 0; chunk < 3; ++chunk) {
      std::vector<gp_event> ev = make_events(6, chunk);  // entries at 0 and 3
      const uint64_t base = w.events_appended();
      ASSERT_TRUE(succeeded(w.append_events(ev.data(), ev.size()), &err)) << err;
      for (uint64_t entry : {base, base + 3}) {
        ASSERT_TRUE(succeeded(w.append_shapes(entry, shapes[chunk]), &err)) << err;
        ASSERT_TRUE(succeeded(w.append_entry_stack(entry, 0), &err)) << err;
      }
      ASSERT_TRUE(succeeded(w.flush(), &err)) << err;
    }
  });
  const ChunkSpan middle = nth(file, kEvents, 1);
  std::vector<uint8_t> bad = file;
  bad[mid_payload(middle)] ^= 0x01;
  std::string err;
  auto rec = skipping(bad, &err);
  ASSERT_TRUE(rec.has_value()) << err;
  ASSERT_EQ(rec->events.size(), 12u);
  const std::vector<EntryShapes> want_shapes = {{0, 0}, {3, 0}, {6, 2}, {9, 2}};
  EXPECT_EQ(rec->entry_shapes, want_shapes);
  const std::vector<EntryStack> want_stacks = {{0, 0}, {3, 0}, {6, 0}, {9, 0}};
  EXPECT_EQ(rec->entry_stacks, want_stacks);
  EXPECT_EQ(rec->shapes[rec->entry_shapes[2].shape_id], shapes[2]);
  // The last events chunk lost: no chunk after it says how many it held,
  // and whatever names an event past those read names one of its.
  bad = file;
  const ChunkSpan last = nth(file, kEvents, 2);
  bad[mid_payload(last)] ^= 0x01;
  rec = skipping(bad, &err);
  ASSERT_TRUE(rec.has_value()) << err;
  ASSERT_EQ(rec->events.size(), 12u);
  EXPECT_EQ(rec->entry_shapes, (std::vector<EntryShapes>{{0, 0}, {3, 0}, {6, 1}, {9, 1}}));
  EXPECT_EQ(rec->entry_stacks, (std::vector<EntryStack>{{0, 0}, {3, 0}, {6, 0}, {9, 0}}));
}

// SHAPES chunks carry no first id: past a lost one no shape can be placed.
TEST_F(CorruptChunksTest, PastALostShapeDictionaryCallsHaveNoShapes) {
  RecordOptions options;
  options.shapes = true;
  const InputShapes shapes[3] = {{std::vector<int64_t>{2, 3}}, {std::vector<int64_t>{4}}, {std::vector<int64_t>{5}}};
  const std::vector<uint8_t> file = recording(options, [&](RecordWriter& w) {
    std::string err;
    for (uint32_t chunk = 0; chunk < 3; ++chunk) {
      std::vector<gp_event> ev = make_events(3, chunk);  // an entry at 0
      const uint64_t base = w.events_appended();
      ASSERT_TRUE(succeeded(w.append_events(ev.data(), ev.size()), &err)) << err;
      ASSERT_TRUE(succeeded(w.append_shapes(base, shapes[chunk]), &err) && succeeded(w.flush(), &err)) << err;
    }
  });
  const ChunkSpan second = nth(file, static_cast<uint32_t>(ChunkType::SHAPES), 1);
  std::vector<uint8_t> bad = file;
  bad[second.offset + 20] ^= 0x01;
  std::string err;
  auto rec = skipping(bad, &err);
  ASSERT_TRUE(rec.has_value()) << err;
  EXPECT_TRUE(same_events(rec->events, events_but(file)));
  const std::vector<EntryShapes> want = {{0, 0}};
  EXPECT_EQ(rec->entry_shapes, want);
  ASSERT_EQ(rec->lost_chunks.size(), 1u);
  EXPECT_NE(rec->lost_chunks[0].message.find("(SHAPES)"), std::string::npos);
  EXPECT_NE(rec->lost_chunks[0].message.find("lost the input-shape dictionary from shape 1 on"), std::string::npos)
      << rec->lost_chunks[0].message;
}

// A lost frame, stack or kernel name definition: what names it reads with a
// placeholder, and the chunks after it are read.
TEST_F(CorruptChunksTest, LostDictionariesReadAsPlaceholders) {
  RecordOptions options;
  options.sample_hz = 99;
  const std::vector<uint8_t> file = recording(options, [&](RecordWriter& w) {
    std::string err;
    for (uint32_t chunk = 0; chunk < 3; ++chunk) {
      const uint32_t frame = w.sample_frames_defined(), stack = w.sample_stacks_defined();
      const uint32_t name = w.launch_names_defined();
      ASSERT_TRUE(succeeded(w.add_sample_frame("frame " + std::to_string(chunk)), &err)) << err;
      ASSERT_TRUE(succeeded(w.add_sample_stack({frame}), &err)) << err;
      ASSERT_TRUE(succeeded(w.add_launch_name("kernel " + std::to_string(chunk)), &err)) << err;
      const CpuSample sample{1000 + chunk, 7, frame, false, stack};
      ASSERT_TRUE(succeeded(w.append_samples(&sample, 1), &err)) << err;
      CudaLaunch launch;
      launch.ts_ns = 2000 + chunk;
      launch.api = GP_LAUNCH_KERNEL;
      launch.name_id = name;
      ASSERT_TRUE(succeeded(w.append_launches(&launch, 1), &err) && succeeded(w.flush(), &err)) << err;
    }
  });
  // The frames' and kernel names' chunks are not next to each other: each
  // is found where its length says (two corrupt chunks in a row are lost as
  // one stretch of unknown type: the first one's end cannot be confirmed).
  std::vector<uint8_t> bad = file;
  for (ChunkType type : {ChunkType::SAMPLE_FRAMES, ChunkType::LAUNCH_NAMES})
    bad[nth(file, static_cast<uint32_t>(type), 1).offset + 24] ^= 0x01;
  std::string err;
  auto rec = skipping(bad, &err);
  ASSERT_TRUE(rec.has_value()) << err;
  ASSERT_EQ(rec->lost_chunks.size(), 2u);
  EXPECT_NE(rec->lost_chunks[0].message.find("(SAMPLE_FRAMES)"), std::string::npos);
  EXPECT_NE(rec->lost_chunks[0].message.find("lost the frame dictionary from id 1 on (what names them shows [lost frame])"),
            std::string::npos)
      << rec->lost_chunks[0].message;
  EXPECT_NE(rec->lost_chunks[1].message.find("lost the CUDA kernel name dictionary from id 1 on"), std::string::npos);
  const std::vector<std::string> frames = {"frame 0", kLostFrame, "frame 2"};
  EXPECT_EQ(rec->sample_frames, frames);
  const std::vector<std::vector<uint32_t>> stacks = {{0}, {1}, {2}};
  EXPECT_EQ(rec->sample_stacks, stacks);
  const std::vector<std::string> names = {"kernel 0", kLostKernelName, "kernel 2"};
  EXPECT_EQ(rec->launch_names, names);
  ASSERT_EQ(rec->samples.size(), 3u);
  EXPECT_EQ(rec->samples[1].frame_id, 1u);
  ASSERT_EQ(rec->launches.size(), 3u);
  EXPECT_EQ(rec->launches[1].name_id, 1u);

  // A lost stack: one frame, [lost stack], added after the others.
  bad = file;
  bad[nth(file, static_cast<uint32_t>(ChunkType::SAMPLE_STACKS), 1).offset + 24] ^= 0x01;
  rec = skipping(bad, &err);
  ASSERT_TRUE(rec.has_value()) << err;
  ASSERT_EQ(rec->lost_chunks.size(), 1u);
  EXPECT_NE(rec->lost_chunks[0].message.find("(SAMPLE_STACKS)"), std::string::npos);
  EXPECT_NE(rec->lost_chunks[0].message.find("lost the stack dictionary from id 1 on (what names them shows [lost stack])"),
            std::string::npos)
      << rec->lost_chunks[0].message;
  const std::vector<std::string> with_lost_stack = {"frame 0", "frame 1", "frame 2", kLostStack};
  EXPECT_EQ(rec->sample_frames, with_lost_stack);
  const std::vector<std::vector<uint32_t>> stacks_with_lost = {{0}, {3}, {2}};
  EXPECT_EQ(rec->sample_stacks, stacks_with_lost);
  EXPECT_EQ(rec->samples[1].python_stack, 1u);
}

TEST_F(CorruptChunksTest, LostSamplesKeepTheOthersAndTheirKernelStacks) {
  RecordOptions options;
  options.sample_hz = 99;
  const std::vector<uint8_t> file = recording(options, [&](RecordWriter& w) {
    std::string err;
    ASSERT_TRUE(succeeded(w.add_sample_frame("do_syscall_64_[k]"), &err) && succeeded(w.add_sample_stack({0}), &err)) << err;
    for (uint32_t chunk = 0; chunk < 3; ++chunk) {
      const uint64_t index = w.samples_appended();
      const CpuSample samples[2] = {{100 + chunk, 7, 0, true, kNoPythonStack}, {200 + chunk, 7, 0, true, kNoPythonStack}};
      ASSERT_TRUE(succeeded(w.append_samples(samples, 2), &err)) << err;
      ASSERT_TRUE(succeeded(w.append_sample_kernel_stack(index + 1, 0), &err) && succeeded(w.flush(), &err)) << err;
    }
  });
  std::vector<uint8_t> bad = file;
  bad[nth(file, static_cast<uint32_t>(ChunkType::SAMPLES), 1).offset + 20] ^= 0x01;
  std::string err;
  auto rec = skipping(bad, &err);
  ASSERT_TRUE(rec.has_value()) << err;
  ASSERT_EQ(rec->samples.size(), 4u);
  EXPECT_EQ(rec->samples[2].ts_ns, 102u);
  const std::vector<SampleKernelStack> want = {{1, 0}, {3, 0}};
  EXPECT_EQ(rec->sample_kernel_stacks, want);
  ASSERT_EQ(rec->lost_chunks.size(), 1u);
  EXPECT_NE(rec->lost_chunks[0].message.find("(SAMPLES)"), std::string::npos);
  EXPECT_NE(rec->lost_chunks[0].message.find("; skipped: lost 2 CPU samples"), std::string::npos);
}

}  // namespace
}  // namespace gpuprof
