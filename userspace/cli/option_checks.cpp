#include "cli/option_checks.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>

namespace gpuprof::cli {
namespace {

unsigned kernel_max_sample_hz() {
  std::ifstream in("/proc/sys/kernel/perf_event_max_sample_rate");
  unsigned hz = 0;
  if (in >> hz && hz > 0) return hz;
  return 100000;  // the kernel's default
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); j++) row[j] = j;
  for (size_t i = 1; i <= a.size(); i++) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); j++) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

CLI::Validator positive_seconds() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        char* end = nullptr;
        const double seconds = std::strtod(value.c_str(), &end);
        if (end == value.c_str() || *end != '\0' || !(seconds > 0) || seconds > 1e9)
          return "must be a number of seconds above 0, not " + value;
        return "";
      },
      "SECONDS");
}

CLI::Validator sample_rate() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        char* end = nullptr;
        const long hz = std::strtol(value.c_str(), &end, 10);
        if (end == value.c_str() || *end != '\0' || hz < 1) return "must be a whole number of Hz, 1 or more, not " + value;
        const unsigned max = kernel_max_sample_hz();
        if (static_cast<unsigned long>(hz) > max)
          return value + " Hz is more than the kernel allows now: at most " + std::to_string(max) +
                 " (kernel.perf_event_max_sample_rate, which the kernel lowers when sampling takes too long)";
        return "";
      },
      "HZ");
}

void warn_if_high_sample_rate(unsigned hz) {
  constexpr unsigned kHighSampleHz = 10000;
  if (hz <= kHighSampleHz) return;
  std::fprintf(stderr,
               "gpuprof: warning: -F %u: above %u Hz the target pays for every sample and the machine may not "
               "deliver the rate (the stop line counts what was lost); perf's default is 4000 Hz\n",
               hz, kHighSampleHz);
}

std::string subcommand_in(int argc, char** argv, const std::vector<std::string>& names) {
  for (int i = 1; i < argc; i++) {
    if (std::find(names.begin(), names.end(), argv[i]) != names.end()) return argv[i];
    if (std::string(argv[i]) == "--") break;
  }
  return "";
}

std::string nearest_name(const std::string& word, const std::vector<std::string>& names) {
  std::string best;
  size_t best_distance = 3;  // more edits than that is not a typo
  for (const auto& name : names) {
    const size_t distance = name.rfind(word, 0) == 0 && !word.empty() ? 1 : edit_distance(word, name);
    if (distance < best_distance) best = name, best_distance = distance;
  }
  return best;
}

}  // namespace gpuprof::cli
