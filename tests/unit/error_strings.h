// error_strings.h: Result<T> (base/result.h) seen through one message
// string, for tests that keep one across several calls and compare it:
// gpuprof itself has no such out-parameter (docs/architecture.md).
#pragma once

#include <string>
#include <type_traits>
#include <utility>

#include "base/result.h"

namespace gpuprof {

// True, or false with *error set.
inline bool succeeded(Result<void> result, std::string* error) {
  if (result) return true;
  *error = result.error();
  return false;
}
// The value, or T{} (nullptr for the loaders' unique_ptrs) with *error set.
template <typename T>
  requires std::is_default_constructible_v<T>
T value_or_error(Result<T> result, std::string* error) {
  if (result) return std::move(result).value();
  *error = result.error();
  return T{};
}
// The Result itself, its error (if any) also in *error.
template <typename T>
Result<T> noting_error(Result<T> result, std::string* error) {
  if (!result) *error = result.error();
  return result;
}

}  // namespace gpuprof
