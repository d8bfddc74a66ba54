// unique_fd.h: an owned file descriptor.
#pragma once

#include <unistd.h>

#include <utility>

namespace gpuprof {

// Closed on destruction, moved, never copied.
class UniqueFd {
 public:
  explicit UniqueFd(int fd = -1) : fd_(fd) {}
  UniqueFd(UniqueFd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    reset(std::exchange(o.fd_, -1));
    return *this;
  }
  ~UniqueFd() { reset(); }
  int get() const { return fd_; }
  // Closes the fd held (if any) and takes fd; returns close()'s result, so
  // that a writer can report a failed close of a file it wrote.
  int reset(int fd = -1) {
    int rc = fd_ >= 0 ? ::close(fd_) : 0;
    fd_ = fd;
    return rc;
  }

 private:
  int fd_;
};

}  // namespace gpuprof
