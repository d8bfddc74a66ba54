// range_enters.h: the functions that begin record_function ranges but
// export no symbol.
//
// torch 2.x's record_function calls the exported
// torch::autograd::profiler::record_function_enter_new(name, args); torch
// 1.13's calls record_function_enter_legacy(name, args), a static function
// of the same file (torch/csrc/autograd/record_function_ops.cpp). Both
// construct a RecordFunction with RecordScope::USER_SCOPE (7) and take the
// name as their first argument after the hidden return slot. So the others
// are found by what they do: in the code around the exported one, every
// function that calls the RecordFunction constructor with `mov $0x7,%esi`
// just before, the way the exported one does; .eh_frame_hdr says where
// each begins (function_starts.h).
#pragma once

#include <cstdint>
#include <vector>

#include "symbols/elf_image.h"
#include "symbols/function_starts.h"

namespace gpuprof {

// Virtual addresses of the unexported enter functions near the exported
// one at enter_new (its symbol's address and size); empty when there are
// none or the code does not decode as expected.
std::vector<uint64_t> unexported_range_enters(const ElfImage& elf, const FunctionStarts& starts,
                                              uint64_t enter_new, uint64_t enter_new_size);

}  // namespace gpuprof
