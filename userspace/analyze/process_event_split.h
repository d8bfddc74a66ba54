// process_event_split.h: the events of a system-wide recording (record -a)
// read as a stream, each handed to a stream of its process's own
// (analyze/streamed_process_tables.h, streamed_process_metric_sums.h), as
// that process's selection (select_processes(recording, {pid})) holds them:
// its events and every CUT (a window's end is every thread's), numbered
// from 0. A process first met after some CUTs gets them first, as its
// selection has them. The ENTRY_STACKS, ENTRY_SHAPES and BACKWARD_STACKS
// pairs of a process's frame-opening events go to its stream too,
// renumbered alike, each before its event: a chunk's events wait until
// their pairs have come (pairs_first.h), so a process's stream is made
// with no last pairs. Memory: the CUTs (one per --push-every window), a
// chunk's events, and the events that wait for their pairs.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <vector>

#include "analyze/pairs_first.h"
#include "record/record_stream.h"

namespace gpuprof {

class ProcessEventSplit {
 public:
  // stream_of(pid): the stream of a process met for the first time; it
  // must live as long as this. last: the file's last pairs (the first
  // read's).
  explicit ProcessEventSplit(std::function<RecordStream&(uint32_t pid)> stream_of, const LastPairs& last = {});

  // One chunk's events, in file order (first: the file's index of events[0]).
  void add(std::span<const gp_event> events, uint64_t first) { pairs_first_.add_events(events, first); }
  // One pair, as RecordStream::on_entry_stack and its kin hand it.
  void add_pair(PairKind kind, uint64_t event_index, uint32_t id) { pairs_first_.add_pair(kind, event_index, id); }
  // The read is done: the events still waiting handed on.
  void finish() { pairs_first_.finish(); }
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
  // A chunk whose pairs have all come.
  void split(std::span<const gp_event> events, uint64_t first, std::span<const EventPair> pairs);

  std::function<RecordStream&(uint32_t pid)> stream_of_;
  std::map<uint32_t, Process> processes_;
  std::vector<gp_event> cuts_;  // every CUT so far
  PairsFirst pairs_first_;
};

}  // namespace gpuprof
