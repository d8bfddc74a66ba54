// library_load_trampoline.h: the code and stack frame that make a thread
// stopped at a system call's entry load a library, call one of its
// functions, and go back to that system call as if nothing had happened.
//
// The trampoline restores the thread by itself, with no help from gpuprof:
// once its registers point at it, gpuprof may die (SIGKILL) and the thread
// still loads the library and returns to where it was. It runs:
//
//   xsave  (x87, SSE, AVX... state: the thread may hold live values there)
//   handle = dlopen(path, RTLD_NOW); if (handle) fn = dlsym(handle, symbol);
//   if (fn) fn();
//   xrstor, every general register and the flags restored, the original
//   stack pointer, and a jump to the `syscall` instruction the thread
//   stopped at with its number in rax: the call is made then, unchanged.
//
// The thread was stopped at the system call's entry (ptrace), which is
// skipped now (orig_rax = -1) and made again at the end: no interrupted
// call, no restart. Its stack keeps its red zone (128 bytes below the
// stack pointer); the frame goes below it.
#pragma once

#include <sys/user.h>

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"

namespace gpuprof {

struct TrampolineRequest {
  user_regs_struct at_syscall_entry{};  // the thread's registers at the entry stop
  uint64_t dlopen_address = 0;
  uint64_t dlsym_address = 0;
  std::string library_path;  // as the target opens it
  std::string function;      // called with no argument once loaded
  uint64_t code_address = 0;  // where the code goes (a CodeCave)
  uint32_t xsave_bytes = 0;   // the XSAVE area's size (cpuid 0xd: xsave_area_bytes())
};

struct TrampolinePlan {
  std::vector<uint8_t> code;         // written at the request's code_address
  uint64_t frame_address = 0;        // where frame goes on the thread's stack
  std::vector<uint8_t> frame;        // data, saved registers, strings, zeroed XSAVE area
  user_regs_struct registers{};      // the thread's registers that run the code
};

// The XSAVE area's size for the features this CPU's OS enabled (cpuid leaf
// 0xd, sub-leaf 0, ebx): what xsave with every bit set writes.
uint32_t xsave_area_bytes();

// Refused when the thread is not at a system call's entry (orig_rax < 0).
// The caller checks that the two bytes before rip are `syscall` (0f 05).
Result<TrampolinePlan> plan_library_load(const TrampolineRequest& request);

// The code's size (the cave must hold it).
uint64_t trampoline_code_bytes();

}  // namespace gpuprof
