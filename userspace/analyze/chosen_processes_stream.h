// chosen_processes_stream.h: some processes of a system-wide recording
// (record -a) read as a stream (record/record_stream.h), for an output of
// those --pid/--comm choose (report --chrome-trace, --launches): the inner
// stream gets what select_processes(recording, chosen) (process_filter.h)
// holds, as it comes: the chosen processes' op events and every CUT, in
// file order, numbered from 0 among them; their threads' launches and
// allocator events; the ENTRY_STACKS, ENTRY_SHAPES and BACKWARD_STACKS
// pairs of their calls, renumbered alike. It reads the chosen processes'
// selection of the first read's head (without events), which this keeps
// for as long as it lives.
//
// A pair names its event by the file's index, and comes chunks after it:
// each chunk's chosen events are held, with their file indices, until no
// pair still to come can name one of them (pairs come in increasing event
// index; the first read says where each kind's last one is). The inner
// stream gets each held event's pairs before the event, so it is made with
// no last pairs (LastPairs{}: each pair it needs has come). Memory grows
// with how far the pairs lag their events, as an output that waits for
// them does.
//
// It declines a recording with GPU activities (their calls are joined
// through correlations, which -a does not record).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <unordered_map>
#include <vector>

#include "record/record_stream.h"
#include "record/recording.h"

namespace gpuprof {

class ChosenProcessesStream : public RecordStream {
 public:
  // head: the first read's (its thread-to-process table places launches
  // and allocator events); last_pairs: its file's. make_inner(selection,
  // pairs): the stream of the chosen processes, reading their selection of
  // the head, with `pairs` for the file's last pairs.
  using MakeInner = std::function<std::unique_ptr<RecordStream>(const Recording& selection, const LastPairs& pairs)>;
  ChosenProcessesStream(const Recording& head, std::set<uint32_t> chosen, const LastPairs& last_pairs,
                        const MakeInner& make_inner);

  // Whether a recording streams this way (see above).
  static bool serves(const Recording& head);

  // The inner stream, once the read is done: every event still held (a
  // damaged file's, whose last pairs never came) handed on first.
  RecordStream& finished_inner();

  bool wants(const Recording& head) override { return serves(head) && inner_->wants(head); }
  void on_events(std::span<const gp_event> events, uint64_t first) override;
  void on_entry_stack(uint64_t event_index, uint32_t stack_id) override;
  void on_entry_shape(uint64_t event_index, uint32_t shape_id) override;
  void on_backward_stack(uint64_t event_index, uint32_t stack_id) override;
  bool on_launches(std::span<const CudaLaunch> launches) override;
  bool on_mem_events(std::span<const gp_mem_event> events) override;
  bool on_gpu_activities(std::span<const GpuActivity> activities) override { return activities.empty(); }

 private:
  // One kind of pair: the file index of the last one read, and of the
  // file's last.
  struct PairCursor {
    std::optional<uint64_t> seen, last_in_file;
    // Whether every pair of this kind that names an event up to `index` has come.
    bool passed(uint64_t index) const {
      return !last_in_file || (seen && *seen >= std::min(index, *last_in_file));
    }
  };
  // One chunk's chosen events, held until their pairs have come.
  struct HeldChunk {
    uint64_t file_first = 0, file_end = 0;  // the chunk's events in the file: [first, end)
    uint64_t first = 0;                     // its first chosen event's index among the chosen
    std::vector<gp_event> events;           // its chosen events
    std::vector<uint64_t> file_index;       // and each one's in the file
  };
  bool chosen_thread(uint32_t tid) const;
  // The index among the chosen of the frame-opening event at file_index
  // (select_processes renumbers those alone), nullopt: not a held one.
  std::optional<uint64_t> chosen_index(uint64_t file_index) const;
  // Hands on the held chunks whose pairs have all come (all: every one).
  void hand_held(bool all);

  std::set<uint32_t> chosen_;
  std::unordered_map<uint32_t, uint32_t> process_of_thread_;  // the head's (process_filter.h)
  std::unique_ptr<Recording> selection_;
  std::unique_ptr<RecordStream> inner_;
  uint64_t numbered_ = 0;  // chosen events numbered so far: the next one's index
  PairCursor stacks_, shapes_, backward_;
  std::deque<HeldChunk> held_;
  // A chunk's chosen records, handed on.
  std::vector<CudaLaunch> launches_;
  std::vector<gp_mem_event> mem_events_;
};

}  // namespace gpuprof
