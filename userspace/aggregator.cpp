// aggregator.cpp: fold the timeline's calls into one row per op name.
#include "aggregator.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <string>
#include <unordered_map>

#include "call_tree.h"
#include "input_shapes.h"
#include "memory_attribution.h"
#include "op_timeline.h"

namespace gpuprof {
namespace {

std::string op_name(const std::vector<OpInfo>& ops, uint32_t op_id) {
  return op_id < ops.size() ? ops[op_id].name : "<unknown op " + std::to_string(op_id) + ">";
}

// Maps (op name, input shapes) to rows, creating a row the first time a
// group completes a call, so ops that never ran get none. Without shape
// grouping the shapes part of the key is always "".
class RowIndex {
 public:
  explicit RowIndex(std::vector<OpRow>& rows) : rows_(rows) {}

  OpRow& row_of(const std::string& name, const std::string& shapes, bool has_inputs) {
    auto [it, inserted] = row_of_key_.try_emplace(name + '\0' + shapes, rows_.size());
    if (inserted) rows_.push_back(OpRow{.name = name, .input_shapes = shapes, .has_inputs = has_inputs});
    return rows_[it->second];
  }

 private:
  std::vector<OpRow>& rows_;
  std::unordered_map<std::string, size_t> row_of_key_;
};

// torch's str(input_shapes) of one call, and whether it has any argument.
class ShapeNames {
 public:
  explicit ShapeNames(const Recording& recording) : recording_(recording) {
    formatted_.reserve(recording.shapes.size());
    for (const InputShapes& shapes : recording.shapes) formatted_.push_back(format_input_shapes(shapes));
    shape_of_event_.reserve(recording.entry_shapes.size());
    for (const EntryShapes& e : recording.entry_shapes) shape_of_event_[e.event_index] = e.shape_id;
    // Ops that record nothing per call have one string for all their calls.
    static_shapes_.resize(recording.ops.size());
    for (size_t op = 0; op < recording.ops.size(); op++) {
      const OpInfo& info = recording.ops[op];
      if (info.arg_count >= 0 && info.tensor_args == 0)
        static_shapes_[op] = format_input_shapes(InputShapes(info.arg_count, ArgShape(std::vector<int64_t>{})));
    }
  }

  std::pair<std::string, bool> of(const OpCall& call) const {
    if (auto it = shape_of_event_.find(call.entry_index); it != shape_of_event_.end())
      return {formatted_[it->second], !recording_.shapes[it->second].empty()};
    if (call.op_id < static_shapes_.size() && static_shapes_[call.op_id])  // nothing read per call: all []
      return {*static_shapes_[call.op_id], recording_.ops[call.op_id].arg_count > 0};
    return {kUnknownShapes, true};  // not readable, or lost with a killed recorder
  }

 private:
  const Recording& recording_;
  std::vector<std::string> formatted_;
  std::unordered_map<uint64_t, uint32_t> shape_of_event_;
  std::vector<std::optional<std::string>> static_shapes_;  // by op id
};

}  // namespace

Profile aggregate(const Recording& recording, const AggregateOptions& options) {
  const Timeline timeline = build_timeline(recording.events);
  const bool memory = recording.options.memory;
  MemoryAttribution mem;
  if (memory) mem = attribute_memory(timeline, recording.mem_events);

  // torch.profiler's EventList._remove_dup_nodes (call_tree.h): a call
  // whose only child has the same name absorbs it (aten::div_ calling
  // aten::div_ is one row entry, not two). The child's self time and self
  // memory become the parent's, and its children the parent's.
  const size_t n = timeline.calls.size();
  std::vector<uint64_t> self_ns(n);
  // Memory: a call's total is its own bytes plus its descendants' (children
  // complete before their parents, so one ascending pass sums them); its
  // self bytes are its own, plus those of the same-name children it folds.
  std::vector<int64_t> total_cpu(n, 0), total_cuda(n, 0), self_cpu(n, 0), self_cuda(n, 0);
  if (memory) {
    for (size_t i = 0; i < n; i++) {
      total_cpu[i] += mem.own_cpu[i];
      total_cuda[i] += mem.own_cuda[i];
      self_cpu[i] = mem.own_cpu[i];
      self_cuda[i] = mem.own_cuda[i];
      if (int64_t p = mem.parent[i]; p >= 0) {
        total_cpu[p] += total_cpu[i];
        total_cuda[p] += total_cuda[i];
      }
    }
  }
  const std::vector<size_t> folded_into = fold_same_name_calls(timeline, recording.ops);
  std::vector<bool> folded(n, false);
  for (size_t i = 0; i < n; i++) self_ns[i] = timeline.calls[i].self_ns;
  for (size_t i = 0; i < n; i++) {
    const size_t into = folded_into[i];
    if (into == i) continue;
    folded[i] = true;
    self_ns[into] += self_ns[i];
    self_cpu[into] += self_cpu[i];
    self_cuda[into] += self_cuda[i];
  }

  Profile profile;
  profile.memory_recorded = memory;
  profile.grouped_by_input_shape = options.group_by_input_shape;
  RowIndex index(profile.rows);
  std::optional<ShapeNames> shape_names;
  if (options.group_by_input_shape) shape_names.emplace(recording);
  for (size_t i = 0; i < n; i++) {
    if (folded[i]) continue;
    OpCall call = timeline.calls[i];
    call.self_ns = self_ns[i];
    auto [shapes, has_inputs] =
        shape_names ? shape_names->of(call) : std::pair<std::string, bool>{"", false};
    OpRow& row = index.row_of(op_name(recording.ops, call.op_id), shapes, has_inputs);
    ++row.calls;
    row.cpu_total_ns += call.duration_ns();
    row.self_cpu_ns += call.self_ns;
    row.cpu_mem += total_cpu[i];
    row.self_cpu_mem += self_cpu[i];
    row.cuda_mem += total_cuda[i];
    row.self_cuda_mem += self_cuda[i];
    if (call.unwound) ++row.unwound_calls;
    profile.self_cpu_total_ns += call.self_ns;
  }
  if (memory && mem.outside_events > 0) {
    // torch's top-level memory events: one "[memory]" call each, no time.
    OpRow& row = index.row_of("[memory]", options.group_by_input_shape ? "[]" : "", false);
    row.calls += mem.outside_events;
    row.cpu_mem += mem.outside_cpu;
    row.self_cpu_mem += mem.outside_cpu;
    row.cuda_mem += mem.outside_cuda;
    row.self_cuda_mem += mem.outside_cuda;
  }
  if (memory) {
    auto peak_info = [&](const MemoryPeak& peak) {
      MemoryPeakInfo info;
      info.seen = peak.seen;
      info.bytes = peak.bytes;
      info.at_s = peak.at_ns >= recording.clock.start_monotonic_ns
                      ? (peak.at_ns - recording.clock.start_monotonic_ns) / 1e9
                      : 0;
      if (peak.call >= 0) info.op = op_name(recording.ops, timeline.calls[peak.call].op_id);
      info.device_index = peak.device_index;
      return info;
    };
    profile.cpu_memory_peak = peak_info(mem.cpu_peak);
    profile.cuda_memory_peak = peak_info(mem.cuda_peak);
    profile.memory_unmatched_frees = mem.unmatched_frees;
  }
  std::sort(profile.rows.begin(), profile.rows.end(), [](const OpRow& a, const OpRow& b) {
    return a.name != b.name ? a.name < b.name : a.input_shapes < b.input_shapes;
  });

  profile.calls_unwound = timeline.calls_unwound;
  profile.exits_without_entry = timeline.exits_without_entry;
  profile.calls_open_at_end = timeline.calls_open_at_end;
  profile.events_unknown_kind = timeline.events_unknown_kind;
  profile.events_lost = recording.stats.events_lost;
  profile.threads = timeline.threads;
  return profile;
}

}  // namespace gpuprof
