// target_maps.h: a target's memory mappings, and how gpuprof opens the files
// they map.
//
// /proc/PID/maps names a file as the *target* would reach it only when the
// target has its own mount namespace (a container). For a process in a
// plain chroot, read from the host, the kernel prints the path from
// gpuprof's root (`/srv/trixie/usr/lib/...`), so /proc/PID/root + that path
// does not exist. Neither view can be trusted blindly, so a mapped file is
// opened through the first of these whose device and inode are those of
// the maps line (docs/record.md, "Processes in chroots and containers"):
//   1. the path /proc/PID/map_files/<start>-<end> links to, as gpuprof sees
//      it (a path that outlives the target: chroots, bind mounts);
//   2. /proc/PID/root + the maps path (containers with their own mount
//      namespace);
//   3. the maps path as it is (a process in gpuprof's own mount namespace);
//   4. /proc/PID/map_files/<start>-<end> itself: the mapped file, whatever
//      namespace it lives in, as long as the mapping does (needs
//      CAP_SYS_ADMIN; overlayfs files whose inode differs by path).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace gpuprof {

struct MapsEntry {
  uint64_t start = 0, end = 0, offset = 0;
  std::string perms;  // "r-xp"
  uint32_t dev_major = 0, dev_minor = 0;
  uint64_t inode = 0;
  std::string path;      // "" for anonymous mappings; "[heap]", "[vdso]"... for pseudo ones
  bool deleted = false;  // the file was unlinked (" (deleted)" cut from path)

  bool is_file() const { return inode != 0 && path.starts_with('/'); }
  bool executable() const { return perms.size() > 2 && perms[2] == 'x'; }
  std::string_view base_name() const;
};

// Parses the text of a /proc/PID/maps file; malformed lines are skipped.
std::vector<MapsEntry> parse_maps(std::string_view text);

// The target's mappings now; nullopt when /proc/PID/maps cannot be read
// (no such process, or not allowed).
std::optional<std::vector<MapsEntry>> read_maps(int pid);

// A path gpuprof can open for the file `entry` maps in process pid, checked
// by device and inode (see the top of this file); an error naming every way
// tried when none leads to that file.
Result<std::string> openable_path(int pid, const MapsEntry& entry);

// A library as the target maps it, and where gpuprof opens it.
struct MappedLibrary {
  std::string path_in_target;  // as the target's /proc/PID/maps shows it (" (deleted)" included)
  std::string path_for_us;     // openable_path(): the same file, from gpuprof's mount namespace
  uint64_t dev = 0, inode = 0; // of the maps line (makedev(major, minor))
};

// The result of looking for a library in a target: found, not mapped (both
// *why and the result empty), or mapped but not openable (*why says why).
struct LibraryLookup {
  std::optional<MappedLibrary> library;
  std::string unreadable;  // non-empty: it is mapped, and gpuprof cannot open it
  explicit operator bool() const { return library.has_value(); }
  const MappedLibrary* operator->() const { return &*library; }
  const MappedLibrary& operator*() const { return *library; }
};

// The first file mapping whose file name starts with name_prefix
// ("libtorch_cpu", "libstdc++"), deleted files included (a library replaced
// on disk is still what the process runs; map_files opens it).
LibraryLookup find_mapped_library(int pid, std::string_view name_prefix);
// Every file whose name starts with name_prefix, once each (a process may
// map several copies of one library: torch's libcudart and torchvision's);
// *unreadable says why one that is mapped could not be opened.
std::vector<MappedLibrary> find_mapped_libraries(int pid, std::string_view name_prefix, std::string* unreadable);
LibraryLookup find_mapped_library(int pid, const std::vector<MapsEntry>& maps, std::string_view name_prefix);

// Runtime address - ELF virtual address of the library in process pid
// (where its mapping of file offset 0 starts, less its first PT_LOAD's
// address); nullopt when that mapping or the file cannot be read.
std::optional<uint64_t> load_bias(int pid, const MappedLibrary& library);

// [lo, hi): from the lowest start to the highest end of the target's
// mappings of the file with this device and inode; nullopt when none.
std::optional<std::pair<uint64_t, uint64_t>> mapped_address_range(int pid, const MappedLibrary& library);

}  // namespace gpuprof
