// syscall_safe_point.cpp: hold_thread_at_blocking_syscall and friends
// (syscall_safe_point.h).
#include "target/syscall_safe_point.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <thread>
#include <vector>

#include "target/process_memory.h"

namespace gpuprof {
namespace {

using Clock = std::chrono::steady_clock;

// AUDIT_ARCH_X86_64 (linux/audit.h): EM_X86_64, 64-bit, little-endian.
constexpr uint32_t kAuditArchX86_64 = 0xc000003e;

std::vector<int> threads_of(int pid) {
  std::vector<int> tids;
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] >= '0' && e->d_name[0] <= '9') tids.push_back(std::atoi(e->d_name));
    closedir(d);
  }
  return tids;
}

std::string read_line_of(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

std::string comm_of(const std::string& pid) { return read_line_of("/proc/" + pid + "/comm"); }

// Why gpuprof may not ptrace pid (thread tid), as far as it can tell.
std::string ptrace_refusal(int pid, int tid = 0) {
  std::string why = "the kernel does not let gpuprof ptrace " +
                    (tid && tid != pid ? "thread " + std::to_string(tid) + " of " : std::string()) + "process " +
                    std::to_string(pid);
  const std::string tracer = process_status_field(tid ? tid : pid, "TracerPid");
  if (!tracer.empty() && tracer != "0")
    return why + ": it is traced by process " + tracer + " (" + comm_of(tracer) +
           "), and a thread has one tracer at a time; detach that debugger or tracer first";
  const std::string scope = read_line_of("/proc/sys/kernel/yama/ptrace_scope");
  if (scope == "3")
    return why + ": Yama's kernel.yama.ptrace_scope is 3, which forbids ptrace to everyone until reboot";
  if (scope == "2")
    return why + ": Yama's kernel.yama.ptrace_scope is 2, which allows ptrace only with CAP_SYS_PTRACE "
                 "(run gpuprof as root)";
  return why + ": tracing another user's process needs CAP_SYS_PTRACE (run gpuprof as root), and a process "
               "that made itself undumpable (prctl PR_SET_DUMPABLE 0) needs it too";
}

enum class Tracee { kRunning, kStopped, kGone };

struct TraceeState {
  Tracee state = Tracee::kRunning;
  int pending_signal = 0;  // a signal-delivery stop's signal, handed back at detach
};

class SafePointSearch {
 public:
  explicit SafePointSearch(int pid) : pid_(pid) {}
  ~SafePointSearch() { let_go_all(-1); }

  Result<void> seize_all() {
    for (int tid : threads_of(pid_)) {
      if (ptrace(PTRACE_SEIZE, tid, nullptr, reinterpret_cast<void*>(PTRACE_O_TRACESYSGOOD)) != 0) {
        if (errno == ESRCH) continue;  // exited meanwhile
        const int err = errno;
        let_go_all(-1);
        if (err == EPERM) return Error(ptrace_refusal(pid_, tid));
        return Error("ptrace could not attach to thread " + std::to_string(tid) + ": " + std::strerror(err));
      }
      tracees_[tid] = {};
      if (ptrace(PTRACE_INTERRUPT, tid, nullptr, nullptr) != 0 && errno != ESRCH)
        return Error(std::string("PTRACE_INTERRUPT failed: ") + std::strerror(errno));
    }
    if (tracees_.empty()) return Error("process " + std::to_string(pid_) + " has no thread left");
    return {};
  }

  Result<HeldThread> wait_for_safe_point(std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    while (Clock::now() < deadline) {
      bool any = false;
      for (auto& [tid, tracee] : tracees_) {
        if (tracee.state == Tracee::kGone) continue;
        any = true;
        int status = 0;
        const pid_t got = waitpid(tid, &status, __WALL | WNOHANG);
        if (got == 0) continue;
        if (got < 0 || WIFEXITED(status) || WIFSIGNALED(status)) {
          tracee.state = Tracee::kGone;
          continue;
        }
        tracee.state = Tracee::kStopped;
        const int sig = WSTOPSIG(status);
        const int event = status >> 16;
        if (event == PTRACE_EVENT_STOP) {
          if (sig != SIGTRAP)  // a group stop: SIGSTOP or SIGTSTP reached the process
            return Error("process " + std::to_string(pid_) + " was stopped (signal " + std::to_string(sig) +
                         ") while gpuprof looked for a thread to use; try again once it runs");
          RETURN_IF_ERROR(resume(tid, tracee, 0));
        } else if (sig == (SIGTRAP | 0x80)) {
          if (auto held = held_if_safe(tid)) {
            const int held_tid = tid;
            tracees_.erase(held_tid);
            let_go_all(held_tid);
            return *held;
          }
          RETURN_IF_ERROR(resume(tid, tracee, 0));
        } else {
          RETURN_IF_ERROR(resume(tid, tracee, sig));  // the process's own signal, delivered
        }
      }
      if (!any) return Error("process " + std::to_string(pid_) + " exited");
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    return Error("no thread of process " + std::to_string(pid_) + " entered a blocking system call (read, poll, " +
                 "a futex wait, a sleep...) within " + std::to_string(timeout.count()) +
                 " ms: gpuprof loads libraries only from such a point, where the thread holds no lock the "
                 "loading needs");
  }

 private:
  Result<void> resume(int tid, TraceeState& tracee, int sig) {
    if (ptrace(PTRACE_SYSCALL, tid, nullptr, reinterpret_cast<void*>(static_cast<intptr_t>(sig))) != 0) {
      if (errno == ESRCH) {
        tracee.state = Tracee::kGone;
        return {};
      }
      return Error(std::string("PTRACE_SYSCALL failed: ") + std::strerror(errno));
    }
    tracee.state = Tracee::kRunning;
    return {};
  }

  // At a syscall stop: the thread, held, if this is the entry of a blocking
  // call made by a `syscall` instruction.
  std::optional<HeldThread> held_if_safe(int tid) {
    __ptrace_syscall_info info{};
    if (ptrace(PTRACE_GET_SYSCALL_INFO, tid, reinterpret_cast<void*>(sizeof(info)), &info) <= 0 ||
        info.op != PTRACE_SYSCALL_INFO_ENTRY || info.arch != kAuditArchX86_64)
      return std::nullopt;
    if (!is_blocking_syscall(info.entry.nr, info.entry.args[1])) return std::nullopt;
    HeldThread held{pid_, tid, info.entry.nr, {}};
    if (ptrace(PTRACE_GETREGS, tid, nullptr, &held.registers) != 0) return std::nullopt;
    uint8_t instruction[2] = {};
    if (!read_process_memory(pid_, held.registers.rip - 2, instruction) || instruction[0] != 0x0f ||
        instruction[1] != 0x05)
      return std::nullopt;
    return held;
  }

  // Lets every tracee but `keep` go, each from a stop: a running one is
  // interrupted first. A pending signal goes with it.
  void let_go_all(int keep) {
    const auto deadline = Clock::now() + std::chrono::seconds(2);
    for (auto& [tid, tracee] : tracees_) {
      if (tid == keep || tracee.state == Tracee::kGone) continue;
      if (tracee.state == Tracee::kRunning) {
        ptrace(PTRACE_INTERRUPT, tid, nullptr, nullptr);
        int status = 0;
        pid_t got = 0;
        while ((got = waitpid(tid, &status, __WALL | WNOHANG)) == 0 && Clock::now() < deadline)
          std::this_thread::sleep_for(std::chrono::microseconds(200));
        // Still running (a call that cannot be interrupted): the kernel lets
        // it go when gpuprof exits.
        if (got <= 0 || WIFEXITED(status) || WIFSIGNALED(status)) continue;
        const int sig = WSTOPSIG(status);
        const bool signal_stop = (status >> 16) == 0 && sig != (SIGTRAP | 0x80);
        tracee.pending_signal = signal_stop ? sig : 0;
      }
      ptrace(PTRACE_DETACH, tid, nullptr, reinterpret_cast<void*>(static_cast<intptr_t>(tracee.pending_signal)));
      tracee.state = Tracee::kGone;
    }
  }

  const int pid_;
  std::map<int, TraceeState> tracees_;
};

}  // namespace

bool is_blocking_syscall(uint64_t number, uint64_t futex_op) {
  switch (number) {
    case SYS_read: case SYS_pread64: case SYS_readv: case SYS_poll: case SYS_ppoll: case SYS_select:
    case SYS_pselect6: case SYS_epoll_wait: case SYS_epoll_pwait: case SYS_epoll_pwait2: case SYS_nanosleep:
    case SYS_clock_nanosleep: case SYS_pause: case SYS_accept: case SYS_accept4: case SYS_recvfrom:
    case SYS_recvmsg: case SYS_recvmmsg: case SYS_wait4: case SYS_waitid: case SYS_sched_yield:
      return true;
    case SYS_futex: {
      const uint64_t op = futex_op & FUTEX_CMD_MASK;
      return op == FUTEX_WAIT || op == FUTEX_WAIT_BITSET;
    }
    default:
      return false;
  }
}

std::string process_status_field(int pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.starts_with(field + ":")) {
      size_t at = field.size() + 1;
      while (at < line.size() && (line[at] == ' ' || line[at] == '\t')) at++;
      return line.substr(at);
    }
  return "";
}

std::string ptrace_obstacle(int pid) {
  const std::string state = process_status_field(pid, "State");
  if (state.empty()) return "process " + std::to_string(pid) + " does not exist";
  if (state[0] == 'Z' || state[0] == 'X') return "process " + std::to_string(pid) + " is exiting";
  const std::string tracer = process_status_field(pid, "TracerPid");
  if (!tracer.empty() && tracer != "0")
    return "process " + std::to_string(pid) + " is traced by process " + tracer + " (" + comm_of(tracer) +
           "), and a process has one tracer at a time; detach that debugger or tracer first";
  if (state[0] == 'T' || state[0] == 't')
    return "process " + std::to_string(pid) + " is stopped (" + state + "); continue it first (kill -CONT)";
  // Opening its memory asks the kernel the question ptrace's attach asks.
  const std::string mem = "/proc/" + std::to_string(pid) + "/mem";
  const int fd = open(mem.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == EACCES || errno == EPERM) return ptrace_refusal(pid);
    return "cannot open " + mem + ": " + std::strerror(errno);
  }
  close(fd);
  return "";
}

Result<HeldThread> hold_thread_at_blocking_syscall(int pid, std::chrono::milliseconds timeout) {
  if (std::string obstacle = ptrace_obstacle(pid); !obstacle.empty()) return Error(obstacle);
  SafePointSearch search(pid);
  RETURN_IF_ERROR(search.seize_all());
  return search.wait_for_safe_point(timeout);
}

Result<void> set_thread_registers(const HeldThread& thread, const user_regs_struct& registers) {
  if (ptrace(PTRACE_SETREGS, thread.tid, nullptr, &registers) != 0)
    return Error(std::string("PTRACE_SETREGS failed: ") + std::strerror(errno));
  return {};
}

Result<void> release_thread(const HeldThread& thread) {
  if (ptrace(PTRACE_DETACH, thread.tid, nullptr, nullptr) != 0)
    return Error(std::string("PTRACE_DETACH failed: ") + std::strerror(errno));
  return {};
}

}  // namespace gpuprof
