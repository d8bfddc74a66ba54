// fake_cuda_memory.cpp: dispatcher-shaped ops that report CUDA memory the way
// PyTorch's CUDA caching allocator does, without a GPU.
//
// The allocator calls c10::reportMemoryUsageToProfiler(ptr, delta,
// total_allocated, total_reserved, device) from libc10 on every block it
// hands out or takes back, profiler or not. These ops call the real one, in
// Debian's libc10, with a CUDA device, so gpuprof's probe on it is driven
// exactly as on a GPU machine; the totals are kept here as the allocator
// keeps them.
#include <cstdint>

#include "fake_ops.h"

namespace c10 {
// c10::Device's layout and calling convention: two int8 fields, trivially
// copyable, passed in one register (the mangled name is the real one's).
struct Device {
  int8_t type;
  int8_t index;
};
void reportMemoryUsageToProfiler(void* ptr, int64_t alloc_size, int64_t total_allocated,
                                 int64_t total_reserved, Device device);
}  // namespace c10

namespace {

constexpr int8_t kCpu = 0;
constexpr int8_t kCuda = 1;
int64_t g_allocated = 0;  // what the caching allocator's stats would say
uintptr_t g_next_block = 0x7f0000000000;

void report(uintptr_t block, int64_t delta, c10::Device device) {
  if (device.type == kCuda) g_allocated += delta;
  c10::reportMemoryUsageToProfiler(reinterpret_cast<void*>(block), delta, g_allocated,
                                   g_allocated + (64 << 20), device);
}

}  // namespace

namespace at::_ops {

__attribute__((noinline)) long cuda_malloc::call(long bytes) {
  volatile char guard[16] = {};
  uintptr_t block = g_next_block;
  g_next_block += static_cast<uintptr_t>(bytes);
  report(block, bytes, c10::Device{kCuda, 1});
  return static_cast<long>(block) + guard[0];
}

__attribute__((noinline)) void cuda_free::call(long block, long bytes) {
  volatile char guard[16] = {};
  report(static_cast<uintptr_t>(block + guard[0]), -bytes, c10::Device{kCuda, 1});
}

// One step: 3 MiB and 1 MiB blocks, the 1 MiB one released, 512 KiB
// reported by the step itself, and a CPU-device report that gpuprof must
// leave to its CPU allocator probes (it is not CUDA memory).
__attribute__((noinline)) long cuda_step::call(long step) {
  volatile char guard[16] = {};
  cuda_malloc::call(3 << 20);
  long small = cuda_malloc::call(1 << 20);
  cuda_free::call(small, 1 << 20);
  report(g_next_block, 512 << 10, c10::Device{kCuda, 1});
  g_next_block += 512 << 10;
  report(0x1000, 4096, c10::Device{kCpu, -1});
  return step + guard[0];
}

}  // namespace at::_ops
