// output_file.cpp: plain, gzip (zlib's gzFile) and stdout outputs; files are
// written behind (write_behind.h), standard output as it comes.
#include "base/output_file.h"

#include "base/file_mode.h"
#include "base/write_behind.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <algorithm>
#include <cstring>

namespace gpuprof {
namespace {

// Standard output, written as it comes (what else goes there stays in order).
class StdoutFile : public OutputFile {
 public:
  bool write(std::string_view data) override {
    if (!error_.empty()) return false;
    if (std::fwrite(data.data(), 1, data.size(), stdout) != data.size()) {
      error_ = std::string("cannot write standard output: ") + std::strerror(errno);
      return false;
    }
    return true;
  }
  Result<void> close() override {
    if (error_.empty() && std::fflush(stdout) != 0)
      error_ = std::string("cannot write standard output: ") + std::strerror(errno);
    if (!error_.empty()) return Error(error_);
    return {};
  }
  uint64_t bytes_on_disk() const override { return 0; }

 private:
  std::string error_;
};

// A file, written a megabyte at a time on a thread of its own
// (write_behind.h).
class PlainFile : public OutputFile {
 public:
  PlainFile(int fd, std::string path)
      : fd_(fd), path_(std::move(path)), behind_([this](std::string_view buffer) { return write_all(buffer); }) {}
  ~PlainFile() override {
    behind_.finish();  // its thread writes to fd_
    if (fd_ >= 0) ::close(fd_);
  }
  bool write(std::string_view data) override {
    if (!behind_.write(data)) return false;
    written_ += data.size();
    return true;
  }
  Result<void> close() override {
    std::string error = behind_.finish();
    if (::close(fd_) != 0 && error.empty()) error = "cannot close " + path_ + ": " + std::strerror(errno);
    fd_ = -1;
    if (!error.empty()) return Error(error);
    return {};
  }
  uint64_t bytes_on_disk() const override { return written_; }

 private:
  // The writing thread's: one buffer whole.
  std::string write_all(std::string_view buffer) const {
    while (!buffer.empty()) {
      const ssize_t n = ::write(fd_, buffer.data(), buffer.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return "cannot write " + path_ + ": " + std::strerror(errno);
      buffer.remove_prefix(static_cast<size_t>(n));
    }
    return "";
  }

  int fd_;
  const std::string path_;
  uint64_t written_ = 0;
  WriteBehind behind_;  // last: its thread uses the members above
};

// A gzip file: zlib compresses on the writing thread (write_behind.h), so
// that compression, the slowest part of a .gz trace, overlaps formatting.
class GzipFile : public OutputFile {
 public:
  GzipFile(gzFile file, std::string path)
      : file_(file), path_(std::move(path)), behind_([this](std::string_view buffer) { return compress(buffer); }) {}
  ~GzipFile() override {
    behind_.finish();  // its thread writes to file_
    if (file_) gzclose(file_);
  }
  bool write(std::string_view data) override { return behind_.write(data); }
  Result<void> close() override {
    std::string error = behind_.finish();
    const int status = gzclose(file_);
    file_ = nullptr;
    if (status != Z_OK && error.empty()) error = "cannot finish " + path_ + " (zlib error " + std::to_string(status) + ")";
    if (!error.empty()) return Error(error);
    return {};
  }
  uint64_t bytes_on_disk() const override {
    struct stat st;
    return stat(path_.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
  }

 private:
  // The writing thread's: one buffer compressed. gzwrite takes an unsigned
  // count: pieces well under it.
  std::string compress(std::string_view data) {
    while (!data.empty()) {
      const unsigned piece = static_cast<unsigned>(std::min<size_t>(data.size(), 1u << 30));
      if (gzwrite(file_, data.data(), piece) != static_cast<int>(piece)) {
        int zerr = 0;
        const char* what = gzerror(file_, &zerr);
        return "cannot write " + path_ + ": " + (zerr == Z_ERRNO ? std::strerror(errno) : what);
      }
      data.remove_prefix(piece);
    }
    return "";
  }

  gzFile file_;
  const std::string path_;
  WriteBehind behind_;  // last: its thread uses the members above
};

}  // namespace

Result<std::unique_ptr<OutputFile>> OutputFile::open(const std::string& path, mode_t mode) {
  if (path == "-") return std::make_unique<StdoutFile>();
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return Error("cannot create " + path + ": " + std::strerror(errno));
  if (!set_file_mode(fd, mode)) {
    Error error("cannot set the mode of " + path + ": " + std::strerror(errno));
    ::close(fd);
    return error;
  }
  if (path.size() > 3 && path.ends_with(".gz")) {
    gzFile gz = gzdopen(fd, "wb6");
    if (!gz) {
      ::close(fd);
      return Error("cannot start gzip output to " + path);
    }
    gzbuffer(gz, 256 << 10);
    return std::make_unique<GzipFile>(gz, path);
  }
  return std::make_unique<PlainFile>(fd, path);
}

}  // namespace gpuprof
