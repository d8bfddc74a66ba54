// python_stacks.h: the CPython frames BPF read -> torch.profiler's stack
// entries.
//
// A frame becomes "path(line): name" with torch's short path
// (python_paths.h). In a CPU sample the line is the one running; in an op
// entry's stack it is the function's first line (co_firstlineno), as torch
// prints every function entered while it profiles: its Python tracer
// takes a frame's line when the function is called. (torch prints the
// frames already running when its profiling started, typically the
// script's <module> and the function holding the `with profile()`, at their
// line of that moment; gpuprof, which has no such moment, prints them at
// their first line too.) In an op entry's stack (record --with-stack) a module
// call becomes what torch's Python tracer prints in its place,
// "nn.Module: Conv2d_0": the class of the module and a per-class number
// given to each module instance in the order it is first seen. torch
// numbers the modules seen in its profiling window; gpuprof numbers those
// seen in the recording, so the two agree when both start before the
// model's first module call, as in a training loop profiled from a step
// boundary.
//
// The module call is the frame of nn.Module.__call__: _call_impl in torch
// 1.x, _wrapped_call_impl in 2.x (where _call_impl below it stays a plain
// frame, as in torch's output), found by code name in
// torch/nn/modules/module.py; its first local is the module (`self`).
//
// torch also lists the C function an op was called through
// ("<built-in method conv2d of type object at 0x...>") as its innermost
// entry; that is not a Python frame, and gpuprof does not list it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "python/python_code.h"
#include "python/python_paths.h"
#include "python/python_runtime.h"

namespace gpuprof {

class PythonStackNamer {
 public:
  PythonStackNamer(int pid, const PythonOffsets& offsets, PythonPathShortener paths);

  // Starts a new epoch: names derived from code objects are derived again
  // (PythonCodeResolver::code checks its cache once per epoch). Module
  // numbers stay.
  void next_epoch();

  // "torch/nn/modules/conv.py(454): _conv_forward"; "[unknown Python frame]"
  // when the code object cannot be read.
  std::string frame(uint64_t code, uint64_t instr);

  // "torch/nn/modules/conv.py(453): _conv_forward": the function's first line.
  std::string function_frame(uint64_t code);

  // An op entry's frames (GP_ENTRY_FRAME_WORDS words each: code, instr,
  // first local; innermost first), named as torch's with_stack lists them,
  // innermost first.
  std::vector<std::string> entry_stack(std::span<const uint64_t> words);

  // record --with-modules: entry_stack() also names each module call
  // inside another by its attribute in the outer module's _modules, asking
  // `child_name(outer module, inner module)` once per pair of instances.
  // The child's name ("conv1", "layers.0") and where it stands among the
  // parent's modules (0 first: named_modules()'s order).
  struct ModuleChild {
    std::string name;
    uint32_t position = 0;
  };
  using ModuleChildName = std::function<std::optional<ModuleChild>(uint64_t parent, uint64_t child)>;
  void name_module_children(ModuleChildName child_name) { child_name_ = std::move(child_name); }
  // A module frame's attribute name in its parent module frame's module.
  struct ModuleEdge {
    std::string parent_frame;  // "nn.Module: Sequential_0"
    std::string frame;         // "nn.Module: BasicBlock_0"
    std::string name;          // "0"
    uint32_t position = 0;     // its place among the parent's modules
  };
  // The edges named since the last call.
  std::vector<ModuleEdge> take_module_edges() { return std::exchange(module_edges_, {}); }

 private:
  enum class CodeRole { plain, call_impl, wrapped_call_impl };
  CodeRole role(uint64_t code);
  std::string module_entry(uint64_t module);
  std::optional<std::string> class_name(uint64_t object);
  std::optional<std::string> read_c_string(uint64_t address);

  int pid_;
  PythonOffsets off_;
  PythonCodeResolver code_;
  PythonPathShortener paths_;
  std::unordered_map<uint64_t, CodeRole> roles_;
  std::map<std::pair<uint64_t, uint64_t>, std::string> frames_;  // (code, instr) -> text
  std::unordered_map<uint64_t, std::string> functions_;           // code -> text at its first line
  std::unordered_map<uint64_t, std::string> modules_;            // instance -> "nn.Module: X_n"
  std::unordered_map<std::string, uint32_t> instances_of_class_;
  ModuleChildName child_name_;
  std::set<std::pair<uint64_t, uint64_t>> pairs_asked_;  // (parent, child) instances
  std::vector<ModuleEdge> module_edges_;
};

}  // namespace gpuprof
