// profile_merge.h: several recordings, one view (report A B ..., docs/fleet.md).
//
// A unit is one traced process of one recording: a recording of one
// process (record -p, -- CMD) is one unit, a system-wide one (record -a) one
// per process that ran ops. merge_profiles() sums units' tables into one;
// op_spread() puts them side by side per op, grouped by file, process or
// host: the straggler view of a job run as many processes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analyze/profile.h"
#include "base/result.h"
#include "record/recording.h"

namespace gpuprof {

struct ProfileUnit {
  std::string file;     // the recording it came from
  ProcessInfo process;  // its process
  Profile profile;      // aggregate() of that process alone
  std::optional<JobRank> rank;  // its job rank, when its environment had one
};

// One table of every unit's calls: rows of one key (name, input shapes,
// stack, GPU or not) summed (calls, times, memory); honesty counters summed.
// The units' compensation is their own (each recording's calibration), so
// the merged profile has none of its own.
Profile merge_profiles(const std::vector<ProfileUnit>& units);

// How units are grouped in op_spread(): per recording file, per process
// (host and pid), per host, per job rank (every unit must have one:
// units_without_rank).
enum class SpreadKey { kFile, kPid, kHost, kRank };
Result<SpreadKey> parse_spread_key(std::string_view name);

// The label of a unit's group: the file, "host:pid (comm)", the host,
// "rank N".
std::string spread_group(const ProfileUnit& unit, SpreadKey key);

// The units --by rank cannot place: those without a job rank, in order.
std::vector<const ProfileUnit*> units_without_rank(const std::vector<ProfileUnit>& units);

// One op name across the groups: its Self CPU in each (0 in a group that
// never ran it), and their spread.
struct OpSpread {
  std::string name;
  uint64_t calls = 0;          // over every group
  uint64_t self_cpu_ns = 0;    // over every group
  uint64_t min_ns = 0;
  uint64_t median_ns = 0;      // the middle group's; of two middle groups, their mean (rounded down)
  uint64_t max_ns = 0;
  std::string slowest;         // the group of max_ns (the first in group order of a tie)
  std::vector<uint64_t> self_ns_of_group;  // in the order of OpSpreads::groups
  std::vector<uint64_t> calls_of_group;    // the same
};

struct OpSpreads {
  // In order of first appearance among the units; ranks by their number.
  std::vector<std::string> groups;
  std::vector<OpSpread> ops;        // by self_cpu_ns, largest first (then by name)
};

// CPU op rows only (GPU rows have no Self CPU).
OpSpreads op_spread(const std::vector<ProfileUnit>& units, SpreadKey key);

}  // namespace gpuprof
