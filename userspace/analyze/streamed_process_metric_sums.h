// streamed_process_metric_sums.h: the stack sums of each process of a
// system-wide recording (record -a) read as a stream, one set of metrics
// per process: what folded_stacks_by_process() (output/folded_stacks.h,
// report --folded) and pprof_profile() (output/pprof.h, report --pprof) sum
// from select_processes(recording, {pid}) of each process, here one
// StreamedMetricSums per process, fed its process's events as its
// selection holds them (process_event_split.h).
//
// Each process's sums read its selection of the first read's head (its
// samples, and the dictionaries that name its paths): memory grows with
// the processes that ran ops times those dictionaries, and with what each
// StreamedMetricSums keeps, not with the events. Processes sampled
// without an op are summed at the end, one at a time, when the metrics
// count samples. A --with-stack recording's entry stacks go to their
// processes renumbered, each before its event (the split holds a chunk's
// events until their pairs have come: pairs_first.h).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <vector>

#include "analyze/process_event_split.h"
#include "analyze/stack_sums.h"
#include "analyze/streamed_metric_sums.h"
#include "record/record_stream.h"
#include "record/recording.h"

namespace gpuprof {

// One process's selection of the recording (select_processes(head, {pid}):
// without events) and the sums of each metric.
struct ProcessMetricSums {
  std::unique_ptr<Recording> selection;
  std::map<StackMetric, StackSums> sums;
  uint64_t op_events = 0;  // its op events read (no CUT; its selection holds those too)
};

class StreamedProcessMetricSums : public RecordStream {
 public:
  // head: the recording read once without its events; it must outlive
  // this. costs: the probe costs (nullptr: raw times). metrics: what to sum
  // (--folded's one; pprof_metrics of the head, every process's being the
  // same). last: the file's last pairs (the first read's).
  StreamedProcessMetricSums(const Recording& head, const ProbeCosts* costs, std::vector<StackMetric> metrics,
                            const LastPairs& last = {});

  bool wants(const Recording&) override { return true; }
  void on_events(std::span<const gp_event> events, uint64_t first) override;
  void on_entry_stack(uint64_t event_index, uint32_t stack_id) override {
    split_.add_pair(PairKind::entry_stack, event_index, stack_id);
  }
  // Allocator events (--profile-memory): no metric here counts them.
  bool on_mem_events(std::span<const gp_mem_event>) override { return true; }

  // Once the read is done (recording: what it returned): each process that
  // ran ops or (the metrics count samples) was sampled, by pid.
  std::map<uint32_t, ProcessMetricSums> finish(const Recording& recording) &&;
  // The CUTs read (record -a --push-every's window ends); after finish(),
  // every one's.
  uint64_t cuts() const { return split_.cuts(); }

 private:
  struct Process {
    std::unique_ptr<Recording> selection;
    std::unique_ptr<StreamedMetricSums> sums;
  };
  Process make(uint32_t pid) const;

  const Recording& head_;
  const ProbeCosts* costs_;
  const std::vector<StackMetric> metrics_;
  std::map<uint32_t, Process> processes_;  // by pid: those with op events
  ProcessEventSplit split_;
};

}  // namespace gpuprof
