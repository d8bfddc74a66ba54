#include "target_process.h"

#include "elf_image.h"

#include <unistd.h>

#include <cstdio>
#include <algorithm>
#include <fstream>
#include <sstream>

namespace gpuprof {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::string proc_path(int pid, const char* leaf) {
  return "/proc/" + std::to_string(pid) + "/" + leaf;
}

}  // namespace

bool process_alive(int pid) {
  if (pid <= 0) return false;
  std::string stat = read_file(proc_path(pid, "stat"));
  if (stat.empty()) return false;
  // Field 3, after "pid (comm) ": comm may hold spaces and parens, so look
  // past the last ')'.
  size_t close = stat.rfind(')');
  if (close == std::string::npos || close + 2 >= stat.size()) return false;
  char state = stat[close + 2];
  return state != 'Z' && state != 'X';
}

ProcessInfo describe_process(int pid) {
  ProcessInfo info;
  info.pid = pid;
  info.comm = read_file(proc_path(pid, "comm"));
  while (!info.comm.empty() && info.comm.back() == '\n') info.comm.pop_back();
  info.cmdline = read_file(proc_path(pid, "cmdline"));
  while (!info.cmdline.empty() && info.cmdline.back() == '\0') info.cmdline.pop_back();
  for (char& c : info.cmdline)
    if (c == '\0') c = ' ';
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) == 0) info.hostname = host;
  return info;
}

std::optional<MappedLibrary> find_mapped_library(int pid, std::string_view name_prefix) {
  std::ifstream maps(proc_path(pid, "maps"));
  std::string line;
  while (std::getline(maps, line)) {
    // address perms offset dev inode pathname
    size_t slash = line.find('/');
    if (slash == std::string::npos) continue;
    std::string path = line.substr(slash);
    if (path.ends_with(" (deleted)")) continue;
    std::string_view base = std::string_view(path).substr(path.rfind('/') + 1);
    if (!base.starts_with(name_prefix)) continue;
    return MappedLibrary{path, proc_path(pid, "root") + path};
  }
  return std::nullopt;
}

std::optional<std::pair<uint64_t, uint64_t>> mapped_address_range(int pid, std::string_view path_in_target) {
  std::ifstream maps(proc_path(pid, "maps"));
  std::string line;
  std::optional<std::pair<uint64_t, uint64_t>> range;
  while (std::getline(maps, line)) {
    size_t slash = line.find('/');
    if (slash == std::string::npos || std::string_view(line).substr(slash) != path_in_target) continue;
    unsigned long long start = 0, end = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx", &start, &end) != 2) continue;
    if (!range) range = std::pair<uint64_t, uint64_t>{start, end};
    range->first = std::min<uint64_t>(range->first, start);
    range->second = std::max<uint64_t>(range->second, end);
  }
  return range;
}

std::optional<uint64_t> find_symbol_in_target(int pid, std::string_view name_prefix,
                                              std::string_view symbol) {
  std::ifstream maps(proc_path(pid, "maps"));
  std::string line;
  std::optional<uint64_t> base;
  std::string path;
  while (std::getline(maps, line)) {
    // address perms offset dev inode pathname
    size_t slash = line.find('/');
    if (slash == std::string::npos) continue;
    path = line.substr(slash);
    std::string_view name = std::string_view(path).substr(path.rfind('/') + 1);
    if (!name.starts_with(name_prefix)) continue;
    unsigned long long start = 0, offset = 0;
    char perms[8];
    if (std::sscanf(line.c_str(), "%llx-%*x %7s %llx", &start, perms, &offset) == 3 && offset == 0) {
      base = start;
      break;
    }
  }
  if (!base) return std::nullopt;
  std::string error;
  auto elf = ElfImage::open(proc_path(pid, "root") + path, &error);
  if (!elf) return std::nullopt;
  std::optional<uint64_t> value = elf->symbol_value(symbol);
  if (!value) return std::nullopt;
  // Shared libraries are linked at 0: the first PT_LOAD (file offset 0) is
  // mapped at the load address.
  return *base + *value;
}

}  // namespace gpuprof
