// job_environment_test.cpp: the job rank read from planted environment
// blocks (target/job_environment.h), as report prints it
// (output/job_rank_line.h), and --by rank's groups (analyze/profile_merge.h,
// output/spread_table.h).
#include "target/job_environment.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "analyze/process_filter.h"
#include "analyze/profile_merge.h"
#include "output/job_rank_line.h"
#include "output/spread_table.h"
#include "result_values.h"

namespace gpuprof {
namespace {

using namespace std::string_literals;

// torchrun's worker environment, NUL-separated as /proc/PID/environ holds it.
const std::string kTorchrun =
    "PATH=/usr/bin\0RANK=3\0LOCAL_RANK=1\0WORLD_SIZE=8\0LOCAL_WORLD_SIZE=2\0GROUP_RANK=1\0"
    "TORCHELASTIC_RUN_ID=job-42\0MASTER_ADDR=node0\0MASTER_PORT=29500\0HOME=/root\0"s;

TEST(JobEnvironment, ReadsTorchrunsVariables) {
  auto rank = job_rank_from_environ(kTorchrun, 4242);
  ASSERT_TRUE(rank);
  EXPECT_EQ(rank->pid, 4242);
  EXPECT_EQ(rank->rank, 3u);
  EXPECT_EQ(rank->local_rank, 1u);
  EXPECT_EQ(rank->world_size, 8u);
  EXPECT_EQ(rank->local_world_size, 2u);
  EXPECT_EQ(rank->group_rank, 1u);
  EXPECT_EQ(rank->master_port, 29500u);
  EXPECT_EQ(rank->run_id, "job-42");
  EXPECT_EQ(rank->master_addr, "node0");
  EXPECT_EQ(job_rank_line(*rank), "Rank 3 of 8 (local rank 1 of 2, node 1), run job-42");
}

TEST(JobEnvironment, NoRankNoJob) {
  EXPECT_FALSE(job_rank_from_environ("", 1));
  EXPECT_FALSE(job_rank_from_environ("LOCAL_RANK=0\0WORLD_SIZE=2\0"s, 1));
  // Names are whole: a variable that merely ends in RANK is not it.
  EXPECT_FALSE(job_rank_from_environ("MY_RANK=1\0RANKS=2\0 RANK=3\0"s, 1));
  // A RANK that is not a number is ignored, never guessed.
  for (const char* bad : {"RANK=", "RANK=-1", "RANK=+1", "RANK= 1", "RANK=1 ", "RANK=0x1", "RANK=1.0",
                          "RANK=2147483648", "RANK=99999999999", "RANK=one", "RANK"})
    EXPECT_FALSE(job_rank_from_environ(std::string(bad) + '\0', 1)) << bad;
}

TEST(JobEnvironment, OtherNumbersAreEachKnownOrAbsent) {
  auto rank = job_rank_from_environ("RANK=0\0LOCAL_RANK=x\0WORLD_SIZE=2\0MASTER_PORT=-5"s, 7);  // no final NUL
  ASSERT_TRUE(rank);
  EXPECT_EQ(rank->rank, 0u);
  EXPECT_EQ(rank->local_rank, std::nullopt);
  EXPECT_EQ(rank->world_size, 2u);
  EXPECT_EQ(rank->master_port, std::nullopt);
  EXPECT_EQ(rank->run_id, "");
  EXPECT_EQ(job_rank_line(*rank), "Rank 0 of 2");
  // The first definition wins, as getenv() finds it; "=" in a value is kept.
  rank = job_rank_from_environ("RANK=4\0RANK=5\0MASTER_ADDR=a=b\0"s, 7);
  ASSERT_TRUE(rank);
  EXPECT_EQ(rank->rank, 4u);
  EXPECT_EQ(rank->master_addr, "a=b");
  EXPECT_EQ(job_rank_line(*rank), "Rank 4");
  // A text too long for the record file is left out, the rank kept.
  rank = job_rank_from_environ("RANK=1\0TORCHELASTIC_RUN_ID="s + std::string(300, 'r'), 7);
  ASSERT_TRUE(rank);
  EXPECT_EQ(rank->run_id, "");
  EXPECT_EQ(parse_job_number("0"), 0u);
  EXPECT_EQ(parse_job_number("007"), 7u);
  EXPECT_EQ(parse_job_number("2147483647"), 2147483647u);
}

TEST(JobEnvironment, ReadsAFileAndNothingFromNoFile) {
  char path[] = "/tmp/gpuprof-environ-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  {
    std::ofstream out(path, std::ios::binary);
    out << "RANK=1\0LOCAL_RANK=1\0WORLD_SIZE=2\0"s;
  }
  auto rank = read_job_rank(99, path);
  std::remove(path);
  ASSERT_TRUE(rank);
  EXPECT_EQ(rank->pid, 99);
  EXPECT_EQ(job_rank_line(*rank), "Rank 1 of 2 (local rank 1)");
  EXPECT_FALSE(read_job_rank(99, "/nonexistent/gpuprof/environ"));
  // This test's own environment: whatever it holds, reading it works.
  (void)read_job_rank(static_cast<int32_t>(getpid()));
}

ProfileUnit ranked(const std::string& file, int pid, std::optional<uint32_t> rank, uint64_t calls, uint64_t self_ns) {
  ProfileUnit u;
  u.file = file;
  u.process.pid = pid;
  u.process.comm = "python3";
  u.process.hostname = "h";
  if (rank) {
    u.rank.emplace();
    u.rank->pid = pid;
    u.rank->rank = *rank;
  }
  OpRow row;
  row.name = "aten::add";
  row.calls = calls;
  row.self_cpu_ns = self_ns;
  u.profile.rows = {row};
  return u;
}

TEST(SpreadByRank, RanksInOrderWithTheirCalls) {
  // Files given rank 1 first: the groups are in rank order all the same;
  // two files of one rank are one group.
  const std::vector<ProfileUnit> units = {ranked("b", 2, 1, 1000, 300), ranked("a", 1, 0, 3000, 900),
                                          ranked("c", 3, 1, 10, 5)};
  ASSERT_EQ(test::value_of(parse_spread_key("rank")), SpreadKey::kRank);
  EXPECT_TRUE(units_without_rank(units).empty());
  const OpSpreads spreads = op_spread(units, SpreadKey::kRank);
  EXPECT_EQ(spreads.groups, (std::vector<std::string>{"rank 0", "rank 1"}));
  ASSERT_EQ(spreads.ops.size(), 1u);
  EXPECT_EQ(spreads.ops[0].calls_of_group, (std::vector<uint64_t>{3000, 1010}));
  EXPECT_EQ(spreads.ops[0].self_ns_of_group, (std::vector<uint64_t>{900, 305}));
  EXPECT_EQ(spreads.ops[0].slowest, "rank 0");
  EXPECT_EQ(format_group_calls(spreads, "rank", -1),
            "Calls per rank:\n"
            "-------------------------------------\n"
            "Name             rank 0        rank 1\n"
            "-------------------------------------\n"
            "aten::add          3000          1010\n"
            "-------------------------------------\n");
  const std::vector<ProfileUnit> mixed = {ranked("a", 1, 0, 1, 1), ranked("n", 5, std::nullopt, 1, 1)};
  ASSERT_EQ(units_without_rank(mixed).size(), 1u);
  EXPECT_EQ(units_without_rank(mixed)[0]->file, "n");
}

TEST(SpreadByRank, ASystemWideRecordingKeepsEachProcesssRank) {
  Recording all;
  ProcessInfo a, b;
  a.pid = 10;
  b.pid = 11;
  all.processes = {a, b};
  JobRank r;
  r.pid = 11;
  r.rank = 1;
  all.job_ranks = {r};
  const Recording one = select_processes(all, {11});
  EXPECT_EQ(one.job_ranks, std::vector<JobRank>{r});
  ASSERT_NE(job_rank_of(one.job_ranks, one.process.pid), nullptr);
  EXPECT_TRUE(select_processes(all, {10}).job_ranks.empty());
}

}  // namespace
}  // namespace gpuprof
