// profile_merge.cpp: several units' profiles summed, or spread per group.
#include "analyze/profile_merge.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace gpuprof {

Profile merge_profiles(const std::vector<ProfileUnit>& units) {
  Profile out;
  using Key = std::tuple<std::string, std::string, std::vector<std::string>, bool>;
  std::map<Key, size_t> row_of;
  for (const ProfileUnit& unit : units) {
    const Profile& p = unit.profile;
    for (const OpRow& row : p.rows) {
      auto [it, inserted] = row_of.try_emplace(Key{row.name, row.input_shapes, row.stack, row.on_gpu}, out.rows.size());
      if (inserted) {
        out.rows.push_back(row);
        continue;
      }
      OpRow& into = out.rows[it->second];
      into.has_inputs = into.has_inputs || row.has_inputs;
      into.add_sums(row);
    }
    out.self_cpu_total_ns += p.self_cpu_total_ns;
    out.counters += p.counters;
    out.calls_cut += p.calls_cut;
    out.events_after_cut += p.events_after_cut;
    out.ranges_ended_elsewhere += p.ranges_ended_elsewhere;
    out.events_lost += p.events_lost;
    out.events_unknown_kind += p.events_unknown_kind;
    out.threads += p.threads;
    out.raw_times_asked = out.raw_times_asked || p.raw_times_asked;
    out.memory_recorded = out.memory_recorded || p.memory_recorded;
    out.gpu_recorded = out.gpu_recorded || p.gpu_recorded;
    out.grouped_by_input_shape = p.grouped_by_input_shape;
    out.group_by_stack_n = p.group_by_stack_n;
    out.memory_unmatched_frees += p.memory_unmatched_frees;
  }
  std::sort(out.rows.begin(), out.rows.end(), [](const OpRow& a, const OpRow& b) {
    return std::tie(a.name, a.input_shapes, a.stack, a.on_gpu) < std::tie(b.name, b.input_shapes, b.stack, b.on_gpu);
  });
  return out;
}

Result<SpreadKey> parse_spread_key(std::string_view name) {
  if (name == "file") return SpreadKey::kFile;
  if (name == "pid") return SpreadKey::kPid;
  if (name == "host") return SpreadKey::kHost;
  if (name == "rank") return SpreadKey::kRank;
  return Error("unknown --by '" + std::string(name) + "' (one of: file, pid, host, rank)");
}

std::string spread_group(const ProfileUnit& unit, SpreadKey key) {
  switch (key) {
    case SpreadKey::kFile:
      return unit.file;
    case SpreadKey::kPid:
      return unit.process.hostname + ":" + std::to_string(unit.process.pid) + " (" + unit.process.comm + ")";
    case SpreadKey::kHost:
      return unit.process.hostname;
    case SpreadKey::kRank:
      return unit.rank ? "rank " + std::to_string(unit.rank->rank) : "no rank";
  }
  return "";
}

std::vector<const ProfileUnit*> units_without_rank(const std::vector<ProfileUnit>& units) {
  std::vector<const ProfileUnit*> out;
  for (const ProfileUnit& unit : units)
    if (!unit.rank) out.push_back(&unit);
  return out;
}

OpSpreads op_spread(const std::vector<ProfileUnit>& units, SpreadKey key) {
  OpSpreads out;
  std::map<std::string, size_t> group_index;
  std::vector<size_t> group_of_unit;
  // Ranks in their order (rank 0 first), whatever the order of the files.
  std::vector<const ProfileUnit*> ordered;
  for (const ProfileUnit& unit : units) ordered.push_back(&unit);
  if (key == SpreadKey::kRank)
    std::stable_sort(ordered.begin(), ordered.end(), [](const ProfileUnit* a, const ProfileUnit* b) {
      return a->rank.has_value() && (!b->rank || a->rank->rank < b->rank->rank);
    });
  for (const ProfileUnit* unit : ordered)
    if (group_index.try_emplace(spread_group(*unit, key), out.groups.size()).second)
      out.groups.push_back(spread_group(*unit, key));
  for (const ProfileUnit& unit : units) group_of_unit.push_back(group_index.at(spread_group(unit, key)));
  std::map<std::string, OpSpread> by_name;
  for (size_t u = 0; u < units.size(); u++) {
    for (const OpRow& row : units[u].profile.rows) {
      if (row.on_gpu) continue;
      OpSpread& op = by_name[row.name];
      op.name = row.name;
      op.self_ns_of_group.resize(out.groups.size());
      op.calls_of_group.resize(out.groups.size());
      op.self_ns_of_group[group_of_unit[u]] += row.self_cpu_ns;
      op.calls_of_group[group_of_unit[u]] += row.calls;
      op.calls += row.calls;
      op.self_cpu_ns += row.self_cpu_ns;
    }
  }
  for (auto& [name, op] : by_name) {
    std::vector<uint64_t> sorted = op.self_ns_of_group;
    std::sort(sorted.begin(), sorted.end());
    const size_t n = sorted.size();
    op.min_ns = sorted.front();
    op.max_ns = sorted.back();
    op.median_ns = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    const auto slowest = std::max_element(op.self_ns_of_group.begin(), op.self_ns_of_group.end());
    op.slowest = out.groups[static_cast<size_t>(slowest - op.self_ns_of_group.begin())];
    out.ops.push_back(std::move(op));
  }
  std::stable_sort(out.ops.begin(), out.ops.end(),
                   [](const OpSpread& a, const OpSpread& b) { return a.self_cpu_ns > b.self_cpu_ns; });
  return out;
}

}  // namespace gpuprof
