// function_starts.h: where every function of an ELF file starts, from the
// binary search table of .eh_frame_hdr (what unwinders use to find a PC's
// frame description): also for functions that export no symbol, such as
// those in C++ anonymous namespaces of a stripped library.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "symbols/elf_image.h"

namespace gpuprof {

class FunctionStarts {
 public:
  // nullopt when the file has no .eh_frame_hdr, or one whose table is not
  // in the layout GNU ld writes (DW_EH_PE_datarel | DW_EH_PE_sdata4).
  static std::optional<FunctionStarts> read(const ElfImage& elf);

  // The start of the function holding address (the greatest start at or
  // below it); nullopt below the first.
  std::optional<uint64_t> containing(uint64_t address) const;
  // The first start above address (where the function holding it ends at
  // the latest); nullopt past the last.
  std::optional<uint64_t> next_after(uint64_t address) const;
  size_t size() const { return starts_.size(); }

 private:
  std::vector<uint64_t> starts_;  // sorted
};

}  // namespace gpuprof
