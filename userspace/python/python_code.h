// python_code.h: turn (code object, instruction pointer) pairs read from a
// CPython 3.11 to 3.13 target into torch.profiler's source-location form,
// "filename(line): name" (co_name, as torch's callstackStr prints it).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>

#include "python/python_runtime.h"

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

  // The fields of the code object at code_addr (cached per address); nullptr
  // when the target's memory cannot be read or does not look like a code object.
  //
  // A code object can be freed and its address reused by another (module
  // bodies are dropped once imported; generated code comes and goes), so a
  // cached entry is checked again, once per epoch, against the code
  // object's identifying fields (name, file, line table pointers, first
  // line): one small read per distinct code object per epoch.
  const PythonCodeInfo* code(uint64_t code_addr);
  // Starts a new epoch: every cached entry is checked again on its next use.
  void next_epoch() { epoch_++; }

  // Source line of instr_addr (a frame's prev_instr) in the code object.
  std::optional<int> line(uint64_t code_addr, uint64_t instr_addr);

  // "filename(line): name", e.g. "/path/train.py(42): forward".
  std::optional<std::string> frame(uint64_t code_addr, uint64_t instr_addr);


 private:
  std::optional<std::string> read_str(uint64_t addr);
  std::optional<std::string> read_bytes(uint64_t addr);

  int pid_;
  PythonOffsets off_;
  struct Cached {
    PythonCodeInfo info;
    std::string identity;  // the identifying fields' bytes when read
    uint64_t checked_epoch = 0;
  };
  std::optional<std::string> read_identity(uint64_t code_addr);
  std::unordered_map<uint64_t, Cached> cache_;
  uint64_t epoch_ = 1;
};

}  // namespace gpuprof
