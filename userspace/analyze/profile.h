// profile.h: the aggregated profile that every output is a pure function of.
//
// Built in one pass over a Recording by aggregate() (aggregator.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analyze/timeline_counters.h"
#include "record/recording.h"

namespace gpuprof {

// One row of torch.profiler's key_averages(): all calls of one op name
// (overloads together, as torch groups them).
struct OpRow {
  std::string name;           // "aten::conv2d"
  // Grouped by input shape only (report --group-by-input-shape): torch's
  // str(input_shapes) of the group, "[[5, 3, 224, 224], [], []]", and
  // whether the op has any argument at all (torch's len(input_shapes) > 0,
  // which decides whether the table gets an Input Shapes column). Rows of
  // one name with different shapes are separate rows.
  std::string input_shapes;
  bool has_inputs = false;
  // Grouped by stack only (report --group-by-stack-n N): torch's evt.stack
  // of the group, its top N Python frames, innermost first
  // ("torch/nn/modules/conv.py(454): _conv_forward", "nn.Module: Conv2d_0",
  // ...); empty for calls made without Python frames. Rows of one name
  // with different top frames are separate rows.
  std::vector<std::string> stack;
  uint64_t calls = 0;         // completed calls, including unwound ones
  uint64_t cpu_total_ns = 0;  // sum of call durations (nested same-name calls count each)
  uint64_t self_cpu_ns = 0;   // cpu_total minus time in ops nested on the same thread
  uint64_t unwound_calls = 0;  // calls that ended by exception unwinding
  // Tensor memory in bytes, torch's profile_memory meaning: allocated minus
  // released while the call ran (nested calls included), and the same
  // without what nested calls allocated and released. Negative when a call
  // frees more than it allocates.
  int64_t cpu_mem = 0;
  int64_t self_cpu_mem = 0;
  int64_t cuda_mem = 0;
  int64_t self_cuda_mem = 0;
  // GPU time from the CUPTI shim, torch's Self CUDA and CUDA total. An op
  // row: the time of the GPU activities its calls launched themselves, and
  // of those launched by them and the calls nested in them. A GPU row
  // (on_gpu: torch's kernel rows, one per kernel, memcpy or memset name,
  // "Memcpy HtoD (Pageable -> Device)") has no CPU time; calls counts its
  // activities and both times are theirs.
  bool on_gpu = false;
  uint64_t self_cuda_ns = 0;
  uint64_t cuda_total_ns = 0;
  bool operator==(const OpRow&) const = default;
  // Adds another row's counts and sums (calls, times, memory, GPU time) to
  // this one's; its name and grouping keys stay this row's.
  OpRow& add_sums(const OpRow& other) {
    calls += other.calls;
    cpu_total_ns += other.cpu_total_ns;
    self_cpu_ns += other.self_cpu_ns;
    unwound_calls += other.unwound_calls;
    cpu_mem += other.cpu_mem;
    self_cpu_mem += other.self_cpu_mem;
    cuda_mem += other.cuda_mem;
    self_cuda_mem += other.self_cuda_mem;
    self_cuda_ns += other.self_cuda_ns;
    cuda_total_ns += other.cuda_total_ns;
    return *this;
  }
};

// The highest tensor memory level of a recording (record --profile-memory).
struct MemoryPeakInfo {
  bool seen = false;
  int64_t bytes = 0;      // CPU: net bytes allocated since the recording started; CUDA: allocator total
  double at_s = 0;        // seconds after the recording started
  std::string op;         // innermost op running on the allocating thread ("" if none)
  int device_index = -1;  // CUDA only
};

struct Profile {
  std::vector<OpRow> rows;  // one per op name (and GPU activity name); aggregate() sorts them by name
  uint64_t self_cpu_total_ns = 0;  // sum of self_cpu_ns over rows

  // Honesty counters, printed under the table when non-zero.
  TimelineCounters counters;         // the timeline's (timeline_counters.h)
  uint64_t calls_cut = 0;            // calls running when a schedule's recorded steps ended: cut there
  uint64_t events_after_cut = 0;     // events stamped before such a cut that arrived after it (ignored)
  uint64_t ranges_ended_elsewhere = 0;  // record_function ranges ended on another thread, or begun before (not shown)
  uint64_t events_lost = 0;          // copied from RecordStats
  uint64_t events_unknown_kind = 0;  // events of a kind this build does not know; ignored
  uint32_t threads = 0;              // threads that ran traced ops

  // Compensation (op_timeline.h): the probe costs taken out of the times
  // (none: raw times, asked for or for want of a calibration); the calls
  // shorter than their probes' estimated time are in counters.
  std::optional<ProbeCosts> compensation;
  bool raw_times_asked = false;

  // What the recording holds beyond op times.
  bool memory_recorded = false;  // record --profile-memory: the memory columns apply
  bool gpu_recorded = false;     // the target had the CUPTI shim: the CUDA time columns apply
  bool grouped_by_input_shape = false;  // rows are (name, input shapes) groups
  int group_by_stack_n = 0;              // > 0: rows are (name, [shapes,] top N frames) groups
  MemoryPeakInfo cpu_memory_peak;
  MemoryPeakInfo cuda_memory_peak;
  uint64_t memory_unmatched_frees = 0;  // releases of blocks allocated before recording (not counted)
};

}  // namespace gpuprof
