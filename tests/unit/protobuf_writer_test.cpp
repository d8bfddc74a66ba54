// protobuf_writer_test.cpp: the wire format of output/protobuf_writer.h,
// against the encodings protobuf.dev's "Encoding" page spells out.
#include "output/protobuf_writer.h"

#include <gtest/gtest.h>

namespace gpuprof {
namespace {

std::string bytes(std::initializer_list<int> values) {
  std::string out;
  for (int v : values) out.push_back(static_cast<char>(v));
  return out;
}

TEST(ProtobufWriter, VarintFieldOf150) {
  ProtobufWriter w;
  w.varint(1, 150);  // the page's first example: 08 96 01
  EXPECT_EQ(w.data(), bytes({0x08, 0x96, 0x01}));
}

TEST(ProtobufWriter, ZeroIsLeftOutAsInProto3) {
  ProtobufWriter w;
  w.varint(1, 0);
  w.signed_varint(2, 0);
  EXPECT_EQ(w.data(), "");
}

TEST(ProtobufWriter, NegativeInt64TakesTenBytes) {
  ProtobufWriter w;
  w.signed_varint(1, -2);  // two's complement: ten bytes, the last 0x01
  EXPECT_EQ(w.data(), bytes({0x08, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}));
}

TEST(ProtobufWriter, StringAndEmbeddedMessage) {
  ProtobufWriter inner;
  inner.varint(1, 150);
  ProtobufWriter w;
  w.bytes(2, "testing");  // 12 07 74 65 73 74 69 6e 67
  w.message(3, inner);    // 1a 03 08 96 01
  w.string_always(4, "");  // an empty string still written: 22 00
  EXPECT_EQ(w.data(), bytes({0x12, 0x07, 't', 'e', 's', 't', 'i', 'n', 'g', 0x1a, 0x03, 0x08, 0x96, 0x01, 0x22, 0x00}));
}

TEST(ProtobufWriter, PackedRepeated) {
  ProtobufWriter w;
  w.packed(4, std::vector<int64_t>{3, 270, 86942});  // 22 06 03 8e 02 9e a7 05
  w.packed(5, std::vector<uint64_t>{});             // nothing for an empty list
  EXPECT_EQ(w.data(), bytes({0x22, 0x06, 0x03, 0x8e, 0x02, 0x9e, 0xa7, 0x05}));
}

}  // namespace
}  // namespace gpuprof
