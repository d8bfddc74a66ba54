// fake_cuda_launch.cpp: dispatcher-shaped ops that launch CUDA kernels the
// way PyTorch's CUDA kernels do, without a GPU.
//
// Each op calls the REAL libcudart (/usr/local/cuda/lib64, linked by the
// Makefile) with a host-side kernel function, as nvcc's <<<>>> and
// at::native's launchers do: cudaLaunchKernel, cudaLaunchKernelExC,
// cudaGraphLaunch. With no driver here every call returns
// cudaErrorInsufficientDriver (35) without running anything, but gpuprof's
// entry probes see exactly the launches a GPU machine would make. The
// "kernels" are host functions named like device kernels (their host stubs
// carry the kernel's mangled name under nvcc), so their symbols name them.
//
// When the process has also loaded the stand-in libcupti (tests/fake_cupti,
// launch_driver --cupti), each op then does what CUPTI would do inside its
// launch: fake_cupti_launch() publishes a correlation id through the
// subscriber (gpuprof's shim) and queues a kernel record of known duration,
// named as CUPTI names kernels: mangled (gpuprof demangles as torch does).
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstdint>

#include "fake_ops.h"

namespace gpuprof_test {

// Kernel stand-ins: never run (the launches fail), only named.
template <typename T>
__attribute__((noinline, used)) void scale_kernel(T* data, T factor, int n) {
  asm volatile("" ::"r"(data), "r"(n), "x"(factor));
}
template void scale_kernel<float>(float*, float, int);

__attribute__((noinline, used)) void reduce_kernel(const float* in, float* out, int n) {
  asm volatile("" ::"r"(in), "r"(out), "r"(n));
}

}  // namespace gpuprof_test

namespace {

// The stream handles are opaque to gpuprof: distinct values show up as given.
cudaStream_t stream(uintptr_t id) { return reinterpret_cast<cudaStream_t>(id); }

int g_errors = 0;  // launches that did not return cudaErrorInsufficientDriver

// CUPTI's callback ids (cupti_runtime_cbid.h) and domain of the launches.
constexpr uint32_t kRuntimeDomain = 2;
constexpr uint32_t kCbidLaunchKernel = 211, kCbidLaunchKernelExC = 430, kCbidGraphLaunch = 311;
constexpr uint32_t kCbidMemcpyAsync = 41, kCbidMemsetAsync = 51;
// The driver API's (cupti_driver_cbid.h), for cuda_driver_launch.
constexpr uint32_t kDriverDomain = 1;
constexpr uint32_t kCbidCuLaunchKernel = 307, kCbidCuLaunchKernelEx = 652;
// What CUPTI names the kernels of cuda_driver_launch's CUfunctions (names
// a Triton kernel has: not C++, not mangled).
constexpr const char* kDriverKernelName = "triton_poi_fused_add_0";
constexpr const char* kDriverKernelExName = "triton_red_fused_sum_1";
// CUpti_ActivityMemcpyKind HtoD; CUpti_ActivityMemoryKind pageable, device.
constexpr uint8_t kMemcpyHtoD = 1, kPageable = 1, kDevice = 3;

// CUPTI's names of the two kernels: their mangled symbols.
constexpr const char* kScaleKernelSymbol = "_ZN12gpuprof_test12scale_kernelIfEEvPT_S1_i";
constexpr const char* kReduceKernelSymbol = "_ZN12gpuprof_test13reduce_kernelEPKfPfi";

// The stand-in libcupti's hooks (tests/fake_cupti/fake_cupti_hooks.h), when loaded.
struct FakeCupti {
  uint64_t (*launch)(uint32_t, uint32_t, const char*, uint64_t, uint32_t, uint32_t) = nullptr;
  void (*graph_kernel)(uint64_t, const char*, uint64_t, uint32_t, uint32_t) = nullptr;
  void (*memcpy)(uint64_t, uint64_t, uint8_t, uint8_t, uint8_t, uint64_t, uint32_t, uint32_t) = nullptr;
  void (*memset)(uint64_t, uint64_t, uint8_t, uint64_t, uint32_t, uint32_t) = nullptr;
};

const FakeCupti& fake_cupti() {
  static const FakeCupti hooks = [] {
    FakeCupti h;
    h.launch = reinterpret_cast<decltype(h.launch)>(dlsym(RTLD_DEFAULT, "fake_cupti_launch"));
    h.graph_kernel = reinterpret_cast<decltype(h.graph_kernel)>(dlsym(RTLD_DEFAULT, "fake_cupti_graph_kernel"));
    h.memcpy = reinterpret_cast<decltype(h.memcpy)>(dlsym(RTLD_DEFAULT, "fake_cupti_memcpy"));
    h.memset = reinterpret_cast<decltype(h.memset)>(dlsym(RTLD_DEFAULT, "fake_cupti_memset"));
    return h;
  }();
  return hooks;
}

// What CUPTI does inside a launch call: a correlation id and a kernel record.
uint64_t cupti_sees(uint32_t cbid, const char* kernel, uint64_t duration_ns, uint32_t stream) {
  return fake_cupti().launch ? fake_cupti().launch(kRuntimeDomain, cbid, kernel, duration_ns, 0, stream) : 0;
}

// cudaErrorStubLibrary: libcudart found the toolkit's stub libcuda, which
// launch_driver --driver-api loads (see cuda_driver_launch).
void check(cudaError_t status) {
  if (status != cudaErrorInsufficientDriver && status != cudaErrorStubLibrary && status != cudaSuccess)
    g_errors++;
}

// The driver API's launch functions, from whatever libcuda the process has
// loaded (RTLD_GLOBAL): the toolkit's stub here, whose every function
// returns CUDA_ERROR_STUB_LIBRARY (34) without using its arguments.
struct DriverApi {
  using LaunchKernel = int (*)(void* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                               unsigned bz, unsigned smem, void* stream, void** params, void** extra);
  using LaunchKernelEx = int (*)(const CUlaunchConfig* config, void* f, void** params, void** extra);
  LaunchKernel launch_kernel = nullptr;
  LaunchKernelEx launch_kernel_ex = nullptr;
};

const DriverApi& driver_api() {
  static const DriverApi api = [] {
    DriverApi a;
    a.launch_kernel = reinterpret_cast<DriverApi::LaunchKernel>(dlsym(RTLD_DEFAULT, "cuLaunchKernel"));
    a.launch_kernel_ex = reinterpret_cast<DriverApi::LaunchKernelEx>(dlsym(RTLD_DEFAULT, "cuLaunchKernelEx"));
    return a;
  }();
  return api;
}

constexpr int kCudaErrorStubLibrary = 34;

}  // namespace

namespace at::_ops {

// `launches` launches of scale_kernel<float>, grid (launches, 2, 3),
// block (128, 1, 1), on stream 0x51.
__attribute__((noinline)) int cuda_add::call(int launches) {
  volatile char guard[16] = {};
  float* data = nullptr;
  float factor = 2.0f;
  int n = 1024;
  void* args[] = {&data, &factor, &n};
  for (int i = 0; i < launches; ++i) {
    check(cudaLaunchKernel(reinterpret_cast<const void*>(&gpuprof_test::scale_kernel<float>),
                           dim3(launches, 2, 3), dim3(128, 1, 1), args, 0, stream(0x51)));
    cupti_sees(kCbidLaunchKernel, kScaleKernelSymbol, 1000, 0x51);
  }
  return launches + guard[0];
}

// cuda_add(adds), then one reduce_kernel of its own through
// cudaLaunchKernelExC: grid (7, 1, 1), block (256, 2, 1), stream 0x52.
__attribute__((noinline)) int cuda_linear::call(int adds) {
  volatile char guard[16] = {};
  int launched = cuda_add::call(adds);
  const float* in = nullptr;
  float* out = nullptr;
  int n = 4096;
  void* args[] = {&in, &out, &n};
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(7, 1, 1);
  config.blockDim = dim3(256, 2, 1);
  config.stream = stream(0x52);
  check(cudaLaunchKernelExC(&config, reinterpret_cast<const void*>(&gpuprof_test::reduce_kernel), args));
  cupti_sees(kCbidLaunchKernelExC, kReduceKernelSymbol, 5000, 0x52);
  // A host-to-device copy of its own (cudaMemcpyAsync: no kernel, a memcpy record).
  if (uint64_t id = cupti_sees(kCbidMemcpyAsync, nullptr, 0, 0x52); id && fake_cupti().memcpy)
    fake_cupti().memcpy(id, 4096, kMemcpyHtoD, kPageable, kDevice, 1500, 0, 0x52);
  return launched + 1 + guard[0];
}

// One graph launch (a made-up cudaGraphExec_t: the call fails before using it).
__attribute__((noinline)) int cuda_replay::call(int graph) {
  volatile char guard[16] = {};
  check(cudaGraphLaunch(reinterpret_cast<cudaGraphExec_t>(static_cast<uintptr_t>(graph)), stream(0x53)));
  // A graph launch: one correlation id, several kernels.
  if (uint64_t id = cupti_sees(kCbidGraphLaunch, nullptr, 0, 0x53); id && fake_cupti().graph_kernel) {
    fake_cupti().graph_kernel(id, "graph_kernel_a", 2000, 0, 0x53);
    fake_cupti().graph_kernel(id, "graph_kernel_b", 3000, 0, 0x53);
  }
  // A fill of device memory (cudaMemsetAsync: a memset record).
  if (uint64_t id = cupti_sees(kCbidMemsetAsync, nullptr, 0, 0x53); id && fake_cupti().memset)
    fake_cupti().memset(id, 2048, kDevice, 500, 0, 0x53);
  return 1 + guard[0];
}

__attribute__((noinline)) int cuda_launch_errors::call(int) { return g_errors; }

// `kernels` cuLaunchKernel calls of CUfunction 0xf00d0001, grid
// (kernels, 1, 1), block (64, 2, 1), stream 0x61, then one cuLaunchKernelEx
// of CUfunction 0xf00d0002, grid (9, 8, 7), block (32, 1, 1), stream 0x62
// (made-up handles: the stub driver never uses them).
__attribute__((noinline)) int cuda_driver_launch::call(int kernels) {
  volatile char guard[16] = {};
  const DriverApi& api = driver_api();
  if (!api.launch_kernel || !api.launch_kernel_ex) return 0;
  void* params[] = {nullptr};
  for (int i = 0; i < kernels; ++i) {
    int status = api.launch_kernel(reinterpret_cast<void*>(0xf00d0001), kernels, 1, 1, 64, 2, 1, 0,
                                   reinterpret_cast<void*>(0x61), params, nullptr);
    if (status != kCudaErrorStubLibrary) g_errors++;
    if (fake_cupti().launch)  // CUPTI inside that launch: driver domain
      fake_cupti().launch(kDriverDomain, kCbidCuLaunchKernel, kDriverKernelName, 800, 0, 0x61);
  }
  CUlaunchConfig config = {};
  config.gridDimX = 9;
  config.gridDimY = 8;
  config.gridDimZ = 7;
  config.blockDimX = 32;
  config.blockDimY = 1;
  config.blockDimZ = 1;
  config.hStream = reinterpret_cast<CUstream>(0x62);
  if (api.launch_kernel_ex(&config, reinterpret_cast<void*>(0xf00d0002), params, nullptr) != kCudaErrorStubLibrary)
    g_errors++;
  if (fake_cupti().launch)
    fake_cupti().launch(kDriverDomain, kCbidCuLaunchKernelEx, kDriverKernelExName, 900, 0, 0x62);
  return kernels + 1 + guard[0];
}

}  // namespace at::_ops
