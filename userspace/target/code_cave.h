// code_cave.h: a few hundred bytes of another process's memory where code
// can be placed and run without taking anything from it.
//
// A shared library's executable segment rarely ends on a page boundary, and
// its mapping always does: the rest of the last page (the cave) is mapped
// executable and holds bytes that no code of the process runs (zero padding
// with the linker's default separate code segment; with older layouts, the
// file bytes of the next segment, which the process reads through that
// segment's own mapping). Writing there through /proc/PID/mem gives the
// process its own copy of that one page. Only a cave whose bytes are all
// zero is taken: never one another injection used.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"
#include "symbols/target_maps.h"

namespace gpuprof {

struct CodeCave {
  uint64_t address = 0;  // 16-byte aligned
  uint64_t size = 0;
  std::string library;   // the mapped file, as the target's maps name it
};

// The caves of an executable mapping, given its executable segments' file
// ranges [offset, end) (ElfImage::executable_segment_file_ranges): the
// aligned room after a segment's end up to the mapping's end.
std::vector<CodeCave> caves_of_mapping(const MapsEntry& mapping,
                                       const std::vector<std::pair<uint64_t, uint64_t>>& executable_ranges);

// The first cave of at least min_size all-zero bytes among the target's
// executable file mappings, the C library's first.
Result<CodeCave> find_code_cave(int pid, uint64_t min_size);

}  // namespace gpuprof
