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
#include <cstring>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

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

// Fixed-size records put aside whole (CUDA launches, memory levels) and
// read back one at a time, in order; a record a piece's end cuts is
// completed by the next piece.
template <typename Record>
void append_records(SpillFile& file, std::span<const Record> records) {
  static_assert(std::is_trivially_copyable_v<Record>);
  file.pending().append(reinterpret_cast<const char*>(records.data()), records.size_bytes());
  file.write_if_due();
}
template <typename Record, typename Visit>
void read_back_records(SpillFile& file, const Visit& visit) {
  std::string partial;
  file.read_back([&](std::string_view piece) {
    partial.append(piece);
    size_t at = 0;
    for (; partial.size() - at >= sizeof(Record); at += sizeof(Record)) {
      Record record;
      std::memcpy(&record, partial.data() + at, sizeof record);
      visit(record);
    }
    partial.erase(0, at);
  });
}

}  // namespace gpuprof
