#include "target/target_process.h"

#include "symbols/elf_image.h"

#include <sys/sysmacros.h>
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

ProcessInfo describe_launched_command(int pid, const std::vector<std::string>& argv) {
  ProcessInfo info = describe_process(pid);  // the hostname; comm and cmdline are still gpuprof's
  info.comm.clear();
  info.cmdline.clear();
  if (!argv.empty()) info.comm = argv[0].substr(argv[0].rfind('/') + 1).substr(0, 15);
  for (const std::string& arg : argv) info.cmdline += (info.cmdline.empty() ? "" : " ") + arg;
  return info;
}

std::optional<uint64_t> find_symbol_in_target(int pid, std::string_view name_prefix,
                                              std::string_view symbol) {
  auto maps = read_maps(pid);
  if (!maps) return std::nullopt;
  auto library = find_mapped_library(pid, *maps, name_prefix);
  if (!library) return std::nullopt;
  std::optional<uint64_t> base;
  for (const MapsEntry& entry : *maps)
    if (entry.offset == 0 && entry.inode == library->inode && makedev(entry.dev_major, entry.dev_minor) == library->dev) {
      base = entry.start;
      break;
    }
  if (!base) return std::nullopt;
  auto elf = ElfImage::open(library->path_for_us);
  if (!elf) return std::nullopt;
  std::optional<uint64_t> value = elf->symbol_value(symbol);
  if (!value) return std::nullopt;
  // Shared libraries are linked at 0: the first PT_LOAD (file offset 0) is
  // mapped at the load address.
  return *base + *value;
}

std::optional<uint64_t> find_variable_in_target(int pid, std::string_view name_prefix, std::string_view symbol) {
  std::optional<uint64_t> address = find_symbol_in_target(pid, name_prefix, symbol);
  if (!address) return std::nullopt;
  auto maps = read_maps(pid);
  if (!maps) return std::nullopt;
  for (const MapsEntry& entry : *maps)
    if (*address >= entry.start && *address < entry.end)
      return entry.perms.size() > 1 && entry.perms[1] == 'w' ? address : std::nullopt;
  return std::nullopt;
}

}  // namespace gpuprof
