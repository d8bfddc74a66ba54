#include "symbols/target_maps.h"

#include "symbols/elf_image.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

namespace gpuprof {
namespace {

constexpr std::string_view kDeleted = " (deleted)";

std::string proc_path(int pid, std::string_view leaf) {
  return "/proc/" + std::to_string(pid) + "/" + std::string(leaf);
}

// "start-end" as /proc/PID/map_files names the mapping.
std::string map_files_name(const MapsEntry& entry) {
  char name[64];
  std::snprintf(name, sizeof name, "%" PRIx64 "-%" PRIx64, entry.start, entry.end);
  return name;
}

// "" when `path` is the mapped file, else why not.
std::string check_same_file(const std::string& path, const MapsEntry& entry) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return path + ": " + std::strerror(errno);
  if (major(st.st_dev) != entry.dev_major || minor(st.st_dev) != entry.dev_minor || st.st_ino != entry.inode) {
    char what[160];
    std::snprintf(what, sizeof what, ": another file (device %u:%u inode %llu, the mapping's is %u:%u inode %llu)",
                  major(st.st_dev), minor(st.st_dev), static_cast<unsigned long long>(st.st_ino), entry.dev_major,
                  entry.dev_minor, static_cast<unsigned long long>(entry.inode));
    return path + what;
  }
  return "";
}

}  // namespace

std::string_view MapsEntry::base_name() const {
  std::string_view p = path;
  return p.substr(p.rfind('/') + 1);
}

std::vector<MapsEntry> parse_maps(std::string_view text) {
  std::vector<MapsEntry> out;
  while (!text.empty()) {
    const size_t eol = text.find('\n');
    const std::string line(text.substr(0, eol));
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    // start-end perms offset major:minor inode [path], read into the entry
    MapsEntry e;
    char perms[8] = {};
    int consumed = 0;
    if (std::sscanf(line.c_str(), "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %" SCNx32 ":%" SCNx32 " %" SCNu64 "%n",
                    &e.start, &e.end, perms, &e.offset, &e.dev_major, &e.dev_minor, &e.inode, &consumed) != 7)
      continue;
    e.perms = perms;
    size_t p = static_cast<size_t>(consumed);
    while (p < line.size() && line[p] == ' ') p++;
    e.path = line.substr(p);
    if (std::string_view(e.path).ends_with(kDeleted)) {
      e.deleted = true;
      e.path.resize(e.path.size() - kDeleted.size());
    }
    out.push_back(std::move(e));
  }
  return out;
}

std::optional<std::vector<MapsEntry>> read_maps(int pid) {
  std::ifstream in(proc_path(pid, "maps"));
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return parse_maps(text.str());
}

Result<std::string> openable_path(int pid, const MapsEntry& entry) {
  const std::string map_file = proc_path(pid, "map_files/" + map_files_name(entry));
  std::vector<std::string> candidates;
  char target[4096];
  const ssize_t n = readlink(map_file.c_str(), target, sizeof target - 1);
  if (n > 0 && target[0] == '/') {
    std::string linked(target, static_cast<size_t>(n));
    if (std::string_view(linked).ends_with(kDeleted)) linked.resize(linked.size() - kDeleted.size());
    candidates.push_back(std::move(linked));
  }
  candidates.push_back(proc_path(pid, "root") + entry.path);
  candidates.push_back(entry.path);
  candidates.push_back(map_file);
  std::string tried;
  for (size_t i = 0; i < candidates.size(); i++) {
    const std::string& candidate = candidates[i];
    if (std::find(candidates.begin(), candidates.begin() + static_cast<long>(i), candidate) !=
        candidates.begin() + static_cast<long>(i))
      continue;  // tried already
    const std::string problem = check_same_file(candidate, entry);
    if (problem.empty()) return candidate;
    tried += (tried.empty() ? "" : "; ") + problem;
  }
  std::string why = "cannot open " + entry.path + " as process " + std::to_string(pid) + " maps it (" + tried + ")";
  if (entry.deleted)
    why += "; it was deleted after the process mapped it, and only /proc/PID/map_files still opens it, "
           "which needs CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE";
  return Error(std::move(why));
}

LibraryLookup find_mapped_library(int pid, const std::vector<MapsEntry>& maps, std::string_view name_prefix) {
  LibraryLookup result;
  const MapsEntry* refused = nullptr;
  for (const MapsEntry& entry : maps) {
    // A deleted file (a library replaced on disk while the process runs)
    // is still the code it runs: /proc/PID/map_files opens it.
    if (!entry.is_file() || !entry.base_name().starts_with(name_prefix)) continue;
    if (refused && refused->inode == entry.inode && refused->dev_major == entry.dev_major &&
        refused->dev_minor == entry.dev_minor)
      continue;  // another mapping of a file that did not open
    auto path = openable_path(pid, entry);
    if (!path) {
      // Another file of the same name may still open (a second copy).
      if (result.unreadable.empty()) result.unreadable = path.error();
      refused = &entry;
      continue;
    }
    result.library = MappedLibrary{entry.path + (entry.deleted ? std::string(kDeleted) : ""), *path,
                                   makedev(entry.dev_major, entry.dev_minor), entry.inode};
    result.unreadable.clear();
    return result;
  }
  return result;
}

LibraryLookup find_mapped_library(int pid, std::string_view name_prefix) {
  auto maps = read_maps(pid);
  if (!maps) return {};
  return find_mapped_library(pid, *maps, name_prefix);
}

std::vector<MappedLibrary> find_mapped_libraries(int pid, std::string_view name_prefix, std::string* unreadable) {
  std::vector<MappedLibrary> found;
  auto maps = read_maps(pid);
  if (!maps) return found;
  std::set<std::pair<uint64_t, uint64_t>> seen;  // (dev, inode)
  for (const MapsEntry& entry : *maps) {
    if (!entry.is_file() || !entry.base_name().starts_with(name_prefix)) continue;
    const uint64_t dev = makedev(entry.dev_major, entry.dev_minor);
    if (!seen.insert({dev, entry.inode}).second) continue;
    auto path = openable_path(pid, entry);
    if (!path) {
      if (unreadable->empty()) *unreadable = path.error();
      continue;
    }
    found.push_back(MappedLibrary{entry.path + (entry.deleted ? std::string(kDeleted) : ""), *path, dev, entry.inode});
  }
  return found;
}

std::optional<uint64_t> load_bias(int pid, const MappedLibrary& library) {
  auto maps = read_maps(pid);
  if (!maps) return std::nullopt;
  std::optional<uint64_t> start;
  for (const MapsEntry& entry : *maps)
    if (entry.offset == 0 && entry.inode == library.inode && makedev(entry.dev_major, entry.dev_minor) == library.dev) {
      start = entry.start;
      break;
    }
  if (!start) return std::nullopt;
  auto elf = ElfImage::open(library.path_for_us);
  auto first = elf ? elf->first_load_address() : std::nullopt;
  if (!first) return std::nullopt;
  return *start - *first;
}

std::optional<std::pair<uint64_t, uint64_t>> mapped_address_range(int pid, const MappedLibrary& library) {
  auto maps = read_maps(pid);
  if (!maps) return std::nullopt;
  std::optional<std::pair<uint64_t, uint64_t>> range;
  for (const MapsEntry& entry : *maps) {
    if (makedev(entry.dev_major, entry.dev_minor) != library.dev || entry.inode != library.inode) continue;
    if (!range) range = std::pair<uint64_t, uint64_t>{entry.start, entry.end};
    range->first = std::min(range->first, entry.start);
    range->second = std::max(range->second, entry.end);
  }
  return range;
}

}  // namespace gpuprof
