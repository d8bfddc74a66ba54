// profile_merge_test.cpp: several units' profiles, summed and spread
// (analyze/profile_merge.h), on planted rows.
#include "analyze/profile_merge.h"

#include <gtest/gtest.h>

#include "result_values.h"

namespace gpuprof {
namespace {

OpRow row(const std::string& name, uint64_t calls, uint64_t self_ns, uint64_t total_ns) {
  OpRow r;
  r.name = name;
  r.calls = calls;
  r.self_cpu_ns = self_ns;
  r.cpu_total_ns = total_ns;
  return r;
}

ProfileUnit unit(const std::string& file, int pid, const std::string& host, std::vector<OpRow> rows) {
  ProfileUnit u;
  u.file = file;
  u.process.pid = pid;
  u.process.comm = "python3";
  u.process.hostname = host;
  for (const OpRow& r : rows) u.profile.self_cpu_total_ns += r.self_cpu_ns;
  u.profile.rows = std::move(rows);
  return u;
}

TEST(MergeProfiles, SumsRowsOfOneNameAndKeepsTheOthers) {
  std::vector<ProfileUnit> units = {
      unit("a", 1, "h1", {row("aten::mm", 2, 100, 150), row("aten::add", 1, 7, 7)}),
      unit("b", 2, "h1", {row("aten::mm", 3, 40, 60)}),
  };
  units[1].profile.counters.calls_open_at_end = 2;
  const Profile merged = merge_profiles(units);
  ASSERT_EQ(merged.rows.size(), 2u);
  EXPECT_EQ(merged.rows[0], row("aten::add", 1, 7, 7));  // sorted by name
  EXPECT_EQ(merged.rows[1], row("aten::mm", 5, 140, 210));
  EXPECT_EQ(merged.self_cpu_total_ns, 147u);
  EXPECT_EQ(merged.counters.calls_open_at_end, 2u);
  EXPECT_FALSE(merged.compensation);  // each unit keeps its own
}

TEST(OpSpread, MinMedianMaxAndTheSlowestPerGroup) {
  const std::vector<ProfileUnit> units = {
      unit("a", 1, "h1", {row("aten::mm", 1, 300, 300), row("aten::add", 1, 5, 5)}),
      unit("b", 2, "h2", {row("aten::mm", 1, 100, 100)}),
      unit("c", 3, "h2", {row("aten::mm", 1, 200, 200)}),
  };
  const OpSpreads by_pid = op_spread(units, SpreadKey::kPid);
  EXPECT_EQ(by_pid.groups, (std::vector<std::string>{"h1:1 (python3)", "h2:2 (python3)", "h2:3 (python3)"}));
  ASSERT_EQ(by_pid.ops.size(), 2u);
  const OpSpread& mm = by_pid.ops[0];  // the larger total first
  EXPECT_EQ(mm.name, "aten::mm");
  EXPECT_EQ((std::vector<uint64_t>{mm.calls, mm.self_cpu_ns, mm.min_ns, mm.median_ns, mm.max_ns}),
            (std::vector<uint64_t>{3, 600, 100, 200, 300}));
  EXPECT_EQ(mm.slowest, "h1:1 (python3)");
  // A group that never ran the op counts 0 for it.
  const OpSpread& add = by_pid.ops[1];
  EXPECT_EQ((std::vector<uint64_t>{add.min_ns, add.median_ns, add.max_ns}), (std::vector<uint64_t>{0, 0, 5}));

  // Two hosts: h2 holds two units; an even count's median is the mean of
  // the middle two, rounded down.
  const OpSpreads by_host = op_spread(units, SpreadKey::kHost);
  EXPECT_EQ(by_host.groups, (std::vector<std::string>{"h1", "h2"}));
  EXPECT_EQ(by_host.ops[0].self_ns_of_group, (std::vector<uint64_t>{300, 300}));
  EXPECT_EQ(by_host.ops[0].median_ns, 300u);
  EXPECT_EQ(by_host.ops[0].slowest, "h1");  // a tie: the first group
  EXPECT_EQ(by_host.ops[1].median_ns, 2u);  // (0 + 5) / 2
}

TEST(OpSpread, ParsesItsKeys) {
  EXPECT_EQ(test::value_of(parse_spread_key("pid")), SpreadKey::kPid);
  EXPECT_EQ(test::value_of(parse_spread_key("file")), SpreadKey::kFile);
  EXPECT_EQ(test::value_of(parse_spread_key("host")), SpreadKey::kHost);
  EXPECT_EQ(test::value_of(parse_spread_key("rank")), SpreadKey::kRank);
  const auto thread = parse_spread_key("thread");
  ASSERT_FALSE(thread);
  EXPECT_EQ(thread.error(), "unknown --by 'thread' (one of: file, pid, host, rank)");
}

}  // namespace
}  // namespace gpuprof
