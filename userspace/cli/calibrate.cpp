// cli/calibrate.cpp: gpuprof calibrate (cli/calibrate.h).
#include "cli/calibrate.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <vector>

#include "probe/probe_calibration.h"

namespace gpuprof::cli {

void add_calibrate_command(CLI::App& app, CalibrateOptions& options) {
  CLI::App* calibrate = app.add_subcommand(
      "calibrate",
      "Measure what one hit of an op probe costs a thread on this machine, as record does at attach to take "
      "it out of op times (docs/overhead.md, \"Compensation\")");
  calibrate->add_option("-n,--repeat", options.repeat, "calibrations to run, one line each, then their spread")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  calibrate->footer(
      "Examples:\n"
      "  sudo gpuprof calibrate\n"
      "  sudo gpuprof calibrate -n 10   # how stable the estimate is here\n");
}

int run_calibrate(const CalibrateOptions& options) {
  std::vector<uint32_t> totals;
  for (int i = 0; i < options.repeat; i++) {
    auto costs = calibrate_probe_costs();
    if (!costs) {
      std::fprintf(stderr, "gpuprof: error: %s\n", costs.error().c_str());
      return 1;
    }
    totals.push_back(costs->total_ns());
    std::printf("%s; took %.1f ms\n", describe_probe_costs(*costs, /*every_kind=*/true).c_str(), costs->took_ns / 1e6);
    std::fflush(stdout);
  }
  if (totals.size() > 1) {
    std::vector<uint32_t> sorted = totals;
    std::sort(sorted.begin(), sorted.end());
    const double median = sorted[sorted.size() / 2];
    std::printf("%zu calibrations: total per call %.2f us median, %.2f to %.2f us (%.1f%% to +%.1f%% of the median)\n",
                totals.size(), median / 1000, sorted.front() / 1000.0, sorted.back() / 1000.0,
                100.0 * (sorted.front() - median) / median, 100.0 * (sorted.back() - median) / median);
  }
  return 0;
}

}  // namespace gpuprof::cli
