// sorted_launch_names.h: CUPTI's names of the launches the probes could not
// name (launch_table.h's CuptiLaunchNames: a launch's correlations are its
// thread's runtime-domain ones from its moment up to its next launch; the
// first of them with a kernel activity names it), joined through external
// sorts (base/external_sort.h) instead of tables in memory, for report
// --launches of a recording read as a stream (streamed_launch_table.h).
//
// Three sorts stand for CuptiLaunchNames' maps:
//  1. the kernel activities and runtime correlations by correlation id,
//     each id's activities first: each correlation takes the name of its
//     id's first kernel in file order;
//  2. the named correlations by thread, moment and id, and
//  3. the launches by thread and moment (file order among equals): read side
//     by side, each launch takes the first named correlation of its thread
//     from its moment up to its thread's next launch;
// then the names by the launches' places in the file, read back one at a
// time as the launches stream by (LaunchNamesInOrder). Memory: the sorts'
// runs and a piece of each run on disk, not the launches or GPU records.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/external_sort.h"
#include "record/recording.h"

namespace gpuprof {

// The name CUPTI gave each of a file's launches, read in file order.
class LaunchNamesInOrder {
 public:
  struct Named {
    uint64_t launch = 0;  // its place among the file's launches
    uint32_t name_id = 0;
  };
  struct ByLaunch {
    bool operator()(const Named& a, const Named& b) const { return a.launch < b.launch; }
  };
  // launches: how many the file has; named: the launches that took a name.
  LaunchNamesInOrder(uint64_t launches, ExternalSort<Named, ByLaunch> named)
      : launches_(launches), named_(std::move(named).sorted()) {}
  // How many launches the names cover.
  uint64_t size() const { return launches_; }
  // Launch `launch`'s name (nullopt: none); each call's launch later in
  // the file than the last one's.
  std::optional<uint32_t> name_of(uint64_t launch);

 private:
  uint64_t launches_;
  ExternalSort<Named, ByLaunch>::Sorted named_;
  std::optional<Named> ahead_;  // the next named launch, read
  bool done_ = false;
};

class SortedLaunchNames {
 public:
  // run_bytes: each sort's run (tests make it small, so that runs merge).
  explicit SortedLaunchNames(size_t run_bytes = kSortRunBytes);
  // In file order, as a read hands them (record_stream.h).
  void add_launches(std::span<const CudaLaunch> launches);
  void add_correlations(std::span<const GpuCorrelation> correlations);
  void add_activities(std::span<const GpuActivity> activities);
  // launch_names: the recording's. Once.
  LaunchNamesInOrder names(const std::vector<std::string>& launch_names) &&;

  struct ByCorrelation {
    uint64_t correlation_id = 0;
    uint64_t ts_ns = 0;  // a correlation's
    uint32_t tid = 0;    // a correlation's
    uint32_t name_id = 0;  // a kernel's
    bool kernel = false;   // else a correlation
  };
  struct KernelsFirst {
    bool operator()(const ByCorrelation& a, const ByCorrelation& b) const {
      return a.correlation_id != b.correlation_id ? a.correlation_id < b.correlation_id : a.kernel > b.kernel;
    }
  };
  struct NamedCorrelation {
    uint64_t ts_ns = 0;
    uint64_t correlation_id = 0;
    uint32_t tid = 0;
    uint32_t name_id = 0;
  };
  struct ByThreadMomentId {
    bool operator()(const NamedCorrelation& a, const NamedCorrelation& b) const {
      if (a.tid != b.tid) return a.tid < b.tid;
      if (a.ts_ns != b.ts_ns) return a.ts_ns < b.ts_ns;
      return a.correlation_id < b.correlation_id;
    }
  };
  struct Launch {
    uint64_t ts_ns = 0;
    uint64_t index = 0;  // its place in the file
    uint32_t tid = 0;
    uint32_t name_id = 0;
    uint16_t api = 0;
  };
  struct ByThreadMoment {
    bool operator()(const Launch& a, const Launch& b) const {
      return a.tid != b.tid ? a.tid < b.tid : a.ts_ns < b.ts_ns;
    }
  };

 private:
  size_t run_bytes_;
  ExternalSort<ByCorrelation, KernelsFirst> by_correlation_;
  ExternalSort<Launch, ByThreadMoment> launches_;
  bool kernels_ = false;  // a kernel activity came
};

}  // namespace gpuprof
