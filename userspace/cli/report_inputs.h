// cli/report_inputs.h: report's FILE arguments, a directory standing for
// the recordings in it (docs/fleet.md: `gpuprof report ranks/ --by rank`).
#pragma once

#include <string>
#include <vector>

#include "base/result.h"

namespace gpuprof::cli {

// Each path as given, but a directory replaced by its gpuprof record files
// (regular files that start with the record magic, any name), sorted by
// name; a directory with none is an error that says so.
Result<std::vector<std::string>> expand_report_inputs(const std::vector<std::string>& paths);

}  // namespace gpuprof::cli
