// cli/trace_export.h: --chrome-trace OUT (report and record): a recording as
// a Chrome/Perfetto trace, cut down by --time-range and --ops; --speedscope
// OUT (report): the recording in speedscope's own format; --pprof OUT
// (report): a pprof profile.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analyze/stack_sums.h"
#include "analyze/streamed_process_metric_sums.h"
#include "output/chrome_trace.h"
#include "output/chrome_trace_several.h"
#include "output/pprof.h"

namespace CLI {
class App;
}

namespace gpuprof {
struct Recording;
}

namespace gpuprof::cli {

struct TraceExportOptions {
  std::string output;      // "" when no trace is wanted; "-" for stdout; *.gz gzipped
  std::string time_range;  // START:END, seconds since the recording started
  std::string ops;         // regex searched in op names
  std::string mode = "600";  // --mode: the trace file's permissions (octal)
  std::string speedscope;    // --speedscope OUT: "" when not wanted; "-" for stdout; *.gz gzipped
  std::string pprof;         // --pprof OUT: "" when not wanted; "-" for stdout; *.gz gzipped
  bool raw_times = false;    // --pprof: self_cpu as measured
};

// Adds --chrome-trace, --time-range and --ops (the last two need the first).
void add_trace_export_options(CLI::App& command, TraceExportOptions& options);

// --time-range and --ops as the trace writer takes them; nullopt after
// saying why on stderr.
std::optional<ChromeTraceOptions> chrome_trace_options(const TraceExportOptions& options);

// Writes the trace of `recording` (read from input_path); prints one line
// on stderr saying what was written. Returns the process exit code.
// Adds --speedscope (report only: it is made from the whole file).
void add_speedscope_option(CLI::App& command, TraceExportOptions& options);

// Writes options.speedscope; one line on stderr says what was written.
// Returns the process exit code.
// streamed: a streamed read's calls (streamed_chrome_trace.h; nullptr:
// the recording's events).
int export_speedscope(const Recording& recording, const std::string& input_path, const TraceExportOptions& options,
                      const StreamedTraceCalls* streamed = nullptr);

// Adds --pprof (report only).
void add_pprof_option(CLI::App& command, TraceExportOptions& options);

// The stack sums of a streamed read: a recording of one process's
// (analyze/streamed_metric_sums.h), or a system-wide one's, by process
// (analyze/streamed_process_metric_sums.h).
struct StreamedPprofSums {
  std::map<StackMetric, StackSums> sums;
  std::optional<std::map<uint32_t, ProcessMetricSums>> by_process;
};

// A recording for export_pprof: read whole, or (streamed: not null) its
// streamed read's stack sums, moved from when the profile is made.
PprofInput pprof_input(const Recording& recording, const std::string& input_path, StreamedPprofSums* streamed);

// Writes options.pprof of one recording or several (report A B ... --pprof,
// each labelled with its file); one line on stderr says what was written.
// Returns the process exit code.
int export_pprof(const std::vector<PprofInput>& inputs, const TraceExportOptions& options);

int export_chrome_trace(const Recording& recording, const std::string& input_path,
                        const TraceExportOptions& options,
                        const StreamedTraceCalls* streamed = nullptr);
// Several recordings of one process each (a system-wide recording's
// processes apart), read from `files` files, in one trace aligned on
// wall-clock time (report A B ... --chrome-trace: chrome_trace_several.h).
int export_chrome_trace(const std::vector<TraceInput>& inputs, size_t files, const TraceExportOptions& options);

}  // namespace gpuprof::cli
