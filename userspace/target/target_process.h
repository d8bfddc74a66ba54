// target_process.h: what /proc says about the process being profiled.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "record/recording.h"
#include "symbols/target_maps.h"

namespace gpuprof {

// True if a process with this pid exists (a zombie counts as gone).
bool process_alive(int pid);

// pid, comm, cmdline and hostname; the libtorch fields are left empty.
ProcessInfo describe_process(int pid);

// The same for a command about to be exec'd as pid: comm as the kernel will
// set it (the executable's base name, at most 15 characters), the argv.
ProcessInfo describe_launched_command(int pid, const std::vector<std::string>& argv);

// The address in the target of a symbol (data or code) of the mapped library
// whose file name starts with name_prefix: the library's load address (its
// mapping at file offset 0) plus the symbol's value. nullopt when the library
// is not mapped or lacks the symbol.
std::optional<uint64_t> find_symbol_in_target(int pid, std::string_view name_prefix,
                                              std::string_view symbol);

// The same for a variable the library writes (in .data or .bss), found only
// once its writable segment is mapped: while the loader maps a library, the
// whole file is mapped read-only first, and the variable's address then
// holds whatever bytes of the file lie there.
std::optional<uint64_t> find_variable_in_target(int pid, std::string_view name_prefix, std::string_view symbol);

}  // namespace gpuprof
