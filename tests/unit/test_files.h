// test_files.h: where the unit tests find their files in the source tree
// (tests/golden, tests/data), reading one whole, and a file of a test's
// own under /tmp.
#pragma once

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>

namespace gpuprof::test {

// The repository root: GPUPROF_SOURCE_DIR when the build defines it, else
// the current directory (the tests run from the repo root).
inline std::filesystem::path source_dir() {
#ifdef GPUPROF_SOURCE_DIR
  return std::filesystem::path(GPUPROF_SOURCE_DIR);
#else
  return std::filesystem::current_path();
#endif
}

inline std::filesystem::path golden_dir() { return source_dir() / "tests" / "golden"; }
inline std::filesystem::path test_data_dir() { return source_dir() / "tests" / "data"; }

// The bytes of the file at path into *contents; false if it cannot be read.
inline bool read_file(const std::filesystem::path& path, std::string* contents) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream buffer;
  buffer << in.rdbuf();
  *contents = buffer.str();
  return true;
}

// An empty file of the test's own, /tmp/gpuprof-PREFIX-XXXXXX, removed
// when it goes (path() is "" when none could be made: the test's first
// use of it fails).
class TempFile {
 public:
  explicit TempFile(const std::string& prefix) {
    std::string name = "/tmp/gpuprof-" + prefix + "-XXXXXX";
    if (const int fd = ::mkstemp(name.data()); fd >= 0) {
      ::close(fd);
      path_ = std::move(name);
    }
  }
  ~TempFile() {
    if (!path_.empty()) ::unlink(path_.c_str());
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace gpuprof::test
