// library_load_trampoline.cpp: plan_library_load (library_load_trampoline.h).
#include "target/library_load_trampoline.h"

#include <cpuid.h>

#include <cstring>

namespace gpuprof {
namespace {

// The frame, from its start (rbx holds it while the code runs):
//   +0  dlopen   +8 dlsym   +16 library path   +24 function name
//   +32 the saved registers, in the order the code pops them, then the
//       original rsp; then the two strings.
// The XSAVE area (64-byte aligned; r12 holds it) lies below the frame, and
// the code's own calls use the stack below that.
constexpr uint64_t kSavedRegistersOffset = 32;
constexpr size_t kSavedSlots = 17;  // 15 registers, rflags, rsp
constexpr uint64_t kRedZoneBytes = 128;

// Assembled from (GNU as, Intel syntax):
//     mov eax, -1 ; mov edx, -1 ; xsave64 [r12]
//     mov rdi, [rbx+16] ; mov esi, 2 (RTLD_NOW) ; call [rbx]      dlopen
//     test rax, rax ; jz restore
//     mov rdi, rax ; mov rsi, [rbx+24] ; call [rbx+8]             dlsym
//     test rax, rax ; jz restore
//     call rax
//   restore:
//     mov eax, -1 ; mov edx, -1 ; xrstor64 [r12]
//     lea rsp, [rbx+32]
//     pop r15 r14 r13 r12 rbp rbx r11 r10 r9 r8 rax rcx rdx rsi rdi ; popfq
//     mov rsp, [rsp]
//     jmp [rip+0] ; .quad <the syscall instruction's address>
constexpr uint8_t kCode[] = {
    0xb8, 0xff, 0xff, 0xff, 0xff,        // mov eax, 0xffffffff
    0xba, 0xff, 0xff, 0xff, 0xff,        // mov edx, 0xffffffff
    0x49, 0x0f, 0xae, 0x24, 0x24,        // xsave64 [r12]
    0x48, 0x8b, 0x7b, 0x10,              // mov rdi, [rbx+0x10]
    0xbe, 0x02, 0x00, 0x00, 0x00,        // mov esi, 2
    0xff, 0x13,                          // call [rbx]
    0x48, 0x85, 0xc0,                    // test rax, rax
    0x74, 0x11,                          // je restore
    0x48, 0x89, 0xc7,                    // mov rdi, rax
    0x48, 0x8b, 0x73, 0x18,              // mov rsi, [rbx+0x18]
    0xff, 0x53, 0x08,                    // call [rbx+0x8]
    0x48, 0x85, 0xc0,                    // test rax, rax
    0x74, 0x02,                          // je restore
    0xff, 0xd0,                          // call rax
    0xb8, 0xff, 0xff, 0xff, 0xff,        // restore: mov eax, 0xffffffff
    0xba, 0xff, 0xff, 0xff, 0xff,        // mov edx, 0xffffffff
    0x49, 0x0f, 0xae, 0x2c, 0x24,        // xrstor64 [r12]
    0x48, 0x8d, 0x63, 0x20,              // lea rsp, [rbx+0x20]
    0x41, 0x5f, 0x41, 0x5e, 0x41, 0x5d,  // pop r15; pop r14; pop r13
    0x41, 0x5c, 0x5d, 0x5b,              // pop r12; pop rbp; pop rbx
    0x41, 0x5b, 0x41, 0x5a, 0x41, 0x59,  // pop r11; pop r10; pop r9
    0x41, 0x58, 0x58, 0x59, 0x5a,        // pop r8; pop rax; pop rcx; pop rdx
    0x5e, 0x5f, 0x9d,                    // pop rsi; pop rdi; popfq
    0x48, 0x8b, 0x24, 0x24,              // mov rsp, [rsp]
    0xff, 0x25, 0x00, 0x00, 0x00, 0x00,  // jmp [rip+0]
};
constexpr size_t kCodeBytes = sizeof(kCode) + 8;  // and the jump's target

void put64(std::vector<uint8_t>& bytes, size_t at, uint64_t value) { std::memcpy(bytes.data() + at, &value, 8); }

}  // namespace

uint32_t xsave_area_bytes() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid_count(0xd, 0, &eax, &ebx, &ecx, &edx)) return 0;
  return ebx;
}

uint64_t trampoline_code_bytes() { return kCodeBytes; }

Result<TrampolinePlan> plan_library_load(const TrampolineRequest& request) {
  const user_regs_struct& at = request.at_syscall_entry;
  if (static_cast<int64_t>(at.orig_rax) < 0)
    return Error("the thread is not stopped at a system call's entry");
  if (request.xsave_bytes == 0) return Error("this CPU has no XSAVE (cpuid leaf 0xd)");
  if (request.code_address % 16) return Error("the code's address is not 16-byte aligned");

  TrampolinePlan plan;
  plan.code.assign(kCode, kCode + sizeof(kCode));
  plan.code.resize(kCodeBytes);
  put64(plan.code, sizeof(kCode), at.rip - 2);  // the `syscall` (0f 05) the thread stopped after

  const size_t strings_at = kSavedRegistersOffset + kSavedSlots * 8;
  const size_t path_at = strings_at;
  const size_t function_at = path_at + request.library_path.size() + 1;
  const size_t frame_bytes = (function_at + request.function.size() + 1 + 15) & ~size_t{15};
  const uint64_t frame_address = (at.rsp - kRedZoneBytes - frame_bytes) & ~uint64_t{15};
  const uint64_t xsave_address = (frame_address - request.xsave_bytes) & ~uint64_t{63};

  // One block from the XSAVE area up to the frame's end: the area must be
  // zero (xrstor refuses a header with reserved bits set).
  plan.frame_address = xsave_address;
  const size_t base = frame_address - xsave_address;
  plan.frame.assign(base + frame_bytes, 0);
  put64(plan.frame, base + 0, request.dlopen_address);
  put64(plan.frame, base + 8, request.dlsym_address);
  put64(plan.frame, base + 16, frame_address + path_at);
  put64(plan.frame, base + 24, frame_address + function_at);
  // The order the code pops them: the registers at the entry stop, but rax
  // holds the call's number again (the entry stop shows -ENOSYS there).
  const uint64_t saved[kSavedSlots] = {at.r15, at.r14, at.r13, at.r12, at.rbp, at.rbx, at.r11, at.r10, at.r9,
                                       at.r8,  at.orig_rax, at.rcx, at.rdx, at.rsi, at.rdi, at.eflags, at.rsp};
  for (size_t i = 0; i < kSavedSlots; i++) put64(plan.frame, base + kSavedRegistersOffset + i * 8, saved[i]);
  std::memcpy(plan.frame.data() + base + path_at, request.library_path.c_str(), request.library_path.size() + 1);
  std::memcpy(plan.frame.data() + base + function_at, request.function.c_str(), request.function.size() + 1);

  plan.registers = at;
  plan.registers.rip = request.code_address;
  plan.registers.rsp = xsave_address;  // 64-byte aligned: calls see the ABI's 16
  plan.registers.rbx = frame_address;
  plan.registers.r12 = xsave_address;
  plan.registers.rax = 0;
  plan.registers.orig_rax = static_cast<unsigned long long>(-1);  // the entry's call is skipped, made at the end
  plan.registers.eflags &= ~((1ull << 8) | (1ull << 10));        // no trap flag, direction up (the ABI's)
  return plan;
}

}  // namespace gpuprof
