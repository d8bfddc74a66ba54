// result_values.h: a Result's value as a std::optional, for tests that
// compare it with the answer they expect (EXPECT_EQ(value_of(parse(...)), X)):
// an error compares unequal to any value and prints as nullopt.
#pragma once

#include <optional>

#include "base/result.h"

namespace gpuprof::test {

template <typename T>
std::optional<T> value_of(const Result<T>& result) {
  if (!result) return std::nullopt;
  return *result;
}

}  // namespace gpuprof::test
