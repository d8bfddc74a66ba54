#include "cli/cycle_output.h"

#include <unistd.h>

#include <cstdio>

#include "analyze/aggregator.h"
#include "cli/trace_export.h"
#include "output/folded_stacks.h"
#include "base/output_file.h"
#include "record/record_file.h"

namespace gpuprof::cli {
namespace {

constexpr std::string_view kCycleField = "{cycle}";

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

Result<void> write_text(const std::string& path, const std::string& text, mode_t mode) {
  ASSIGN_OR_RETURN(auto file, OutputFile::open(path, mode));
  file->write(text);
  return file->close();
}

// The output of a cycle whose record file is record_path (not a record
// file itself).
Result<void> write_from_record(const std::string& record_path, const std::string& output_path, CycleFormat format,
                               const ReportOptions& table, mode_t mode) {
  ASSIGN_OR_RETURN(const Recording recording, read_recording(record_path));
  if (format == CycleFormat::chrome_trace) {
    TraceExportOptions trace;
    trace.output = output_path;
    trace.mode = std::to_string(mode >> 6 & 7) + std::to_string(mode >> 3 & 7) + std::to_string(mode & 7);
    if (export_chrome_trace(recording, output_path, trace) != 0) return Error("could not write " + output_path);
    return {};
  }
  if (format == CycleFormat::folded)
    return write_text(output_path,
                      format_folded(folded_stacks(recording, FoldedMetric::kSelfCpuTime, table.raw_times)), mode);
  ASSIGN_OR_RETURN(const SortKey sort_key, parse_sort_key(table.sort_by));
  AggregateOptions aggregate_options;
  aggregate_options.group_by_input_shape = table.group_by_input_shape;
  aggregate_options.group_by_stack_n = table.group_by_stack_n;
  aggregate_options.raw_times = table.raw_times;
  const Profile profile = aggregate(recording, aggregate_options);
  return write_text(output_path, format_table_report(recording, profile, table, sort_key, output_path), mode);
}

}  // namespace

Result<CycleFormat> parse_cycle_template(const std::string& path_template) {
  if (path_template.find(kCycleField) == std::string::npos)
    return Error("--on-cycle " + path_template + ": the name must contain {cycle} (e.g. trace_{cycle}.json), "
                 "so that each cycle gets its own file");
  if (ends_with(path_template, ".gpuprof")) return CycleFormat::record;
  if (ends_with(path_template, ".txt")) return CycleFormat::table;
  if (ends_with(path_template, ".folded")) return CycleFormat::folded;
  if (ends_with(path_template, ".json") || ends_with(path_template, ".json.gz")) return CycleFormat::chrome_trace;
  return Error("--on-cycle " + path_template +
               ": unknown extension; one of .gpuprof (record file), .txt (table), .folded (folded stacks), "
               ".json or .json.gz (Chrome/Perfetto trace)");
}

std::string cycle_output_path(const std::string& path_template, int64_t cycle) {
  std::string path = path_template;
  const std::string number = std::to_string(cycle);
  for (size_t at = path.find(kCycleField); at != std::string::npos; at = path.find(kCycleField, at + number.size()))
    path.replace(at, kCycleField.size(), number);
  return path;
}

std::string cycle_record_path(const std::string& output_path, CycleFormat format) {
  if (format == CycleFormat::record) return output_path;
  const size_t slash = output_path.rfind('/');
  const size_t name_at = slash == std::string::npos ? 0 : slash + 1;
  return output_path.substr(0, name_at) + "." + output_path.substr(name_at) + ".gpuprof.partial";
}

Result<void> write_cycle_output(const std::string& record_path, const std::string& output_path, CycleFormat format,
                                const ReportOptions& table, mode_t mode) {
  if (format == CycleFormat::record) return {};
  const Result<void> written = write_from_record(record_path, output_path, format, table, mode);
  unlink(record_path.c_str());
  return written;
}

}  // namespace gpuprof::cli
