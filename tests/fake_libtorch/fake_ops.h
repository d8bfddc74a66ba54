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

// fake_cuda_memory.cpp: CUDA memory reports through the real libc10.
struct cuda_malloc {
  static long call(long bytes);  // reports +bytes on cuda:1; returns the block
};
struct cuda_free {
  static void call(long block, long bytes);  // reports -bytes on cuda:1
};
struct cuda_step {
  static long call(long step);  // 3 MiB + 1 MiB, frees the 1 MiB, reports 512 KiB itself
};


// fake_cuda_launch.cpp: kernel launches through the real libcudart.
struct cuda_add {
  static int call(int launches);  // launches scale_kernel<float> `launches` times
};
struct cuda_linear {
  static int call(int adds);  // cuda_add(adds), then one reduce_kernel (cudaLaunchKernelExC)
};
struct cuda_replay {
  static int call(int graph);  // one cudaGraphLaunch
};
struct cuda_launch_errors {
  static int call(int);  // launches that returned neither success nor "insufficient driver"
};
// Through the driver API, as Triton launches: `kernels` cuLaunchKernel and
// one cuLaunchKernelEx, when the process has loaded a libcuda (0 otherwise).
struct cuda_driver_launch {
  static int call(int kernels);
};

// fake_planted.cpp: known durations (compensation test), and the time the
// calls really spun (ns; more than planted when a spin lost its CPU).
extern long planted_parent_spun_ns;
extern long planted_child_spun_ns;
struct planted_child {
  static long call(long ns);  // spins ns of CLOCK_MONOTONIC time
};
struct planted_parent {
  static long call(long self_ns, long children, long child_ns);  // self_ns of its own, children x planted_child
};

}  // namespace at::_ops
