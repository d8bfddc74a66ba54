// launch_tracer.h: loads bpf/launch_tracer.bpf.c and traces one process's
// CUDA kernel launches.
//
// Entry probes (one uprobe_multi link) on the launch entry points of the
// target's libcudart: cudaLaunchKernel, cudaLaunchKernelExC,
// cudaGraphLaunch and their per-thread-stream (_ptsz) twins. Destroying the
// tracer (or gpuprof dying) closes the link and the kernel removes the
// breakpoints; the probes only read the launch's arguments.
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
#include <optional>
#include <string>
#include <vector>

#include "events.h"
#include "uprobe_multi.h"

struct launch_tracer_bpf;
struct ring_buffer;
struct bpf_link;

namespace gpuprof {

// The entry points of one libcudart file: file offsets and their
// gp_launch_api cookies. nullopt (and *error) when it has none of them.
struct LaunchSites {
  std::vector<uint64_t> offsets;
  std::vector<uint64_t> cookies;
  std::vector<std::string> symbols;  // for messages, same order
};
std::optional<LaunchSites> find_launch_sites(const std::string& libcudart_path, std::string* error);

// Where the records go.
struct LaunchSinks {
  std::function<void(const gp_launch_event&)> launch;
  std::function<void(const gp_gpu_correlation&)> correlation;
  std::function<void(const gp_gpu_activity&)> activity;
  std::function<void(uint64_t count)> dropped;  // records CUPTI dropped
};

class LaunchTracer {
 public:
  static std::unique_ptr<LaunchTracer> load(uint32_t ring_buffer_bytes, LaunchSinks sinks, std::string* error);
  ~LaunchTracer();

  // path reachable from gpuprof (/proc/PID/root/...). Tracing starts at once.
  bool attach(const std::string& path, const LaunchSites& sites, int pid, std::string* error);
  bool attached() const { return link_.has_value(); }
  // The shim's USDT probes (gpuprof:launch, gpuprof:activity,
  // gpuprof:dropped) in the file at path (reachable from gpuprof).
  bool attach_shim(const std::string& path, int pid, std::string* error);
  // Removes the probes; launches already in the ring buffer stay readable.
  void detach();

  int consume();
  uint64_t lost() const;
  uint64_t gpu_records_lost() const;

 private:
  LaunchTracer() = default;
  launch_tracer_bpf* skel_ = nullptr;
  ring_buffer* rb_ = nullptr;
  LaunchSinks sinks_;
  std::optional<UprobeMultiLink> link_;
  std::vector<bpf_link*> shim_links_;
};

}  // namespace gpuprof
