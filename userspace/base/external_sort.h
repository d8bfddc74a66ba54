// external_sort.h: fixed-size records sorted in memory for one run of them,
// however many there are (report --gpu's GPU records: analyze/
// sorted_gpu_time.h).
//
// Records are added to a run; a full run is sorted and spilled to a
// temporary file of its own (spill_file.h). drain() sorts the last run and,
// when there was more than one, merges them all, reading each run's file a
// piece at a time. Runs are merged kFanIn at a time as they come (the last
// kFanIn runs of one size into one of the next), so that no more than
// kFanIn runs of each size are open: a billion 64-byte records, 32,000 runs
// of 2 MiB, are at most 3 x 64 temporary files, and memory is one run
// (kSortRunBytes by default) and about 0.13 MiB for each open run (a piece
// read and a piece pending), about 2 + 192 x 0.13 MiB; each record is
// written and read back once per level (3 times here).
//
// The sort is stable: records that compare equal come out in the order they
// were added (in a run, stable_sort; across runs, the earlier run first).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <queue>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "base/spill_file.h"

namespace gpuprof {

// A run's memory by default: small, so that report's memory stays flat on
// recordings whose GPU records fit a few runs (tests/integration/
// test_cupti.py's 20,000 steps: 14 MB of them).
inline constexpr size_t kSortRunBytes = 2 << 20;

template <typename Record, typename Less = std::less<Record>>
class ExternalSort {
  static_assert(std::is_trivially_copyable_v<Record>);

 public:
  static constexpr size_t kFanIn = 64;

  explicit ExternalSort(size_t run_records = kSortRunBytes / sizeof(Record), Less less = {})
      : run_records_(std::max<size_t>(run_records, 1)), less_(std::move(less)) {}

  void add(const Record& record) {
    // Grown by doubling, but never past a run.
    if (run_.size() == run_.capacity()) run_.reserve(std::min(run_records_, std::max<size_t>(1024, 2 * run_.size())));
    run_.push_back(record);
    count_++;
    if (run_.size() >= run_records_) spill_run();
  }
  uint64_t size() const { return count_; }
  // How many sorted runs are held apart so far (tests: that a merge will
  // run), and how many merges made the deepest (tests: that runs were
  // merged on the way).
  size_t spilled_runs() const { return runs_.size(); }
  int deepest_run() const {
    int deepest = -1;
    for (const Run& run : runs_) deepest = std::max(deepest, run.level);
    return deepest;
  }

  // Hands every record added, in order, to visit(const Record&). Once; the
  // sort is empty after it.
  template <typename Visit>
  void drain(const Visit& visit) {
    if (runs_.empty()) {  // all in memory: no merge
      std::stable_sort(run_.begin(), run_.end(), less_);
      for (const Record& r : run_) visit(r);
    } else {
      if (!run_.empty()) spill_run();
      run_ = {};  // the merge needs a piece of each run, not a run
      merge(0, visit);
    }
    run_ = {};
    runs_.clear();
    count_ = 0;
  }

 private:
  // A sorted run in its temporary file; level: how many merges made it.
  struct Run {
    std::unique_ptr<SpillFile> file;
    int level = 0;
  };

  void spill_run() {
    std::stable_sort(run_.begin(), run_.end(), less_);
    runs_.push_back({std::make_unique<SpillFile>(), 0});
    append_records(*runs_.back().file, std::span<const Record>(run_));
    run_.clear();
    // The last kFanIn runs of one level become one of the next (they are
    // the latest, so the merged run keeps its place among the others).
    while (runs_.size() >= kFanIn) {
      const size_t first = runs_.size() - kFanIn;
      const int level = runs_.back().level;
      if (runs_[first].level != level) break;
      Run merged{std::make_unique<SpillFile>(), level + 1};
      merge(first, [&](const Record& r) { append_records(*merged.file, std::span<const Record>(&r, 1)); });
      runs_.resize(first);
      runs_.push_back(std::move(merged));
    }
  }

  // Merges runs_[first..] into visit.
  template <typename Visit>
  void merge(size_t first, const Visit& visit) {
    std::vector<SpilledRecords<Record>> readers;
    readers.reserve(runs_.size() - first);
    for (size_t run = first; run < runs_.size(); run++) readers.emplace_back(*runs_[run].file);
    // The heap's top: the least current record, ties to the earlier run.
    struct Head {
      Record record;
      size_t run;
    };
    auto later = [this](const Head& a, const Head& b) {
      if (less_(b.record, a.record)) return true;
      if (less_(a.record, b.record)) return false;
      return a.run > b.run;
    };
    std::priority_queue<Head, std::vector<Head>, decltype(later)> heads(later);
    for (size_t run = 0; run < readers.size(); run++) {
      Head head{.record = {}, .run = run};
      if (readers[run].next(&head.record)) heads.push(head);
    }
    while (!heads.empty()) {
      Head head = heads.top();
      heads.pop();
      visit(head.record);
      if (readers[head.run].next(&head.record)) heads.push(head);
    }
  }

  size_t run_records_;
  Less less_;
  std::vector<Record> run_;
  std::vector<Run> runs_;
  uint64_t count_ = 0;
};

}  // namespace gpuprof
