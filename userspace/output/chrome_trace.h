// chrome_trace.h: a recording as a Chrome trace (the Trace Event Format that
// chrome://tracing, Perfetto UI and speedscope open; what torch.profiler's
// export_chrome_trace writes).
//
// What goes in (report FILE --chrome-trace OUT):
//   * one process track for the target (its name, "python3 (1234)"), one
//     thread track per thread that ran an op, was sampled or launched ("M"
//     process_name / thread_name metadata);
//   * every completed op call as a complete event ("ph":"X", "cat":"cpu_op")
//     on its thread, nested by time; args: "call" (the call's id: the index
//     of its ENTRY among the recording's events), "Input Dims" when shapes
//     were recorded (torch's name; an unreadable argument is null),
//     "unwound": true for a call that ended by exception unwinding; with
//     --with-stack its entry's Python stack as "sf" (below);
//   * with --with-stack (--with-modules), every module call (module_tree.h)
//     as a complete event ("cat":"python_function", as torch's with_modules
//     traces file them) named "nn.Module: " and its path
//     ("nn.Module: ResNet.layer1.0.conv1"), args "module": torch's instance
//     label ("Conv2d_18"); from its first op's start to its last op's end,
//     written before the ops so that one as long as its only op encloses
//     it; left out with --ops;
//   * CPU samples as instant events ("ph":"i", "s":"t", "cat":"cpu_sample")
//     named by their innermost frame, with their whole stack (Python frames,
//     the native leaf, kernel frames) as "sf";
//   * CUDA launches seen by the uprobes as zero-length "cuda_runtime" events
//     (cudaLaunchKernel, cuLaunchKernel, ...; args: kernel, grid, block,
//     stream); with the CUPTI shim, GPU activities as complete events on one
//     process per device ("GPU 0") and one thread per stream ("stream 7"),
//     cat "kernel", "gpu_memcpy" or "gpu_memset" as torch's, with flow
//     arrows ("s" at the launch on the CPU thread, "f" at the activity,
//     cat "ac2g") joined by correlation id only;
//   * memory (record --profile-memory) as counters ("ph":"C"): the CPU
//     tensor bytes allocated since the recording started, and each CUDA
//     device's allocator total.
// Stacks are interned once in the trace's "stackFrames" dictionary (each
// frame names its parent), which keeps traces with stacks small.
//
// Timestamps are CLOCK_MONOTONIC, in microseconds since the recording
// started, printed exactly to the nanosecond ("12.345"); the GPU's are on the
// same clock (the shim registers CLOCK_MONOTONIC with CUPTI).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <regex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "analyze/call_tree.h"
#include "analyze/memory_attribution.h"
#include "analyze/module_tree.h"
#include "analyze/op_timeline.h"
#include "base/result.h"
#include "output/streamed_gpu_activities.h"
#include "record/recording.h"

namespace gpuprof {

// --time-range START:END, seconds since the recording started; either side
// may be empty ("2.5:" is from 2.5 s to the end).
struct TraceTimeRange {
  std::optional<double> from_s;
  std::optional<double> until_s;
};
// An error (one line) for a malformed range.
Result<TraceTimeRange> parse_trace_time_range(std::string_view text);

struct ChromeTraceOptions {
  // Events that overlap the range are kept whole (cutting a call would
  // break its nesting); nothing outside it.
  TraceTimeRange range;
  // --ops PATTERN (ECMAScript regex, searched in the op name): keep the
  // calls that match and every call nested in them, with what they did
  // (their samples, launches, GPU activities); memory counters stay.
  std::optional<std::regex> ops;
  std::string ops_pattern;  // as given, for the trace's metadata
};

struct ChromeTraceStats {
  uint64_t events = 0;  // trace events written, metadata included
  uint64_t op_calls = 0;
  uint64_t module_calls = 0;
  uint64_t samples = 0;
  uint64_t gpu_activities = 0;
  uint64_t flows = 0;  // launch -> activity arrows
  uint64_t counters = 0;
};

// Writes the whole JSON document through `write` (called with pieces of
// about 64 KiB); returns what it wrote.
ChromeTraceStats write_chrome_trace(const Recording& recording, const ChromeTraceOptions& options,
                                    const std::function<void(std::string_view)>& write);

// The op calls of a recording read as a stream
// (output/streamed_chrome_trace.h), replayed in the order a trace writes
// them: each thread's calls by start, parents first, the threads in the
// order of their first completed call, each with what its entry adds.
struct TraceCallEntry {
  std::optional<uint64_t> step;   // a step frame's step number (nullopt: any other call)
  std::optional<uint32_t> stack;  // its entry's Python stack (record --with-stack; nullopt: none)
  std::optional<uint32_t> shape;  // its entry's input shapes (record --record-shapes; nullopt: none)
};
using TraceCallVisitor = std::function<void(const OpCall& call, const TraceCallEntry& entry)>;
using ModuleCallVisitor = std::function<void(const ModuleCall& call)>;
using LaunchVisitor = std::function<void(const CudaLaunch& launch)>;
using MemoryLevelVisitor = std::function<void(const MemoryLevel& level)>;
struct StreamedTraceCalls {
  std::function<void(const TraceCallVisitor&)> calls;
  // The threads `calls` replays, in its order, and the same replay of the
  // threads given, in the order given (speedscope.cpp writes each thread's
  // profile as its calls come, by process and thread).
  std::vector<uint32_t> threads;
  std::function<void(std::span<const uint32_t> tids, const TraceCallVisitor&)> calls_of;
  // The module calls (module_tree.h), replayed in the order the trace
  // writes them: each thread's by start, parents first, the threads in the
  // order of their first call; `modules` names their nodes. Null: the
  // recording has no module frames.
  std::function<void(const ModuleCallVisitor&)> module_calls;
  ModuleTree modules;
  // The CUDA launches, replayed in file order (null: none).
  std::function<void(const LaunchVisitor&)> launches;
  // The memory level after each counted allocator event, in time order
  // (memory_levels; null: none).
  std::function<void(const MemoryLevelVisitor&)> memory_levels;
  // The GPU activities with their launches, in the trace's order
  // (streamed_gpu_activities.h; null: none).
  std::function<void(const GpuActivityVisitor&)> gpu_activities;
  // --ops: by index in the recording's samples, whether the sample's
  // innermost call matched or is nested in a call that did (nullopt: no
  // --ops; a sample past the end: no).
  std::optional<std::vector<bool>> samples_in_kept_calls;
};

// The same replay of a recording read whole: its timeline's calls (tree:
// build_call_tree of it) with what their entries add; kept (nullptr: all)
// chooses calls by index in the timeline; threads (nullptr: all, in the
// tree's order) the lists of tree.threads visited, in that order.
void visit_trace_calls(const Recording& recording, const Timeline& timeline, const CallTree& tree,
                       const std::vector<bool>* kept, const TraceCallVisitor& visit,
                       const std::vector<size_t>* threads = nullptr);

// write_chrome_trace of a recording read without its events (`head`), its
// calls replayed by `calls`: the same document, byte for byte, for what a
// streamed trace serves (no launches or GPU activities with --ops:
// streamed_chrome_trace.h).
ChromeTraceStats write_chrome_trace(const Recording& head, const ChromeTraceOptions& options,
                                    const StreamedTraceCalls& calls,
                                    const std::function<void(std::string_view)>& write);

// One process of a trace of several recordings (chrome_trace_several.h
// places them): its tracks and its clock. The recording is of one process
// (a system-wide recording's: select_processes); every thread of it goes on
// the one process track `pid`.
struct TracePart {
  const Recording* recording = nullptr;
  const StreamedTraceCalls* calls = nullptr;  // a streamed read's (nullptr: the recording's events)
  int64_t pid = 0;           // its process track's pid in the trace
  std::string name;          // the track's process_name
  std::string labels;        // its process_labels ("" for none)
  int64_t sort_index = 0;    // its process_sort_index; its GPUs' follow it (+ 1 + device)
  int64_t first_gpu_pid = 0;  // its GPU devices' process tracks: first_gpu_pid + device
  std::string gpu_prefix;    // before "GPU 0" in their names
  // The instant of its CLOCK_MONOTONIC that is the trace's time zero
  // (before its start for a recording that started after the earliest:
  // unsigned arithmetic, as timestamps are taken relative to it).
  uint64_t zero_monotonic_ns = 0;
};

// The trace of several parts in one document, each part's events and
// metadata in turn, one stackFrames dictionary; other_data: the members of
// the document's otherData object (JSON, without its braces). --time-range
// is in seconds since the trace's zero.
ChromeTraceStats write_chrome_trace(const std::vector<TracePart>& parts, const ChromeTraceOptions& options,
                                    std::string_view other_data,
                                    const std::function<void(std::string_view)>& write);

}  // namespace gpuprof
