// gpuprof: operator-level profiles of PyTorch processes, from outside.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "build_info.h"  // build/, written by the Makefile

#include "cli/calibrate.h"
#include "cli/help_format.h"
#include "cli/option_checks.h"
#include "cli/record.h"
#include "cli/report.h"
#include "cli/top.h"

int main(int argc, char** argv) {
  CLI::App app{"gpuprof: torch.profiler's operator tables for a running PyTorch process, "
               "without changing or restarting it"};
  app.require_subcommand(1);
  // Before the commands are added: they take their parent's formatter.
  app.formatter(std::make_shared<gpuprof::cli::HelpFormatter>(gpuprof::cli::help_width()));
  app.set_version_flag("--version", "gpuprof 0.1.0 (commit " GPUPROF_COMMIT ", built " GPUPROF_BUILD_DATE ")");
  gpuprof::cli::RecordOptions record;
  gpuprof::cli::ReportOptions report;
  gpuprof::cli::add_record_command(app, record);
  gpuprof::cli::add_report_command(app, report);
  gpuprof::cli::TopOptions top;
  gpuprof::cli::add_top_command(app, top);
  gpuprof::cli::CalibrateOptions calibrate;
  gpuprof::cli::add_calibrate_command(app, calibrate);
  gpuprof::cli::group_options_for_help(app);
  app.footer(
      "Examples:\n"
      "  sudo gpuprof record -p 4242                       # attach; Ctrl-C (or -d 10) stops\n"
      "  sudo gpuprof record -o run.gpuprof -- /usr/bin/python3 train.py\n"
      "  gpuprof report run.gpuprof --sort-by self_cpu_time_total --row-limit 10\n"
      "  sudo gpuprof top -p 4242                          # live view; q quits\n");
  std::vector<std::string> commands;
  for (const auto* sub : app.get_subcommands([](CLI::App*) { return true; })) commands.push_back(sub->get_name());
  // A mistyped command reads better as one than as CLI11's "A subcommand
  // is required".
  if (argc > 1 && argv[1][0] != '-' && gpuprof::cli::subcommand_in(2, argv, commands).empty()) {
    const std::string nearest = gpuprof::cli::nearest_name(argv[1], commands);
    std::string all;
    for (const auto& name : commands) all += (all.empty() ? "" : ", ") + name;
    if (!nearest.empty())
      std::fprintf(stderr, "gpuprof: error: unknown command '%s': did you mean '%s'? (see gpuprof --help)\n",
                   argv[1], nearest.c_str());
    else
      std::fprintf(stderr, "gpuprof: error: unknown command '%s': the commands are %s (see gpuprof --help)\n",
                   argv[1], all.c_str());
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // The help that lists the option the error is about.
    const std::string command = gpuprof::cli::subcommand_in(argc, argv, commands);
    std::fprintf(stderr, "gpuprof: error: %s (see gpuprof %s--help)\n", e.what(),
                 command.empty() ? "" : (command + " ").c_str());
    return 2;
  }
  if (app.got_subcommand("record")) return gpuprof::cli::run_record(record);
  if (app.got_subcommand("top")) return gpuprof::cli::run_top(top);
  if (app.got_subcommand("calibrate")) return gpuprof::cli::run_calibrate(calibrate);
  return gpuprof::cli::run_report(report);
}
