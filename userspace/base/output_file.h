// output_file.h: a file gpuprof writes a report into, gzip-compressed when
// its name ends in ".gz" (Chrome and Perfetto open gzipped traces), or
// standard output for "-".
#pragma once

#include "base/result.h"

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace gpuprof {

class OutputFile {
 public:
  // An error when the file cannot be created. Files get `mode` (file_mode.h;
  // owner-only by default: reports hold command lines, paths and code
  // locations).
  static Result<std::unique_ptr<OutputFile>> open(const std::string& path, mode_t mode = 0600);
  virtual ~OutputFile() = default;

  // False once a write failed; the first error is kept.
  virtual bool write(std::string_view data) = 0;
  // Flushes and closes; an error if anything failed on the way.
  virtual Result<void> close() = 0;
  // Bytes written to the file so far (compressed bytes for .gz; 0 for "-").
  virtual uint64_t bytes_on_disk() const = 0;
};

}  // namespace gpuprof
