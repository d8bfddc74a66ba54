#include "cli/report.h"

#include <CLI/CLI.hpp>
#include <cstdio>

#include "aggregator.h"
#include "record_file.h"

namespace gpuprof::cli {

void add_table_options(CLI::App& command, ReportOptions& options) {
  std::string keys;
  for (std::string_view key : valid_sort_key_names()) keys += (keys.empty() ? "" : ", ") + std::string(key);
  command.add_option("--sort-by", options.sort_by, "sort key, as in key_averages().table(sort_by=...): " + keys)
      ->capture_default_str();
  command.add_option("--row-limit", options.row_limit, "rows to print (-1: all)")->capture_default_str();
}

void add_report_command(CLI::App& app, ReportOptions& options) {
  CLI::App* report = app.add_subcommand("report", "Print the operator table of a recording");
  report->add_option("file", options.input_path, "record file written by gpuprof record")
      ->capture_default_str();
  add_table_options(*report, options);
  report->footer(
      "Examples:\n"
      "  gpuprof report                                  # ./gpuprof.data\n"
      "  gpuprof report run.gpuprof --sort-by self_cpu_time_total --row-limit 10\n");
}

int run_report(const ReportOptions& options) {
  std::string error;
  auto sort_key = parse_sort_key(options.sort_by, &error);
  if (!sort_key) {
    std::fprintf(stderr, "gpuprof: error: %s\n", error.c_str());
    return 2;
  }
  auto recording = read_recording(options.input_path, &error);
  if (!recording) {
    std::fprintf(stderr, "gpuprof: error: %s\n", error.c_str());
    return 1;
  }
  if (!recording->complete)
    std::fprintf(stderr,
                 "gpuprof: warning: %s is incomplete (%s); reporting its %zu complete events\n",
                 options.input_path.c_str(),
                 recording->incomplete_reason.empty() ? "the recorder did not finish"
                                                      : recording->incomplete_reason.c_str(),
                 recording->events.size());
  Profile profile = aggregate(*recording);
  TableOptions table;
  table.sort_by = *sort_key;
  table.row_limit = options.row_limit;
  std::string text = format_op_table(profile, table);
  if (profile.rows.empty())
    text = "No operator calls were recorded (" + std::to_string(recording->events.size()) +
           " events).\n";
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::string notes = format_profile_notes(profile);
  std::fwrite(notes.data(), 1, notes.size(), stdout);
  std::fflush(stdout);
  return 0;
}

}  // namespace gpuprof::cli
