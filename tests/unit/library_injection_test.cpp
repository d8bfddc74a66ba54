// The pure parts of loading a library into a running process
// (target/code_cave.h, target/library_load_trampoline.h,
// target/syscall_safe_point.h); tests/integration/test_inject.py runs them
// on real processes.
#include <sys/syscall.h>

#include <linux/futex.h>

#include <cstring>

#include <gtest/gtest.h>

#include "target/code_cave.h"
#include "target/library_load_trampoline.h"
#include "target/syscall_safe_point.h"

namespace gpuprof {
namespace {

uint64_t read64(const std::vector<uint8_t>& bytes, size_t at) {
  uint64_t value = 0;
  std::memcpy(&value, bytes.data() + at, 8);
  return value;
}

TEST(CodeCave, TheRestOfTheLastPageAfterTheExecutableSegment) {
  MapsEntry text{0x70000000, 0x70003000, 0x1000, "r-xp", 8, 1, 42, "/usr/lib/libc.so.6"};
  // The segment's file bytes end at 0x3a09: the cave starts 16-aligned after.
  auto caves = caves_of_mapping(text, {{0x1000, 0x3a09}});
  ASSERT_EQ(caves.size(), 1u);
  EXPECT_EQ(caves[0].address, 0x70002a10u);
  EXPECT_EQ(caves[0].size, 0x70003000u - 0x70002a10u);
  EXPECT_EQ(caves[0].library, "/usr/lib/libc.so.6");
  // A segment that fills its mapping to the page leaves nothing; one of
  // another mapping of the file is not this mapping's.
  EXPECT_TRUE(caves_of_mapping(text, {{0x1000, 0x4000}}).empty());
  EXPECT_TRUE(caves_of_mapping(text, {{0x5000, 0x5800}}).empty());
  EXPECT_TRUE(caves_of_mapping(text, {{0x0, 0x800}}).empty());
}

user_regs_struct registers_at_read_entry() {
  user_regs_struct r{};
  r.r15 = 15, r.r14 = 14, r.r13 = 13, r.r12 = 12, r.rbp = 0xbb, r.rbx = 0xb0, r.r11 = 0x246, r.r10 = 10;
  r.r9 = 9, r.r8 = 8, r.rax = static_cast<unsigned long long>(-ENOSYS), r.rcx = 0x401002, r.rdx = 4096;
  r.rsi = 0x5000, r.rdi = 3, r.orig_rax = SYS_read, r.rip = 0x401002, r.eflags = 0x246 | (1 << 10);
  r.rsp = 0x7ffd0000 + 8, r.fs_base = 0x7f0000001000;
  return r;
}

TEST(LibraryLoadTrampoline, FrameAndRegisters) {
  const user_regs_struct at = registers_at_read_entry();
  TrampolineRequest request{at, 0x7f00000a0000, 0x7f00000b0000, "/tmp/libx.so", "Init", 0x7f0000123450, 832};
  auto plan = plan_library_load(request);
  ASSERT_TRUE(plan) << plan.error();
  // The code ends with the address it jumps back to: the `syscall` itself.
  ASSERT_EQ(plan->code.size(), trampoline_code_bytes());
  EXPECT_EQ(read64(plan->code, plan->code.size() - 8), at.rip - 2);
  // Registers: the code, the XSAVE area (64-aligned) as rsp and r12, the
  // frame in rbx, the entry's call skipped, no direction or trap flag; the
  // rest (fs_base: the thread's TLS) unchanged.
  const user_regs_struct& run = plan->registers;
  EXPECT_EQ(run.rip, request.code_address);
  EXPECT_EQ(run.rsp % 64, 0u);
  EXPECT_EQ(run.rsp, plan->frame_address);
  EXPECT_EQ(run.r12, plan->frame_address);
  EXPECT_EQ(run.orig_rax, static_cast<unsigned long long>(-1));
  EXPECT_EQ(run.eflags, 0x246u);
  EXPECT_EQ(run.fs_base, at.fs_base);
  // The frame: the XSAVE area zeroed, then rbx's block, below the red zone.
  const uint64_t block = run.rbx;
  ASSERT_GE(block, plan->frame_address + request.xsave_bytes);
  const size_t base = block - plan->frame_address;
  for (size_t i = 0; i < request.xsave_bytes; i++) ASSERT_EQ(plan->frame[i], 0) << i;
  EXPECT_LE(plan->frame_address + plan->frame.size(), at.rsp - 128);
  EXPECT_EQ(read64(plan->frame, base + 0), request.dlopen_address);
  EXPECT_EQ(read64(plan->frame, base + 8), request.dlsym_address);
  const uint64_t path = read64(plan->frame, base + 16), function = read64(plan->frame, base + 24);
  EXPECT_STREQ(reinterpret_cast<const char*>(plan->frame.data() + (path - plan->frame_address)), "/tmp/libx.so");
  EXPECT_STREQ(reinterpret_cast<const char*>(plan->frame.data() + (function - plan->frame_address)), "Init");
  // The saved registers, in the order the code pops them: rax holds the
  // call's number again, rsp and the flags (direction flag too) as they were.
  const uint64_t saved[] = {at.r15, at.r14, at.r13, at.r12, at.rbp, at.rbx, at.r11, at.r10, at.r9,
                            at.r8,  SYS_read, at.rcx, at.rdx, at.rsi, at.rdi, at.eflags, at.rsp};
  for (size_t i = 0; i < std::size(saved); i++) EXPECT_EQ(read64(plan->frame, base + 32 + 8 * i), saved[i]) << i;
}

TEST(LibraryLoadTrampoline, RefusesAThreadNotAtASystemCall) {
  user_regs_struct at = registers_at_read_entry();
  at.orig_rax = static_cast<unsigned long long>(-1);
  auto plan = plan_library_load({at, 1, 2, "/x.so", "f", 0x1000, 832});
  ASSERT_FALSE(plan);
  EXPECT_EQ(plan.error(), "the thread is not stopped at a system call's entry");
  auto unaligned = plan_library_load({registers_at_read_entry(), 1, 2, "/x.so", "f", 0x1008, 832});
  ASSERT_FALSE(unaligned);
}

TEST(SyscallSafePoint, BlockingCallsOnly) {
  EXPECT_TRUE(is_blocking_syscall(SYS_read, 0));
  EXPECT_TRUE(is_blocking_syscall(SYS_clock_nanosleep, 0));
  EXPECT_TRUE(is_blocking_syscall(SYS_epoll_wait, 0));
  EXPECT_TRUE(is_blocking_syscall(SYS_futex, FUTEX_WAIT | FUTEX_PRIVATE_FLAG));
  EXPECT_TRUE(is_blocking_syscall(SYS_futex, FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG | FUTEX_CLOCK_REALTIME));
  // A wake comes out of an unlock; write and mmap may run under malloc's or
  // stdio's locks.
  EXPECT_FALSE(is_blocking_syscall(SYS_futex, FUTEX_WAKE | FUTEX_PRIVATE_FLAG));
  EXPECT_FALSE(is_blocking_syscall(SYS_write, 0));
  EXPECT_FALSE(is_blocking_syscall(SYS_mmap, 0));
  EXPECT_FALSE(is_blocking_syscall(SYS_ioctl, 0));
}

}  // namespace
}  // namespace gpuprof
