// stack_sums.h: Recording -> distinct stacks, each with a sum: the stacks
// that report --folded (output/folded_stacks.h) and --pprof
// (output/pprof.h) print, built once here.
//
// A stack is a path of frames, outermost first:
//
// kSelfCpuTime, kCalls: the op path of a call: the traced ops that enclose
// it on its thread, from the outermost traced op down to the call itself,
// after torch.profiler's same-name fold (call_tree.h), so every op frame is
// a row of the table. With Python stacks of op entries (record
// --with-stack), the path hangs under the Python frames of its outermost
// op's entry, outermost first (what torch's export_stacks prints). The sum
// is the calls' self time in ns (compensated for the probes' cost as the
// table's is, aggregator.h, unless raw_times) or their number.
//
// kSamples (record -F HZ): each CPU sample counts once on: its Python
// frames, outermost first (when record caught them), then the op path of
// the innermost op running on its thread at that moment (the same fold),
// then its native leaf function, then, when the sample interrupted the
// thread in the kernel, its kernel stack outermost first, or "[kernel]"
// when that is not known.
//
// kSelfCudaTime (the CUPTI shim's records, docs/cuda.md): the op paths of
// kSelfCpuTime, summed with the GPU time (ns) of the activities each call
// launched itself (joined by CUPTI correlation id); what no op launched is
// left out and counted in gpu_ns_outside_ops.
//
// Calls of every thread go into the same stacks (no per-thread root frame),
// as in torch's export_stacks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analyze/timeline_counters.h"
#include "record/recording.h"

namespace gpuprof {

enum class StackMetric {
  kSelfCpuTime,   // ns of the calls' self time
  kCalls,         // number of calls
  kSamples,       // number of CPU samples
  kSelfCudaTime,  // ns of GPU time the calls launched themselves
};

// Where a frame came from: an output that knows more than a name (pprof's
// file and line, its kernel frames) reads it from here.
enum class FrameKind : uint8_t {
  kOp,      // a traced op (its table row's name)
  kPython,  // a Python frame as torch's with_stack names it ("path(line): name", "nn.Module: X_0")
  kNative,  // a CPU sample's native leaf function
  kKernel,  // a kernel frame of a CPU sample ("[kernel]" when not known)
};

struct StackFrame {
  std::string name;  // as recorded: outputs escape it their own way
  FrameKind kind = FrameKind::kOp;
  bool operator==(const StackFrame&) const = default;
};

struct StackSum {
  std::vector<uint32_t> frames;  // indices into StackSums::frames, outermost first
  uint64_t value = 0;
};

struct StackSums {
  std::vector<StackFrame> frames;  // distinct (name, kind)
  // kSelfCpuTime, kCalls, kSelfCudaTime: every path a call placed, the
  // Python frames above the outermost ops included (value 0 where no call
  // ends there); kSamples: every path some sample counted on. Parents come
  // before their children.
  std::vector<StackSum> stacks;
  uint64_t total = 0;               // the values' sum
  uint64_t gpu_ns_outside_ops = 0;  // kSelfCudaTime: GPU time of activities no op launched
  // The timeline's honesty counters, as the table reports them.
  TimelineCounters counters;
};

StackSums stack_sums(const Recording& recording, StackMetric metric, bool raw_times = false);

}  // namespace gpuprof
