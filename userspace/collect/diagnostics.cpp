#include "collect/diagnostics.h"

#include <algorithm>
#include <cstdio>

namespace gpuprof {

void Diagnostics::warn(const std::string& what) {
  std::fprintf(stderr, "gpuprof: warning: %s\n", what.c_str());
  keep(what);
}

void Diagnostics::note(const std::string& what) {
  std::fprintf(stderr, "gpuprof: %s\n", what.c_str());
  keep(what);
}

void Diagnostics::keep(const std::string& what) {
  if (stats_.problems.size() < 64 &&
      std::find(stats_.problems.begin(), stats_.problems.end(), what) == stats_.problems.end())
    stats_.problems.push_back(what);
}

bool Diagnostics::write_failed(const std::string& error) {
  if (write_error_.empty()) write_error_ = error;
  return false;
}

}  // namespace gpuprof
