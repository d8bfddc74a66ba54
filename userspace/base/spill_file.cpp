// spill_file.cpp: tmpfile(3), written whole pieces at a time, read back
// from its start.
#include "base/spill_file.h"

namespace gpuprof {

SpillFile::~SpillFile() {
  if (file_) std::fclose(file_);
}

void SpillFile::write_if_due() {
  if (pending_.size() < kPieceBytes) return;
  if (!opened_) {
    opened_ = true;
    file_ = std::tmpfile();
  }
  if (!file_) return;
  const long written_before = std::ftell(file_);
  if (std::fwrite(pending_.data(), 1, pending_.size(), file_) == pending_.size() && std::fflush(file_) == 0) {
    pending_.clear();
    return;
  }
  // The disk is full: what the file held before this write is held
  // instead, and all that follows.
  std::string held(written_before > 0 ? static_cast<size_t>(written_before) : 0, '\0');
  std::rewind(file_);
  held.resize(std::fread(held.data(), 1, held.size(), file_));
  std::fclose(file_);
  file_ = nullptr;
  pending_ = held + pending_;
}

void SpillFile::read_back(const std::function<void(std::string_view piece)>& take) {
  reading_ = Reading::not_started;  // from the start again (a trace reads a spill twice)
  std::string piece;
  while (next_piece(&piece)) take(piece);
}

bool SpillFile::next_piece(std::string* piece) {
  if (reading_ == Reading::not_started) {
    reading_ = file_ ? Reading::file : Reading::pending;
    if (file_) std::rewind(file_);
    pending_.shrink_to_fit();  // what never went to the file: a piece at most, often far less
  }
  if (reading_ == Reading::file) {
    piece->resize(kPieceBytes);
    if (const size_t got = std::fread(piece->data(), 1, kPieceBytes, file_)) {
      piece->resize(got);
      return true;
    }
    reading_ = Reading::pending;
  }
  if (reading_ == Reading::pending) {
    reading_ = Reading::done;
    if (!pending_.empty()) {
      piece->assign(pending_);
      return true;
    }
  }
  return false;
}

}  // namespace gpuprof
