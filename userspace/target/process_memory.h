// process_memory.h: another process's memory, read and written through
// /proc/PID/mem (as a debugger does: it needs ptrace rights over PID, and
// writes reach read-only mappings, each page copied for that process first).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "base/result.h"

namespace gpuprof {

// All of [address, address + bytes.size()) or an error.
Result<void> read_process_memory(int pid, uint64_t address, std::span<uint8_t> bytes);
Result<void> write_process_memory(int pid, uint64_t address, std::span<const uint8_t> bytes);

}  // namespace gpuprof
