#include "symbols/function_starts.h"

#include <algorithm>
#include <cstring>

namespace gpuprof {
namespace {

// DWARF pointer encodings (LSB: the Linux Standard Base, .eh_frame_hdr).
constexpr uint8_t kPeUdata4 = 0x03, kPeSdata4 = 0x0b, kPePcrel = 0x10, kPeDatarel = 0x30;

}  // namespace

std::optional<FunctionStarts> FunctionStarts::read(const ElfImage& elf) {
  auto section = elf.section(".eh_frame_hdr");
  if (!section || section->second < 12) return std::nullopt;
  const uint64_t hdr = section->first;
  auto bytes = elf.bytes_at(hdr, section->second);
  // u8 version (1), u8 eh_frame_ptr_enc, u8 fde_count_enc, u8 table_enc,
  // eh_frame_ptr, fde_count, then fde_count x {initial_location, fde}.
  if (bytes.size() != section->second || bytes[0] != 1 || bytes[1] != (kPePcrel | kPeSdata4) ||
      bytes[2] != kPeUdata4 || bytes[3] != (kPeDatarel | kPeSdata4))
    return std::nullopt;
  uint32_t count = 0;
  std::memcpy(&count, bytes.data() + 8, 4);
  if (count > (bytes.size() - 12) / 8) return std::nullopt;
  FunctionStarts out;
  out.starts_.reserve(count);
  for (uint32_t i = 0; i < count; i++) {
    int32_t relative = 0;
    std::memcpy(&relative, bytes.data() + 12 + 8 * i, 4);
    out.starts_.push_back(hdr + static_cast<int64_t>(relative));
  }
  std::sort(out.starts_.begin(), out.starts_.end());  // sorted already by the linker; cheap to be sure
  return out;
}

std::optional<uint64_t> FunctionStarts::containing(uint64_t address) const {
  auto it = std::upper_bound(starts_.begin(), starts_.end(), address);
  if (it == starts_.begin()) return std::nullopt;
  return *std::prev(it);
}

std::optional<uint64_t> FunctionStarts::next_after(uint64_t address) const {
  auto it = std::upper_bound(starts_.begin(), starts_.end(), address);
  if (it == starts_.end()) return std::nullopt;
  return *it;
}

}  // namespace gpuprof
