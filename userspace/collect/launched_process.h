// launched_process.h: the launched command as the attach machine sees it
// (launch_attach.h): waitpid, the library watch's stops, SIGCONT, its maps.
#pragma once

#include "collect/launch_attach.h"
#include "probe/library_watch.h"

namespace gpuprof {

class LaunchedProcess final : public LaunchedTarget {
 public:
  LaunchedProcess(int pid, LibraryWatch& watch) : pid_(pid), watch_(watch) {}
  int pid() const override { return pid_; }
  std::optional<ChildEvent> next_event() override;
  bool take_watch_stop() override { return watch_.take_stop_sent(); }
  void arm(std::string_view file_name_prefix) override { watch_.arm(file_name_prefix); }
  void resume() override;
  LibraryLookup find_library(std::string_view file_name_prefix) override {
    return find_mapped_library(pid_, file_name_prefix);
  }

 private:
  int pid_;
  LibraryWatch& watch_;
};

}  // namespace gpuprof
