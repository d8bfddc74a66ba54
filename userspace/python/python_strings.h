// python_strings.h: read a CPython 3.11 to 3.13 str object out of a target's
// memory (compact strings only: every str the interpreter makes for names,
// keys and file names is compact).
#pragma once

#include "python/python_offsets.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace gpuprof {

// Reads len bytes of the target at address into buffer; true only when all
// of them were read (read_target_memory of a pid, or a fake in tests).
using TargetMemoryReader = std::function<bool(uint64_t address, void* buffer, size_t len)>;

// The UTF-8 text of the str at addr; nullopt when it cannot be read, is not
// a compact str (kind 1, 2 or 4), is longer than max_length code points, or
// claims to be ASCII and is not (freed memory read late).
std::optional<std::string> read_python_str(const TargetMemoryReader& read, const PythonOffsets& offsets,
                                           uint64_t addr, uint64_t max_length);

}  // namespace gpuprof
