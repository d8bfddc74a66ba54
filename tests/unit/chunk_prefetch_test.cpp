// chunk_prefetch_test.cpp: a file read with its chunks prepared ahead on a
// second thread (record/chunk_prefetch.h) reads exactly as the same bytes
// read in memory without it, whatever is damaged where: the thread only
// prepares sound chunks, and the reader meets every other one itself.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "record/chunk_prefetch.h"
#include "record/record_file.h"
#include "record_samples.h"
#include "error_strings.h"
#include "no_threads.h"

namespace gpuprof {
namespace {

using namespace record_samples;

class ChunkPrefetchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpuprof_prefetch_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // A finished recording of `chunks` OP_EVENTS chunks of `per_chunk` events.
  std::vector<uint8_t> recording(size_t chunks, size_t per_chunk) {
    std::string err, path = dir_ + "/rec.gpuprof";
    auto w = noting_error(RecordWriter::create(path), &err);
    EXPECT_TRUE(w.has_value()) << err;
    if (!w) return {};
    EXPECT_TRUE(succeeded(w->begin(sample_process(), sample_clock(), sample_ops(), {}), &err)) << err;
    for (uint32_t c = 0; c < chunks; ++c) {
      std::vector<gp_event> ev = make_events(per_chunk, c + 1);
      EXPECT_TRUE(succeeded(w->append_events(ev.data(), ev.size()), &err) && succeeded(w->flush(), &err)) << err;
    }
    EXPECT_TRUE(succeeded(w->finish(sample_stats(), 9'000'000'000ULL), &err)) << err;
    return read_bytes(path);
  }

  // `file` read from disk (chunks prepared ahead) and from memory (not),
  // both ways of taking corrupt chunks: the same recording or the same
  // error, word for word.
  void expect_the_same_read(const std::vector<uint8_t>& file) {
    const std::string path = dir_ + "/damaged.gpuprof";
    {
      std::ofstream out(path, std::ios::binary | std::ios::trunc);
      out.write(reinterpret_cast<const char*>(file.data()), static_cast<std::streamsize>(file.size()));
    }
    for (CorruptChunks corrupt : {CorruptChunks::skip, CorruptChunks::refuse}) {
      std::string from_file_error, from_memory_error;
      auto from_file = noting_error(read_recording(path, corrupt), &from_file_error);
      auto from_memory = noting_error(read_recording_bytes(file, path, corrupt), &from_memory_error);
      ASSERT_EQ(from_file.has_value(), from_memory.has_value()) << from_file_error << " | " << from_memory_error;
      EXPECT_EQ(from_file_error, from_memory_error);
      if (!from_file) continue;
      EXPECT_TRUE(same_events(from_file->events, from_memory->events));
      EXPECT_EQ(from_file->complete, from_memory->complete);
      EXPECT_EQ(from_file->incomplete_reason, from_memory->incomplete_reason);
      ASSERT_EQ(from_file->lost_chunks.size(), from_memory->lost_chunks.size());
      for (size_t i = 0; i < from_file->lost_chunks.size(); ++i) {
        EXPECT_EQ(from_file->lost_chunks[i].message, from_memory->lost_chunks[i].message);
        EXPECT_EQ(from_file->lost_chunks[i].bytes, from_memory->lost_chunks[i].bytes);
      }
      EXPECT_EQ(from_file->stats.events_recorded, from_memory->stats.events_recorded);
    }
  }

  std::string dir_;
};

TEST_F(ChunkPrefetchTest, AnIntactFileReadsWholeThroughTheThread) {
  const std::vector<uint8_t> file = recording(300, 40);
  std::string err;
  auto rec = noting_error(read_recording(dir_ + "/rec.gpuprof"), &err);
  ASSERT_TRUE(rec.has_value()) << err;
  EXPECT_TRUE(rec->complete);
  EXPECT_EQ(rec->events.size(), 300u * 40u);
  EXPECT_TRUE(same_events(rec->events, events_but(file)));
  expect_the_same_read(file);
}

// Every chunk damaged in turn, in each of its header fields and its
// payload: a chunk before it, it, and every chunk after it read the same.
TEST_F(ChunkPrefetchTest, EveryDamagedChunkReadsAsWithoutTheThread) {
  const std::vector<uint8_t> file = recording(40, 30);
  const std::vector<ChunkSpan> chunks = chunks_of(file);
  ASSERT_GT(chunks.size(), 40u);
  for (size_t n = 0; n < chunks.size(); ++n) {
    const ChunkSpan& c = chunks[n];
    struct Damage {
      size_t at;
      uint8_t flip;
    };
    std::vector<Damage> damages = {
        {c.offset, 0x03},       {c.offset + 4, 0x08}, {c.offset + 6, 0x80}, {c.offset + 7, 0x40},
        {c.offset + 8, 0x01},   {c.offset + 12, 0x10}};
    if (c.bytes > 16) damages.push_back({c.offset + 16 + (c.bytes - 16) / 2, 0x01});
    for (const Damage& d : damages) {
      SCOPED_TRACE("chunk " + std::to_string(n + 1) + ", byte " + std::to_string(d.at - c.offset));
      std::vector<uint8_t> bad = file;
      bad[d.at] ^= d.flip;
      expect_the_same_read(bad);
    }
    // Cut inside it (a recorder killed while writing it).
    SCOPED_TRACE("cut in chunk " + std::to_string(n + 1));
    expect_the_same_read(std::vector<uint8_t>(file.begin(), file.begin() + static_cast<ptrdiff_t>(c.offset + c.bytes / 2)));
  }
}

// Where no thread can be made, the file reads all the same, chunk by chunk.
TEST_F(ChunkPrefetchTest, WithoutAThreadTheFileReadsInTurn) {
  const std::vector<uint8_t> file = recording(50, 20);
  const std::string path = dir_ + "/rec.gpuprof";
  ASSERT_EQ(chmod(dir_.c_str(), 0755), 0);  // for nobody, in the child
  ASSERT_EQ(chmod(path.c_str(), 0644), 0);
  const int status = no_threads::run_without_threads([&] {
    auto rec = read_recording(path);
    return rec.has_value() && rec->complete && same_events(rec->events, events_but(file));
  });
  EXPECT_EQ(status, 0);
}

// The thread itself: it hands chunks only at the offset asked for, stops
// at one it does not prepare, and starts again where it is told.
TEST_F(ChunkPrefetchTest, TheThreadHandsOnlyTheChunkAskedFor) {
  std::vector<uint8_t> file = recording(20, 10);
  const std::vector<ChunkSpan> chunks = chunks_of(file);
  const ChunkSpan& damaged = chunks[10];
  file[damaged.offset + 16] ^= 0x01;  // its checksum fails
  auto read_at = [&](uint64_t offset, size_t n, std::vector<uint8_t>& into) {
    if (offset + n > file.size()) return false;
    into.assign(file.begin() + static_cast<ptrdiff_t>(offset), file.begin() + static_cast<ptrdiff_t>(offset + n));
    return true;
  };
  ChunkPrefetch ahead(read_at, file.size(), GP_RECORD_FORMAT_VERSION);
  EXPECT_FALSE(ahead.take(chunks[0].offset).has_value());  // not started
  ahead.start(chunks[0].offset);
  for (size_t n = 0; n < 10; ++n) {
    auto chunk = ahead.take(chunks[n].offset);
    ASSERT_TRUE(chunk.has_value()) << "chunk " << n;
    EXPECT_EQ(chunk->offset, chunks[n].offset);
    EXPECT_EQ(std::memcmp(chunk->header, file.data() + chunks[n].offset, 16), 0);
    std::string err;
    const auto payload = noting_error(
        chunk_payload(std::span<const uint8_t>(file).subspan(chunks[n].offset, chunks[n].bytes)), &err);
    ASSERT_TRUE(payload.has_value()) << err;
    EXPECT_TRUE(std::equal(chunk->payload.begin(), chunk->payload.end(), payload->begin(), payload->end()));
  }
  EXPECT_FALSE(ahead.take(damaged.offset).has_value());  // the reader's to meet
  ahead.start(chunks[11].offset);
  EXPECT_FALSE(ahead.take(chunks[12].offset).has_value());  // not where it starts
  ahead.start(chunks[11].offset);
  auto chunk = ahead.take(chunks[11].offset);
  ASSERT_TRUE(chunk.has_value());
  EXPECT_EQ(std::memcmp(chunk->header, file.data() + chunks[11].offset, 16), 0);
  // Destroyed with chunks still waiting: it returns (the test would hang).
}

}  // namespace
}  // namespace gpuprof
