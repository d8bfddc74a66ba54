// memory_driver.cpp: runs the fake CUDA memory ops (fake_cuda_memory.cpp)
// STEPS times (argv[1], default 10) and prints the sum of their results,
// which must not change when gpuprof is attached.
#include <cstdio>
#include <cstdlib>

#include "fake_ops.h"

int main(int argc, char** argv) {
  long steps = argc > 1 ? std::atol(argv[1]) : 10;
  long sum = 0;
  for (long i = 0; i < steps; i++) sum += at::_ops::cuda_step::call(i);
  std::printf("cuda steps %ld sum %ld\n", steps, sum);
  return 0;
}
