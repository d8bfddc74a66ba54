// python_code.h: turn (code object, instruction pointer) pairs read from a
// CPython 3.11/3.12 target into torch.profiler's source-location form,
// "filename(line): name" (co_name, as torch's callstackStr prints it).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>

#include "python_runtime.h"

namespace gpuprof {

// Line of code unit `index` (instruction index, in 2-byte code units) by the
// PEP 626/657 location table of CPython 3.11+ (Objects/locations.md), as
// PyCode_Addr2Line computes it: index < 0 -> firstlineno; an entry without
// location or an index past the table -> -1.
int python_line_for_index(std::span<const uint8_t> linetable, int firstlineno, int64_t index);

struct PythonCodeInfo {
  std::string filename, name, qualname;
  int firstlineno = 0;
  std::string linetable;  // raw co_linetable bytes
};

class PythonCodeResolver {
 public:
  PythonCodeResolver(int pid, const PythonOffsets& offsets);

  // The fields of the code object at code_addr (cached per address); nullopt
  // when the target's memory cannot be read or does not look like a code object.
  const PythonCodeInfo* code(uint64_t code_addr);

  // Source line of instr_addr (a frame's prev_instr) in the code object.
  std::optional<int> line(uint64_t code_addr, uint64_t instr_addr);

  // "filename(line): name", e.g. "/path/train.py(42): forward".
  std::optional<std::string> frame(uint64_t code_addr, uint64_t instr_addr);

  void clear_cache() { cache_.clear(); }

 private:
  std::optional<std::string> read_str(uint64_t addr);
  std::optional<std::string> read_bytes(uint64_t addr);

  int pid_;
  PythonOffsets off_;
  std::unordered_map<uint64_t, PythonCodeInfo> cache_;
};

}  // namespace gpuprof
