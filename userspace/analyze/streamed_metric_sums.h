// streamed_metric_sums.h: the stack sums of several metrics of one
// recording read as a stream (record/record_stream.h), in one read: what
// report --pprof's columns are made of (output/pprof.h). Each metric is a
// StreamedStackSums (streamed_stack_sums.h) handed every event and
// ENTRY_STACKS pair (kCalls counted by kSelfCpuTime's: both place a call
// on the same path), as the whole read (stack_sums(), once per metric)
// reads the whole timeline once per metric: memory grows with the distinct
// stacks and the calls each metric's settled forests hold, not with the
// events.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "analyze/stack_sums.h"
#include "analyze/streamed_stack_sums.h"
#include "record/record_stream.h"
#include "record/recording.h"

namespace gpuprof {

class StreamedMetricSums : public RecordStream {
 public:
  // head, costs, last_entry_stack, bounds: as StreamedStackSums's (head
  // must outlive this). metrics: kSelfCpuTime, kCalls, kSamples or (with
  // bounds) kSelfCudaTime, each once.
  StreamedMetricSums(const Recording& head, const ProbeCosts* costs, std::optional<uint64_t> last_entry_stack,
                     const std::vector<StackMetric>& metrics, const JoinBounds* bounds = nullptr);

  // Whether any metric's sums join records to calls by their thread
  // (StreamedStackSums::joins_by_thread).
  static bool joins_by_thread(const std::vector<StackMetric>& metrics) {
    return std::ranges::any_of(metrics, [](StackMetric m) { return StreamedStackSums::joins_by_thread(m); });
  }

  // What every metric's StreamedStackSums wants (they decline alike).
  bool wants(const Recording& head) override;
  void on_events(std::span<const gp_event> events, uint64_t first) override;
  void on_entry_stack(uint64_t event_index, uint32_t stack_id) override;
  // Allocator events (--profile-memory): no metric here counts them.
  bool on_mem_events(std::span<const gp_mem_event>) override { return true; }
  void on_gpu_correlations(std::span<const GpuCorrelation> correlations) override;
  bool on_gpu_activities(std::span<const GpuActivity> activities) override;
  // Each metric's sums, once the read is done.
  std::map<StackMetric, StackSums> finish() &&;

 private:
  // By pointer: a StreamedStackSums cannot be moved.
  std::vector<std::pair<StackMetric, std::unique_ptr<StreamedStackSums>>> sums_;
  // kCalls and kSelfCpuTime both asked for: kSelfCpuTime's sums count the
  // calls too (StreamedStackSums::count_calls_too), and sums_ has no kCalls.
  bool calls_with_self_ = false;
};

}  // namespace gpuprof
