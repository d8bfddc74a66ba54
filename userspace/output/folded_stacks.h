// folded_stacks.h: Recording -> folded ("collapsed") stacks, the input of
// flamegraph.pl and speedscope (report --folded, docs/folded.md).
//
// One line per distinct stack: its frames, outermost first, joined by ';',
// then one space and an integer value:
//
//   aten::conv2d;aten::convolution;aten::_convolution;aten::mkldnn_convolution 5123
//
// self_cpu_time: a stack is the op path of a call: the names of the traced
// ops that enclose it on its thread, from the outermost traced op down to
// the call itself, after torch.profiler's same-name fold (call_tree.h), so
// every op frame is a row of the table. With Python stacks of op entries
// (record --with-stack), the path hangs under the Python frames of its
// outermost op's entry, outermost first: what torch's export_stacks prints,
// followed by the op path.
//
// samples (record -F HZ): each CPU sample is one count on: its Python frames,
// outermost first (Recording::sample_stacks, when record caught them: -F on
// a CPython 3.11 to 3.13 target), then the op path of the innermost op running
// on its thread at that moment (the same fold), then its native leaf
// function, then, when the sample interrupted the thread in the kernel, its
// kernel stack outermost first ("do_syscall_64_[k];...;clear_page_[k]"), or
// "[kernel]" when that is not known. Root first: Python frames, operator
// frames, native frames, kernel frames.
//
// self_cuda_time (a recording with the CUPTI shim's records, docs/cuda.md):
// the same stacks as self_cpu_time, valued with the GPU time of the
// activities each call launched itself (its Self CUDA: joined to the call by
// CUPTI correlation id, gpu_kernel_table.h); what no op launched is left out
// and counted in gpu_ns_outside_ops.
//
// self_cpu_time is torch's export_stacks(path,
// "self_cpu_time_total"): a call's self time, summed per stack. Sums are kept
// in nanoseconds per stack and turned into integer microseconds (truncated,
// as torch's int()) only at the end, so no call's sub-microsecond part is
// lost; a stack whose sum is below 1 us is left out, as torch leaves out
// int(metric) <= 0. Calls of every thread go into the same stacks (no
// per-thread root frame), as in torch's export_stacks.
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analyze/stack_sums.h"
#include "analyze/streamed_process_metric_sums.h"
#include "base/result.h"
#include "record/recording.h"

namespace gpuprof {

enum class FoldedMetric {
  kSelfCpuTime,   // self CPU time of ops, integer microseconds
  kSamples,       // CPU samples (record -F HZ): Python frames, op path, native leaf
  kSelfCudaTime,  // GPU time of the kernels, memcpys and memsets ops launched themselves, us
};

// Parses a --metric value; unknown names are refused with a one-line
// error. samples needs a recording made with -F, self_cuda_time one with
// the CUPTI shim's records (the caller checks).
Result<FoldedMetric> parse_folded_metric(std::string_view name);

struct FoldedStack {
  std::string stack;   // frames joined by ';', outermost first
  uint64_t value = 0;  // > 0
  bool operator==(const FoldedStack&) const = default;
};

struct FoldedStacks {
  std::vector<FoldedStack> stacks;  // sorted by stack, byte order; no two alike
  // The self time of every counted call: the table's "Self CPU time total"
  // (the values add up to it, less under 1 us per stack of truncation and
  // the stacks left out).
  uint64_t self_ns_total = 0;
  uint64_t stacks_below_1us = 0;  // distinct stacks left out: their sum is under 1 us
  uint64_t samples_total = 0;     // kSamples: the samples counted (all of them)
  // kSelfCudaTime: GPU time of activities launched by no op, or whose
  // launch was not seen (not in any stack).
  uint64_t gpu_ns_outside_ops = 0;
  // The timeline's honesty counters, as the table reports them (no
  // calls_shorter_than_probes for kSamples: nothing is compensated).
  TimelineCounters counters;
};

// Self times are compensated for the probes' cost as the table's are
// (aggregator.h), unless raw_times.
FoldedStacks folded_stacks(const Recording& recording, FoldedMetric metric = FoldedMetric::kSelfCpuTime,
                           bool raw_times = false);

// The same from stack sums made already (a streamed read's,
// analyze/streamed_stack_sums.h): their order does not matter.
FoldedStacks folded_from_sums(const StackSums& sums, FoldedMetric metric);

// A system-wide recording's stacks (record -a), each rooted at its process
// ("python3-4242;..."); the recording of one process: folded_stacks().
FoldedStacks folded_stacks_by_process(const Recording& recording, FoldedMetric metric, bool raw_times = false);
// The same from each process's stack sums made already (a streamed read's,
// analyze/streamed_process_metric_sums.h: the sums of metric's stack metric).
FoldedStacks folded_by_process_from_sums(const std::map<uint32_t, ProcessMetricSums>& sums, FoldedMetric metric);

// Adds `part` to `into` with every stack of it under `root` (one frame,
// already escaped: folded_frame_name), and its totals and counters; then
// merge_alike_stacks() puts the stacks of all the parts added in order.
// Shared by a system-wide recording's processes (folded_stacks_by_process)
// and several recordings' ranks or files (folded_several.h).
void add_under_root(FoldedStacks& into, std::string_view root, const FoldedStacks& part);
// Sorts the stacks by stack (byte order) and sums those alike into one.
void merge_alike_stacks(FoldedStacks& folded);

// "stack value\n" per stack, in order: the text flamegraph.pl and speedscope read.
std::string format_folded(const FoldedStacks& folded);
// The same text written a line at a time, so that it is not held a second
// time beside the stacks (a profile of many distinct stacks is megabytes),
// and flushed.
Result<void> write_folded(const FoldedStacks& folded, std::FILE* out);

// A name as one frame of a folded line. flamegraph.pl takes the last run of
// whitespace before the trailing number as the separator, a second trailing
// number as a differential count, and ';' as the frame separator; speedscope
// takes the last single space. So, as torch's export_stacks does for ' ',
// ';', '\t' and '\n': ';' becomes ':' and every whitespace or other ASCII
// control byte becomes '_'. A frame then has no space at all, and a line
// reads one way only. Other bytes (UTF-8 included) are kept, but a byte
// that starts no valid UTF-8 sequence (a name read from freed memory, a
// binary comm) becomes U+FFFD, as in the Chrome trace. An empty name
// becomes "_" (flamegraph.pl would drop an empty last frame).
std::string folded_frame_name(std::string_view name);

}  // namespace gpuprof
