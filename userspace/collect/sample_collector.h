// sample_collector.h: CPU samples (-F HZ) into the recording, for one
// target (-p, -- CMD) and for every process (-a) alike.
//
// A sample's leaf is named now, while its process's mappings are there to
// read, and its Python and kernel stacks are interned (interner.h): the
// record keeps names, so a report needs no target. The caches in front of
// the interner are keyed by a process key (the pid under -a, 0 for one
// target) and bounded (bounded_cache.h).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "collect/diagnostics.h"
#include "collect/interner.h"
#include "record/record_sink.h"
#include "cpu_sampler_abi.h"
#include "python/python_stacks.h"
#include "record/frames_not_read.h"
#include "symbols/kernel_symbols.h"

namespace gpuprof {

class SampleCollector {
 public:
  // The leaf's name for an address not seen before in the process.
  using LeafNamer = std::function<std::string(uint64_t user_ip)>;

  // Reads the kernel's symbols (/proc/kallsyms) for kernel stacks.
  SampleCollector(Interner& interner, RecordSink& sink, Diagnostics& diagnostics, RecordStats& stats,
                  StackCuts& cuts, LiveConsumer& live);

  // Records `sample` of the process keyed `process`; python names its
  // Python frames (null: none).
  void record(const gp_cpu_sample& sample, uint32_t process, const LeafNamer& leaf, PythonStackNamer* python);

  // The Python frame cache is keyed by code object addresses, which a
  // process may free and reuse: dropped with each Python epoch.
  void new_python_epoch() { frame_of_python_.clear(); }
  // Drops the caches of the processes `gone` says are.
  void forget(const std::function<bool(uint32_t process)>& gone);
  uint64_t recorded() const { return recorded_; }

 private:
  Interner& interner_;
  RecordSink& sink_;
  Diagnostics& diagnostics_;
  RecordStats& stats_;
  StackCuts& cuts_;
  LiveConsumer& live_;  // sees each sample recorded, with its Python stack (top)
  KernelSymbols kernel_symbols_;
  std::map<std::pair<uint32_t, uint64_t>, uint32_t> frame_of_address_;            // (process, ip)
  std::map<std::tuple<uint32_t, uint64_t, uint64_t>, uint32_t> frame_of_python_;  // (process, code, instr)
  std::map<std::vector<uint64_t>, uint32_t> stack_of_kernel_ips_;                 // innermost first
  std::set<uint32_t> unresolved_frames_;  // leaf frames without a symbol
  uint64_t recorded_ = 0;
};

}  // namespace gpuprof
