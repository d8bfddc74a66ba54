// cli/top.h: `gpuprof top`: a live view of a running job's operators.
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace gpuprof::cli {

struct TopOptions {
  int pid = 0;
  bool system_wide = false;  // -a: the process list first (cli/system_top.h)
  std::vector<std::string> command;
  double interval_s = 1.0;
  bool batch = false;       // one text table per refresh (also when stdout is not a terminal)
  int iterations = 0;       // -n: stop after this many refreshes (0: until stopped)
  std::string sort_by = "self_cpu_time_total";
  uint32_t sample_hz = 0;   // -F: CPU samples for the Python lines view (0: none)
  bool python_lines = false;  // --lines: start on (batch: print) the Python lines view
  bool with_modules = false;  // --with-modules: entry stacks and module names, for the module view
  bool modules = false;       // --modules: start on (batch: print) the module view
  bool module_events = false;  // --show-events: each module's own ops under it
  uint32_t ring_buffer_mb = 32;
  bool raw_times = false;   // op times with the probes' own time in them
};

void add_top_command(CLI::App& app, TopOptions& options);
int run_top(const TopOptions& options);

}  // namespace gpuprof::cli
