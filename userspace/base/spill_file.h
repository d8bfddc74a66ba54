// spill_file.h: bytes put aside on disk until they are read back, once,
// in order: a streamed output's per-thread calls or launches
// (output/streamed_chrome_trace.h), which it writes only at the end.
//
// Appended bytes wait in memory and go to an unnamed temporary file
// ($TMPDIR, removed when closed) 64 KiB at a time. When no temporary file
// can be made, or a write fails (the disk is full), everything stays in
// memory instead: the output is still whole, only its memory grows.
#pragma once

#include <algorithm>
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
  // of 64 KiB, then what was never written), each call from the start.
  void read_back(const std::function<void(std::string_view piece)>& take);
  // The same pieces one call at a time, for a reader that takes from
  // several files by turns (external_sort.h): false once all were handed.
  // Nothing may be appended after the first call; read_back starts over.
  bool next_piece(std::string* piece);

  static constexpr size_t kPieceBytes = 64 << 10;

 private:
  std::FILE* file_ = nullptr;
  bool opened_ = false;  // a temporary file was asked for (made or not)
  std::string pending_;
  enum class Reading { not_started, file, pending, done } reading_ = Reading::not_started;
};

// Fixed-size records put aside whole (CUDA launches, memory levels) and
// read back one at a time, in order; a record a piece's end cuts is
// completed by the next piece.
template <typename Record>
void append_records(SpillFile& file, std::span<const Record> records) {
  static_assert(std::is_trivially_copyable_v<Record>);
  // A piece at a time, so that what waits in memory stays under two pieces
  // (a sorted run of megabytes: external_sort.h).
  const char* bytes = reinterpret_cast<const char*>(records.data());
  for (size_t left = records.size_bytes(); left > 0;) {
    const size_t n = std::min(left, SpillFile::kPieceBytes);
    file.pending().append(bytes, n);
    file.write_if_due();
    bytes += n;
    left -= n;
  }
}
template <typename Record, typename Visit>
void read_back_records(SpillFile& file, const Visit& visit) {
  // A record the last piece cut, completed from this one; the rest are
  // read where the piece holds them.
  std::string partial;
  file.read_back([&](std::string_view piece) {
    if (!partial.empty()) {
      const size_t more = std::min(sizeof(Record) - partial.size(), piece.size());
      partial.append(piece.substr(0, more));
      piece.remove_prefix(more);
      if (partial.size() < sizeof(Record)) return;
      Record record;
      std::memcpy(&record, partial.data(), sizeof record);
      visit(record);
      partial.clear();
    }
    size_t at = 0;
    for (; piece.size() - at >= sizeof(Record); at += sizeof(Record)) {
      Record record;
      std::memcpy(&record, piece.data() + at, sizeof record);
      visit(record);
    }
    partial.assign(piece.substr(at));
  });
}

// The same read one record at a time (next_piece), for a reader that takes
// from several files by turns.
template <typename Record>
class SpilledRecords {
  static_assert(std::is_trivially_copyable_v<Record>);

 public:
  explicit SpilledRecords(SpillFile& file) : file_(&file) {}
  // The next record into *out; false when there are no more.
  bool next(Record* out) {
    while (piece_.size() - at_ < sizeof(Record)) {
      std::string more;
      if (!file_->next_piece(&more)) return false;
      piece_.erase(0, at_);  // a record the piece's end cut is completed by the next piece
      at_ = 0;
      piece_ += more;
    }
    std::memcpy(out, piece_.data() + at_, sizeof(Record));
    at_ += sizeof(Record);
    return true;
  }

 private:
  SpillFile* file_;
  std::string piece_;
  size_t at_ = 0;
};

}  // namespace gpuprof
