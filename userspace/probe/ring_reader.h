// ring_reader.h: the BPF ring buffers of one program, read through one
// libbpf ring_buffer (one epoll fd, one consume for all of them).
//
// The hot rings (op events, samples, launches) hand each record to a
// plain function in place: no copy, no std::function per record. The rings
// of few records (forks, library loads, thread exits) copy each into its
// struct first (one shorter than the struct is skipped: a BPF object of
// another build) and hand it to a callback.
#pragma once

#include <cstddef>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#include "base/result.h"

struct ring_buffer;

namespace gpuprof {

class RingReader {
 public:
  // libbpf's ring_buffer_sample_fn: reads one record in place; returns 0.
  using ReadInPlace = int (*)(void* ctx, void* data, size_t size);

  RingReader() = default;
  ~RingReader();
  RingReader(const RingReader&) = delete;
  RingReader& operator=(const RingReader&) = delete;

  // Reads the BPF_MAP_TYPE_RINGBUF map map_fd with read(ctx, ...). Fails
  // with "cannot open the WHAT ring buffer: ..." when libbpf cannot.
  Result<void> add(int map_fd, ReadInPlace read, void* ctx, const char* what);

  // Reads map_fd's records as Records, copied out of the ring.
  template <typename Record>
  Result<void> add(int map_fd, std::function<void(const Record&)> on_record, const char* what) {
    auto& deliver = copied_.emplace_back(std::make_unique<Deliver>(
        [on_record = std::move(on_record)](const void* data, size_t size) {
          if (size < sizeof(Record)) return;
          Record record;
          std::memcpy(&record, data, sizeof record);
          on_record(record);
        }));
    return add(map_fd, &deliver_copy, deliver.get(), what);
  }

  int poll_fd() const;  // readable when records wait
  int consume();        // hands every waiting record over; libbpf's count or -errno

 private:
  using Deliver = std::function<void(const void*, size_t)>;
  static int deliver_copy(void* ctx, void* data, size_t size);
  ring_buffer* rb_ = nullptr;
  std::vector<std::unique_ptr<Deliver>> copied_;
};

}  // namespace gpuprof
