// result.h: gpuprof's one error type. A function that can fail returns
// Result<T>: the value, or an Error whose message says what went wrong and
// what to do (it reaches the user as written). Result<void> for functions
// that only succeed or fail.
//
// A small std::expected<T, Error> (C++23; the build is C++20): has_value(),
// operator bool, value(), * and ->, error(). Reading the value of an error
// (or the error of a value) is a bug: it aborts with the message.
//
// Propagation, as Perfetto's status_macros.h and bpftrace's util/result.h:
//   RETURN_IF_ERROR(ensure_tracefs());           // any Result: pass its error up
//   ASSIGN_OR_RETURN(auto link, attach(...));    // declare or assign the value
// Both work in a function returning any Result<U>, whatever the T.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

namespace gpuprof {

// Why something failed, in words for the user.
struct Error {
  explicit Error(std::string message) : message(std::move(message)) {}
  std::string message;
};

namespace result_detail {
[[noreturn]] inline void misuse(const char* what, const std::string& message) {
  std::fprintf(stderr, "gpuprof: internal error: %s%s\n", what, message.c_str());
  std::abort();
}
}  // namespace result_detail

template <typename T>
class [[nodiscard]] Result {
 public:
  static_assert(!std::is_reference_v<T>, "Result<T&> is not supported: return a pointer");
  using value_type = T;

  // A default-constructed Result holds a default-constructed T.
  Result() requires std::is_default_constructible_v<T> : state_(std::in_place_index<0>) {}
  Result(const T& value) : state_(std::in_place_index<0>, value) {}
  Result(T&& value) : state_(std::in_place_index<0>, std::move(value)) {}
  // Any value T can be made from (a unique_ptr<Derived>, a string literal).
  template <typename U>
    requires(std::is_constructible_v<T, U&&> && !std::is_same_v<std::remove_cvref_t<U>, T> &&
             !std::is_same_v<std::remove_cvref_t<U>, Error> &&
             !std::is_same_v<std::remove_cvref_t<U>, Result>)
  Result(U&& value) : state_(std::in_place_index<0>, std::forward<U>(value)) {}
  Result(Error error) : state_(std::in_place_index<1>, std::move(error)) {}

  bool has_value() const { return state_.index() == 0; }
  explicit operator bool() const { return has_value(); }

  T& value() & { return check(), std::get<0>(state_); }
  const T& value() const& { return check(), std::get<0>(state_); }
  T&& value() && { return check(), std::move(std::get<0>(state_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  // The value, or `fallback` on an error.
  template <typename U>
  T value_or(U&& fallback) const& {
    return has_value() ? std::get<0>(state_) : static_cast<T>(std::forward<U>(fallback));
  }

  // The message of an error.
  const std::string& error() const {
    if (has_value()) result_detail::misuse("error() of a Result that holds a value", "");
    return std::get<1>(state_).message;
  }
  // The error itself, to pass up as another Result's (RETURN_IF_ERROR).
  Error take_error() && {
    if (has_value()) result_detail::misuse("take_error() of a Result that holds a value", "");
    return std::move(std::get<1>(state_));
  }

 private:
  void check() const {
    if (!has_value()) result_detail::misuse("value() of a failed Result: ", std::get<1>(state_).message);
  }
  std::variant<T, Error> state_;
};

// Success or an error; `return {};` succeeds.
template <>
class [[nodiscard]] Result<void> {
 public:
  using value_type = void;
  Result() = default;
  Result(Error error) : error_(std::move(error)), failed_(true) {}

  bool has_value() const { return !failed_; }
  explicit operator bool() const { return has_value(); }
  void value() const {
    if (failed_) result_detail::misuse("value() of a failed Result: ", error_.message);
  }
  const std::string& error() const {
    if (!failed_) result_detail::misuse("error() of a Result that holds a value", "");
    return error_.message;
  }
  Error take_error() && {
    if (!failed_) result_detail::misuse("take_error() of a Result that holds a value", "");
    return std::move(error_);
  }

 private:
  Error error_{std::string()};
  bool failed_ = false;
};

}  // namespace gpuprof

#define GP_RESULT_CONCAT_INNER(a, b) a##b
#define GP_RESULT_CONCAT(a, b) GP_RESULT_CONCAT_INNER(a, b)

// Evaluates expr (a Result); on an error, returns it from the enclosing
// function (which returns some Result).
#define RETURN_IF_ERROR(expr)                                                  \
  do {                                                                         \
    auto gp_result_status_ = (expr);                                           \
    if (!gp_result_status_) return std::move(gp_result_status_).take_error(); \
  } while (0)

// Evaluates expr (a Result<T>); on an error, returns it from the enclosing
// function; else moves the value into lhs ("auto x", "x", "auto& [a, b]"
// is not supported: name one variable).
#define ASSIGN_OR_RETURN(lhs, expr) \
  GP_ASSIGN_OR_RETURN_IMPL(GP_RESULT_CONCAT(gp_result_, __LINE__), lhs, expr)
#define GP_ASSIGN_OR_RETURN_IMPL(result, lhs, expr)          \
  auto result = (expr);                                      \
  if (!result) return std::move(result).take_error();        \
  lhs = std::move(result).value()
