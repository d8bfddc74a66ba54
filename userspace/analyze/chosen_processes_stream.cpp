// chosen_processes_stream.cpp: a system-wide recording's stream cut to
// the processes --pid/--comm choose, as select_processes() cuts it whole.
#include "analyze/chosen_processes_stream.h"

#include <algorithm>
#include <utility>

#include "analyze/process_filter.h"

namespace gpuprof {

ChosenProcessesStream::ChosenProcessesStream(const Recording& head, std::set<uint32_t> chosen,
                                             const LastPairs& last_pairs, const MakeInner& make_inner)
    : chosen_(std::move(chosen)),
      process_of_thread_(process_of_thread(head)),
      selection_(std::make_unique<Recording>(select_processes(head, chosen_))),
      inner_(make_inner(*selection_, LastPairs{})) {
  stacks_.last_in_file = last_pairs.entry_stack;
  shapes_.last_in_file = last_pairs.entry_shape;
  backward_.last_in_file = last_pairs.backward_stack;
}

bool ChosenProcessesStream::serves(const Recording& head) { return gpu_activities_read(head) == 0; }

bool ChosenProcessesStream::chosen_thread(uint32_t tid) const {
  const auto it = process_of_thread_.find(tid);
  return it != process_of_thread_.end() && chosen_.count(it->second);
}

void ChosenProcessesStream::on_events(std::span<const gp_event> events, uint64_t first) {
  HeldChunk chunk{.file_first = first, .file_end = first + events.size(), .first = numbered_};
  // A CUT (record -a --push-every's window end) is every process's.
  for (size_t i = 0; i < events.size(); i++)
    if (events[i].kind == GP_EV_CUT || chosen_.count(events[i].pid)) {
      chunk.events.push_back(events[i]);
      chunk.file_index.push_back(first + i);
    }
  if (chunk.events.empty()) return;
  numbered_ += chunk.events.size();
  held_.push_back(std::move(chunk));
  hand_held(false);
}

std::optional<uint64_t> ChosenProcessesStream::chosen_index(uint64_t file_index) const {
  // The last held chunk that starts at or before it.
  auto chunk = std::upper_bound(held_.begin(), held_.end(), file_index,
                                [](uint64_t index, const HeldChunk& c) { return index < c.file_first; });
  if (chunk == held_.begin()) return std::nullopt;
  --chunk;
  auto at = std::lower_bound(chunk->file_index.begin(), chunk->file_index.end(), file_index);
  if (at == chunk->file_index.end() || *at != file_index) return std::nullopt;
  const size_t i = static_cast<size_t>(at - chunk->file_index.begin());
  const uint16_t kind = chunk->events[i].kind;
  if (kind != GP_EV_OP_ENTRY && kind != GP_EV_RANGE_BEGIN) return std::nullopt;
  return chunk->first + i;
}

void ChosenProcessesStream::on_entry_stack(uint64_t event_index, uint32_t stack_id) {
  if (auto i = chosen_index(event_index)) inner_->on_entry_stack(*i, stack_id);
  stacks_.seen = event_index;
  hand_held(false);
}

void ChosenProcessesStream::on_entry_shape(uint64_t event_index, uint32_t shape_id) {
  if (auto i = chosen_index(event_index)) inner_->on_entry_shape(*i, shape_id);
  shapes_.seen = event_index;
  hand_held(false);
}

void ChosenProcessesStream::on_backward_stack(uint64_t event_index, uint32_t stack_id) {
  if (auto i = chosen_index(event_index)) inner_->on_backward_stack(*i, stack_id);
  backward_.seen = event_index;
  hand_held(false);
}

void ChosenProcessesStream::hand_held(bool all) {
  while (!held_.empty()) {
    const HeldChunk& chunk = held_.front();
    const uint64_t last = chunk.file_end - 1;
    if (!all && !(stacks_.passed(last) && shapes_.passed(last) && backward_.passed(last))) return;
    inner_->on_events(chunk.events, chunk.first);
    held_.pop_front();
  }
}

RecordStream& ChosenProcessesStream::finished_inner() {
  hand_held(true);
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
