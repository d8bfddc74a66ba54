// streamed_process_stack_sums.h: the stack sums of each process of a
// system-wide recording (record -a) read as a stream, for report --folded
// (self_cpu_time and samples): what folded_stacks_by_process()
// (output/folded_stacks.h) sums from select_processes(recording, {pid}) of
// each process, here one StreamedStackSums per process, each fed its
// process's events as its selection holds them (process_event_split.h).
//
// Each process's StreamedStackSums reads its selection of the first read's
// head (its samples, and the dictionaries that name its paths): memory
// grows with the processes that ran ops times those dictionaries, and with
// what each StreamedStackSums keeps, not with the events. Processes with
// CPU samples and no op (--metric samples) are summed at the end, one at a
// time. It declines what StreamedStackSums does not read alike from a
// stream (--profile-memory), and --with-stack recordings (an entry
// stack's event index is the file's, and which process's event it names is
// not kept).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <vector>

#include "analyze/process_event_split.h"
#include "analyze/stack_sums.h"
#include "analyze/streamed_stack_sums.h"
#include "record/record_stream.h"
#include "record/recording.h"

namespace gpuprof {

class StreamedProcessStackSums : public RecordStream {
 public:
  // head: the recording read once without its events (report.cpp's first
  // pass); it must outlive this. costs: the probe costs (nullptr: raw
  // times). metric: kSelfCpuTime or kSamples.
  StreamedProcessStackSums(const Recording& head, const ProbeCosts* costs, StackMetric metric);

  bool wants(const Recording& head) override;
  void on_events(std::span<const gp_event> events, uint64_t first) override;

  struct ProcessSums {
    ProcessInfo process;  // its selection's (the one whose root frame names it)
    StackSums sums;
  };
  // Once the read is done (recording: what it returned): the sums of each
  // process folded_stacks_by_process() sums, by pid.
  std::map<uint32_t, ProcessSums> finish(const Recording& recording) &&;

 private:
  struct Process {
    std::unique_ptr<Recording> selection;  // select_processes(head, {pid})
    std::unique_ptr<StreamedStackSums> sums;
  };
  Process make(uint32_t pid) const;

  const Recording& head_;
  const ProbeCosts* costs_;
  const StackMetric metric_;
  std::map<uint32_t, Process> processes_;  // by pid: those with op events
  ProcessEventSplit split_;
};

}  // namespace gpuprof
