// streamed_stack_sums.h: stack_sums() (stack_sums.h) of a recording read as
// a stream (record/record_stream.h), for report --folded (self_cpu_time
// and samples) and report --pprof (calls, self_cpu and samples:
// streamed_metric_sums.h):
// memory grows with the distinct stacks, threads and the calls of each
// thread's current outermost call tree, not with the events.
//
// A call's path needs its parent's path and torch's same-name fold, which
// are settled once nothing that encloses it is open: each thread's calls
// come in settled forests (settled_calls.h) and are placed by the code the
// whole read uses (build_call_tree, fold_same_name_calls,
// StackPaths::place_calls): a call lands on the node of the same path,
// with the same value, as in stack_sums() of the recording read whole.
// With --with-stack, a forest whose outermost calls need the Python stack
// of their ENTRY also waits for the ENTRY_STACKS pairs that name its events
// (they come after the events, in later chunks): until a pair of a later
// event has come, or the events are past the last pair of the file (the
// first pass says where). What waits is bounded by a thread's longest
// outermost call and,
// with --with-stack, by the events between two pairs.
//
// kSamples (report --folded --metric samples): the samples are the first
// read's (a streaming read keeps them: they are not op events). Each
// thread's samples, by time, go through the same sweep as stack_sums()'s,
// one placed forest after the other: a sample before a forest's next call
// is counted on the innermost call open then, the sweep's open calls kept
// from one forest to the next, and the samples after a thread's last call
// counted at the end. kCalls: the calls placed on the paths of kSelfCpuTime,
// one per call that stays after the fold. kSelfCudaTime: the forests come
// joined with the GPU activities their calls launched
// (streamed_call_figures.h: a forest waits for its launches and their
// activities too), each call's on its fold's path. Every other metric
// drops the GPU records and allocator events.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analyze/call_tree.h"
#include "analyze/entry_stack_pairs.h"
#include "analyze/op_timeline.h"
#include "analyze/settled_calls.h"
#include "analyze/streamed_call_figures.h"
#include "analyze/stack_paths.h"
#include "analyze/stack_sums.h"
#include "record/record_stream.h"
#include "record/recording.h"

namespace gpuprof {

class StreamedStackSums : public RecordStream {
 public:
  // head: the same recording read once without its events (report.cpp's
  // first pass): its ops, frames and stacks name the paths, and must
  // outlive this. costs: the probe costs to compensate by (nullptr: raw
  // times). last_entry_stack: the event index of the file's last
  // ENTRY_STACKS pair (nullopt: none).
  // metric: kSelfCpuTime, kCalls, kSamples or (with the first read's
  // bounds for the join: JoinBounds) kSelfCudaTime.
  StreamedStackSums(const Recording& head, const ProbeCosts* costs, std::optional<uint64_t> last_entry_stack,
                    StackMetric metric = StackMetric::kSelfCpuTime, const JoinBounds* bounds = nullptr);

  // Whether the sums of `metric` join GPU records to calls by their thread
  // (StreamedCallFigures), and so read JoinBounds::op_threads.
  static bool joins_by_thread(StackMetric metric) { return metric == StackMetric::kSelfCudaTime; }

  // Declines what stack_sums() would not read alike from a stream: a
  // system-wide recording (its stacks are per process).
  bool wants(const Recording& head) override;
  void on_events(std::span<const gp_event> events, uint64_t first) override;
  void on_entry_stack(uint64_t event_index, uint32_t stack_id) override;
  // Allocator events (--profile-memory): no metric here counts them.
  bool on_mem_events(std::span<const gp_mem_event>) override { return true; }
  // GPU launches and activities: kSelfCudaTime joins them, the others drop them.
  void on_gpu_correlations(std::span<const GpuCorrelation> correlations) override;
  bool on_gpu_activities(std::span<const GpuActivity> activities) override;
  // The sums, once the read is done: stack_sums(recording, metric) but for
  // the order of the stacks (parents still before children).
  StackSums finish() &&;

  // kSelfCpuTime: count kCalls on the same placement too. Both metrics
  // place each call on the same path (report --pprof has both columns), so
  // one placement of each forest serves both instead of one per metric.
  void count_calls_too() { counts_calls_ = metric_ == StackMetric::kSelfCpuTime; }
  // With count_calls_too(): finish()'s sums, and kCalls' on the same paths.
  std::pair<StackSums, StackSums> finish_with_calls() &&;

 private:
  // figures: the forest's (kSelfCudaTime), else nullptr.
  void place(const Timeline& forest, const CallFigures* figures);

  // kSamples: one thread's samples (indices into head.samples, by time),
  // the next one to count, and the calls open at the sweep point
  // (stack_sums.cpp's sweep), innermost last.
  struct SampleSweep {
    std::vector<size_t> samples;
    size_t next = 0;
    struct Open {
      uint64_t end_ns;
      uint32_t depth;
      uint32_t node;  // its path node (of the call it folded into)
    };
    std::vector<Open> open;
  };
  void sweep_samples(SampleSweep& sweep, std::optional<uint64_t> before_ns);
  void count_sample(size_t index, uint32_t call_node);

  const Recording& head_;
  const StackMetric metric_;
  EntryStackPairs pairs_;
  StackPaths paths_;
  SettledCalls settled_;
  std::optional<StreamedCallFigures> figures_;  // kSelfCudaTime: the forests, joined
  uint64_t activity_ns_ = 0;                    // kSelfCudaTime: every activity's
  std::vector<uint64_t> value_of_node_;  // kSelfCpuTime, kCalls: the self ns or calls placed on each node
  uint64_t total_ = 0;
  bool counts_calls_ = false;            // count_calls_too()
  std::vector<uint64_t> calls_of_node_;  // count_calls_too(): the calls placed on each node
  uint64_t calls_total_ = 0;
  std::unordered_map<uint32_t, SampleSweep> sweeps_;  // kSamples, by tid
  std::unordered_map<uint64_t, uint32_t> kernel_stack_of_sample_;
  std::unordered_map<uint32_t, uint64_t> count_of_node_;  // kSamples
  ForestShape shape_;  // place()'s tree and fold of a forest
};

}  // namespace gpuprof
