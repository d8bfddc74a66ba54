// output/sorted_launch_names.h against the whole read's join
// (CuptiLaunchNames, launch_table.h): every launch's name equal on random
// launches and CUPTI records (three threads; launches at the same moment;
// names the probes gave or not; runtime and driver correlations, some ids
// twice, some without a kernel, some kernels without a correlation; memcpys),
// with runs of a few records merged and in memory, handed over in chunks.
#include "output/sorted_launch_names.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "output/launch_table.h"

namespace gpuprof {
namespace {

Recording random_launch_records(std::mt19937& rng, size_t launches) {
  Recording r;
  r.launch_names = {"void k::scale<float>(float*, int)", "[unknown kernel 0x4242]", "[unknown kernel 0x4343]",
                    "k::from_cupti_a", "k::from_cupti_b"};
  uint64_t t = 1000;
  uint64_t id = 1;
  for (size_t i = 0; i < launches; i++) {
    t += rng() % 4 == 0 ? 0 : rng() % 300;  // some at the same moment
    const uint32_t tid = 10 + rng() % 3;
    const uint16_t api = rng() % 6 == 0 ? GP_LAUNCH_DRIVER_KERNEL : rng() % 9 == 0 ? GP_LAUNCH_GRAPH : GP_LAUNCH_KERNEL;
    r.launches.push_back({.ts_ns = t, .tid = tid, .api = api, .name_id = static_cast<uint32_t>(rng() % 3)});
    for (unsigned c = rng() % 3; c > 0; c--) {  // the ids its thread published after it
      const uint64_t correlation = rng() % 10 == 0 ? id - 1 : id++;  // some ids twice
      r.gpu_correlations.push_back({.ts_ns = t + rng() % 400,
                                    .correlation_id = correlation,
                                    .tid = rng() % 8 == 0 ? tid + 1 : tid,
                                    .domain = rng() % 4 == 0 ? 1u : 2u});
      if (rng() % 5 == 0) continue;  // no kernel for it
      GpuActivity a{.start_ns = t + 5000, .end_ns = t + 5100, .correlation_id = correlation,
                    .kind = rng() % 7 == 0 ? GpuActivityKind::memcpy : GpuActivityKind::kernel,
                    .name_id = 3 + static_cast<uint32_t>(rng() % 2)};
      r.gpu_activities.push_back(a);
      if (rng() % 6 == 0) {  // a second kernel of the id: the first names it
        a.name_id = a.name_id == 3 ? 4 : 3;
        r.gpu_activities.push_back(a);
      }
    }
    if (rng() % 20 == 0) r.gpu_activities.push_back({.correlation_id = 900'000 + i, .name_id = 3});
  }
  // CUPTI's buffers, not time order.
  for (size_t i = 1; i < r.gpu_activities.size(); i++)
    if (rng() % 3 == 0) std::swap(r.gpu_activities[i - 1], r.gpu_activities[i]);
  for (size_t i = 1; i < r.gpu_correlations.size(); i++)
    if (rng() % 3 == 0) std::swap(r.gpu_correlations[i - 1], r.gpu_correlations[i]);
  return r;
}

std::vector<std::optional<uint32_t>> sorted_names(const Recording& r, size_t run_bytes, size_t chunk) {
  SortedLaunchNames join(run_bytes);
  for (size_t at = 0; at < std::max({r.launches.size(), r.gpu_correlations.size(), r.gpu_activities.size()});
       at += chunk) {
    auto part = [&](const auto& records) {
      using Record = typename std::decay_t<decltype(records)>::value_type;
      return at < records.size() ? std::span<const Record>(records).subspan(at, std::min(chunk, records.size() - at))
                                 : std::span<const Record>();
    };
    join.add_activities(part(r.gpu_activities));
    join.add_launches(part(r.launches));
    join.add_correlations(part(r.gpu_correlations));
  }
  LaunchNamesInOrder in_order = std::move(join).names(r.launch_names);
  EXPECT_EQ(in_order.size(), r.launches.size());
  std::vector<std::optional<uint32_t>> names;
  for (uint64_t i = 0; i < in_order.size(); i++) names.push_back(in_order.name_of(i));
  return names;
}

TEST(SortedLaunchNames, EqualsTheWholeReadsJoinOnRandomRecords) {
  size_t named = 0, unnamed_that_may = 0;
  for (uint32_t seed = 1; seed <= 20; seed++) {
    std::mt19937 rng(seed);
    const Recording r = random_launch_records(rng, 500 + 50 * seed);
    const std::vector<std::optional<uint32_t>> whole = cupti_names(r);
    for (size_t run_bytes : {size_t{1}, size_t{40 * 7}, size_t{40 * 200}, kSortRunBytes})
      for (size_t chunk : {size_t{1}, size_t{64}, r.launches.size()}) {
        SCOPED_TRACE("seed " + std::to_string(seed) + " run " + std::to_string(run_bytes) + " chunk " +
                     std::to_string(chunk));
        EXPECT_EQ(sorted_names(r, run_bytes, chunk), whole);
      }
    for (size_t i = 0; i < whole.size(); i++) {
      if (whole[i]) named++;
      else if (may_take_cupti_name(r.launch_names, r.launches[i])) unnamed_that_may++;
    }
  }
  // Launches must both take names and be left without one, or this proves
  // little.
  EXPECT_GT(named, 2000u);
  EXPECT_GT(unnamed_that_may, 1000u);
}

// Without a kernel activity nothing is named, and the names still cover
// every launch.
TEST(SortedLaunchNames, NoKernelNamesNothing) {
  std::mt19937 rng(3);
  Recording r = random_launch_records(rng, 200);
  r.gpu_activities.clear();
  const std::vector<std::optional<uint32_t>> none(r.launches.size());
  EXPECT_EQ(cupti_names(r), none);
  EXPECT_EQ(sorted_names(r, 40 * 7, 13), none);
}

}  // namespace
}  // namespace gpuprof
