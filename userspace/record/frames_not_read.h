// frames_not_read.h: the Python frames a recorded stack leaves out, and the
// frames that say so.
//
// BPF reads at most GP_MAX_PY_FRAMES frames of a Python stack (bpf/abi_common.h):
// a deeper stack keeps both ends, its GP_PY_INNER_FRAMES innermost frames
// (the code that runs) and its GP_PY_OUTER_FRAMES outermost (the root, so
// that a flame graph hangs the sample under its true root); the frames
// between are counted, not read. The recorded stack names them with one
// frame where they were, "[N frames not read]". A walk that stopped before
// the chain's end (deeper than GP_PY_MAX_WALK frames, or a frame it could
// not read) has "[outer frames not read]" as its outermost frame: what is
// under it is not the root. Every view prints them as frames (folded
// stacks, the Source Location column, Chrome traces); record and report
// count the stacks that have them (docs/stacks.md).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "record/recording.h"

namespace gpuprof {

inline constexpr std::string_view kOuterFramesNotRead = "[outer frames not read]";

// "[N frames not read]".
std::string frames_not_read_frame(uint64_t count);

// Whether a frame's name is one of the two above.
bool is_frames_not_read_frame(std::string_view name);

// What BPF's walk left out of one stack: the "not read" word of a CPU
// sample or an op entry (bpf/abi_common.h).
struct PythonStackCut {
  uint32_t not_read = 0;          // frames between the innermost and the outermost kept
  bool root_not_reached = false;  // the walk stopped before the chain's end

  static PythonStackCut from_event(uint32_t word);
  bool cut() const { return not_read != 0 || root_not_reached; }

  // The frames of a stack as recorded, outermost first: frame(i) names frame
  // i of the walk (innermost first, i < depth), marker(name) a frame that
  // stands for frames not read. Returns false, and stops, when one of them
  // does.
  template <typename Frame, typename Marker, typename Push>
  bool outermost_first(uint32_t depth, Frame frame, Marker marker, Push push) const;

  // Where the "[N frames not read]" frame goes: right outside frame
  // `innermost_kept - 1` of the walk.
  static uint32_t innermost_kept();
};

template <typename Frame, typename Marker, typename Push>
bool PythonStackCut::outermost_first(uint32_t depth, Frame frame, Marker marker, Push push) const {
  if (root_not_reached && !push(marker(std::string(kOuterFramesNotRead)))) return false;
  for (uint32_t i = depth; i-- > 0;) {
    if (not_read && i + 1 == innermost_kept() && !push(marker(frames_not_read_frame(not_read)))) return false;
    if (!push(frame(i))) return false;
  }
  return true;
}

// Stacks of a recording with frames not read: CPU samples with a Python
// stack, and op entries (record --with-stack).
struct StackCuts {
  uint64_t samples = 0;  // with a Python stack
  uint64_t samples_cut = 0;
  uint64_t entries = 0;  // with a Python stack
  uint64_t entries_cut = 0;
};

StackCuts count_stack_cuts(const Recording& recording);

// The stderr line that says how many were cut ("" when none was).
std::string stack_cuts_note(const StackCuts& cuts);

}  // namespace gpuprof
