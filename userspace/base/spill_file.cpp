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
  if (file_) {
    std::rewind(file_);
    std::string piece(kPieceBytes, '\0');
    while (size_t got = std::fread(piece.data(), 1, piece.size(), file_)) take(std::string_view(piece.data(), got));
  }
  if (!pending_.empty()) take(pending_);
}

}  // namespace gpuprof
