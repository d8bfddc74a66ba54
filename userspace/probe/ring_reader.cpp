#include "probe/ring_reader.h"

#include <bpf/libbpf.h>

#include <cerrno>

namespace gpuprof {

std::unique_ptr<RingReader> RingReader::open_raw(int map_fd, Deliver deliver, const char* what, std::string* error) {
  std::unique_ptr<RingReader> reader(new RingReader(std::move(deliver)));
  reader->rb_ = ring_buffer__new(map_fd, on_data, reader.get(), nullptr);
  if (!reader->rb_) {
    *error = std::string("cannot open the ") + what + " ring buffer: " + std::strerror(errno);
    return nullptr;
  }
  return reader;
}

RingReader::~RingReader() {
  if (rb_) ring_buffer__free(rb_);
}

int RingReader::on_data(void* ctx, void* data, size_t size) {
  static_cast<RingReader*>(ctx)->deliver_(data, size);
  return 0;
}

int RingReader::poll_fd() const { return ring_buffer__epoll_fd(rb_); }

void RingReader::consume() { ring_buffer__consume(rb_); }

}  // namespace gpuprof
