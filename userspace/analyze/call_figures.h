// call_figures.h: per op call, the figures torch.profiler's table sums into
// its rows: self time with the same-name children it folds (call_tree.h,
// fold_same_name_calls), tensor memory (memory_attribution.h) and GPU time
// (gpu_attribution.h). The op table (aggregator.h) sums them by op name,
// the layer table (module_tree.h) by module.
#pragma once

#include <cstdint>
#include <vector>

#include "analyze/call_tree.h"
#include "analyze/memory_attribution.h"
#include "analyze/op_timeline.h"
#include "record/recording.h"

namespace gpuprof {

struct CallFigures {
  // Parallel to Timeline::calls. folded_into[i] == i for a call the table
  // counts; else the call whose row absorbs it.
  std::vector<size_t> folded_into;
  // A counted call's compensated self time with its folded children's; 0
  // for a folded call (its time is its absorber's).
  std::vector<uint64_t> self_ns;
  // Memory (recording.options.memory; else empty): bytes allocated minus
  // released while the call ran, nested calls included (cpu_mem,
  // cuda_mem), and by the call itself with the children it folds (self_*;
  // 0 for a folded call).
  std::vector<int64_t> cpu_mem, self_cpu_mem, cuda_mem, self_cuda_mem;
  MemoryAttribution memory;  // the attribution they come from (peaks, [memory] events)
  // GPU time (the CUPTI shim; else empty): of what the call launched
  // itself, after torch's folding lifts a folded chain's kernels to the
  // absorber (self_gpu_ns; 0 for a folded call), and with its
  // descendants' (gpu_ns).
  std::vector<uint64_t> self_gpu_ns, gpu_ns;
  // And before that lifting: the GPU time of what each call launched
  // itself (the folded and pprof stacks charge it to the call's fold).
  std::vector<uint64_t> own_gpu_ns;
};

CallFigures call_figures(const Recording& recording, const Timeline& timeline);

// What each call did itself (parallel to Timeline::calls), which
// call_figures_from folds and sums up the tree: bytes allocated minus
// released while it was the innermost call (memory recorded; else empty),
// and the GPU time of the activities it launched (GPU recorded; else empty).
struct OwnFigures {
  std::vector<int64_t> cpu_mem, cuda_mem;
  std::vector<uint64_t> gpu_ns;
};
// call_figures() of calls whose own figures are known (CallFigures::memory
// left empty): the whole timeline's, or one settled forest's
// (settled_calls.h) as a streamed table joins them (streamed_call_figures.h).
// tree: build_call_tree(timeline).
CallFigures call_figures_from(const Timeline& timeline, const std::vector<OpInfo>& ops, const CallTree& tree,
                              OwnFigures own);

}  // namespace gpuprof
