// thread_names.cpp: /proc/PID/task/TID/comm once per thread, and the names
// of exiting threads from bpf/thread_exits.bpf.c.
#include "probe/thread_names.h"

#include <algorithm>
#include <fstream>

#include "thread_exits_abi.h"
#include "thread_exits.skel.h"

namespace gpuprof {

ThreadNameCollector::ThreadNameCollector(int pid) : pid_(pid), exits_("the thread exit watcher") {}

ThreadNameCollector::~ThreadNameCollector() = default;

Result<void> ThreadNameCollector::watch_exits() {
  RETURN_IF_ERROR(exits_.open());
  exits_->rodata->target_tgid = static_cast<__u32>(pid_);
  RETURN_IF_ERROR(exits_.load());
  RETURN_IF_ERROR(exits_.attach());
  RETURN_IF_ERROR(exits_.read_ring<gp_thread_exit>(
      exits_->maps.exits,
      [this](const gp_thread_exit& exit) {
        gp_thread_exit e = exit;
        e.comm[sizeof e.comm - 1] = 0;
        // The name at exit is the thread's last (it may have renamed
        // itself after /proc was read).
        if (e.comm[0]) names_[e.tid] = e.comm;
      },
      "thread exit"));
  watching_exits_ = true;
  return {};
}

void ThreadNameCollector::poll() {
  if (watching_exits_) exits_.consume();
}

std::string ThreadNameCollector::read_name(uint32_t tid) const {
  std::ifstream comm("/proc/" + std::to_string(pid_) + "/task/" + std::to_string(tid) + "/comm");
  std::string name;
  std::getline(comm, name);
  if (name.empty()) {  // a thread of a followed child (--follow-forks): not in the target's task list
    std::ifstream other("/proc/" + std::to_string(tid) + "/comm");
    std::getline(other, name);
  }
  return name;
}

std::vector<ThreadName> ThreadNameCollector::names() const {
  std::vector<ThreadName> out;
  for (const auto& [tid, name] : names_)
    if (tid != 0 && !name.empty()) out.push_back({tid, name});
  std::sort(out.begin(), out.end(), [](const ThreadName& a, const ThreadName& b) { return a.tid < b.tid; });
  return out;
}

}  // namespace gpuprof
