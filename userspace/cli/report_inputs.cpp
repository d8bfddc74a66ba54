// cli/report_inputs.cpp: expand_report_inputs (report_inputs.h).
#include "cli/report_inputs.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "record/record_file.h"

namespace gpuprof::cli {
namespace {

bool is_record_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[sizeof(kRecordMagic)] = {};
  return in.read(magic, sizeof(magic)) && std::memcmp(magic, kRecordMagic, sizeof(magic)) == 0;
}

}  // namespace

Result<std::vector<std::string>> expand_report_inputs(const std::vector<std::string>& paths) {
  std::vector<std::string> expanded;
  for (const std::string& path : paths) {
    std::error_code ec;
    if (!std::filesystem::is_directory(path, ec)) {
      expanded.push_back(path);
      continue;
    }
    std::vector<std::string> found;
    for (const auto& entry : std::filesystem::directory_iterator(path, ec))
      if (entry.is_regular_file(ec) && is_record_file(entry.path())) found.push_back(entry.path().string());
    if (ec) return Error("cannot read the directory " + path + ": " + ec.message());
    if (found.empty()) return Error(path + " is a directory without gpuprof record files");
    std::sort(found.begin(), found.end());
    expanded.insert(expanded.end(), found.begin(), found.end());
  }
  return expanded;
}

}  // namespace gpuprof::cli
