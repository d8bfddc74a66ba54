// library_watch.h: loads bpf/library_watch.bpf.c for launch mode.
//
// While armed, the launched process is sent SIGSTOP (once) as it maps a
// libtorch_cpu file, so that the op probes can be attached before any of
// the library's code runs. The parent sees the stop through waitpid and
// must always answer it with SIGCONT.
#pragma once

#include <memory>
#include <string>

struct library_watch_bpf;

namespace gpuprof {

class LibraryWatch {
 public:
  static std::unique_ptr<LibraryWatch> load(int tgid, std::string* error);
  ~LibraryWatch();

  void arm();
  // True once the BPF side has sent its SIGSTOP; reading it clears it.
  bool take_stop_sent();

 private:
  LibraryWatch() = default;
  library_watch_bpf* skel_ = nullptr;
};

}  // namespace gpuprof
