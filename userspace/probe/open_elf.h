// open_elf.h: ElfImage::open (symbols/elf_image.h) as a Result, for the
// loaders that look up their probe sites' offsets. symbols/ still answers
// with std::optional and an error string (issue 27 moves it to Result).
#pragma once

#include <string>

#include "base/result.h"
#include "symbols/elf_image.h"

namespace gpuprof {

inline Result<ElfImage> open_elf(const std::string& path) {
  std::string error;
  std::optional<ElfImage> elf = ElfImage::open(path, &error);
  if (!elf) return Error(std::move(error));
  return std::move(*elf);
}

}  // namespace gpuprof
