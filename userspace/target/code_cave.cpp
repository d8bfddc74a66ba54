// code_cave.cpp: caves_of_mapping, find_code_cave (code_cave.h).
#include "target/code_cave.h"

#include <algorithm>
#include <map>

#include "symbols/elf_image.h"
#include "target/process_memory.h"

namespace gpuprof {

std::vector<CodeCave> caves_of_mapping(const MapsEntry& mapping,
                                       const std::vector<std::pair<uint64_t, uint64_t>>& executable_ranges) {
  std::vector<CodeCave> caves;
  const uint64_t mapped_bytes = mapping.end - mapping.start;
  for (const auto& [offset, end] : executable_ranges) {
    // The segment must end inside this mapping of the file.
    if (end <= mapping.offset || end >= mapping.offset + mapped_bytes || offset >= mapping.offset + mapped_bytes)
      continue;
    const uint64_t cave_start = (mapping.start + (end - mapping.offset) + 15) & ~uint64_t{15};
    if (cave_start >= mapping.end) continue;
    caves.push_back({cave_start, mapping.end - cave_start, mapping.path});
  }
  return caves;
}

Result<CodeCave> find_code_cave(int pid, uint64_t min_size) {
  auto maps = read_maps(pid);
  if (!maps) return Error("cannot read /proc/" + std::to_string(pid) + "/maps");
  std::vector<const MapsEntry*> candidates;
  for (const MapsEntry& entry : *maps)
    if (entry.perms.size() == 4 && entry.perms[2] == 'x' && entry.inode != 0 && !entry.deleted &&
        !entry.path.empty() && entry.path[0] == '/')
      candidates.push_back(&entry);
  // libc first: every process maps it, and its padding is large.
  std::stable_partition(candidates.begin(), candidates.end(),
                        [](const MapsEntry* e) { return e->base_name().starts_with("libc.so"); });
  std::map<std::string, std::vector<std::pair<uint64_t, uint64_t>>> ranges_of_file;
  for (const MapsEntry* entry : candidates) {
    auto known = ranges_of_file.find(entry->path);
    if (known == ranges_of_file.end()) {
      std::vector<std::pair<uint64_t, uint64_t>> ranges;
      if (auto path = openable_path(pid, *entry))
        if (auto image = ElfImage::open(*path)) ranges = image->executable_segment_file_ranges();
      known = ranges_of_file.emplace(entry->path, std::move(ranges)).first;
    }
    for (const CodeCave& cave : caves_of_mapping(*entry, known->second)) {
      if (cave.size < min_size) continue;
      std::vector<uint8_t> bytes(min_size);
      if (!read_process_memory(pid, cave.address, bytes)) continue;
      if (std::all_of(bytes.begin(), bytes.end(), [](uint8_t b) { return b == 0; })) return cave;
    }
  }
  return Error("found no unused room of " + std::to_string(min_size) +
               " bytes at the end of an executable mapping of process " + std::to_string(pid));
}

}  // namespace gpuprof
