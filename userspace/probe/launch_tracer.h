// launch_tracer.h: loads bpf/launch_tracer.bpf.c and traces one process's
// CUDA kernel launches.
//
// Entry probes (one uprobe_multi link per library) on the launch entry
// points of the target's libcudart: cudaLaunchKernel, cudaLaunchKernelExC,
// cudaGraphLaunch and their per-thread-stream (_ptsz) twins; and of its
// libcuda: cuLaunchKernel, cuLaunchKernelEx (and _ptsz), for code that
// launches through the driver API directly (Triton). A driver call made
// from inside libcudart (set_runtime_range) is the runtime launch itself
// and is not recorded twice. Destroying the tracer (or gpuprof dying)
// closes the links and the kernel removes the breakpoints; the probes only
// read the launch's arguments.
//
// When the target has the CUPTI injection shim loaded (cupti_shim/), the
// tracer also attaches to its USDT probes (attach_shim): CUPTI's correlation
// id of each launch on the launching thread, and its GPU activity records
// (kernels, memcpy, memset). The probes' semaphores make the shim fire them
// only while attached.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "launch_tracer_abi.h"
#include "probe/bpf_program.h"
#include "probe/uprobe_multi.h"

struct launch_tracer_bpf;
struct bpf_link;

namespace gpuprof {

// Which API's entry points: libcudart's or libcuda's.
enum class LaunchApi { runtime, driver };

// The entry points of one libcudart (runtime) or libcuda (driver) file:
// file offsets and their gp_launch_api cookies. An error when it has none
// of them.
struct LaunchSites {
  std::vector<uint64_t> offsets;
  std::vector<uint64_t> cookies;
  std::vector<std::string> symbols;  // for messages, same order
};
Result<LaunchSites> find_launch_sites(const std::string& library_path, LaunchApi api);

// Where the records go.
struct LaunchSinks {
  std::function<void(const gp_launch_event&)> launch;
  std::function<void(const gp_gpu_correlation&)> correlation;
  std::function<void(const gp_gpu_activity&)> activity;
  std::function<void(uint64_t count)> dropped;  // records CUPTI dropped
};

class LaunchTracer {
 public:
  static Result<std::unique_ptr<LaunchTracer>> load(uint32_t ring_buffer_bytes, LaunchSinks sinks);
  ~LaunchTracer();

  // path reachable from gpuprof (/proc/PID/root/...). Tracing starts at once.
  Result<void> attach(const std::string& path, const LaunchSites& sites, int pid);
  // A libcudart's address range in the target: driver launches called
  // from there are skipped (counted by driver_calls_from_runtime()). Up to
  // GP_MAX_RUNTIMES; false when they are taken.
  bool add_runtime_range(uint64_t lo, uint64_t hi);
  uint64_t driver_calls_from_runtime() const;
  // The shim's USDT probes (gpuprof:launch, gpuprof:activity,
  // gpuprof:dropped) in the file at path (reachable from gpuprof).
  Result<void> attach_shim(const std::string& path, int pid);
  // Removes the probes; launches already in the ring buffer stay readable.
  void detach();
  // The launch probes (libcudart's, libcuda's, the shim's gpuprof:launch)
  // go; the shim's activity probes stay, so that the GPU records of the
  // launches made before come in (TargetGpu::drain_activities).
  void detach_launches();
  // From now on the activity probe drops the records of launches whose
  // CUPTI correlation id is above `last` (made after the stop).
  void drop_activities_after(uint64_t last);

  int consume() { return bpf_.consume(); }
  uint64_t lost() const;
  uint64_t gpu_records_lost() const;

 private:
  explicit LaunchTracer(LaunchSinks sinks);
  BpfProgram<launch_tracer_bpf> bpf_;
  LaunchSinks sinks_;
  std::vector<UprobeMultiLink> links_;
  std::vector<bpf_link*> shim_links_;
  size_t runtime_ranges_ = 0;
};

}  // namespace gpuprof
