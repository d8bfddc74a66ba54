// varint_test.cpp: base/varint.h's reader against its writer, at the
// edges of 64 bits, and what it says of bytes that end early or say too
// much.
#include <gtest/gtest.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/varint.h"

namespace gpuprof {
namespace {

TEST(Varint, ReadsBackWhatWasAppended) {
  const std::vector<uint64_t> values = {0, 1, 127, 128, 300, UINT32_MAX, uint64_t{1} << 63, UINT64_MAX};
  std::string bytes;
  for (uint64_t v : values) append_varint(bytes, v);
  EXPECT_EQ(bytes.size(), 1 + 1 + 1 + 2 + 2 + 5 + 10 + 10u);
  size_t pos = 0;
  for (uint64_t v : values) {
    uint64_t read = 0;
    ASSERT_EQ(read_varint(std::span<const char>(bytes), pos, read), VarintRead::ok);
    EXPECT_EQ(read, v);
  }
  EXPECT_EQ(pos, bytes.size());
  for (int64_t v : {int64_t{0}, int64_t{-1}, int64_t{1}, INT64_MIN, INT64_MAX}) EXPECT_EQ(unzigzag(zigzag(v)), v);
  EXPECT_EQ(zigzag(-1), 1u);
}

TEST(Varint, SaysWhenTheBytesEndOrHoldMoreThan64Bits) {
  const std::vector<uint8_t> cut = {0x80, 0x80};
  size_t pos = 0;
  uint64_t v = 0;
  EXPECT_EQ(read_varint(std::span<const uint8_t>(cut), pos, v), VarintRead::truncated);
  EXPECT_EQ(pos, 2u);
  // Nine continuation bytes, then a tenth byte with more than the 64th bit.
  std::vector<uint8_t> wide(9, 0xff);
  wide.push_back(0x02);
  pos = 0;
  EXPECT_EQ(read_varint(std::span<const uint8_t>(wide), pos, v), VarintRead::overflow);
  wide.back() = 0x81;  // the 64th bit, and a continuation
  wide.push_back(0x00);
  pos = 0;
  EXPECT_EQ(read_varint(std::span<const uint8_t>(wide), pos, v), VarintRead::overflow);
}

}  // namespace
}  // namespace gpuprof
