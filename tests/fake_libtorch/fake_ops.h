// fake_ops.h: the dispatcher-shaped entry points of the stand-in libtorch_cpu
// (fake_ops.cpp), as driver.cpp calls them.
#pragma once

namespace at::_ops {

struct thrower {
  static int call(int x);  // throws std::runtime_error for even x
};
struct catcher {
  static int call(int x);  // calls thrower, catches: -1 for even x
};
struct backtracer {
  static int call(int depth);  // backtrace() frame count from depth traced frames down
};
struct sleeper {
  static int call(int x);  // loops at a cancellation point until cancelled
};

}  // namespace at::_ops
