// The JSON text pieces of the trace writers (output/trace_json.h): exact
// microseconds and escaped strings, byte for byte.
#include "output/trace_json.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace gpuprof {
namespace {

std::string us(int64_t ns) {
  std::string out;
  append_us(out, ns);
  return out;
}

std::string escaped(std::string_view text) {
  std::string out = "<";  // appended to what is there
  append_json_string(out, text);
  return out;
}

TEST(TraceJson, MicrosecondsAreExactWithoutTrailingZeros) {
  EXPECT_EQ(us(0), "0");
  EXPECT_EQ(us(17'000), "17");
  EXPECT_EQ(us(12'345), "12.345");
  EXPECT_EQ(us(1), "0.001");
  EXPECT_EQ(us(10), "0.01");
  EXPECT_EQ(us(100), "0.1");
  EXPECT_EQ(us(1'010), "1.01");
  EXPECT_EQ(us(1'200), "1.2");
  EXPECT_EQ(us(-250), "-0.25");
  EXPECT_EQ(us(-7'000), "-7");
  EXPECT_EQ(us(INT64_MAX), "9223372036854775.807");
}

TEST(TraceJson, StringsEscapeWhatJsonNeedsAndKeepTheRest) {
  EXPECT_EQ(escaped(""), "<");
  EXPECT_EQ(escaped("aten::add"), "<aten::add");
  EXPECT_EQ(escaped("say \"hi\" \\ there"), "<say \\\"hi\\\" \\\\ there");
  EXPECT_EQ(escaped(std::string_view("a\0b", 3)), "<a\\u0000b");
  EXPECT_EQ(escaped("tab\there\nnl\x7f"), "<tab\\u0009here\\u000anl\\u007f");
  EXPECT_EQ(escaped("caf\xc3\xa9 \xe2\x86\x92 ok"), "<caf\xc3\xa9 \xe2\x86\x92 ok");  // valid UTF-8 kept
  EXPECT_EQ(escaped("bad \xc3 end"), "<bad \xEF\xBF\xBD end");                     // cut sequence
  EXPECT_EQ(escaped("\xff\xfe"), "<\xEF\xBF\xBD\xEF\xBF\xBD");                       // not UTF-8 at all
  EXPECT_EQ(escaped("end \xe2\x86"), "<end \xEF\xBF\xBD\xEF\xBF\xBD");               // cut at the end
}

}  // namespace
}  // namespace gpuprof
