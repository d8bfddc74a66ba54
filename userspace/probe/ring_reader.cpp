#include "probe/ring_reader.h"

#include <bpf/libbpf.h>

#include <cerrno>
#include <string>

namespace gpuprof {

Result<void> RingReader::add(int map_fd, ReadInPlace read, void* ctx, const char* what) {
  const int added = rb_ ? ring_buffer__add(rb_, map_fd, read, ctx) : 0;
  if (!rb_) rb_ = ring_buffer__new(map_fd, read, ctx, nullptr);
  if (!rb_ || added != 0) return Error(std::string("cannot open the ") + what + " ring buffer: " + std::strerror(errno));
  return {};
}

RingReader::~RingReader() {
  if (rb_) ring_buffer__free(rb_);
}

int RingReader::deliver_copy(void* ctx, void* data, size_t size) {
  (*static_cast<Deliver*>(ctx))(data, size);
  return 0;
}

int RingReader::poll_fd() const { return ring_buffer__epoll_fd(rb_); }

int RingReader::consume() { return ring_buffer__consume(rb_); }

}  // namespace gpuprof
