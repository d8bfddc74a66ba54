// ret_finder_test.cpp: exits are found by decoding, not by byte search.
#include "ret_finder.h"

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
  EXPECT_TRUE(exits.first_is_push);
  EXPECT_TRUE(exits.decoded_whole_body);
  EXPECT_EQ(exits.ret_addresses, (std::vector<uint64_t>{0x100a, 0x100c}));
}

TEST(FindBodyExits, RetWithImmediateAndNoPush) {
  // sub rsp, 8; add rsp, 8; ret 0x10
  const std::vector<uint8_t> code = {0x48, 0x83, 0xec, 0x08, 0x48, 0x83, 0xc4, 0x08, 0xc2, 0x10, 0x00};
  BodyExits exits = find_body_exits(code, 0x2000);
  EXPECT_FALSE(exits.first_is_push);
  EXPECT_EQ(exits.ret_addresses, (std::vector<uint64_t>{0x2008}));
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
