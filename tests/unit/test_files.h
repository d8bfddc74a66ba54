// test_files.h: where the unit tests find their files in the source tree
// (tests/golden, tests/data), and reading one whole.
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

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

}  // namespace gpuprof::test
