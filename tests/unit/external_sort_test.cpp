// base/external_sort.h against std::stable_sort: random records with many
// equal keys, in memory and merged from runs spilled to temporary files
// (runs whose records a 64 KiB piece cuts in two).
#include "base/external_sort.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

namespace gpuprof {
namespace {

struct Keyed {
  uint64_t key = 0;
  uint64_t order = 0;  // the place it was added at: shows stability
  uint32_t payload = 0;
  bool operator==(const Keyed&) const = default;
};
struct ByKey {
  bool operator()(const Keyed& a, const Keyed& b) const { return a.key < b.key; }
};

std::vector<Keyed> drained(ExternalSort<Keyed, ByKey>& sort) {
  std::vector<Keyed> out;
  sort.drain([&](const Keyed& k) { out.push_back(k); });
  return out;
}

TEST(ExternalSort, EqualsAStableSortInMemoryAndMerged) {
  static_assert(65536 % sizeof(Keyed) != 0, "records must straddle the spill's pieces");
  for (uint32_t seed = 1; seed <= 6; seed++) {
    std::mt19937 rng(seed);
    const size_t count = seed * 7000;
    std::vector<Keyed> records;
    for (size_t i = 0; i < count; i++)
      records.push_back({.key = rng() % (seed * 50), .order = i, .payload = static_cast<uint32_t>(rng())});
    std::vector<Keyed> expected = records;
    std::stable_sort(expected.begin(), expected.end(), ByKey{});
    for (size_t run : {size_t{1}, size_t{7}, size_t{5000}, count, count * 2}) {
      SCOPED_TRACE("seed " + std::to_string(seed) + " run " + std::to_string(run));
      ExternalSort<Keyed, ByKey> sort(run);
      for (const Keyed& r : records) sort.add(r);
      EXPECT_EQ(sort.size(), count);
      // Runs of one level are merged 64 at a time as they come.
      size_t runs = run > count ? 0 : count / run, held = 0;
      for (size_t level_runs = runs; level_runs; level_runs /= ExternalSort<Keyed, ByKey>::kFanIn)
        held += level_runs % ExternalSort<Keyed, ByKey>::kFanIn;
      EXPECT_EQ(sort.spilled_runs(), held);
      EXPECT_EQ(drained(sort), expected);
      EXPECT_EQ(sort.size(), 0u);
      EXPECT_TRUE(drained(sort).empty());
    }
  }
}

// Merges on the way: 64 x 64 runs of one record become one run of level 2,
// then more come; each level's records and the stability hold through
// the merges, and whole files of merged runs are read back.
TEST(ExternalSort, MergesRunsOnTheWayAndKeepsTheOrder) {
  std::mt19937 rng(7);
  const size_t runs = 64 * 64 + 64 * 3 + 5;
  const size_t run = 40;  // 40 x 24 B = 960 B a run: merged runs of level 2 are files of 3.75 MiB
  std::vector<Keyed> records;
  for (size_t i = 0; i < runs * run; i++) records.push_back({.key = rng() % 1000, .order = i});
  std::vector<Keyed> expected = records;
  std::stable_sort(expected.begin(), expected.end(), ByKey{});
  ExternalSort<Keyed, ByKey> sort(run);
  for (const Keyed& r : records) sort.add(r);
  EXPECT_EQ(sort.spilled_runs(), 1u + 3u + 5u);
  EXPECT_EQ(sort.deepest_run(), 2);
  EXPECT_EQ(drained(sort), expected);
}

TEST(ExternalSort, NothingAddedDrainsNothing) {
  ExternalSort<Keyed, ByKey> sort(3);
  EXPECT_TRUE(drained(sort).empty());
}

// The default order and run size: plain integers.
TEST(ExternalSort, SortsIntegersByDefault) {
  ExternalSort<uint64_t> sort;
  for (uint64_t v : {5u, 3u, 9u, 3u, 0u}) sort.add(v);
  std::vector<uint64_t> out;
  sort.drain([&](uint64_t v) { out.push_back(v); });
  EXPECT_EQ(out, (std::vector<uint64_t>{0, 3, 3, 5, 9}));
}

}  // namespace
}  // namespace gpuprof
