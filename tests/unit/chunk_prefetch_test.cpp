// chunk_prefetch_test.cpp: a file read with its chunks prepared ahead on a
// second thread (record/chunk_prefetch.h) reads exactly as the same bytes
// read in memory without it, whatever is damaged where: the thread only
// prepares sound chunks, and the reader meets every other one itself.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>
#include <utility>

#include "record/chunk_prefetch.h"
#include "record/packed_events.h"
#include "record/record_file.h"
#include "record/record_stream.h"
#include "record_samples.h"
#include "error_strings.h"
#include "no_threads.h"

namespace gpuprof {
namespace {

using namespace record_samples;

// A stream that keeps the events handed to it (they lie in the prefetch
// thread's batch when it decoded them).
class KeepingStream : public RecordStream {
 public:
  bool wants(const Recording&) override { return true; }
  void on_events(std::span<const gp_event> events, uint64_t first) override {
    EXPECT_EQ(first, kept.size());
    kept.insert(kept.end(), events.begin(), events.end());
  }
  std::vector<gp_event> kept;
};

// A stream that takes the events alone (RecordStream::takes), as report's
// read of their threads does: it must be handed nothing else.
class EventsOnlyStream : public KeepingStream {
 public:
  bool takes(ChunkType type) const override {
    return type == ChunkType::EVENTS || type == ChunkType::OP_EVENTS || type == ChunkType::MORE_OPS;
  }
  bool on_mem_events(std::span<const gp_mem_event> events) override {
    mem_events += events.size();
    return true;
  }
  size_t mem_events = 0;
};

// `n` allocator events of thread 100 + seed.
std::vector<gp_mem_event> make_mem_events(size_t n, uint32_t seed) {
  std::vector<gp_mem_event> v(n);
  for (size_t i = 0; i < n; ++i) {
    v[i].ts_ns = 6'000'000'000ULL + seed * 1000003ULL + i * 13;
    v[i].addr = 0x7f0000000000ULL + i * 4096;
    v[i].kind = GP_MEM_CPU_ALLOC;
    v[i].bytes = static_cast<int64_t>(512 + i);
    v[i].tid = 100 + seed;
  }
  return v;
}

// The u32 at `at` of a file (a chunk header's raw_length: offset 8).
uint32_t read_u32(const std::vector<uint8_t>& file, size_t at) {
  uint32_t v = 0;
  std::memcpy(&v, file.data() + at, sizeof v);
  return v;
}

class ChunkPrefetchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpuprof_prefetch_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // A finished recording of `chunks` OP_EVENTS chunks of `per_chunk` events,
  // each flush with a MEM_EVENTS chunk of mem_per_chunk allocator events
  // when that is not 0 (record --profile-memory).
  std::vector<uint8_t> recording(size_t chunks, size_t per_chunk, size_t mem_per_chunk = 0) {
    std::string err, path = dir_ + "/rec.gpuprof";
    auto w = noting_error(RecordWriter::create(path), &err);
    EXPECT_TRUE(w.has_value()) << err;
    if (!w) return {};
    const RecordOptions options{.memory = mem_per_chunk > 0};
    EXPECT_TRUE(succeeded(w->begin(sample_process(), sample_clock(), sample_ops(), options), &err)) << err;
    for (uint32_t c = 0; c < chunks; ++c) {
      std::vector<gp_event> ev = make_events(per_chunk, c + 1);
      std::vector<gp_mem_event> mem = make_mem_events(mem_per_chunk, c + 1);
      EXPECT_TRUE(succeeded(w->append_events(ev.data(), ev.size()), &err)) << err;
      if (!mem.empty()) {
        EXPECT_TRUE(succeeded(w->append_mem_events(mem.data(), mem.size()), &err)) << err;
      }
      EXPECT_TRUE(succeeded(w->flush(), &err)) << err;
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
    // Streamed from the file (events decoded ahead, handed on where they
    // lie), by a stream that takes every record and by one that takes the
    // events alone (handed nothing else): the whole read's events, or its
    // error.
    for (bool events_only : {false, true})
      for (CorruptChunks corrupt : {CorruptChunks::skip, CorruptChunks::refuse}) {
        std::string streamed_error, whole_error;
        KeepingStream taking_all;
        EventsOnlyStream taking_events;
        KeepingStream& stream = events_only ? taking_events : taking_all;
        bool whole_needed = false;
        auto streamed = noting_error(read_recording_streamed(path, corrupt, stream, &whole_needed), &streamed_error);
        EXPECT_FALSE(whole_needed);
        auto whole = noting_error(read_recording_bytes(file, path, corrupt), &whole_error);
        ASSERT_EQ(streamed.has_value(), whole.has_value()) << streamed_error << " | " << whole_error;
        EXPECT_EQ(streamed_error, whole_error);
        if (streamed) {
          EXPECT_TRUE(same_events(stream.kept, whole->events));
        }
        EXPECT_EQ(taking_events.mem_events, 0u);
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
  const std::vector<uint8_t> file = recording(40, 30, 3);
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

// A stream that takes the events alone: the thread passes over the other
// chunks (checked, not decompressed), the reader hands it none of their
// records, and it gets every event; a stream that takes all gets all.
TEST_F(ChunkPrefetchTest, AStreamThatTakesOnlyEventsIsHandedNothingElse) {
  const std::vector<uint8_t> file = recording(30, 20, 7);
  const std::vector<ChunkSpan> chunks = chunks_of(file);
  auto read_at = [&](uint64_t offset, size_t n, std::vector<uint8_t>& into) {
    if (offset + n > file.size()) return false;
    into.assign(file.begin() + static_cast<ptrdiff_t>(offset), file.begin() + static_cast<ptrdiff_t>(offset + n));
    return true;
  };
  const auto is_mem = [](uint32_t type) { return type == static_cast<uint32_t>(ChunkType::MEM_EVENTS); };
  ChunkPrefetch ahead(read_at, file.size(), GP_RECORD_FORMAT_VERSION, /*unpack_op_events=*/false, is_mem,
                     /*hands_over_compressed=*/false);
  ahead.start(chunks[0].offset);
  size_t passed_over = 0;
  for (const ChunkSpan& c : chunks) {
    auto chunk = ahead.take(c.offset);
    ASSERT_TRUE(chunk.has_value()) << "chunk at " << c.offset;
    EXPECT_EQ(chunk->passed_over, is_mem(c.type));
    if (chunk->passed_over) {
      EXPECT_TRUE(chunk->payload.empty());
      ++passed_over;
    } else {
      EXPECT_FALSE(chunk->payload.empty());
    }
  }
  EXPECT_EQ(passed_over, 30u);

  const std::string path = dir_ + "/rec.gpuprof";
  std::string err;
  EventsOnlyStream events_only;
  bool whole_needed = false;
  ASSERT_TRUE(noting_error(read_recording_streamed(path, CorruptChunks::refuse, events_only, &whole_needed), &err))
      << err;
  EXPECT_EQ(events_only.kept.size(), 30u * 20u);
  EXPECT_EQ(events_only.mem_events, 0u);
  struct TakingAll : EventsOnlyStream {
    bool takes(ChunkType) const override { return true; }
  } all;
  ASSERT_TRUE(noting_error(read_recording_streamed(path, CorruptChunks::refuse, all, &whole_needed), &err)) << err;
  EXPECT_EQ(all.kept.size(), 30u * 20u);
  EXPECT_EQ(all.mem_events, 30u * 7u);
  // Without the thread, the reader passes over them itself.
  ASSERT_EQ(chmod(dir_.c_str(), 0755), 0);  // for nobody, in the child
  ASSERT_EQ(chmod(path.c_str(), 0644), 0);
  EXPECT_EQ(no_threads::run_without_threads([&] {
              EventsOnlyStream in_turn;
              bool whole = false;
              auto rec = read_recording_streamed(path, CorruptChunks::refuse, in_turn, &whole);
              return rec.has_value() && same_events(in_turn.kept, events_only.kept) && in_turn.mem_events == 0;
            }),
            0);
  expect_the_same_read(file);
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
  ChunkPrefetch ahead(read_at, file.size(), GP_RECORD_FORMAT_VERSION, /*unpack_op_events=*/false, {},
                     /*hands_over_compressed=*/false);
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

// A read that decodes its events has the thread decode OP_EVENTS payloads
// too: each prepared chunk's events are its payload's, and a chunk of more
// events than a recorder writes is left to the reader.
TEST_F(ChunkPrefetchTest, TheThreadDecodesEventChunksForAReadThatDecodes) {
  std::vector<uint8_t> file = recording(20, 10);
  std::vector<ChunkSpan> chunks = chunks_of(file);
  // The last OP_EVENTS chunk, replaced by one of kMaxUnpackedEvents + 1
  // events from the same first event on.
  const auto last = std::find_if(chunks.rbegin(), chunks.rend(), [](const ChunkSpan& c) {
    return c.type == static_cast<uint32_t>(ChunkType::OP_EVENTS);
  });
  ASSERT_NE(last, chunks.rend());
  std::string err;
  const auto last_payload =
      noting_error(chunk_payload(std::span<const uint8_t>(file).subspan(last->offset, last->bytes)), &err);
  ASSERT_TRUE(last_payload.has_value()) << err;
  uint64_t first_event = 0;
  std::vector<gp_event> unused;
  ASSERT_EQ(unpack_events(*last_payload, &first_event, unused), "");
  std::vector<uint8_t> big_payload;
  pack_events(make_events(ChunkPrefetch::kMaxUnpackedEvents + 1, 7), first_event, big_payload);
  const std::vector<uint8_t> big = encode_chunk(static_cast<uint32_t>(ChunkType::OP_EVENTS), big_payload);
  file.erase(file.begin() + static_cast<ptrdiff_t>(last->offset),
             file.begin() + static_cast<ptrdiff_t>(last->offset + last->bytes));
  file.insert(file.begin() + static_cast<ptrdiff_t>(last->offset), big.begin(), big.end());
  chunks = chunks_of(file);
  auto read_at = [&](uint64_t offset, size_t n, std::vector<uint8_t>& into) {
    if (offset + n > file.size()) return false;
    into.assign(file.begin() + static_cast<ptrdiff_t>(offset), file.begin() + static_cast<ptrdiff_t>(offset + n));
    return true;
  };
  for (bool unpack : {false, true}) {
    SCOPED_TRACE(unpack ? "decoding" : "not decoding");
    ChunkPrefetch ahead(read_at, file.size(), GP_RECORD_FORMAT_VERSION, unpack, {}, /*hands_over_compressed=*/false);
    ahead.start(chunks[0].offset);
    size_t decoded = 0, op_event_chunks = 0;
    for (const ChunkSpan& c : chunks) {
      auto chunk = ahead.take(c.offset);
      ASSERT_TRUE(chunk.has_value()) << "chunk at " << c.offset;
      if (c.type != static_cast<uint32_t>(ChunkType::OP_EVENTS)) {
        EXPECT_FALSE(chunk->events.has_value());
        continue;
      }
      ++op_event_chunks;
      const bool too_big = c.offset == last->offset;
      EXPECT_EQ(chunk->events.has_value(), unpack && !too_big);
      if (!chunk->events) continue;
      ++decoded;
      uint64_t first = 0;
      std::vector<gp_event> expected;
      ASSERT_EQ(unpack_events(chunk->payload, &first, expected), "");
      EXPECT_EQ(chunk->events->first_event, first);
      EXPECT_TRUE(same_events(std::vector<gp_event>(chunk->events->events.begin(), chunk->events->events.end()),
                              expected));
    }
    EXPECT_EQ(op_event_chunks, 20u);
    EXPECT_EQ(decoded, unpack ? 19u : 0u);
  }
  // And the read takes the big chunk's events from the reader's own decoding.
  auto rec = noting_error(read_recording_bytes(file, "big"), &err);
  ASSERT_TRUE(rec.has_value()) << err;
  EXPECT_EQ(rec->events.size(), 19u * 10u + ChunkPrefetch::kMaxUnpackedEvents + 1);
  expect_the_same_read(file);
}

// While the reader waits in take(), a thread that hands over compressed
// chunks gives it some as stored (checked, not decompressed, no events
// decoded); every other chunk comes prepared as before. Which ones depends
// on timing: the thread's first read of the file is held back until the
// reader surely waits, so the first compressed chunk at least goes over.
TEST_F(ChunkPrefetchTest, AWaitingReaderIsHandedCompressedChunksAsStored) {
  const std::vector<uint8_t> file = recording(40, 200);
  const std::vector<ChunkSpan> chunks = chunks_of(file);
  bool first_read = true;
  auto read_at = [&](uint64_t offset, size_t n, std::vector<uint8_t>& into) {
    if (std::exchange(first_read, false)) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    if (offset + n > file.size()) return false;
    into.assign(file.begin() + static_cast<ptrdiff_t>(offset), file.begin() + static_cast<ptrdiff_t>(offset + n));
    return true;
  };
  size_t compressed_chunks = 0;
  for (const ChunkSpan& c : chunks) compressed_chunks += read_u32(file, c.offset + 8) != 0;
  ASSERT_GT(compressed_chunks, 20u);
  for (bool hands_over : {false, true}) {
    SCOPED_TRACE(hands_over ? "handing over" : "not handing over");
    first_read = true;
    ChunkPrefetch ahead(read_at, file.size(), GP_RECORD_FORMAT_VERSION, /*unpack_op_events=*/true, {}, hands_over);
    ahead.start(chunks[0].offset);
    size_t handed_over = 0, decoded = 0;
    for (const ChunkSpan& c : chunks) {
      auto chunk = ahead.take(c.offset);
      ASSERT_TRUE(chunk.has_value()) << "chunk at " << c.offset;
      const std::span<const uint8_t> stored(file.data() + c.offset + kRecordChunkHeaderSize, c.bytes - kRecordChunkHeaderSize);
      std::string err;
      const auto payload = noting_error(chunk_payload(std::span<const uint8_t>(file).subspan(c.offset, c.bytes)), &err);
      ASSERT_TRUE(payload.has_value()) << err;
      if (chunk->compressed) {
        ++handed_over;
        EXPECT_NE(read_u32(file, c.offset + 8), 0u);  // only a compressed chunk goes over as stored
        EXPECT_TRUE(std::equal(chunk->payload.begin(), chunk->payload.end(), stored.begin(), stored.end()));
        EXPECT_FALSE(chunk->events.has_value());
        continue;
      }
      EXPECT_TRUE(std::equal(chunk->payload.begin(), chunk->payload.end(), payload->begin(), payload->end()));
      decoded += chunk->events.has_value();
    }
    if (hands_over) {
      EXPECT_GE(handed_over, 1u);  // the first ones at least: a reader that does nothing may get them all
    } else {
      EXPECT_EQ(handed_over, 0u);
      EXPECT_EQ(decoded, 40u);
    }
  }
}

// OP_EVENTS chunks whose checksums pass but whose events do not decode, or
// decode to events the reader refuses: read from the file (decoded ahead)
// as from memory (not), to the same events or the same words.
TEST_F(ChunkPrefetchTest, SoundChunksOfBadEventsReadAsWithoutTheThread) {
  const std::vector<uint8_t> file = recording(12, 10);
  const std::vector<ChunkSpan> chunks = chunks_of(file);
  std::vector<const ChunkSpan*> event_chunks;
  for (const ChunkSpan& c : chunks)
    if (c.type == static_cast<uint32_t>(ChunkType::OP_EVENTS)) event_chunks.push_back(&c);
  ASSERT_EQ(event_chunks.size(), 12u);
  for (size_t n : {size_t{0}, size_t{5}, size_t{11}}) {
    const ChunkSpan& c = *event_chunks[n];
    std::string err;
    const auto payload = noting_error(chunk_payload(std::span<const uint8_t>(file).subspan(c.offset, c.bytes)), &err);
    ASSERT_TRUE(payload.has_value()) << err;
    uint64_t first_event = 0;
    std::vector<gp_event> events;
    ASSERT_EQ(unpack_events(*payload, &first_event, events), "");
    std::vector<uint8_t> bad_kind;
    events[3].kind = 200;  // no such kind
    pack_events(events, first_event, bad_kind);
    std::vector<uint8_t> cut(payload->begin(), payload->begin() + static_cast<ptrdiff_t>(payload->size() / 2));
    for (const std::vector<uint8_t>* bad : {&bad_kind, &cut}) {
      SCOPED_TRACE("event chunk " + std::to_string(n) + (bad == &cut ? ", cut" : ", a bad kind"));
      const std::vector<uint8_t> chunk = encode_chunk(static_cast<uint32_t>(ChunkType::OP_EVENTS), *bad);
      std::vector<uint8_t> damaged(file.begin(), file.begin() + static_cast<ptrdiff_t>(c.offset));
      damaged.insert(damaged.end(), chunk.begin(), chunk.end());
      damaged.insert(damaged.end(), file.begin() + static_cast<ptrdiff_t>(c.offset + c.bytes), file.end());
      expect_the_same_read(damaged);
    }
  }
}

}  // namespace
}  // namespace gpuprof
