#include "record/frames_not_read.h"

#include <cctype>

#include "abi_common.h"

namespace gpuprof {

std::string frames_not_read_frame(uint64_t count) { return "[" + std::to_string(count) + " frames not read]"; }

bool is_frames_not_read_frame(std::string_view name) {
  if (name == kOuterFramesNotRead) return true;
  constexpr std::string_view kTail = " frames not read]";
  if (name.size() <= 1 + kTail.size() || name.front() != '[' || !name.ends_with(kTail)) return false;
  for (char c : name.substr(1, name.size() - 1 - kTail.size()))
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

PythonStackCut PythonStackCut::from_event(uint32_t word) {
  return {.not_read = word & ~GP_PY_ROOT_NOT_REACHED, .root_not_reached = (word & GP_PY_ROOT_NOT_REACHED) != 0};
}

uint32_t PythonStackCut::innermost_kept() { return GP_PY_INNER_FRAMES; }

namespace {

bool has_frames_not_read(const Recording& recording, uint32_t stack_id) {
  if (stack_id >= recording.sample_stacks.size()) return false;
  for (uint32_t frame : recording.sample_stacks[stack_id])
    if (frame < recording.sample_frames.size() && is_frames_not_read_frame(recording.sample_frames[frame]))
      return true;
  return false;
}

}  // namespace

StackCuts count_stack_cuts(const Recording& recording) {
  std::vector<int8_t> cut_of_stack(recording.sample_stacks.size(), -1);  // -1: not looked at yet
  auto is_cut = [&](uint32_t stack_id) {
    if (stack_id >= cut_of_stack.size()) return false;
    if (cut_of_stack[stack_id] < 0) cut_of_stack[stack_id] = has_frames_not_read(recording, stack_id);
    return cut_of_stack[stack_id] == 1;
  };
  StackCuts cuts;
  for (const CpuSample& sample : recording.samples) {
    if (sample.python_stack == kNoPythonStack) continue;
    cuts.samples++;
    cuts.samples_cut += is_cut(sample.python_stack);
  }
  for (const EntryStack& entry : recording.entry_stacks) {
    cuts.entries++;
    cuts.entries_cut += is_cut(entry.stack_id);
  }
  // A streamed recording counts its entries per stack (record_stream.h).
  for (uint32_t stack_id = 0; stack_id < recording.streamed_entry_stacks.size(); stack_id++) {
    cuts.entries += recording.streamed_entry_stacks[stack_id];
    if (is_cut(stack_id)) cuts.entries_cut += recording.streamed_entry_stacks[stack_id];
  }
  return cuts;
}

std::string stack_cuts_note(const StackCuts& cuts) {
  if (!cuts.samples_cut && !cuts.entries_cut) return "";
  std::string which;
  if (cuts.samples_cut)
    which = std::to_string(cuts.samples_cut) + " of " + std::to_string(cuts.samples) + " CPU samples";
  if (cuts.entries_cut)
    which += (which.empty() ? "" : " and ") + std::to_string(cuts.entries_cut) + " of " +
             std::to_string(cuts.entries) + " op calls";
  return "gpuprof: " + which + " have Python stacks deeper than the " + std::to_string(GP_MAX_PY_FRAMES) +
         " frames read: their innermost " + std::to_string(GP_PY_INNER_FRAMES) + " and outermost " +
         std::to_string(GP_PY_OUTER_FRAMES) + " frames are kept, a frame [N frames not read] stands for "
         "those between (docs/stacks.md)\n";
}

}  // namespace gpuprof
