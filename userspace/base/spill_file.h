// spill_file.h: bytes put aside on disk until they are read back, once,
// in order: a streamed output's per-thread calls or launches
// (output/streamed_chrome_trace.h), which it writes only at the end.
//
// Appended bytes wait in memory and go to an unnamed temporary file
// ($TMPDIR, removed when closed) 64 KiB at a time. When no temporary file
// can be made, or a write fails (the disk is full), everything stays in
// memory instead: the output is still whole, only its memory grows.
#pragma once

#include <cstdio>
#include <functional>
#include <string>
#include <string_view>

namespace gpuprof {

class SpillFile {
 public:
  SpillFile() = default;
  SpillFile(const SpillFile&) = delete;
  SpillFile& operator=(const SpillFile&) = delete;
  ~SpillFile();

  // Where to append; write_if_due() after appending.
  std::string& pending() { return pending_; }
  // Writes what is pending once there are 64 KiB of it.
  void write_if_due();
  // Hands everything appended, in order, in pieces (the file's in pieces
  // of 64 KiB, then what was never written).
  void read_back(const std::function<void(std::string_view piece)>& take);

  static constexpr size_t kPieceBytes = 64 << 10;

 private:
  std::FILE* file_ = nullptr;
  bool opened_ = false;  // a temporary file was asked for (made or not)
  std::string pending_;
};

}  // namespace gpuprof
