// cli/calibrate.h: `gpuprof calibrate`: the op probes' cost on this machine,
// as record measures it at attach (probe_calibration.h), without a target:
// to see what reports will take out of op times, and how stable it is.
#pragma once

#include <string>

namespace CLI {
class App;
}

namespace gpuprof::cli {

struct CalibrateOptions {
  int repeat = 1;
};

void add_calibrate_command(CLI::App& app, CalibrateOptions& options);
int run_calibrate(const CalibrateOptions& options);

}  // namespace gpuprof::cli
