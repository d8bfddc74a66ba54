// folded_several_test.cpp: report A B ... --folded (output/folded_several.h):
// each recording's stacks under its rank or file, recordings of one rank
// added up under one root, the totals and counters of all of them.
#include "output/folded_several.h"

#include <gtest/gtest.h>

#include "probe_events.h"
#include "recordings.h"

namespace gpuprof {
namespace {

using namespace ::gpuprof::test;

constexpr uint64_t us(uint64_t n) { return n * 1000; }

enum : uint32_t { kAdd, kMm };

Recording of_process(int32_t pid, std::vector<gp_event> events, std::optional<uint32_t> rank) {
  Recording recording = recording_of({op("aten::add"), op("aten::mm")}, std::move(events));
  recording.process.pid = pid;
  recording.process.comm = "python3";
  if (rank) recording.job_ranks.push_back({.pid = pid, .rank = *rank});
  return recording;
}

TEST(FoldedSeveral, EachRecordingUnderItsRankOrFileAndOneRankAddsUp) {
  // Rank 1 twice (two recordings of it): add 0..10 us with mm 2..5 inside
  // (add's self 7, mm's 3), then add 0..4 us and an exit of a call begun
  // before its recording. No rank: mm 0..2 us, and an add still running at
  // its end.
  const Recording first = of_process(10,
                                     {op_entry(us(0), 1000, kAdd), op_entry(us(2), 900, kMm),
                                      op_exit(us(5), 900, kMm), op_exit(us(10), 1000, kAdd)},
                                     1);
  const Recording second = of_process(
      20, {op_exit(us(1), 2000, kMm), op_entry(us(3), 1000, kAdd), op_exit(us(7), 1000, kAdd)}, 1);
  const Recording unranked =
      of_process(30, {op_entry(us(0), 1000, kMm), op_exit(us(2), 1000, kMm), op_entry(us(3), 1000, kAdd)}, {});
  const std::vector<FoldedInput> inputs = {
      {&first, "a.gpuprof"}, {&unranked, "c file.gpuprof"}, {&second, "b.gpuprof"}};
  EXPECT_EQ(folded_root(inputs[0]), "rank 1");
  EXPECT_EQ(folded_root(inputs[1]), "c_file.gpuprof");  // a frame: no whitespace
  const FoldedStacks folded = folded_stacks_of_several(inputs, FoldedMetric::kSelfCpuTime, /*raw_times=*/true);
  EXPECT_EQ(format_folded(folded),
            "c_file.gpuprof;aten::mm 2\n"
            "rank 1;aten::add 11\n"
            "rank 1;aten::add;aten::mm 3\n");
  EXPECT_EQ(folded.self_ns_total, us(10 + 4 + 2));
  EXPECT_EQ(folded.counters.exits_without_entry, 1u);
  EXPECT_EQ(folded.counters.calls_open_at_end, 1u);
  EXPECT_EQ(folded.counters.calls_unwound, 0u);
}

}  // namespace
}  // namespace gpuprof
