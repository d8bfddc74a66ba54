// cli/report.h: `gpuprof report FILE`: print a recording's operator table,
// or (--folded) its folded stacks for flamegraph.pl and speedscope.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cli/trace_export.h"
#include "record/recording.h"
#include "output/op_table.h"

namespace CLI {
class App;
}

namespace gpuprof {
struct Profile;
}  // namespace gpuprof

namespace gpuprof::cli {

struct ReportOptions {
  std::string input_path = "gpuprof.data";
  // report only: every FILE given; with more than one (or --by), one view
  // of them all (cli/report_many.h, docs/fleet.md). input_path is the first.
  std::vector<std::string> input_paths;
  std::string by;  // --by file|pid|host|rank: the straggler view
  std::string sort_by = "cpu_time_total";
  int row_limit = 100;
  bool group_by_input_shape = false;  // rows per (name, input shapes), with an Input Shapes column
  int group_by_stack_n = 0;  // > 0: rows per (name, top N Python frames), with a Source Location column
  bool raw_times = false;    // times as the probes stamped them (docs/overhead.md, "Compensation")
  // report only: folded stacks instead of the table (docs/folded.md).
  bool folded = false;
  std::string metric = "self_cpu_time";
  // report only: CUDA kernel launches per op instead of the table (docs/cuda.md).
  bool launches = false;
  // report only: GPU time per op and kernel (CUPTI shim) instead of the table.
  bool kernels = false;
  bool gpu = false;  // --gpu: where each GPU's time went (docs/gpu-time.md)
  // --modules: torchprof's layer table (docs/modules.md), with each
  // module's own ops (--show-events), only some modules (--module-paths),
  // down to a depth (--depth).
  bool modules = false;
  bool show_events = false;
  std::vector<std::string> module_paths;
  int depth = -1;
  // report only, system-wide recordings (record -a): only these processes
  // (--pid PID, --comm NAME; repeatable; both: a process must match both).
  std::vector<int> pids;
  std::vector<std::string> comms;
  // --chrome-trace OUT: a trace file instead of (report) or besides (record) the table.
  TraceExportOptions trace;
  // report only: a corrupt chunk is an error (exit 1) instead of skipped and
  // said on stderr (docs/report.md, "Corrupt recordings").
  bool strict = false;
  // record's own table: record said on stderr what its stop line says
  // (stacks with frames not read), which report does not repeat.
  bool recorder_said_its_counts = false;
};

// Adds the table options (--sort-by, --row-limit, --group-by-input-shape,
// --group-by-stack-n)
// that record shares.
void add_table_options(CLI::App& command, ReportOptions& options);
void add_report_command(CLI::App& app, ReportOptions& options);

// The table and the notes under it, as `report` prints them.
std::string format_table_report(const Recording& recording, const Profile& profile, const ReportOptions& options,
                                SortKey sort_key, const std::string& input_path);

// Reads, aggregates and prints. Returns the process exit code.
int run_report(const ReportOptions& options);

}  // namespace gpuprof::cli
