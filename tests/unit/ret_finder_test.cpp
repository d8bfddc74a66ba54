// ret_finder_test.cpp: exits are found by decoding, not by byte search.
#include "symbols/ret_finder.h"

#include <gtest/gtest.h>

#include <vector>

namespace gpuprof {
namespace {

TEST(FindBodyExits, FindsEveryRetAndOnlyRets) {
  // push rbp; mov eax, 0xc3c3c3c3 (imm bytes look like ret); test edi,edi;
  // je +1; ret; pop rbp; ret
  const std::vector<uint8_t> code = {0x55, 0xb8, 0xc3, 0xc3, 0xc3, 0xc3, 0x85, 0xff,
                                     0x74, 0x01, 0xc3, 0x5d, 0xc3};
  BodyExits exits = find_body_exits(code, 0x1000);
  EXPECT_TRUE(exits.entry_emulated);
  EXPECT_EQ(exits.entry_address, 0x1000u);
  EXPECT_FALSE(exits.entry_after_endbr);
  EXPECT_TRUE(exits.decoded_whole_body);
  EXPECT_EQ(exits.ret_addresses, (std::vector<uint64_t>{0x100a, 0x100c}));
}

TEST(FindBodyExits, RetWithImmediateAndNoPush) {
  // sub rsp, 8; add rsp, 8; ret 0x10
  const std::vector<uint8_t> code = {0x48, 0x83, 0xec, 0x08, 0x48, 0x83, 0xc4, 0x08, 0xc2, 0x10, 0x00};
  BodyExits exits = find_body_exits(code, 0x2000);
  EXPECT_FALSE(exits.entry_emulated);
  EXPECT_EQ(exits.ret_addresses, (std::vector<uint64_t>{0x2008}));
}

// CET builds (-fcf-protection, torch 2.x): the kernel single-steps endbr64
// but emulates the push after it, which sees the same registers and stack.
TEST(FindBodyExits, EntryAfterEndbr64) {
  // endbr64; push r15; push rbp; pop rbp; pop r15; ret
  const std::vector<uint8_t> code = {0xf3, 0x0f, 0x1e, 0xfa, 0x41, 0x57, 0x55, 0x5d, 0x41, 0x5f, 0xc3};
  BodyExits exits = find_body_exits(code, 0x5000);
  EXPECT_TRUE(exits.entry_after_endbr);
  EXPECT_EQ(exits.entry_address, 0x5004u);
  EXPECT_TRUE(exits.entry_emulated);  // push r15 (REX.B push): emulated
  EXPECT_EQ(exits.ret_addresses, (std::vector<uint64_t>{0x500a}));
}

TEST(FindBodyExits, EntryAfterEndbr64NotEmulated) {
  // endbr64; sub rsp, 8; add rsp, 8; ret: the site moves, the count says single-stepped
  const std::vector<uint8_t> code = {0xf3, 0x0f, 0x1e, 0xfa, 0x48, 0x83, 0xec, 0x08, 0x48, 0x83, 0xc4, 0x08, 0xc3};
  BodyExits exits = find_body_exits(code, 0x6000);
  EXPECT_EQ(exits.entry_address, 0x6004u);
  EXPECT_FALSE(exits.entry_emulated);
}

TEST(FindBodyExits, EndbrKeptWhenTheBodyJumpsBackAfterIt) {
  // endbr64; push rbp; test edi,edi; je -> push (0x7004); pop rbp; ret
  const std::vector<uint8_t> code = {0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0x85, 0xff, 0x74, 0xfb, 0x5d, 0xc3};
  BodyExits exits = find_body_exits(code, 0x7000);
  EXPECT_FALSE(exits.entry_after_endbr);  // a probe on the push would fire once per loop turn
  EXPECT_EQ(exits.entry_address, 0x7000u);
  EXPECT_FALSE(exits.entry_emulated);
}

TEST(FindBodyExits, TailJumpBodyHasNoExit) {
  // push rbx; pop rbx; jmp rel32
  const std::vector<uint8_t> code = {0x53, 0x5b, 0xe9, 0x00, 0x00, 0x00, 0x00};
  BodyExits exits = find_body_exits(code, 0x3000);
  EXPECT_TRUE(exits.ret_addresses.empty());
  EXPECT_TRUE(exits.decoded_whole_body);
}

TEST(FindBodyExits, ReportsUndecodableBytes) {
  const std::vector<uint8_t> code = {0xc3, 0x06};  // ret, then push es (invalid in 64-bit mode)
  BodyExits exits = find_body_exits(code, 0x4000);
  EXPECT_EQ(exits.ret_addresses, (std::vector<uint64_t>{0x4000}));
  EXPECT_FALSE(exits.decoded_whole_body);
}

}  // namespace
}  // namespace gpuprof

namespace gpuprof {
namespace {

// mov 0x78(%rsp),%rax; sub %fs:0x28,%rax; jne +0x10 (to __stack_chk_fail)
const std::vector<uint8_t> kCanaryCheck = {0x48, 0x8b, 0x44, 0x24, 0x78,                    // 0
                                           0x64, 0x48, 0x2b, 0x04, 0x25, 0x28, 0, 0, 0,  // 5
                                           0x0f, 0x85, 0x10, 0, 0, 0};                   // 14: jne

std::vector<uint8_t> body(std::initializer_list<std::vector<uint8_t>> parts) {
  std::vector<uint8_t> out = {0x55};  // push %rbp at the entry
  for (const auto& part : parts) out.insert(out.end(), part.begin(), part.end());
  return out;
}

TEST(FindBodyExits, CanaryBranchWithRspFrame) {
  // The shape of at::_ops::relu::call in libtorch 1.13: add $0x88,%rsp;
  // mov %r12,%rax; pop %rbx; pop %rbp; pop %r12; ret.
  auto code = body({kCanaryCheck,
                    {0x48, 0x81, 0xc4, 0x88, 0, 0, 0, 0x4c, 0x89, 0xe0, 0x5b, 0x5d, 0x41, 0x5c, 0xc3}});
  BodyExits exits = find_body_exits(code, 0x1000);
  ASSERT_EQ(exits.ret_addresses.size(), 1u);
  ASSERT_EQ(exits.emulated_exits.size(), 1u);
  const EmulatedExit& exit = exits.emulated_exits[0];
  EXPECT_EQ(exit.address, 0x1000u + 1 + 14);
  EXPECT_EQ(exit.ret_address, exits.ret_addresses[0]);
  EXPECT_FALSE(exit.base_is_rbp);
  EXPECT_EQ(exit.entry_sp_offset, 0x88 + 3 * 8);  // frame + three pops; ret then pops the return address
}

TEST(FindBodyExits, CanaryBranchWithRbpFrame) {
  // lea -0x28(%rbp),%rsp; pop %rbx; pop %r12..%r15; pop %rbp; ret
  auto code = body({kCanaryCheck,
                    {0x48, 0x8d, 0x65, 0xd8, 0x5b, 0x41, 0x5c, 0x41, 0x5d, 0x41, 0x5e, 0x41, 0x5f, 0x5d, 0xc3}});
  BodyExits exits = find_body_exits(code, 0x1000);
  ASSERT_EQ(exits.emulated_exits.size(), 1u);
  EXPECT_TRUE(exits.emulated_exits[0].base_is_rbp);
  EXPECT_EQ(exits.emulated_exits[0].entry_sp_offset, -0x28 + 6 * 8);  // == rbp + 8: above the saved rbp
}

TEST(FindBodyExits, CanaryBranchWithLeave) {
  auto code = body({kCanaryCheck, {0xc9, 0xc3}});  // leave; ret
  BodyExits exits = find_body_exits(code, 0x1000);
  ASSERT_EQ(exits.emulated_exits.size(), 1u);
  EXPECT_TRUE(exits.emulated_exits[0].base_is_rbp);
  EXPECT_EQ(exits.emulated_exits[0].entry_sp_offset, 8);
}

TEST(FindBodyExits, NoEmulatedExitWithoutCanary) {
  // cmp $0,%rdi; jne +0; pop %rbp; ret: a jne, but not the protector's.
  auto code = body({{0x48, 0x83, 0xff, 0x00, 0x0f, 0x85, 0, 0, 0, 0, 0x5d, 0xc3}});
  BodyExits exits = find_body_exits(code, 0x1000);
  EXPECT_EQ(exits.ret_addresses.size(), 1u);
  EXPECT_TRUE(exits.emulated_exits.empty());
}

TEST(FindBodyExits, NoEmulatedExitWhenSomethingJumpsIntoTheEpilogue) {
  // jmp over the check straight to the pop: that path would skip the probe.
  std::vector<uint8_t> code = {0x55, 0xeb, 0x14};  // push %rbp; jmp +0x14 (to the pop below)
  code.insert(code.end(), kCanaryCheck.begin(), kCanaryCheck.end());
  code.insert(code.end(), {0x5d, 0xc3});
  BodyExits exits = find_body_exits(code, 0x1000);
  ASSERT_EQ(exits.ret_addresses.size(), 1u);
  EXPECT_TRUE(exits.emulated_exits.empty());
}

TEST(FindBodyExits, NoEmulatedExitWhenTheEpilogueMovesRspUnpredictably) {
  auto code = body({kCanaryCheck, {0x48, 0x89, 0xc4, 0xc3}});  // mov %rax,%rsp; ret
  BodyExits exits = find_body_exits(code, 0x1000);
  EXPECT_TRUE(exits.emulated_exits.empty());
}

}  // namespace
}  // namespace gpuprof
