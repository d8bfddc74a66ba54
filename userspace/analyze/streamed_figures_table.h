// streamed_figures_table.h: aggregate() (aggregator.h) of a recording with
// memory (--profile-memory) or GPU (the CUPTI shim) columns, read as a
// stream (record/record_stream.h): the op table's rows summed one settled
// forest at a time, each call's memory and GPU time joined as the records
// come (streamed_call_figures.h). The Profile is the one aggregate()
// returns for the same recording, row for row, ungrouped or grouped by
// input shape or stack (a forest then also waits for the ENTRY_SHAPES and
// ENTRY_STACKS pairs of its events, as StreamedAggregate's calls do), of
// one process (record -a recordings are read whole).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <utility>

#include "analyze/entry_stack_pairs.h"
#include "analyze/profile.h"
#include "analyze/streamed_aggregate.h"
#include "analyze/streamed_call_figures.h"
#include "record/record_stream.h"
#include "record/recording.h"

namespace gpuprof {

class StreamedFiguresTable : public RecordStream {
 public:
  // costs, grouping: as StreamedAggregate's; head, bounds: the first
  // read's (its columns: the CUPTI_SHIM chunk comes after the events;
  // JoinBounds).
  StreamedFiguresTable(const ProbeCosts* costs, bool raw_times, const Recording& head, JoinBounds bounds,
                       const TableGrouping& grouping = {});

  // Whether the table of a recording with this head streams this way:
  // memory or GPU columns, one process.
  static bool serves(const Recording& head);
  bool wants(const Recording& head) override;
  void on_events(std::span<const gp_event> events, uint64_t first) override { figures_->add_events(events, first); }
  bool on_mem_events(std::span<const gp_mem_event> events) override;
  void on_gpu_correlations(std::span<const GpuCorrelation> correlations) override {
    figures_->add_gpu_correlations(correlations);
  }
  bool on_gpu_activities(std::span<const GpuActivity> activities) override;
  void on_entry_shape(uint64_t event_index, uint32_t shape_id) override { shapes_.add(event_index, shape_id); }
  void on_entry_stack(uint64_t event_index, uint32_t stack_id) override { stacks_.add(event_index, stack_id); }
  // The Profile, once the read is done (recording: what it returned).
  Profile finish(const Recording& recording) &&;

 private:
  std::optional<ProbeCosts> costs_;
  bool raw_times_;
  JoinBounds bounds_;
  const bool memory_, gpu_;
  const TableGrouping grouping_;
  EntryStackPairs shapes_;  // grouped by input shape: the ENTRY_SHAPES pairs not used yet
  EntryStackPairs stacks_;  // by stack: the ENTRY_STACKS pairs
  std::optional<StreamedCallFigures> figures_;
  // The op rows by (op id, shape id, stack id) (names are known at the
  // end; ungrouped, both ids nullopt), the GPU rows by activity name id.
  std::map<std::tuple<uint32_t, std::optional<uint32_t>, std::optional<uint32_t>>, OpRow> by_group_;
  struct GpuSums {
    uint64_t activities = 0, ns = 0;
  };
  std::map<uint32_t, GpuSums> by_activity_name_;
  uint64_t self_total_ns_ = 0;
};

}  // namespace gpuprof
