// chosen_processes_stream.cpp: a system-wide recording's stream cut to
// the processes --pid/--comm choose, as select_processes() cuts it whole.
#include "analyze/chosen_processes_stream.h"

#include <utility>

#include "analyze/process_filter.h"

namespace gpuprof {

ChosenProcessesStream::ChosenProcessesStream(const Recording& head, std::set<uint32_t> chosen,
                                             const LastPairs& last_pairs, const MakeInner& make_inner)
    : chosen_(std::move(chosen)),
      process_of_thread_(process_of_thread(head)),
      selection_(std::make_unique<Recording>(select_processes(head, chosen_))),
      inner_(make_inner(*selection_, LastPairs{})),
      pairs_first_(last_pairs, [this](std::span<const gp_event> events, uint64_t first,
                                      std::span<const EventPair> pairs) { hand(events, first, pairs); }) {}

bool ChosenProcessesStream::serves(const Recording& head) { return gpu_activities_read(head) == 0; }

bool ChosenProcessesStream::chosen_thread(uint32_t tid) const {
  const auto it = process_of_thread_.find(tid);
  return it != process_of_thread_.end() && chosen_.count(it->second);
}

void ChosenProcessesStream::on_events(std::span<const gp_event> events, uint64_t first) {
  pairs_first_.add_events(events, first);
}
void ChosenProcessesStream::on_entry_stack(uint64_t event_index, uint32_t stack_id) {
  pairs_first_.add_pair(PairKind::entry_stack, event_index, stack_id);
}
void ChosenProcessesStream::on_entry_shape(uint64_t event_index, uint32_t shape_id) {
  pairs_first_.add_pair(PairKind::entry_shape, event_index, shape_id);
}
void ChosenProcessesStream::on_backward_stack(uint64_t event_index, uint32_t stack_id) {
  pairs_first_.add_pair(PairKind::backward_stack, event_index, stack_id);
}

void ChosenProcessesStream::hand(std::span<const gp_event> events, uint64_t first, std::span<const EventPair> pairs) {
  events_.clear();
  ChunkPairs chunk_pairs(pairs);
  for (size_t i = 0; i < events.size(); i++) {
    const gp_event& e = events[i];
    // A CUT (record -a --push-every's window end) is every process's.
    const bool chosen = e.kind == GP_EV_CUT || chosen_.count(e.pid);
    chunk_pairs.hand_those_of(e, first + i, chosen ? inner_.get() : nullptr, handed_ + events_.size());
    if (chosen) events_.push_back(e);
  }
  if (events_.empty()) return;
  inner_->on_events(events_, handed_);
  handed_ += events_.size();
}

RecordStream& ChosenProcessesStream::finished_inner() {
  pairs_first_.finish();
  return *inner_;
}

bool ChosenProcessesStream::on_launches(std::span<const CudaLaunch> launches) {
  launches_.clear();
  for (const CudaLaunch& l : launches)
    if (chosen_thread(l.tid)) launches_.push_back(l);
  return inner_->on_launches(launches_);
}

bool ChosenProcessesStream::on_mem_events(std::span<const gp_mem_event> events) {
  mem_events_.clear();
  for (const gp_mem_event& m : events)
    if (chosen_thread(m.tid)) mem_events_.push_back(m);
  return inner_->on_mem_events(mem_events_);
}

}  // namespace gpuprof
