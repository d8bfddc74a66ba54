#include "python/python_paths.h"

#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>

namespace gpuprof {
namespace {

std::vector<std::string> read_nul_separated(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> parts;
  std::string part;
  for (char c : all) {
    if (c == '\0') {
      parts.push_back(part);
      part.clear();
    } else {
      part += c;
    }
  }
  if (!part.empty()) parts.push_back(part);
  return parts;
}

std::string strip_trailing_slashes(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}

std::string directory_of(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return "";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// Whether directory component `name` ends a standard sys.path entry:
// site-packages, dist-packages, or a stdlib "pythonX.Y" under "lib".
bool is_standard_entry(const std::string& path, size_t begin, size_t end) {
  const std::string name = path.substr(begin, end - begin);
  if (name == "site-packages" || name == "dist-packages") return true;
  if (name.rfind("python3", 0) != 0 || begin < 5 || path.compare(begin - 5, 5, "/lib/") != 0)
    return false;
  // "python3.11" (not "python3": Debian's /usr/lib/python3 is no sys.path entry)
  return name.size() > 8 && name[7] == '.';
}

}  // namespace

PythonPathShortener::PythonPathShortener(std::vector<std::string> directories) {
  for (std::string& dir : directories)
    if (!dir.empty() && dir[0] == '/') directories_.push_back(strip_trailing_slashes(dir));
}

std::string python_sys_path0(const std::vector<std::string>& argv, const std::string& cwd) {
  // Options of the interpreter that take the next argument.
  static const std::string kWithArgument = "WX";
  for (size_t i = 1; i < argv.size(); i++) {
    const std::string& arg = argv[i];
    if (arg == "-" || arg.rfind("-c", 0) == 0 || arg.rfind("-m", 0) == 0) return cwd;
    if (arg.size() > 1 && arg[0] == '-') {
      if (arg.size() == 2 && kWithArgument.find(arg[1]) != std::string::npos) i++;
      continue;
    }
    std::string script = arg[0] == '/' ? arg : cwd + "/" + arg;
    char resolved[PATH_MAX];
    // Python resolves a symlinked script to its real directory.
    if (realpath(script.c_str(), resolved)) script = resolved;
    return directory_of(script);
  }
  return cwd;
}

PythonPathShortener PythonPathShortener::for_process(int pid) {
  const std::string proc = "/proc/" + std::to_string(pid);
  std::vector<std::string> directories;
  char cwd[PATH_MAX];
  ssize_t n = readlink((proc + "/cwd").c_str(), cwd, sizeof(cwd) - 1);
  const std::string working_dir = n > 0 ? std::string(cwd, static_cast<size_t>(n)) : "";
  // The script path is read as the target sees it; through /proc/PID/root
  // would be more exact in a container, and is what realpath cannot give.
  directories.push_back(python_sys_path0(read_nul_separated(proc + "/cmdline"), working_dir));
  for (const std::string& var : read_nul_separated(proc + "/environ")) {
    if (var.rfind("PYTHONPATH=", 0) != 0) continue;
    std::istringstream entries(var.substr(11));
    std::string entry;
    while (std::getline(entries, entry, ':'))
      directories.push_back(entry.empty() || entry[0] == '/' ? entry : working_dir + "/" + entry);
  }
  return PythonPathShortener(std::move(directories));
}

std::string PythonPathShortener::shorten(const std::string& path) const {
  size_t cut = 0;  // length of the longest matching prefix, '/' included
  for (const std::string& dir : directories_) {
    const size_t len = dir == "/" ? 1 : dir.size() + 1;
    if (len > cut && path.size() > len && path.compare(0, dir.size(), dir) == 0 &&
        path[len - 1] == '/')
      cut = len;
  }
  for (size_t slash = path.find('/'); slash != std::string::npos;) {
    size_t next = path.find('/', slash + 1);
    if (next == std::string::npos) break;
    if (next + 1 > cut && is_standard_entry(path, slash + 1, next)) cut = next + 1;
    slash = next;
  }
  return path.substr(cut);
}

}  // namespace gpuprof
