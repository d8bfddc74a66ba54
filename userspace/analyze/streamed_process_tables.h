// streamed_process_tables.h: process_tables() (process_tables.h) of a
// system-wide recording (record -a) read as a stream (record/record_stream.h),
// for report's table of every process, or of those --pid/--comm choose:
// memory grows with the processes, their ops, threads and open calls, not
// with the events.
//
// Each event names its process: its process's StreamedAggregate gets it,
// as that process's selection holds it (process_event_split.h). Launches
// name only their thread, whose process THREAD_PROCESSES tells, in chunks
// written as threads turn up, before or after their events: they are
// counted per thread and charged to processes at the end, from the read's
// complete table (memory grows with the threads). CPU samples stay in the
// Recording, as in every streamed read. Grouped by stack (--group-by-stack-n
// of a record -a --with-stack recording), each process's aggregate gets its
// events' ENTRY_STACKS pairs renumbered, each before its event (the split
// holds a chunk's events until their pairs have come: pairs_first.h).
//
// Like StreamedAggregate, it declines a recording made with
// --profile-memory, and a streaming read stops at GPU activities; the
// caller then reads the recording whole and calls process_tables().
#pragma once

#include <map>
#include <optional>
#include <span>
#include <unordered_map>

#include "analyze/process_event_split.h"
#include "analyze/process_tables.h"
#include "analyze/streamed_aggregate.h"
#include "record/record_stream.h"
#include "record/recording.h"

namespace gpuprof {

class StreamedProcessTables : public RecordStream {
 public:
  // With the probe costs to compensate by (nullptr: raw times), known
  // before the events from a first read, as StreamedAggregate's; each
  // process's rows grouped by input shape or stack as `grouping` says, its
  // last pairs the file's (the first read's).
  StreamedProcessTables(const ProbeCosts* costs, bool raw_times, const TableGrouping& grouping = {});
  // The tables, once the read is done (recording: what it returned).
  ProcessTables finish(const Recording& recording) &&;

  // Declines --profile-memory recordings, as StreamedAggregate.
  bool wants(const Recording& head) override;
  bool on_launches(std::span<const CudaLaunch> launches) override;
  void on_events(std::span<const gp_event> events, uint64_t first) override;
  void on_entry_stack(uint64_t event_index, uint32_t stack_id) override {
    split_.add_pair(PairKind::entry_stack, event_index, stack_id);
  }
  void on_entry_shape(uint64_t event_index, uint32_t shape_id) override {
    split_.add_pair(PairKind::entry_shape, event_index, shape_id);
  }

 private:
  std::optional<ProbeCosts> costs_;
  bool raw_times_;
  TableGrouping grouping_;  // each process's: no last pairs (the split hands each before its event)
  const Recording* head_ = nullptr;                      // the read's, set in wants()
  std::map<uint32_t, StreamedAggregate> aggregates_;     // by pid: those with op events
  ProcessEventSplit split_;
  std::unordered_map<uint32_t, uint64_t> launches_;      // by tid
};

}  // namespace gpuprof
