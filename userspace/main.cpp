// gpuprof: operator-level profiles of PyTorch processes, from outside.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "cli/calibrate.h"
#include "cli/record.h"
#include "cli/report.h"
#include "cli/top.h"

int main(int argc, char** argv) {
  CLI::App app{"gpuprof: torch.profiler's operator tables for a running PyTorch process, "
               "without changing or restarting it"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "gpuprof 0.1.0");
  gpuprof::cli::RecordOptions record;
  gpuprof::cli::ReportOptions report;
  gpuprof::cli::add_record_command(app, record);
  gpuprof::cli::add_report_command(app, report);
  gpuprof::cli::TopOptions top;
  gpuprof::cli::add_top_command(app, top);
  gpuprof::cli::CalibrateOptions calibrate;
  gpuprof::cli::add_calibrate_command(app, calibrate);
  app.footer(
      "Examples:\n"
      "  sudo gpuprof record -p 4242                       # attach; Ctrl-C (or -d 10) stops\n"
      "  sudo gpuprof record -o run.gpuprof -- /usr/bin/python3 train.py\n"
      "  gpuprof report run.gpuprof --sort-by self_cpu_time_total --row-limit 10\n"
      "  sudo gpuprof top -p 4242                          # live view; q quits\n");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "gpuprof: error: %s (see gpuprof --help)\n", e.what());
    return 2;
  }
  if (app.got_subcommand("record")) return gpuprof::cli::run_record(record);
  if (app.got_subcommand("top")) return gpuprof::cli::run_top(top);
  if (app.got_subcommand("calibrate")) return gpuprof::cli::run_calibrate(calibrate);
  return gpuprof::cli::run_report(report);
}
