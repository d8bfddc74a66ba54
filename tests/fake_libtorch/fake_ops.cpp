// fake_ops.cpp: a stand-in libtorch_cpu for exception-path tests.
//
// It exports dispatcher-shaped entry points (at::_ops::<op>::call) whose
// bodies do what real PyTorch rarely does on demand: throw inside one traced
// op and catch inside another, take a backtrace from deep inside traced
// frames, and sit at a cancellation point so a thread can be cancelled
// mid-op. Built with -fstack-protector-all so every body has the canary
// check the emulated exit mode probes, like Debian's libtorch.
#include <execinfo.h>
#include <pthread.h>
#include <unistd.h>

#include <stdexcept>

#include "fake_ops.h"

namespace at::_ops {

__attribute__((noinline)) int thrower::call(int x) {
  volatile char guard[16] = {};
  guard[0] = static_cast<char>(x);
  if (x % 2 == 0) throw std::runtime_error("even input " + std::to_string(x));
  return x * 3 + guard[0] - static_cast<char>(x);
}

// Throws inside thrower::call, caught here: both frames are traced.
__attribute__((noinline)) int catcher::call(int x) {
  volatile char guard[16] = {};
  try {
    return thrower::call(x) + guard[0];
  } catch (const std::runtime_error&) {
    return -1;
  }
}

// Returns the number of frames backtrace() sees from `depth` traced frames down.
__attribute__((noinline)) int backtracer::call(int depth) {
  volatile char guard[16] = {};
  if (depth > 0) return backtracer::call(depth - 1) + guard[0];
  void* frames[128];
  return backtrace(frames, 128);
}

// Loops at a cancellation point until the thread is cancelled.
__attribute__((noinline)) int sleeper::call(int x) {
  volatile char guard[16] = {};
  for (;;) {
    pthread_testcancel();
    usleep(1000);
    guard[0] = static_cast<char>(x);
  }
}

}  // namespace at::_ops
