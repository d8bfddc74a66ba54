// sorted_launch_names.cpp: the correlations named by id, then each thread's
// launches and named correlations read side by side.
#include "output/sorted_launch_names.h"

#include <cstdint>
#include <utility>

#include "output/launch_table.h"

namespace gpuprof {

std::optional<uint32_t> LaunchNamesInOrder::name_of(uint64_t launch) {
  while (!done_ && (!ahead_ || ahead_->launch < launch)) {
    Named next;
    if (named_.next(&next))
      ahead_ = next;
    else
      done_ = true, ahead_.reset();
  }
  if (ahead_ && ahead_->launch == launch) return ahead_->name_id;
  return std::nullopt;
}

SortedLaunchNames::SortedLaunchNames(size_t run_bytes)
    : run_bytes_(run_bytes),
      by_correlation_(run_bytes / sizeof(ByCorrelation)),
      launches_(run_bytes / sizeof(Launch)) {}

void SortedLaunchNames::add_launches(std::span<const CudaLaunch> launches) {
  for (const CudaLaunch& l : launches)
    launches_.add({.ts_ns = l.ts_ns, .index = launches_.size(), .tid = l.tid, .name_id = l.name_id, .api = l.api});
}

void SortedLaunchNames::add_correlations(std::span<const GpuCorrelation> correlations) {
  for (const GpuCorrelation& c : correlations)
    if (c.domain == kCuptiRuntimeDomain)
      by_correlation_.add({.correlation_id = c.correlation_id, .ts_ns = c.ts_ns, .tid = c.tid});
}

void SortedLaunchNames::add_activities(std::span<const GpuActivity> activities) {
  for (const GpuActivity& a : activities)
    if (a.kind == GpuActivityKind::kernel) {
      by_correlation_.add({.correlation_id = a.correlation_id, .name_id = a.name_id, .kernel = true});
      kernels_ = true;
    }
}

LaunchNamesInOrder SortedLaunchNames::names(const std::vector<std::string>& launch_names) && {
  const uint64_t launch_count = launches_.size();
  ExternalSort<LaunchNamesInOrder::Named, LaunchNamesInOrder::ByLaunch> named(
      run_bytes_ / sizeof(LaunchNamesInOrder::Named));
  if (!kernels_) return LaunchNamesInOrder(launch_count, std::move(named));  // nothing to name them

  // 1. Each correlation named by its id's first kernel (kernels sort first).
  ExternalSort<NamedCorrelation, ByThreadMomentId> correlations(run_bytes_ / sizeof(NamedCorrelation));
  std::optional<ByCorrelation> kernel;
  by_correlation_.drain([&](const ByCorrelation& r) {
    if (r.kernel) {
      if (!kernel || kernel->correlation_id != r.correlation_id) kernel = r;
      return;
    }
    if (kernel && kernel->correlation_id == r.correlation_id)
      correlations.add({.ts_ns = r.ts_ns, .correlation_id = r.correlation_id, .tid = r.tid, .name_id = kernel->name_id});
  });

  // 2. Each thread's launches and named correlations side by side: a
  // launch is named by the first of its thread's from its moment up to its
  // thread's next launch.
  ExternalSort<NamedCorrelation, ByThreadMomentId>::Sorted named_correlations = std::move(correlations).sorted();
  std::optional<NamedCorrelation> correlation;  // the first not before the launch in hand
  bool correlations_done = false;
  auto name = [&](const Launch& l, uint64_t until) {
    if (!may_take_cupti_name(launch_names, CudaLaunch{.api = l.api, .name_id = l.name_id})) return;
    while (!correlations_done &&
           (!correlation || std::pair(correlation->tid, correlation->ts_ns) < std::pair(l.tid, l.ts_ns))) {
      NamedCorrelation next;
      if (named_correlations.next(&next))
        correlation = next;
      else
        correlations_done = true, correlation.reset();
    }
    if (correlation && correlation->tid == l.tid && correlation->ts_ns < until)
      named.add({.launch = l.index, .name_id = correlation->name_id});
  };
  std::optional<Launch> held;  // named once its thread's next launch is known
  launches_.drain([&](const Launch& l) {
    if (held) name(*held, held->tid == l.tid ? l.ts_ns : UINT64_MAX);
    held = l;
  });
  if (held) name(*held, UINT64_MAX);
  return LaunchNamesInOrder(launch_count, std::move(named));
}

}  // namespace gpuprof
