// Tests of Result<T> (base/result.h): values and errors, move-only values,
// Result<void>, and the propagation macros across Result types.
#include "base/result.h"
#include "error_strings.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace gpuprof {
namespace {

Result<int> parse_positive(int n) {
  if (n <= 0) return Error("not positive: " + std::to_string(n));
  return n;
}

Result<void> check_even(int n) {
  if (n % 2) return Error(std::to_string(n) + " is odd");
  return {};
}

// Propagation: each step's error is returned as this function's.
Result<std::string> describe(int n, std::vector<std::string>* steps) {
  ASSIGN_OR_RETURN(int positive, parse_positive(n));
  steps->push_back("parsed");
  RETURN_IF_ERROR(check_even(positive));
  steps->push_back("checked");
  return "even " + std::to_string(positive);
}

Result<void> describe_twice(int a, int b, std::string* out) {
  std::vector<std::string> steps;
  ASSIGN_OR_RETURN(*out, describe(a, &steps));
  ASSIGN_OR_RETURN(std::string second, describe(b, &steps));
  *out += ", " + second;
  return {};
}

TEST(Result, HoldsAValue) {
  Result<int> r = parse_positive(7);
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(static_cast<bool>(r));
  EXPECT_EQ(r.value(), 7);
  EXPECT_EQ(*r, 7);
  EXPECT_EQ(r.value_or(-1), 7);
}

TEST(Result, HoldsAnError) {
  Result<int> r = parse_positive(-3);
  ASSERT_FALSE(r.has_value());
  EXPECT_FALSE(static_cast<bool>(r));
  EXPECT_EQ(r.error(), "not positive: -3");
  EXPECT_EQ(r.value_or(-1), -1);
}

TEST(Result, StringValueIsNotAnError) {
  Result<std::string> value = std::string("fine");
  Result<std::string> error = Error("broken");
  ASSERT_TRUE(value.has_value());
  EXPECT_EQ(*value, "fine");
  EXPECT_EQ(value->size(), 4u);
  ASSERT_FALSE(error.has_value());
  EXPECT_EQ(error.error(), "broken");
}

struct Base {
  virtual ~Base() = default;
  virtual int id() const { return 1; }
};
struct Derived : Base {
  int id() const override { return 2; }
};

Result<std::unique_ptr<Base>> make(bool ok) {
  if (!ok) return Error("cannot make it");
  return std::make_unique<Derived>();  // converts, as std::expected does
}

TEST(Result, MoveOnlyValues) {
  Result<std::unique_ptr<Base>> r = make(true);
  ASSERT_TRUE(r);
  EXPECT_EQ((*r)->id(), 2);
  std::unique_ptr<Base> taken = std::move(r).value();
  ASSERT_NE(taken, nullptr);
  EXPECT_EQ(taken->id(), 2);
  EXPECT_EQ(make(false).error(), "cannot make it");
}

TEST(Result, VoidSucceedsOrFails) {
  EXPECT_TRUE(check_even(4).has_value());
  Result<void> odd = check_even(5);
  ASSERT_FALSE(odd.has_value());
  EXPECT_EQ(odd.error(), "5 is odd");
}

TEST(Result, PropagationStopsAtTheFirstError) {
  std::vector<std::string> steps;
  Result<std::string> ok = describe(6, &steps);
  ASSERT_TRUE(ok);
  EXPECT_EQ(*ok, "even 6");
  EXPECT_EQ(steps, (std::vector<std::string>{"parsed", "checked"}));

  steps.clear();
  Result<std::string> not_positive = describe(0, &steps);
  ASSERT_FALSE(not_positive);
  EXPECT_EQ(not_positive.error(), "not positive: 0");
  EXPECT_TRUE(steps.empty());

  steps.clear();
  Result<std::string> odd = describe(3, &steps);
  ASSERT_FALSE(odd);
  EXPECT_EQ(odd.error(), "3 is odd");
  EXPECT_EQ(steps, (std::vector<std::string>{"parsed"}));
}

TEST(Result, AssignOrReturnIntoAnExistingVariableAndIntoVoid) {
  std::string out;
  ASSERT_TRUE(describe_twice(2, 4, &out));
  EXPECT_EQ(out, "even 2, even 4");
  out.clear();
  Result<void> second_fails = describe_twice(2, 5, &out);
  ASSERT_FALSE(second_fails);
  EXPECT_EQ(second_fails.error(), "5 is odd");
  EXPECT_EQ(out, "even 2");  // the first value was assigned before the second failed
}

TEST(Result, BridgesToErrorOutParameters) {
  std::string error;
  EXPECT_TRUE(succeeded(check_even(2), &error));
  EXPECT_EQ(error, "");
  EXPECT_FALSE(succeeded(check_even(7), &error));
  EXPECT_EQ(error, "7 is odd");

  error.clear();
  std::unique_ptr<Base> made = value_or_error(make(true), &error);
  ASSERT_NE(made, nullptr);
  EXPECT_EQ(made->id(), 2);
  EXPECT_EQ(error, "");
  EXPECT_EQ(value_or_error(make(false), &error), nullptr);
  EXPECT_EQ(error, "cannot make it");

  error = "earlier";
  Result<int> kept = noting_error(parse_positive(3), &error);
  ASSERT_TRUE(kept);
  EXPECT_EQ(*kept, 3);
  EXPECT_EQ(error, "earlier");  // a value leaves the string alone
  Result<int> refused = noting_error(parse_positive(-3), &error);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error(), "not positive: -3");
  EXPECT_EQ(error, "not positive: -3");
}

TEST(ResultDeathTest, ReadingTheWrongSideAborts) {
  EXPECT_DEATH((void)parse_positive(-1).value(), "value\\(\\) of a failed Result: not positive: -1");
  EXPECT_DEATH((void)parse_positive(1).error(), "error\\(\\) of a Result that holds a value");
  EXPECT_DEATH(check_even(1).value(), "value\\(\\) of a failed Result: 1 is odd");
}

}  // namespace
}  // namespace gpuprof
