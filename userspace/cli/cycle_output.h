// cli/cycle_output.h: record --on-cycle TEMPLATE, torch's on_trace_ready:
// one output per schedule cycle, in the format its name asks for.
//   *.gpuprof          the cycle's record file itself
//   *.txt              the operator table (record's table options)
//   *.folded           folded stacks (self_cpu_time), for flamegraph.pl
//   *.json, *.json.gz  a Chrome/Perfetto trace
// TEMPLATE must hold "{cycle}" (replaced by the cycle number, from 0), so
// no cycle overwrites another.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

#include "base/result.h"
#include "cli/report.h"

namespace gpuprof::cli {

enum class CycleFormat { record, table, folded, chrome_trace };

// The format TEMPLATE's extension names; an error for a template without
// {cycle} or with another extension.
Result<CycleFormat> parse_cycle_template(const std::string& path_template);

// TEMPLATE with every {cycle} replaced by `cycle`.
std::string cycle_output_path(const std::string& path_template, int64_t cycle);

// Where the cycle's record file is written while it is recorded: the
// output itself for *.gpuprof, a hidden file next to it otherwise.
std::string cycle_record_path(const std::string& output_path, CycleFormat format);

// Turns the finished record file of a cycle into its output (and removes
// the record file when it is not the output). One line on stderr says what
// was written; an error when it could not be.
Result<void> write_cycle_output(const std::string& record_path, const std::string& output_path, CycleFormat format,
                                const ReportOptions& table, mode_t mode);

}  // namespace gpuprof::cli
