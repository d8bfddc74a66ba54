// chunk_prefetch.cpp: the prefetch thread (see the header).
#include "record/chunk_prefetch.h"

#include <algorithm>
#include <cstring>

#include "record/chunk_codecs.h"
#include "record/chunk_compression.h"

namespace gpuprof {

using chunk_codec::chunk_crc;
using chunk_codec::get;

ChunkPrefetch::ChunkPrefetch(ReadAt read_at, uint64_t size, uint32_t version, bool unpack_op_events,
                             std::function<bool(uint32_t type)> passes_over, bool hands_over_compressed)
    : read_at_(std::move(read_at)),
      size_(size),
      version_(version),
      unpack_op_events_(unpack_op_events),
      passes_over_(std::move(passes_over)),
      hands_over_compressed_(hands_over_compressed),
      thread_([this] { run(); }) {}

ChunkPrefetch::~ChunkPrefetch() {
  {
    std::lock_guard lock(mutex_);
    quit_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

std::optional<PreparedChunk> ChunkPrefetch::take(uint64_t offset) {
  if (taken_next_ == taken_.chunks.size()) {
    if (taken_.last) return std::nullopt;  // the thread stopped after it
    std::unique_lock lock(mutex_);
    if (ready_.empty() && !stopped_) {
      reader_waits_ = true;
      changed_.wait(lock, [this] { return stopped_ || ready_bytes_ >= kAheadBytes / 2 || ready_compressed_ > 0; });
      reader_waits_ = false;
    }
    if (ready_.empty()) return std::nullopt;
    recycle(std::move(taken_));
    taken_ = std::move(ready_.front());
    taken_next_ = 0;
    ready_.pop_front();
    ready_bytes_ -= taken_.weight();
    ready_compressed_ -= taken_.compressed;
    // The thread is woken once half its room is free, not per batch.
    const bool wake = thread_waits_ && ready_bytes_ <= kAheadBytes / 2;
    lock.unlock();
    if (wake) changed_.notify_all();
    if (taken_.chunks.empty()) return std::nullopt;
  }
  const Batch::Chunk& chunk = taken_.chunks[taken_next_];
  if (chunk.offset != offset) return std::nullopt;
  taken_next_++;
  PreparedChunk prepared;
  prepared.offset = chunk.offset;
  std::memcpy(prepared.header, chunk.header, kRecordChunkHeaderSize);
  prepared.payload = std::span<const uint8_t>(taken_.bytes.data() + chunk.at, chunk.size);
  prepared.passed_over = chunk.passed_over;
  prepared.compressed = chunk.compressed;
  if (chunk.unpacked)
    prepared.events = UnpackedEvents{chunk.first_event,
                                     std::span<const gp_event>(taken_.events.data() + chunk.events_at, chunk.event_count)};
  return prepared;
}

void ChunkPrefetch::start(uint64_t offset) {
  taken_ = Batch();
  taken_next_ = 0;
  {
    std::lock_guard lock(mutex_);
    ready_.clear();
    ready_bytes_ = 0;
    ready_compressed_ = 0;
    next_ = offset;
    stopped_ = false;
    generation_++;
  }
  changed_.notify_all();
}

void ChunkPrefetch::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    thread_waits_ = true;
    changed_.wait(lock, [this] { return quit_ || (!stopped_ && ready_bytes_ < kAheadBytes); });
    thread_waits_ = false;
    if (quit_) return;
    const uint64_t generation = generation_;
    Batch batch;
    if (!spare_.empty()) {
      batch = std::move(spare_.back());
      spare_.pop_back();
    } else {
      batch.bytes.reserve(2 * kBatchBytes);  // a batch ends once past kBatchBytes
      if (unpack_op_events_) batch.events.reserve(2 * kBatchBytes / sizeof(gp_event));
    }
    batch.end = next_;
    lock.unlock();
    // A batch of chunks for the reader to decompress goes as soon as it
    // holds a few: the reader is idle meanwhile.
    while (batch.weight() < kBatchBytes && batch.compressed < kCompressedPerBatch) {
      if (!prepare(batch.end, batch)) {
        batch.last = true;
        break;
      }
      const Batch::Chunk& chunk = batch.chunks.back();
      batch.end = chunk.offset + kRecordChunkHeaderSize + get<uint32_t>(chunk.header + 4);
      // Nothing is read after END (record_file.h): the reader stops there.
      if (get<uint32_t>(chunk.header) == static_cast<uint32_t>(ChunkType::END)) {
        batch.last = true;
        break;
      }
    }
    lock.lock();
    if (generation != generation_) {  // start() moved on meanwhile
      recycle(std::move(batch));
      continue;
    }
    next_ = batch.end;
    stopped_ = batch.last;
    ready_bytes_ += batch.weight();
    ready_compressed_ += batch.compressed;
    ready_.push_back(std::move(batch));
    if (reader_waits_ && (stopped_ || ready_bytes_ >= kAheadBytes / 2 || ready_compressed_ > 0)) changed_.notify_all();
  }
}

const uint8_t* ChunkPrefetch::window_at(uint64_t offset, size_t n) {
  if (offset < window_offset_ || offset + n > window_offset_ + window_.size()) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(std::max(n, kWindowBytes), size_ - offset));
    if (!read_at_(offset, want, window_)) {
      window_.clear();
      return nullptr;
    }
    window_offset_ = offset;
  }
  return window_.data() + (offset - window_offset_);
}

bool ChunkPrefetch::prepare(uint64_t offset, Batch& batch) {
  if (offset > size_ || size_ - offset < kRecordChunkHeaderSize) return false;
  Batch::Chunk chunk;
  chunk.offset = offset;
  const uint8_t* header = window_at(offset, kRecordChunkHeaderSize);
  if (!header) return false;
  std::memcpy(chunk.header, header, kRecordChunkHeaderSize);
  const uint32_t len = get<uint32_t>(chunk.header + 4), raw = get<uint32_t>(chunk.header + 8);
  if (len > kMaxPayload || size_ - offset - kRecordChunkHeaderSize < len) return false;
  const uint8_t* stored = window_at(offset + kRecordChunkHeaderSize, len);
  if (!stored || chunk_crc(chunk.header, stored, len) != get<uint32_t>(chunk.header + 12)) return false;
  chunk.at = batch.bytes.size();
  if (passes_over_ && passes_over_(get<uint32_t>(chunk.header))) {
    chunk.passed_over = true;
    batch.chunks.push_back(chunk);
    return true;
  }
  // A reader waiting for the thread has a core to spare: it decompresses
  // this one (and decodes its events) itself.
  if (hands_over_compressed_ && version_ >= 6 && raw != 0 && raw <= kMaxPayload &&
      reader_waits_.load(std::memory_order_relaxed)) {
    batch.bytes.insert(batch.bytes.end(), stored, stored + len);
    chunk.size = len;
    chunk.compressed = true;
    batch.compressed++;
    batch.chunks.push_back(chunk);
    return true;
  }
  if (version_ >= 6 && raw != 0) {  // decompressed where the batch goes on
    if (raw > kMaxPayload ||
        !decompress_chunk(std::span<const uint8_t>(stored, len), raw, batch.bytes, chunk.at).empty()) {
      batch.bytes.resize(chunk.at);
      return false;
    }
  } else {
    batch.bytes.insert(batch.bytes.end(), stored, stored + len);
  }
  chunk.size = batch.bytes.size() - chunk.at;
  const std::span<const uint8_t> payload(batch.bytes.data() + chunk.at, chunk.size);
  uint64_t first_event = 0;
  uint32_t count = 0;
  // Chunks of more events than a recorder writes are left to the reader:
  // decoded here, a crafted chunk of 8 MiB could hold a GB of events.
  if (unpack_op_events_ && get<uint32_t>(chunk.header) == static_cast<uint32_t>(ChunkType::OP_EVENTS) &&
      packed_events_prefix(payload, &first_event, &count).empty() && count <= kMaxUnpackedEvents) {
    chunk.events_at = batch.events.size();
    chunk.unpacked = unpack_events(payload, &chunk.first_event, batch.events).empty();
    if (chunk.unpacked)
      chunk.event_count = batch.events.size() - chunk.events_at;
    else
      batch.events.resize(chunk.events_at);  // the reader finds what is wrong
  }
  batch.chunks.push_back(chunk);
  return true;
}

// Called with the lock held.
void ChunkPrefetch::recycle(Batch&& batch) {
  if (batch.bytes.capacity() == 0 || spare_.size() >= kSpareBatches) return;
  batch.chunks.clear();
  batch.bytes.clear();
  batch.events.clear();
  batch.compressed = 0;
  batch.last = false;
  spare_.push_back(std::move(batch));
}

}  // namespace gpuprof
