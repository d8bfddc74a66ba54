// library_watch.h: loads bpf/library_watch.bpf.c for launch mode.
//
// While armed, the launched process is sent SIGSTOP (once) as it maps a file
// whose name starts with the armed prefix (libtorch_cpu, then libc10.so and
// libcudart), so that the probes can be attached before any of
// the library's code runs. The parent sees the stop through waitpid and
// must always answer it with SIGCONT.
#pragma once

#include <memory>
#include <string_view>

#include "base/result.h"
#include "probe/bpf_program.h"

struct library_watch_bpf;

namespace gpuprof {

class LibraryWatch {
 public:
  static Result<std::unique_ptr<LibraryWatch>> load(int tgid);
  ~LibraryWatch();

  // Prefixes longer than 15 bytes are cut ("libgpuprof_cupti" matches as
  // "libgpuprof_cupt").
  void arm(std::string_view file_name_prefix);
  // True once the BPF side has sent its SIGSTOP; reading it clears it.
  bool take_stop_sent();

 private:
  LibraryWatch();
  BpfProgram<library_watch_bpf> bpf_;
};

}  // namespace gpuprof
