// aggregator.cpp: fold the timeline's calls into one row per op name, or per
// (name, input shapes, top stack frames) group.
#include "analyze/aggregator.h"

#include <algorithm>
#include <map>
#include <optional>
#include <utility>
#include <string>
#include <unordered_map>

#include "analyze/call_figures.h"
#include "analyze/gpu_attribution.h"
#include "analyze/input_shapes.h"
#include "analyze/stack_groups.h"
#include "analyze/memory_attribution.h"
#include "analyze/op_timeline.h"

namespace gpuprof {
namespace {

// The shape or stack id of the ENTRY at entry_index (nullopt: none recorded).
std::optional<uint32_t> id_of_entry(const std::unordered_map<uint64_t, uint32_t>& id_of, uint64_t entry_index) {
  auto it = id_of.find(entry_index);
  if (it == id_of.end()) return std::nullopt;
  return it->second;
}


}  // namespace

const ProbeCosts* compensation_costs(const Recording& recording, bool raw_times) {
  return raw_times || !recording.probe_costs ? nullptr : &*recording.probe_costs;
}

TableRows::TableRows(const Recording& recording, bool memory, bool gpu, bool group_by_input_shape,
                     int group_by_stack_n)
    : stack_groups_(recording, std::max(group_by_stack_n, 0)) {
  profile_.memory_recorded = memory;
  profile_.gpu_recorded = gpu;
  profile_.grouped_by_input_shape = group_by_input_shape;
  profile_.group_by_stack_n = std::max(group_by_stack_n, 0);
}

OpRow& TableRows::row_of(const std::string& name, const std::string& shapes, bool has_inputs, uint32_t stack_group,
                         bool on_gpu) {
  auto [it, inserted] = row_of_key_.try_emplace(
      name + '\0' + shapes + '\0' + std::to_string(stack_group) + (on_gpu ? "\0gpu" : ""), profile_.rows.size());
  if (inserted)
    profile_.rows.push_back(OpRow{.name = name, .input_shapes = shapes, .has_inputs = has_inputs,
                                  .stack = stack_groups_.frames()[stack_group], .on_gpu = on_gpu});
  return profile_.rows[it->second];
}

OpRow& TableRows::memory_events_row() {
  return row_of("[memory]", profile_.grouped_by_input_shape ? "[]" : "", false, StackGroups::kNoStack);
}

OpRow& TableRows::gpu_activity_row(const std::string& name) {
  return row_of(name, profile_.grouped_by_input_shape ? "[]" : "", false, StackGroups::kNoStack, true);
}

Profile aggregate(const Recording& recording, const AggregateOptions& options) {
  const ProbeCosts* costs = compensation_costs(recording, options.raw_times);
  const Timeline timeline = build_timeline(recording.events, costs);
  const bool memory = recording.options.memory;
  const bool gpu = recording.cupti_shim.has_value();
  const CallFigures figures = call_figures(recording, timeline);
  const MemoryAttribution& mem = figures.memory;
  const size_t n = timeline.calls.size();

  TableRows table(recording, memory, gpu, options.group_by_input_shape, options.group_by_stack_n);
  Profile& profile = table.profile();
  std::unordered_map<uint64_t, uint32_t> stack_of_entry;
  if (profile.group_by_stack_n > 0) {
    stack_of_entry.reserve(recording.entry_stacks.size());
    for (const EntryStack& e : recording.entry_stacks) stack_of_entry[e.event_index] = e.stack_id;
  }
  std::optional<ShapeNames> shape_names;
  std::unordered_map<uint64_t, uint32_t> shape_of_entry;
  if (options.group_by_input_shape) {
    shape_names.emplace(recording);
    shape_of_entry.reserve(recording.entry_shapes.size());
    for (const EntryShapes& e : recording.entry_shapes) shape_of_entry[e.event_index] = e.shape_id;
  }
  for (size_t i = 0; i < n; i++) {
    if (figures.folded_into[i] != i) continue;
    const OpCall& call = timeline.calls[i];
    auto [shapes, has_inputs] =
        shape_names ? shape_names->of(call.op_id, id_of_entry(shape_of_entry, call.entry_index))
                    : std::pair<std::string, bool>{"", false};
    OpRow& row = table.row_of(op_table_name(recording.ops, call.op_id), shapes, has_inputs,
                              table.stack_group(id_of_entry(stack_of_entry, call.entry_index)));
    add_call_to_row(row, call, figures, i, memory, gpu);
    profile.self_cpu_total_ns += figures.self_ns[i];
  }
  if (memory && mem.outside_events > 0)
    add_outside_memory_to_row(table.memory_events_row(), mem.outside_events, mem.outside_cpu, mem.outside_cuda);
  // torch's GPU rows: every activity, whatever launched it, under its name.
  for (const GpuActivity& a : recording.gpu_activities) {
    OpRow& row = table.gpu_activity_row(gpu_activity_row_name(recording, a.name_id));
    ++row.calls;
    row.self_cuda_ns += gpu_activity_ns(a);
    row.cuda_total_ns += gpu_activity_ns(a);
  }
  if (memory) {
    auto op_of = [&](const MemoryPeak& peak) {
      return peak.call >= 0 ? std::optional<uint32_t>(timeline.calls[peak.call].op_id) : std::nullopt;
    };
    profile.cpu_memory_peak = memory_peak_info(recording, mem.cpu_peak, op_of(mem.cpu_peak));
    profile.cuda_memory_peak = memory_peak_info(recording, mem.cuda_peak, op_of(mem.cuda_peak));
    profile.memory_unmatched_frees = mem.unmatched_frees;
  }
  finish_profile(profile, timeline, recording, costs, options.raw_times);
  return std::move(profile);
}

void add_call_to_row(OpRow& row, const OpCall& call, const CallFigures& figures, size_t i, bool memory, bool gpu) {
  ++row.calls;
  row.cpu_total_ns += call.compensated_ns();
  row.self_cpu_ns += figures.self_ns[i];
  if (memory) {
    row.cpu_mem += figures.cpu_mem[i];
    row.self_cpu_mem += figures.self_cpu_mem[i];
    row.cuda_mem += figures.cuda_mem[i];
    row.self_cuda_mem += figures.self_cuda_mem[i];
  }
  if (gpu) {
    row.self_cuda_ns += figures.self_gpu_ns[i];
    row.cuda_total_ns += figures.gpu_ns[i];
  }
  if (call.unwound) ++row.unwound_calls;
}

void add_outside_memory_to_row(OpRow& row, uint64_t events, int64_t cpu_bytes, int64_t cuda_bytes) {
  row.calls += events;
  row.cpu_mem += cpu_bytes;
  row.self_cpu_mem += cpu_bytes;
  row.cuda_mem += cuda_bytes;
  row.self_cuda_mem += cuda_bytes;
}

std::string gpu_activity_row_name(const Recording& recording, uint32_t name_id) {
  return name_id < recording.launch_names.size() ? recording.launch_names[name_id]
                                                 : "[GPU activity " + std::to_string(name_id) + "]";
}

MemoryPeakInfo memory_peak_info(const Recording& recording, const MemoryPeak& peak, std::optional<uint32_t> op_id) {
  MemoryPeakInfo info;
  info.seen = peak.seen;
  info.bytes = peak.bytes;
  info.at_s = peak.at_ns >= recording.clock.start_monotonic_ns
                  ? (peak.at_ns - recording.clock.start_monotonic_ns) / 1e9
                  : 0;
  if (op_id) info.op = op_display_name(recording.ops, *op_id);
  info.device_index = peak.device_index;
  return info;
}

void finish_profile(Profile& profile, const Timeline& timeline, const Recording& recording,
                    const ProbeCosts* costs, bool raw_times) {
  // The order format_op_table() breaks ties in (op_table.h).
  std::sort(profile.rows.begin(), profile.rows.end(), [](const OpRow& a, const OpRow& b) {
    if (a.name != b.name) return a.name < b.name;
    if (a.input_shapes != b.input_shapes) return a.input_shapes < b.input_shapes;
    if (a.stack != b.stack) return a.stack < b.stack;
    return a.on_gpu < b.on_gpu;
  });

  profile.compensation = costs ? std::optional<ProbeCosts>(*costs) : std::nullopt;
  profile.raw_times_asked = raw_times;
  profile.counters = timeline.counters;
  profile.calls_cut = timeline.calls_cut;
  profile.ranges_ended_elsewhere = timeline.ranges_ended_elsewhere;
  profile.events_after_cut = timeline.events_after_cut;
  profile.events_unknown_kind = timeline.events_unknown_kind;
  profile.events_lost = recording.stats.events_lost;
  profile.threads = timeline.threads;
}

}  // namespace gpuprof
