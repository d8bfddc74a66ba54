// report_reads.h: how `gpuprof report` reads a recording for each output:
// whole, or (where the output allows) in two streaming reads whose memory
// is flat in the events (docs/report.md, "Memory"; docs/record-file.md,
// "Streaming reads"): a first read of every chunk but the events (the
// probe costs are written last; it notes where the stack pairs end), and a
// second that hands the events to the output's RecordStream.
//
// Each read_for_X returns the streamed output with its Recording (read
// without its events), or the Recording read whole when it cannot be
// streamed (the output is then made from it as usual), or the exit status
// of a read that failed (its error printed).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <variant>

#include "analyze/gpu_time.h"
#include "analyze/module_tree.h"
#include "analyze/process_filter.h"
#include "analyze/process_tables.h"
#include "analyze/profile.h"
#include "analyze/stack_sums.h"
#include "analyze/streamed_aggregate.h"
#include "output/chrome_trace.h"
#include "output/gpu_kernel_table.h"
#include "output/launch_table.h"
#include "cli/trace_export.h"
#include "output/folded_stacks.h"
#include "record/record_stream.h"
#include "record/recording.h"

namespace gpuprof::cli {

// Reads a recording for an output: corrupt chunks skipped, one warning line
// on stderr for each, or (strict) refused. nullopt after printing the error.
// With a stream (record/record_stream.h) the events may be handed to it
// instead; *whole_needed then says when it must be read whole after all.
std::optional<Recording> read_recording_for_output(const std::string& path, bool strict,
                                                   RecordStream* stream = nullptr, bool* whole_needed = nullptr);

// A test hook (docs/record-file.md, "Streaming reads"): with
// GPUPROF_REPORT_READ_WHOLE set, every output reads the recording whole, so
// that tests can compare a streamed output with the whole read's.
bool streaming_allowed();

// The plain op table: aggregated as the events come (streamed_aggregate.h);
// a system-wide recording's (record -a), a table per process
// (streamed_process_tables.h).
struct StreamedTable {
  Recording recording;
  std::optional<Profile> profile;        // a recording of one process
  std::optional<ProcessTables> tables;   // a system-wide one
};
// filtered: --pid/--comm choose processes. Their table's note on Python
// stacks cut short counts the chosen processes' op calls, which a streamed
// read counts per stack only: a recording made with --with-stack is then
// read whole. grouping: rows per op and input shapes or stack (the last
// pairs come from the first read).
std::variant<StreamedTable, Recording, int> read_for_table(const std::string& path, bool strict, bool raw_times,
                                                          bool filtered, const TableGrouping& grouping);

// --folded (self_cpu_time or samples): stacks summed as they come
// (streamed_stack_sums.h); a system-wide recording's, each process's
// stacks under its root frame (streamed_process_metric_sums.h).
// --metric self_cuda_time reads whole: GPU activities stop a streaming read.
// choice (--pid/--comm): a system-wide recording's stacks are the chosen
// processes', and the recording is theirs (select_processes, counting the
// events their selection holds); none chosen: every process's, as without
// one (run_report then says none matched).
struct StreamedFolded {
  Recording recording;
  FoldedStacks folded;
};
std::variant<StreamedFolded, Recording, int> read_for_folded(const std::string& path, bool strict,
                                                            FoldedMetric metric, bool raw_times,
                                                            const ProcessChoice& choice = {});

// --pprof: the stacks of every column the profile has (calls, self CPU,
// samples: streamed_metric_sums.h) summed as they come; a system-wide
// recording's (record -a), each process's
// (streamed_process_metric_sums.h). A recording with GPU activities reads
// whole (their calls need every call). choice: as read_for_folded's.
struct StreamedPprof {
  Recording recording;
  StreamedPprofSums sums;
};
std::variant<StreamedPprof, Recording, int> read_for_pprof(const std::string& path, bool strict, bool raw_times,
                                                           const ProcessChoice& choice = {});

// --chrome-trace, for what streamed_chrome_trace.h serves: each thread's
// calls spilled to a temporary file, which the trace replays.
struct StreamedTrace {
  Recording recording;  // without its events
  StreamedTraceCalls calls;
};
struct TraceRead {
  std::optional<std::regex> ops;  // --ops PATTERN (nullopt: none)
  // --speedscope: the calls and samples alone (the profile draws nothing
  // else): the rest dropped as it comes.
  bool calls_only = false;
  // false: a record -a recording is read whole (the trace of several files
  // gives each of its processes a track, which its calls, replayed as one,
  // are not split into).
  bool system_wide = true;
  // --pid/--comm: a record -a recording's chosen processes alone, as
  // select_processes() holds them (chosen_processes_stream.h; what it does
  // not serve, or a choice of none, is read whole).
  ProcessChoice choice;
};
std::variant<StreamedTrace, Recording, int> read_for_trace(const std::string& path, bool strict,
                                                           const TraceRead& read);

// --modules: each thread's settled calls placed in the module tree as they
// come (streamed_module_tree.h). A recording without entry stacks reads
// whole (for report's error), and so does one of record -a, but for the
// processes choice (--pid/--comm) chooses when one of them at most ran ops
// (chosen_processes_stream.h).
struct StreamedModules {
  Recording recording;  // without its events
  ModuleTree tree;
};
std::variant<StreamedModules, Recording, int> read_for_modules(const std::string& path, bool strict,
                                                               bool raw_times, const ProcessChoice& choice = {});

// --kernels: each GPU activity charged to the op of its launch as the
// records come (streamed_kernel_table.h); a record -a recording reads whole.
struct StreamedKernels {
  Recording recording;  // without its events
  GpuKernelSummary summary;
};
std::variant<StreamedKernels, Recording, int> read_for_kernels(const std::string& path, bool strict);

// --gpu (analyze/gpu_time.h): every figure from the GPU records, which the
// first read hands to sorts through temporary files (sorted_gpu_time.h),
// and the host waits' charges from the op events, streamed in the second
// read (streamed_host_waits.h). A recording without the CUPTI shim: the first
// read's head alone (a Recording without events, for run_report to say it
// has no GPU times: it costs no more memory than a streamed output); one
// whose --pid/--comm choose processes of a record -a recording: read whole
// (run_report chooses them).
struct StreamedGpuTime {
  Recording recording;  // without its events or GPU records
  std::vector<GpuDeviceTime> devices;
};
std::variant<StreamedGpuTime, Recording, int> read_for_gpu_time(const std::string& path, bool strict,
                                                                 const ProcessChoice& choice = {});

// --launches: each CUDA launch counted under the op of its call as the
// records come (streamed_launch_table.h); a recording with GPU activities
// (whose unnamed launches take CUPTI's names) reads whole. choice
// (--pid/--comm): a record -a recording's chosen processes' launches, as
// read_for_trace's (TraceRead::choice).
struct StreamedLaunches {
  Recording recording;  // without its events
  LaunchSummary summary;
};
std::variant<StreamedLaunches, Recording, int> read_for_launches(const std::string& path, bool strict,
                                                                 const ProcessChoice& choice = {});

// A read_for_X's outcome: its Recording into `recording` and its output
// into `out`, or the Recording read whole; the exit status of a read that
// failed.
template <typename Streamed, typename Output>
std::optional<int> take_read(std::variant<Streamed, Recording, int> read, Output Streamed::*output,
                             std::optional<Recording>& recording, std::optional<Output>& out) {
  if (const int* status = std::get_if<int>(&read)) return *status;
  if (Streamed* streamed = std::get_if<Streamed>(&read)) {
    recording = std::move(streamed->recording);
    out = std::move(streamed->*output);
  } else {
    recording = std::move(std::get<Recording>(read));
  }
  return std::nullopt;
}

}  // namespace gpuprof::cli
