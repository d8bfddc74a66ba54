// chunk_prefetch.h: the chunks after the one a reader is applying, read,
// checked and decompressed ahead on a thread of their own, so that a
// report's second core does the zstd and checksum work (about a quarter of
// a streamed read) while the first applies the chunk before.
//
// Only sound chunks are prepared: one whose length, checksum or
// compressed payload is wrong stops the thread there, and the reader meets
// it as it would without this (record_reader.cpp reads, skips or refuses
// it, with its own words), then starts the thread again after it. So what
// a read returns does not depend on whether chunks came prepared.
//
// Where the reader has less to do per chunk than the thread (a first read
// that only counts the events; the op table), it would wait for the
// thread: while it waits, the thread can hand compressed chunks over
// checked but as stored (PreparedChunk::compressed), a few at a time, and
// the reader decompresses (and decodes) those itself, so that both cores
// work (docs/report.md, "Memory").
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <vector>

#include "record/packed_events.h"
#include "record/record_file.h"

namespace gpuprof {

struct PreparedChunk {
  uint64_t offset = 0;  // where its header starts
  uint8_t header[kRecordChunkHeaderSize] = {};
  // As it was before compression; valid until the next take() or start().
  std::span<const uint8_t> payload;
  // An OP_EVENTS chunk's events, decoded (for a prefetch that decodes them:
  // nullopt when it does not, or when they do not decode, which the reader
  // then finds for itself); valid as long as payload.
  std::optional<UnpackedEvents> events;
  // A chunk of a type passes_over names: checked, its payload (empty here)
  // neither decompressed nor copied.
  bool passed_over = false;
  // Checked, its payload as stored: the reader decompresses it (and decodes
  // its events) as it does a chunk it reads itself. The thread hands over
  // compressed chunks so while the reader waits for it.
  bool compressed = false;
};

class ChunkPrefetch {
 public:
  // read_at(offset, n, into): the file's n bytes at offset into `into`,
  // false on an I/O error; called from the prefetch thread, so it must not
  // share a buffer with the reader. size: the file's; version: its format
  // version (whether a header's reserved field gives a compressed size).
  using ReadAt = std::function<bool(uint64_t offset, size_t n, std::vector<uint8_t>& into)>;
  // unpack_op_events: decode OP_EVENTS payloads too (for a read that decodes
  // its events, which then costs the reader a copy at most: most of a read's
  // work is theirs). passes_over(type), when given: chunks of that type are
  // only checked (PreparedChunk::passed_over); called from the thread.
  // hands_over_compressed: while the reader waits in take(), compressed
  // chunks go to it as stored (PreparedChunk::compressed), so that both
  // cores decompress; a caller that checks what the thread itself prepares
  // (the unit tests) turns it off. No defaults: every caller says which.
  ChunkPrefetch(ReadAt read_at, uint64_t size, uint32_t version, bool unpack_op_events,
                std::function<bool(uint32_t type)> passes_over, bool hands_over_compressed);
  ~ChunkPrefetch();
  ChunkPrefetch(const ChunkPrefetch&) = delete;
  ChunkPrefetch& operator=(const ChunkPrefetch&) = delete;

  // The chunk at `offset`, prepared: waits for the thread when it is still
  // on it. nullopt when the thread stopped before it (a chunk it does not
  // prepare, or the end of the file): the reader reads it itself and calls
  // start() with where the next chunk begins.
  std::optional<PreparedChunk> take(uint64_t offset);
  // Prepare the chunks from `offset` on (what was prepared is dropped).
  void start(uint64_t offset);

  // Chunks larger than this, stored or before compression, are left to the
  // reader (a chunk may be 64 MiB: record_file.h). Chunks of a few kB are
  // common (a collector flushes often), and a lock, an allocation or a
  // system call per chunk would cost more than its zstd on a VM where
  // system calls trap: so the thread reads the file kWindowBytes at a
  // time, hands chunks over in batches of kBatchBytes of payload, one
  // allocation each, stops while kAheadBytes of batches wait, and wakes the
  // reader, when it waits, once half of that is ready. It adds at most
  // about 2 * kAheadBytes + 2 * kMaxPayload + kWindowBytes to a read's
  // memory (decoded events count in kAheadBytes; each batch may end one
  // chunk's events, kMaxUnpackedEvents at most, past it).
  static constexpr uint32_t kMaxPayload = 8u << 20;
  // OP_EVENTS chunks of more events are not decoded ahead (a recorder's hold
  // kRecordChunkEvents).
  static constexpr uint32_t kMaxUnpackedEvents = 8 * kRecordChunkEvents;
  static constexpr size_t kAheadBytes = 1u << 20;
  static constexpr size_t kBatchBytes = 128u << 10;
  static constexpr size_t kWindowBytes = 512u << 10;

 private:
  // Chunks one after the other, their payloads in one buffer.
  struct Batch {
    struct Chunk {
      uint64_t offset = 0;
      uint8_t header[kRecordChunkHeaderSize] = {};
      size_t at = 0, size = 0;  // its payload in bytes
      // Its decoded events (OP_EVENTS, unpack_op_events_), in events.
      bool unpacked = false;
      bool passed_over = false;  // passes_over_ named its type: no payload
      bool compressed = false;   // its payload as stored (PreparedChunk::compressed)
      uint64_t first_event = 0;
      size_t events_at = 0, event_count = 0;
    };
    std::vector<Chunk> chunks;
    std::vector<uint8_t> bytes;
    std::vector<gp_event> events;
    size_t weight() const { return bytes.size() + events.size() * sizeof(gp_event) + kRecordChunkHeaderSize * chunks.size(); }
    size_t compressed = 0;  // chunks handed over as stored
    uint64_t end = 0;   // where the chunk after the last begins
    bool last = false;  // the thread stops after it (a chunk it does not prepare, END, the file's end)
  };
  void run();
  // Appends the chunk at offset to the batch when it is sound; false where
  // the thread stops.
  bool prepare(uint64_t offset, Batch& batch);
  // A batch the reader is done with, its buffers kept for the thread's next
  // (a fresh quarter-megabyte costs a page fault per page).
  void recycle(Batch&& batch);
  static constexpr size_t kSpareBatches = 4;
  // Chunks handed over as stored per batch: a waiting reader is woken with
  // that much work, while the thread goes on with the chunks after.
  static constexpr size_t kCompressedPerBatch = 4;
  // The n file bytes at offset, from the window (read again from offset
  // when it does not hold them); nullptr on an I/O error.
  const uint8_t* window_at(uint64_t offset, size_t n);

  const ReadAt read_at_;
  const uint64_t size_;
  const uint32_t version_;
  const bool unpack_op_events_;
  const std::function<bool(uint32_t type)> passes_over_;
  const bool hands_over_compressed_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Batch> ready_;
  std::vector<Batch> spare_;  // batches taken and done with (recycle)
  size_t ready_bytes_ = 0;  // their weight(): payloads, decoded events and headers
  size_t ready_compressed_ = 0;  // their chunks handed over as stored
  // Who is to be woken; reader_waits_ is also read by the thread without
  // the lock, to hand chunks over compressed while the reader waits.
  std::atomic<bool> reader_waits_ = false;
  bool thread_waits_ = false;
  uint64_t next_ = 0;       // where the thread prepares next
  bool stopped_ = true;     // the thread met a chunk it does not prepare (or has no start yet)
  uint64_t generation_ = 0;  // bumped by start(): work begun before it is dropped
  bool quit_ = false;
  // The thread's own: the file bytes from window_offset_ on.
  std::vector<uint8_t> window_;
  uint64_t window_offset_ = 0;
  // The reader's own: the batch it takes chunks from, and the next one.
  Batch taken_;
  size_t taken_next_ = 0;
  std::thread thread_;
};

}  // namespace gpuprof
