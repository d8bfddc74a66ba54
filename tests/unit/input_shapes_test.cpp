// Tests of format_input_shapes(): Python's str() of torch's input_shapes.
#include "analyze/input_shapes.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

namespace gpuprof {
namespace {

ArgShape sizes(std::vector<int64_t> s) { return ArgShape(std::move(s)); }
const ArgShape kNotATensor = sizes({});
const ArgShape kUnknown = std::nullopt;

TEST(InputShapes, Conv2dAsTorchPrintsIt) {
  EXPECT_EQ(format_input_shapes({sizes({5, 3, 224, 224}), sizes({64, 3, 7, 7}), kNotATensor, kNotATensor,
                                 kNotATensor, kNotATensor, kNotATensor}),
            "[[5, 3, 224, 224], [64, 3, 7, 7], [], [], [], [], []]");
}

TEST(InputShapes, NoArgumentsIsAnEmptyList) { EXPECT_EQ(format_input_shapes({}), "[]"); }

TEST(InputShapes, OneArgument) {
  EXPECT_EQ(format_input_shapes({sizes({7})}), "[[7]]");
  EXPECT_EQ(format_input_shapes({kNotATensor}), "[[]]");
}

TEST(InputShapes, SizesOfZeroAndOne) {
  EXPECT_EQ(format_input_shapes({sizes({0, 3}), sizes({1, 1, 1})}), "[[0, 3], [1, 1, 1]]");
}

TEST(InputShapes, NegativeAndLargeNumbersInFull) {
  EXPECT_EQ(format_input_shapes({sizes({-1, 4}), sizes({std::numeric_limits<int64_t>::max()}),
                                 sizes({std::numeric_limits<int64_t>::min()}), sizes({4294967296})}),
            "[[-1, 4], [9223372036854775807], [-9223372036854775808], [4294967296]]");
}

TEST(InputShapes, UnknownArgumentsPrintAsQuestionMarks) {
  EXPECT_EQ(format_input_shapes({sizes({2, 2}), kUnknown, kNotATensor}), "[[2, 2], ?, []]");
  EXPECT_EQ(format_input_shapes({kUnknown}), "[?]");
  EXPECT_EQ(format_input_shapes({kUnknown, kUnknown}), "[?, ?]");
  EXPECT_STREQ(kUnknownShapes, "?");
}

TEST(InputShapes, TwelveDimensions) {
  EXPECT_EQ(format_input_shapes({sizes({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})}),
            "[[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]]");
}

}  // namespace
}  // namespace gpuprof
