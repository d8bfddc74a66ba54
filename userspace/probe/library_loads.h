// library_loads.h: processes mapping libtorch_cpu or libcudart, anywhere on
// the machine, as they map them (record -a, top -a;
// bpf/library_loads.bpf.c). The kernel filters by file name; userspace
// hears of each executable mapping of those libraries once.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "base/result.h"
#include "library_loads_abi.h"
#include "probe/bpf_program.h"

struct library_loads_bpf;

namespace gpuprof {

class LibraryLoads {
 public:
  // Loads and attaches the tracepoint program.
  static Result<std::unique_ptr<LibraryLoads>> load(std::function<void(const gp_library_load&)> on_load);
  ~LibraryLoads();

  int poll_fd() const { return bpf_.poll_fd(); }
  void consume() { bpf_.consume(); }
  uint64_t lost() const;  // loads the ring buffer had no room for

 private:
  LibraryLoads();
  BpfProgram<library_loads_bpf> bpf_;
};

}  // namespace gpuprof
