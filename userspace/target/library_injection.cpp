// library_injection.cpp: inject_library (library_injection.h).
#include "target/library_injection.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstring>

#include "base/unique_fd.h"
#include "target/code_cave.h"
#include "target/library_load_trampoline.h"
#include "target/process_memory.h"
#include "target/syscall_safe_point.h"
#include "target/target_process.h"

namespace gpuprof {
namespace {

// The target's executable is x86-64 (the trampoline's instruction set).
bool runs_x86_64(int pid) {
  UniqueFd fd(open(("/proc/" + std::to_string(pid) + "/exe").c_str(), O_RDONLY | O_CLOEXEC));
  Elf64_Ehdr header{};
  return fd.get() >= 0 && pread(fd.get(), &header, sizeof(header), 0) == sizeof(header) &&
         std::memcmp(header.e_ident, ELFMAG, SELFMAG) == 0 && header.e_ident[EI_CLASS] == ELFCLASS64 &&
         header.e_machine == EM_X86_64;
}

// One injection into a process at a time, across gpuprofs: the lock lives
// as long as this object (a second gpuprof is refused, not queued).
Result<UniqueFd> lock_injection(int pid) {
  const std::string path = "/run/gpuprof-inject-" + std::to_string(pid) + ".lock";
  UniqueFd fd(open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (fd.get() < 0) return Error("cannot create " + path + ": " + std::strerror(errno));
  if (flock(fd.get(), LOCK_EX | LOCK_NB) != 0)
    return Error("another gpuprof is loading a library into process " + std::to_string(pid) + " now");
  return fd;
}

// The held thread's stack holds the frame: the mapping around rsp must
// reach down to it (a thread stack does not grow for /proc/PID/mem writes).
Result<void> check_stack_room(int pid, uint64_t rsp, uint64_t lowest) {
  auto maps = read_maps(pid);
  if (!maps) return Error("cannot read /proc/" + std::to_string(pid) + "/maps");
  for (const MapsEntry& entry : *maps)
    if (entry.start <= rsp && rsp < entry.end) {
      if (lowest >= entry.start && entry.perms.starts_with("rw")) return {};
      break;
    }
  return Error("the chosen thread's stack has no room for the loader's frame");
}

}  // namespace

std::string injection_obstacle(int pid) {
  if (std::string obstacle = ptrace_obstacle(pid); !obstacle.empty()) return obstacle;
  const std::string seccomp = process_status_field(pid, "Seccomp");
  if (seccomp == "2")
    return "process " + std::to_string(pid) + " runs under a seccomp filter: loading a library makes system "
           "calls (openat, mmap) the filter may forbid, and a filter may kill the process for one";
  if (seccomp == "1") return "process " + std::to_string(pid) + " runs in seccomp strict mode";
  if (!runs_x86_64(pid)) return "process " + std::to_string(pid) + " is not an x86-64 program";
  return "";
}

Result<void> inject_library(int pid, const LibraryInjection& request) {
  auto step = [&](std::string_view name) {
    if (request.at_step) request.at_step(name);
  };
  if (std::string obstacle = injection_obstacle(pid); !obstacle.empty()) return Error(obstacle);
  const auto dlopen_address = find_symbol_in_target(pid, "libc.so.6", "dlopen");
  const auto dlsym_address = find_symbol_in_target(pid, "libc.so.6", "dlsym");
  if (!dlopen_address || !dlsym_address)
    return Error("process " + std::to_string(pid) + "'s C library has no dlopen (gpuprof needs glibc 2.34 or "
                 "later, which has dlopen in libc.so.6)");
  const uint32_t xsave_bytes = xsave_area_bytes();
  if (xsave_bytes == 0) return Error("this CPU has no XSAVE");
  ASSIGN_OR_RETURN(UniqueFd lock, lock_injection(pid));
  ASSIGN_OR_RETURN(CodeCave cave, find_code_cave(pid, trampoline_code_bytes()));

  step("hold");
  ASSIGN_OR_RETURN(HeldThread held, hold_thread_at_blocking_syscall(pid, request.safe_point_timeout));
  // From here every failure lets the thread go as it was.
  auto let_go_unchanged = [&](Error error) -> Result<void> {
    (void)release_thread(held);
    return error;
  };
  TrampolineRequest trampoline{held.registers, *dlopen_address, *dlsym_address, request.library_path,
                               request.function, cave.address, xsave_bytes};
  auto plan = plan_library_load(trampoline);
  if (!plan) return let_go_unchanged(std::move(plan).take_error());
  if (auto room = check_stack_room(pid, held.registers.rsp, plan->frame_address); !room)
    return let_go_unchanged(std::move(room).take_error());

  step("write");
  // Neither write changes what the thread runs: the cave is padding no code
  // reaches, the frame lies below the stack pointer's red zone.
  if (auto written = write_process_memory(pid, cave.address, plan->code); !written)
    return let_go_unchanged(std::move(written).take_error());
  if (auto written = write_process_memory(pid, plan->frame_address, plan->frame); !written)
    return let_go_unchanged(std::move(written).take_error());

  step("registers");
  if (auto set = set_thread_registers(held, plan->registers); !set)
    return let_go_unchanged(std::move(set).take_error());
  // Held with the trampoline's registers: if gpuprof dies now, the kernel
  // lets the thread go and it runs the trampoline all the same.
  step("release");
  return release_thread(held);
}

}  // namespace gpuprof
