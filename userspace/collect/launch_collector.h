// launch_collector.h: CUDA kernel launches into the recording, for one
// target (-p, -- CMD) and for every process (-a) alike.
//
// Kernel names are interned per host function (interner.h): the symbol that
// starts at the launched function pointer, demangled whole as CUPTI names
// kernels, read from the launching process's mappings. The cache in front
// of the interner is keyed by a process key (the pid under -a, 0 for one
// target).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "collect/diagnostics.h"
#include "collect/interner.h"
#include "record/record_sink.h"
#include "launch_tracer_abi.h"
#include "symbols/native_symbolizer.h"

namespace gpuprof {

class LaunchCollector {
 public:
  // count_unresolved: launches of a kernel without a symbol count in
  // RecordStats::symbols_unresolved (record -p and -- CMD count them; -a
  // does not).
  LaunchCollector(Interner& interner, RecordSink& sink, Diagnostics& diagnostics, RecordStats& stats,
                  bool count_unresolved)
      : interner_(interner),
        sink_(sink),
        diagnostics_(diagnostics),
        stats_(stats),
        count_unresolved_(count_unresolved) {}

  // Records `event` of the process keyed `process`, its host functions
  // named by `symbolizer` (null: unnamed). The launch recorded, or nullopt.
  std::optional<CudaLaunch> record(const gp_launch_event& event, uint32_t process, NativeSymbolizer* symbolizer);
  // Drops the cache of the processes `gone` says are.
  void forget(const std::function<bool(uint32_t process)>& gone);
  uint64_t recorded() const { return recorded_; }

 private:
  uint32_t name_id(const gp_launch_event& event, uint32_t process, NativeSymbolizer* symbolizer);

  Interner& interner_;
  RecordSink& sink_;
  Diagnostics& diagnostics_;
  RecordStats& stats_;
  bool count_unresolved_;
  std::map<std::pair<uint32_t, uint64_t>, uint32_t> name_of_function_;  // (process, function)
  std::set<uint32_t> unresolved_names_;  // kernel names without a symbol
  uint64_t recorded_ = 0;
};

}  // namespace gpuprof
