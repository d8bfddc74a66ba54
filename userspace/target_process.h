// target_process.h: what /proc says about the process being profiled.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "recording.h"

namespace gpuprof {

// True if a process with this pid exists (a zombie counts as gone).
bool process_alive(int pid);

// pid, comm, cmdline and hostname; the libtorch fields are left empty.
ProcessInfo describe_process(int pid);

struct MappedLibrary {
  std::string path_in_target;  // as the target's /proc/PID/maps shows it
  std::string path_for_us;     // through /proc/PID/root, valid from our mount namespace
};

// The first executable-or-not file mapping whose file name starts with
// name_prefix ("libtorch_cpu", "libstdc++"). nullopt when none is mapped or
// the maps file cannot be read.
std::optional<MappedLibrary> find_mapped_library(int pid, std::string_view name_prefix);

// [lo, hi): from the lowest start to the highest end of the target's
// mappings of the file at path_in_target (as /proc/PID/maps shows it);
// nullopt when none.
std::optional<std::pair<uint64_t, uint64_t>> mapped_address_range(int pid, std::string_view path_in_target);

// The address in the target of a symbol (data or code) of the mapped library
// whose file name starts with name_prefix: the library's load address (its
// mapping at file offset 0) plus the symbol's value. nullopt when the library
// is not mapped or lacks the symbol.
std::optional<uint64_t> find_symbol_in_target(int pid, std::string_view name_prefix,
                                              std::string_view symbol);

}  // namespace gpuprof
