// ring_reader.h: a BPF ring buffer read as typed records, for the probe
// wrappers whose records are few (forks, library loads, thread exits): each
// record is copied into a Record (one shorter than a Record is skipped: a
// BPF object of another build) and handed to a callback. Owns the libbpf
// ring_buffer. The hot rings (op events, samples, launches) read their
// records in place instead.
#pragma once

#include <cstddef>
#include <cstring>
#include <functional>
#include <memory>
#include <string>

struct ring_buffer;

namespace gpuprof {

class RingReader {
 public:
  // Reads the BPF_MAP_TYPE_RINGBUF map map_fd; nullptr and *error ("cannot
  // open the WHAT ring buffer: ...") when libbpf cannot.
  template <typename Record>
  static std::unique_ptr<RingReader> open(int map_fd, std::function<void(const Record&)> on_record,
                                          const char* what, std::string* error) {
    return open_raw(
        map_fd,
        [on_record = std::move(on_record)](const void* data, size_t size) {
          if (size < sizeof(Record)) return;
          Record record;
          std::memcpy(&record, data, sizeof record);
          on_record(record);
        },
        what, error);
  }
  ~RingReader();
  RingReader(const RingReader&) = delete;
  RingReader& operator=(const RingReader&) = delete;

  int poll_fd() const;  // readable when records wait
  void consume();       // hands every waiting record to the callback

 private:
  using Deliver = std::function<void(const void*, size_t)>;
  explicit RingReader(Deliver deliver) : deliver_(std::move(deliver)) {}
  static std::unique_ptr<RingReader> open_raw(int map_fd, Deliver deliver, const char* what, std::string* error);
  static int on_data(void* ctx, void* data, size_t size);
  Deliver deliver_;
  ring_buffer* rb_ = nullptr;
};

}  // namespace gpuprof
