// library_loads.h: processes mapping libtorch_cpu or libcudart, anywhere on
// the machine, as they map them (record -a, top -a;
// bpf/library_loads.bpf.c). The kernel filters by file name; userspace
// hears of each executable mapping of those libraries once.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "library_loads_abi.h"
#include "probe/ring_reader.h"

struct library_loads_bpf;

namespace gpuprof {

class LibraryLoads {
 public:
  // Loads and attaches the tracepoint program; nullptr and *error if not.
  static std::unique_ptr<LibraryLoads> load(std::function<void(const gp_library_load&)> on_load,
                                            std::string* error);
  ~LibraryLoads();
  int poll_fd() const;
  void consume();
  // Loads the ring buffer had no room for.
  uint64_t lost() const;

 private:
  LibraryLoads() = default;
  library_loads_bpf* skel_ = nullptr;
  std::unique_ptr<RingReader> ring_;
};

}  // namespace gpuprof
