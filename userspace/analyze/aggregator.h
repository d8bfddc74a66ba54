// aggregator.h: Recording -> Profile, the numbers of torch.profiler's
// key_averages() table.
//
// Calls come from build_timeline() (op_timeline.h), which rebuilds each
// thread's op nesting from the stack pointers of the probe events. Rows are
// keyed by OpInfo::name, not by op id: the overloads of one op (add.Tensor,
// add.Scalar) are separate ::call functions with their own ids, and torch
// prints them as one row "aten::add".
#pragma once

#include <optional>
#include <string>
#include <unordered_map>

#include "analyze/call_figures.h"
#include "analyze/memory_attribution.h"
#include "analyze/op_timeline.h"
#include "analyze/profile.h"
#include "analyze/stack_groups.h"
#include "record/recording.h"

namespace gpuprof {

// One row per op name with at least one counted call (unwound calls count;
// calls still open at the end do not), rows sorted by name. An op id outside
// the recording's op table (a damaged file) gets its own row named
// "<unknown op N>" rather than being dropped. Counters under the table come
// from the timeline, events_lost from recording.stats.
//
// Grouped by input shape, rows are per (name, input shapes): torch's
// key_averages(group_by_input_shape=True). With memory recorded, rows carry
// torch's memory columns, and allocator events outside every op make a
// "[memory]" row as in torch (zero time, one call per event).
//
// Grouped by stack (group_by_stack_n > 0, a recording made with
// --with-stack), rows are per (name, [input shapes,] top N frames of the
// call's Python stack): torch's key_averages(group_by_stack_n=N). A call's
// stack is that of its ENTRY (Recording::entry_stacks), innermost first.
//
// Times are compensated for the probes' cost (op_timeline.h,
// "Compensation") when the recording holds its probe calibration, unless
// raw_times; Profile::compensation says which.
struct AggregateOptions {
  bool group_by_input_shape = false;
  int group_by_stack_n = 0;
  bool raw_times = false;  // --raw-times: durations as the probes stamped them
};

// The costs to compensate op times by, per those rules: nullptr for raw times.
const ProbeCosts* compensation_costs(const Recording& recording, bool raw_times);
Profile aggregate(const Recording& recording, const AggregateOptions& options = {});

// A table's profile as its rows are made (aggregate(), and the streamed
// table of memory or GPU columns, streamed_figures_table.h): a row per (op
// name, input shapes, stack group, on GPU), made the first time a group
// completes a call, so ops that never ran get none; rows in the order they
// were made. Without shape grouping the shapes part of the key is always
// "", without stack grouping the stack group always StackGroups::kNoStack.
class TableRows {
 public:
  // memory, gpu: whether the recording has those columns; grouped by input
  // shape and/or the top group_by_stack_n frames of each call's stack.
  TableRows(const Recording& recording, bool memory, bool gpu, bool group_by_input_shape, int group_by_stack_n);

  Profile& profile() { return profile_; }
  // The stack group of an entry's stack (nullopt: none).
  uint32_t stack_group(std::optional<uint32_t> stack_id) { return stack_groups_.of_stack(stack_id); }
  OpRow& row_of(const std::string& name, const std::string& shapes, bool has_inputs, uint32_t stack_group,
                bool on_gpu = false);
  // torch's "[memory]" row (allocator events outside every op) and a GPU
  // activity's row (by its name): no input shapes ("[]" when grouped by
  // them), no stack.
  OpRow& memory_events_row();
  OpRow& gpu_activity_row(const std::string& name);

 private:
  Profile profile_;
  StackGroups stack_groups_;
  std::unordered_map<std::string, size_t> row_of_key_;
};

// What aggregate() adds to a row, shared with a streamed table of memory
// or GPU columns (streamed_figures_table.h): call i's figures (its
// compensated time, self time, memory and GPU time as `figures` has them;
// memory and gpu: whether those were recorded).
void add_call_to_row(OpRow& row, const OpCall& call, const CallFigures& figures, size_t i, bool memory, bool gpu);
// torch's "[memory]" row: allocator events outside every op, one call each.
void add_outside_memory_to_row(OpRow& row, uint64_t events, int64_t cpu_bytes, int64_t cuda_bytes);
// A GPU row's name: its kernel's, memcpy's or memset's (launch_names).
std::string gpu_activity_row_name(const Recording& recording, uint32_t name_id);
// A memory peak as the table's note gives it; op_id: that of the innermost
// call running at it (nullopt: none).
MemoryPeakInfo memory_peak_info(const Recording& recording, const MemoryPeak& peak, std::optional<uint32_t> op_id);

// What aggregate() does last, shared with a streamed aggregate
// (streamed_aggregate.h): rows sorted as the table breaks ties, the
// compensation and the timeline's counters.
void finish_profile(Profile& profile, const Timeline& timeline, const Recording& recording,
                    const ProbeCosts* costs, bool raw_times);

}  // namespace gpuprof
