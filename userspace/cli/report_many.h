// cli/report_many.h: `gpuprof report A B ...` and `--by`: several
// recordings (or the processes of one system-wide recording) in one view:
// one op table of all of them, or per op its Self CPU per file, process or
// host, side by side (docs/fleet.md).
#pragma once

#include "cli/report.h"

namespace gpuprof::cli {

// Reads every options.input_paths, prints the merged table (or --by's
// spread) on stdout. Returns the process exit code.
int run_report_many(const ReportOptions& options);

}  // namespace gpuprof::cli
