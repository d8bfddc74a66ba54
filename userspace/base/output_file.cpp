// output_file.cpp: plain, gzip (zlib's gzFile) and stdout outputs.
#include "base/output_file.h"

#include "base/file_mode.h"

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

class PlainFile : public OutputFile {
 public:
  PlainFile(std::FILE* file, std::string path, bool is_stdout)
      : file_(file), path_(std::move(path)), stdout_(is_stdout) {}
  ~PlainFile() override {
    if (file_ && !stdout_) std::fclose(file_);
  }
  bool write(std::string_view data) override {
    if (!error_.empty()) return false;
    if (std::fwrite(data.data(), 1, data.size(), file_) != data.size()) {
      error_ = "cannot write " + path_ + ": " + std::strerror(errno);
      return false;
    }
    written_ += data.size();
    return true;
  }
  Result<void> close() override {
    if (error_.empty() && std::fflush(file_) != 0) error_ = "cannot write " + path_ + ": " + std::strerror(errno);
    if (!stdout_) {
      if (std::fclose(file_) != 0 && error_.empty())
        error_ = "cannot close " + path_ + ": " + std::strerror(errno);
      file_ = nullptr;
    }
    if (!error_.empty()) return Error(error_);
    return {};
  }
  uint64_t bytes_on_disk() const override { return stdout_ ? 0 : written_; }

 private:
  std::FILE* file_;
  std::string path_;
  bool stdout_;
  std::string error_;
  uint64_t written_ = 0;
};

class GzipFile : public OutputFile {
 public:
  GzipFile(gzFile file, std::string path) : file_(file), path_(std::move(path)) {}
  ~GzipFile() override {
    if (file_) gzclose(file_);
  }
  bool write(std::string_view data) override {
    if (!error_.empty()) return false;
    // gzwrite takes an unsigned count: write in pieces well under it.
    while (!data.empty()) {
      const unsigned piece = static_cast<unsigned>(std::min<size_t>(data.size(), 1u << 30));
      if (gzwrite(file_, data.data(), piece) != static_cast<int>(piece)) {
        int zerr = 0;
        const char* what = gzerror(file_, &zerr);
        error_ = "cannot write " + path_ + ": " + (zerr == Z_ERRNO ? std::strerror(errno) : what);
        return false;
      }
      data.remove_prefix(piece);
    }
    return true;
  }
  Result<void> close() override {
    const int status = gzclose(file_);
    file_ = nullptr;
    if (status != Z_OK && error_.empty()) error_ = "cannot finish " + path_ + " (zlib error " + std::to_string(status) + ")";
    if (!error_.empty()) return Error(error_);
    return {};
  }
  uint64_t bytes_on_disk() const override {
    struct stat st;
    return stat(path_.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
  }

 private:
  gzFile file_;
  std::string path_;
  std::string error_;
};

}  // namespace

Result<std::unique_ptr<OutputFile>> OutputFile::open(const std::string& path, mode_t mode) {
  if (path == "-") return std::make_unique<PlainFile>(stdout, "standard output", true);
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
  std::FILE* file = fdopen(fd, "wb");
  if (!file) {
    ::close(fd);
    return Error("cannot open " + path + ": " + std::strerror(errno));
  }
  return std::make_unique<PlainFile>(file, path, false);
}

}  // namespace gpuprof
