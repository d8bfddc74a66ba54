// process_event_split.h: the events of a system-wide recording (record -a)
// read as a stream, each handed to a stream of its process's own
// (analyze/streamed_process_tables.h, streamed_process_metric_sums.h), as
// that process's selection (select_processes(recording, {pid})) holds them:
// its events and every CUT (a window's end is every thread's), numbered
// from 0. A process first met after some CUTs gets them first, as its
// selection has them. Memory: the CUTs (one per --push-every window) and a
// chunk's events.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <vector>

#include "record/record_stream.h"

namespace gpuprof {

class ProcessEventSplit {
 public:
  // stream_of(pid): the stream of a process met for the first time; it
  // must live as long as this.
  explicit ProcessEventSplit(std::function<RecordStream&(uint32_t pid)> stream_of);

  // One chunk's events, in file order.
  void add(std::span<const gp_event> events);
  // The op events (no CUT) of each process met, by pid.
  std::map<uint32_t, uint64_t> op_events() const;
  // The CUTs read so far (every process's selection holds each).
  uint64_t cuts() const { return cuts_.size(); }

 private:
  struct Process {
    RecordStream* stream = nullptr;
    uint64_t handed = 0;            // events handed to it, CUTs included: the next one's index
    uint64_t op_events = 0;         // its own events (no CUT)
    std::vector<gp_event> pending;  // its events of the chunk being read
  };
  Process& process(uint32_t pid);
  void hand_over_pending();

  std::function<RecordStream&(uint32_t pid)> stream_of_;
  std::map<uint32_t, Process> processes_;
  std::vector<gp_event> cuts_;  // every CUT so far
};

}  // namespace gpuprof
