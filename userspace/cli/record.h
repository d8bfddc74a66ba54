// cli/record.h: `gpuprof record`: trace a process, write a record file,
// print the operator table.
#pragma once

#include <string>
#include <vector>

#include "cli/report.h"

namespace CLI {
class App;
}

namespace gpuprof::cli {

struct RecordOptions {
  int pid = 0;
  bool system_wide = false;  // -a: every process (docs/system-wide.md)
  std::vector<std::string> command;
  std::string output_path;  // "" -> gpuprof.data (the previous one kept as gpuprof.data.old)
  double duration_s = 0;
  uint32_t ring_buffer_mb = 32;
  std::string exit_mode = "emulated";
  bool record_shapes = false;
  bool profile_memory = false;
  uint32_t sample_hz = 0;  // -F
  bool no_ops = false;
  bool with_stack = false;
  bool inject_cupti = false;  // --inject-cupti: -p's job gets the CUPTI shim through ptrace (docs/injection.md)
  bool with_modules = false;  // --with-modules: --with-stack and the modules' attribute names (docs/modules.md)
  bool follow_forks = false;
  bool quiet = false;  // no table on stdout
  // Schedules and long runs (docs/long-runs.md).
  std::string schedule;                // --schedule skip_first=S,wait=W,warmup=U,active=A,repeat=R
  std::vector<std::string> step_ops;   // --step-op NAME (repeatable)
  double step_time_s = 0;              // --step-time SECONDS
  std::string on_cycle;                // --on-cycle TEMPLATE
  std::string push_url;                // --push URL: each cycle's profile to a Pyroscope server
  double push_every_s = 0;             // --push-every SECONDS: cycles of this length (no --schedule)
  std::string push_app;                // --push-app NAME: the application name ("": gpuprof.COMM)
  std::string rotate;                  // --rotate SIZE|DURATION
  uint32_t keep = 0;                   // --keep N
  bool verbose = false;
  ReportOptions table;
};

void add_record_command(CLI::App& app, RecordOptions& options);
int run_record(RecordOptions options);

}  // namespace gpuprof::cli
