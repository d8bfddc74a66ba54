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
// Each chunk's events wait until no pair still to come can name one of
// them (pairs_first.h); the inner stream then gets the chosen events'
// pairs, renumbered, before the events, so it is made with no last pairs
// (LastPairs{}: each pair it needs has come).
//
// It declines a recording with GPU activities (their calls are joined
// through correlations, which -a does not record).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <unordered_map>
#include <vector>

#include "analyze/pairs_first.h"
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
  bool chosen_thread(uint32_t tid) const;
  // A chunk whose pairs have all come (pairs_first.h): its chosen events,
  // and their pairs, to the inner stream.
  void hand(std::span<const gp_event> events, uint64_t first, std::span<const EventPair> pairs);

  std::set<uint32_t> chosen_;
  std::unordered_map<uint32_t, uint32_t> process_of_thread_;  // the head's (process_filter.h)
  std::unique_ptr<Recording> selection_;
  std::unique_ptr<RecordStream> inner_;
  uint64_t handed_ = 0;  // events handed to the inner stream: the next one's index
  PairsFirst pairs_first_;
  // A chunk's chosen records, handed on.
  std::vector<gp_event> events_;
  std::vector<CudaLaunch> launches_;
  std::vector<gp_mem_event> mem_events_;
};

}  // namespace gpuprof
