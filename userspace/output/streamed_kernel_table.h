// streamed_kernel_table.h: report --kernels (gpu_kernel_table.h) of a
// recording read as a stream (record/record_stream.h): each GPU activity
// charged to the op of the innermost call running at its launch, joined as
// the op table's GPU time is (analyze/streamed_call_figures.h: a launch is
// decided once its thread's calls around it have settled and every
// activity of its correlation id has been read). Memory grows with the
// ops and kernel names, the open calls and how far the records lag, not
// with the events; the summary is summarize_gpu_kernels()'s for the same
// recording. One process (record -a recordings are read whole); the
// allocator events of a --profile-memory recording are dropped.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analyze/streamed_call_figures.h"
#include "output/gpu_kernel_table.h"
#include "record/record_stream.h"
#include "record/recording.h"

namespace gpuprof {

class StreamedKernelTable : public RecordStream {
 public:
  // bounds: the first read's (JoinBounds).
  explicit StreamedKernelTable(JoinBounds bounds) : bounds_(std::move(bounds)) {}

  bool wants(const Recording& head) override;
  void on_events(std::span<const gp_event> events, uint64_t first) override { figures_->add_events(events, first); }
  bool on_mem_events(std::span<const gp_mem_event>) override { return true; }  // dropped: no kernel needs them
  void on_gpu_correlations(std::span<const GpuCorrelation> correlations) override {
    figures_->add_gpu_correlations(correlations);
  }
  bool on_gpu_activities(std::span<const GpuActivity> activities) override;
  // The summary, once the read is done (recording: what it returned).
  GpuKernelSummary finish(const Recording& recording) &&;

 private:
  void charge(uint64_t correlation_id, std::optional<uint32_t> op_id);

  JoinBounds bounds_;
  std::optional<StreamedCallFigures> figures_;
  // Activities read whose launch is not decided yet, by correlation id:
  // (name id -> count, ns).
  std::unordered_map<uint64_t, std::map<uint32_t, std::pair<uint64_t, uint64_t>>> waiting_;
  // Charged: by (op id, or nullopt outside every op; name id), count and
  // ns (op names are known at the end).
  std::map<std::pair<std::optional<uint32_t>, uint32_t>, std::pair<uint64_t, uint64_t>> charged_;
};

}  // namespace gpuprof
