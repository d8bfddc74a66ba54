// cpu_sampler.h: loads bpf/cpu_sampler.bpf.c and samples one process (or,
// with tgid 0, every process but the idle task: record -a).
//
// One software CPU-clock perf event per online CPU, at `hz`, each with the
// BPF program attached; the program keeps only the target's samples. Closing
// the sampler (or gpuprof dying) closes the events: nothing is left behind
// in the target, which the sampling never touches anyway.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "base/result.h"
#include "cpu_sampler_abi.h"
#include "probe/bpf_program.h"

struct cpu_sampler_bpf;
struct bpf_link;

namespace gpuprof {

class CpuSampler {
 public:
  using Sink = std::function<void(const gp_cpu_sample&)>;

  // Loads and attaches; sampling starts with set_sampling(true).
  static Result<std::unique_ptr<CpuSampler>> start(int tgid, uint32_t hz, Sink sink);
  ~CpuSampler();

  void set_sampling(bool on);
  // Where the target's CPython frames are; before or while sampling.
  void set_python(const gp_python_config& config);
  // System-wide sampling (tgid 0): where one process's CPython frames are;
  // false when the map is full (its samples stay without Python frames).
  bool set_process_python(uint32_t pid, const gp_python_config& config);
  // ... and forgets it once the process has exited (its pid may come back).
  void forget_process_python(uint32_t pid);
  // Closes the perf events. Samples already in the ring buffer stay readable.
  void stop();

  int poll_fd() const { return bpf_.poll_fd(); }
  int consume() { return bpf_.consume(); }
  uint64_t lost() const;
  size_t cpus() const { return links_.size(); }

 private:
  explicit CpuSampler(Sink sink);
  // Opens a perf event on each online CPU with the program attached.
  Result<void> open_perf_events(uint32_t hz);
  BpfProgram<cpu_sampler_bpf> bpf_;
  Sink sink_;
  std::vector<bpf_link*> links_;
  std::vector<int> perf_fds_;
};

}  // namespace gpuprof
