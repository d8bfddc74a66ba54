// launch_driver.cpp: CUDA kernel launches from inside traced ops (and one
// from outside any op), through the real libcudart, with known counts.
//
// Usage: launch_driver STEPS [READY_FILE GO_FILE]. Per step: cuda_linear(3)
// (3 scale_kernel<float> launches inside its cuda_add, 1 reduce_kernel of
// its own), cuda_replay(0xabc) (1 graph launch), and 1 scale_kernel<float>
// launch from main, outside every op. With READY_FILE it writes its pid
// there and waits for GO_FILE before the steps (for record -p). Prints what
// must not change when gpuprof is attached.
//
// With CUDA_INJECTION64_PATH set (gpuprof record -- CMD sets it to its CUPTI
// shim) and GPUPROF_CUPTI_LIBRARY=the stand-in libcupti (tests/fake_cupti),
// it first plays the CUDA driver at cuInit: loads the stand-in libcupti
// (for the ops' hooks), then the injection library, and calls its
// InitializeInjection; the ops then get CUPTI's correlation ids
// and kernel records (fake_cuda_launch.cpp), delivered after every step.
//
// With LAUNCH_DRIVER_CUPTI_WITHOUT_SHIM=1 and GPUPROF_CUPTI_LIBRARY but no
// CUDA_INJECTION64_PATH, it loads the stand-in libcupti alone (as torch
// links libcupti) and delivers its records after every step: a job that
// record -p --inject-cupti gives the shim while it runs.
//
// With LAUNCH_DRIVER_HOLD_RECORDS=DIR the steps' records stay queued; it
// writes DIR/done after the steps and waits for DIR/exit (gpuprof stops
// meanwhile: it must still get them, TargetGpu::drain_activities).
//
// With LAUNCH_DRIVER_LIBCUDA=PATH (the toolkit's stub libcuda) it loads that
// library first, and each step also runs cuda_driver_launch(2): 2
// cuLaunchKernel and 1 cuLaunchKernelEx, as Triton launches. The runtime
// launches then fail with cudaErrorStubLibrary instead (libcudart finds the
// stub), as harmlessly.
//
// With LAUNCH_DRIVER_WARMUP=N it runs N steps before writing READY_FILE and
// keeps their CUPTI records queued (as CUDA keeps a buffer until it fills or
// is flushed): they reach the shim with the first step after GO_FILE.
//
// With LAUNCH_DRIVER_SECOND_LIBCUDART=PATH (a copy of libcudart under
// another name, as torchvision ships its own) it loads that copy too, and
// each step makes 2 more scale_kernel<float> launches from main through
// the copy's cudaLaunchKernel.
//
// With LAUNCH_DRIVER_JOB_PROFILER=PATH (tests/fake_cupti's libjob_profiler.so:
// torch.profiler's Kineto, as it calls CUPTI) it loads that library first,
// as torch is loaded before CUDA starts, and with LAUNCH_DRIVER_JOB_PROFILE=K
// the job profiles its own steps from step K to the last (its first profile:
// Kineto asks CUPTI for its subscription then). It prints how many records
// its profile got. With LAUNCH_DRIVER_EXIT_FILE=PATH it then waits for PATH
// before it exits (a job running on after its profile started).
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "fake_ops.h"

namespace gpuprof_test {
template <typename T>
void scale_kernel(T* data, T factor, int n);
}

// The shim as the driver loads it; the stand-in's deliver hook, or nullptr.
void (*inject_cupti())() {
  const char* shim = std::getenv("CUDA_INJECTION64_PATH");
  const char* cupti = std::getenv("GPUPROF_CUPTI_LIBRARY");
  const bool cupti_without_shim = std::getenv("LAUNCH_DRIVER_CUPTI_WITHOUT_SHIM") != nullptr;
  if (!cupti || (!shim && !cupti_without_shim)) return nullptr;
  // RTLD_GLOBAL: the ops find the stand-in's hooks with dlsym(RTLD_DEFAULT).
  void* fake = dlopen(cupti, RTLD_NOW | RTLD_GLOBAL);
  if (!shim) {  // a job started without the shim, which gpuprof may load later (--inject-cupti)
    std::printf("libcupti %s\n", fake ? "loaded" : "FAILED");
    return fake ? reinterpret_cast<void (*)()>(dlsym(fake, "fake_cupti_deliver")) : nullptr;
  }
  void* injected = dlopen(shim, RTLD_NOW | RTLD_LOCAL);
  auto initialize = injected ? reinterpret_cast<int (*)()>(dlsym(injected, "InitializeInjection")) : nullptr;
  std::printf("injection %s\n", fake && initialize && initialize() == 1 ? "ok" : "FAILED");
  return fake ? reinterpret_cast<void (*)()>(dlsym(fake, "fake_cupti_deliver")) : nullptr;
}

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 10;
  const char* libcuda = std::getenv("LAUNCH_DRIVER_LIBCUDA");
  // RTLD_GLOBAL: the op finds cuLaunchKernel with dlsym(RTLD_DEFAULT).
  if (libcuda && !dlopen(libcuda, RTLD_NOW | RTLD_GLOBAL)) {
    std::printf("cannot load %s: %s\n", libcuda, dlerror());
    return 1;
  }
  using JobProfilerCall = void (*)();
  JobProfilerCall job_profile_start = nullptr, job_profile_stop = nullptr;
  uint64_t (*job_profile_records)() = nullptr;
  int (*job_profile_cpu_only)() = nullptr;
  if (const char* path = std::getenv("LAUNCH_DRIVER_JOB_PROFILER")) {
    void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      std::printf("cannot load %s: %s\n", path, dlerror());
      return 1;
    }
    job_profile_start = reinterpret_cast<JobProfilerCall>(dlsym(lib, "job_profiler_start"));
    job_profile_stop = reinterpret_cast<JobProfilerCall>(dlsym(lib, "job_profiler_stop"));
    job_profile_records = reinterpret_cast<uint64_t (*)()>(dlsym(lib, "job_profiler_records"));
    job_profile_cpu_only = reinterpret_cast<int (*)()>(dlsym(lib, "job_profiler_cpu_only"));
  }
  const char* job_profile_from = std::getenv("LAUNCH_DRIVER_JOB_PROFILE");
  const int first_profiled_step = job_profile_from && job_profile_start ? std::atoi(job_profile_from) : -1;
  void (*deliver)() = inject_cupti();
  auto cupti_launch = reinterpret_cast<uint64_t (*)(uint32_t, uint32_t, const char*, uint64_t, uint32_t, uint32_t)>(
      dlsym(RTLD_DEFAULT, "fake_cupti_launch"));
  using LaunchKernel = cudaError_t (*)(const void*, dim3, dim3, void**, size_t, cudaStream_t);
  LaunchKernel second_launch = nullptr;
  if (const char* copy = std::getenv("LAUNCH_DRIVER_SECOND_LIBCUDART")) {
    void* lib = dlopen(copy, RTLD_NOW | RTLD_LOCAL);
    second_launch = lib ? reinterpret_cast<LaunchKernel>(dlsym(lib, "cudaLaunchKernel")) : nullptr;
    if (!second_launch) {
      std::printf("cannot load cudaLaunchKernel from %s: %s\n", copy, dlerror());
      return 1;
    }
  }
  long launched = 0;
  auto step = [&](bool deliver_records) {
    launched += at::_ops::cuda_linear::call(3);
    launched += at::_ops::cuda_replay::call(0xabc);
    if (libcuda) launched += at::_ops::cuda_driver_launch::call(2);
    float* data = nullptr;
    float factor = 1.0f;
    int n = 1;
    void* args[] = {&data, &factor, &n};
    cudaError_t status = cudaLaunchKernel(reinterpret_cast<const void*>(&gpuprof_test::scale_kernel<float>),
                                          dim3(1, 1, 1), dim3(32, 1, 1), args, 0, nullptr);
    if (cupti_launch)  // CUPTI inside that launch: runtime domain, cudaLaunchKernel
      cupti_launch(2, 211, "_ZN12gpuprof_test12scale_kernelIfEEvPT_S1_i", 700, 0, 0);
    launched += 1;
    if (status != cudaErrorInsufficientDriver && status != cudaErrorStubLibrary && status != cudaSuccess)
      std::printf("unexpected %d\n", status);
    for (int i = 0; second_launch && i < 2; i++) {
      status = second_launch(reinterpret_cast<const void*>(&gpuprof_test::scale_kernel<float>), dim3(2, 1, 1),
                             dim3(64, 1, 1), args, 0, nullptr);
      launched += 1;
      if (status != cudaErrorInsufficientDriver && status != cudaErrorStubLibrary && status != cudaSuccess)
        std::printf("unexpected %d from the second libcudart\n", status);
    }
    if (deliver && deliver_records) deliver();
  };
  const char* warmup = std::getenv("LAUNCH_DRIVER_WARMUP");
  for (int i = 0; warmup && i < std::atoi(warmup); i++) step(false);
  if (argc > 3) {
    // Written whole, then renamed into place: the test never reads it half written.
    const std::string ready = argv[2], partial = ready + ".partial";
    std::ofstream(partial) << getpid() << "\n";
    std::rename(partial.c_str(), ready.c_str());
    while (access(argv[3], F_OK) != 0) usleep(10 * 1000);
  }
  launched = 0;  // the steps gpuprof records
  // LAUNCH_DRIVER_HOLD_RECORDS=DIR: the steps' records stay queued (as
  // CUDA holds them until its next flush); it writes DIR/done and runs on
  // until DIR/exit, so that gpuprof stops while the job still holds them.
  const char* hold = std::getenv("LAUNCH_DRIVER_HOLD_RECORDS");
  for (int i = 0; i < steps; ++i) {
    if (i == first_profiled_step) job_profile_start();
    step(!hold);
  }
  if (first_profiled_step >= 0) {
    job_profile_stop();
    std::printf("job profile: steps %d..%d, %llu records%s\n", first_profiled_step, steps - 1,
                static_cast<unsigned long long>(job_profile_records()),
                job_profile_cpu_only() ? " (CUPTI refused it: no CUDA activities)" : "");
    std::fflush(stdout);
  }
  if (const char* exit_file = std::getenv("LAUNCH_DRIVER_EXIT_FILE"))
    while (access(exit_file, F_OK) != 0) usleep(10 * 1000);
  if (hold) {
    const std::string dir = hold;
    std::ofstream(dir + "/done.partial") << getpid() << "\n";
    std::rename((dir + "/done.partial").c_str(), (dir + "/done").c_str());
    while (access((dir + "/exit").c_str(), F_OK) != 0) usleep(10 * 1000);
  }
  std::printf("steps %d launches %ld unexpected errors %d\n", steps, launched,
              at::_ops::cuda_launch_errors::call(0));
  return 0;
}
