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
#include <optional>
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

  class Sorted;
  // The records added, in order, one next() at a time (the sort is empty
  // after it): for a join that reads two sorts side by side.
  Sorted sorted() &&;
  // The same handed to visit(const Record&).
  template <typename Visit>
  void drain(const Visit& visit) {
    Sorted in_order = std::move(*this).sorted();
    for (Record r; in_order.next(&r);) visit(r);
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

  // Merges runs[first..], one record at a time.
  class Merger {
   public:
    Merger(std::vector<Run>& runs, size_t first, const Less& less) : heads_(Later{less}) {
      readers_.reserve(runs.size() - first);
      for (size_t run = first; run < runs.size(); run++) readers_.emplace_back(*runs[run].file);
      for (size_t run = 0; run < readers_.size(); run++) {
        Head head{.record = {}, .run = run};
        if (readers_[run].next(&head.record)) heads_.push(head);
      }
    }
    bool next(Record* out) {
      if (heads_.empty()) return false;
      Head head = heads_.top();
      heads_.pop();
      *out = head.record;
      if (readers_[head.run].next(&head.record)) heads_.push(head);
      return true;
    }

   private:
    struct Head {
      Record record;
      size_t run;
    };
    // The heap's top: the least current record, ties to the earlier run.
    struct Later {
      Less less;
      bool operator()(const Head& a, const Head& b) const {
        if (less(b.record, a.record)) return true;
        if (less(a.record, b.record)) return false;
        return a.run > b.run;
      }
    };
    std::vector<SpilledRecords<Record>> readers_;  // each run's file (owned by the runs)
    std::priority_queue<Head, std::vector<Head>, Later> heads_;
  };

  // Merges runs_[first..] into visit.
  template <typename Visit>
  void merge(size_t first, const Visit& visit) {
    Merger merger(runs_, first, less_);
    for (Record r; merger.next(&r);) visit(r);
  }

  size_t run_records_;
  Less less_;
  std::vector<Record> run_;
  std::vector<Run> runs_;
  uint64_t count_ = 0;
};

template <typename Record, typename Less>
class ExternalSort<Record, Less>::Sorted {
 public:
  bool next(Record* out) {
    if (merger_) return merger_->next(out);
    if (at_ == memory_.size()) return false;
    *out = memory_[at_++];
    return true;
  }

 private:
  friend class ExternalSort;
  std::vector<Record> memory_;  // all of them, when no run was spilled
  size_t at_ = 0;
  std::vector<Run> runs_;  // else the runs, merged as they are read
  std::optional<Merger> merger_;
};

template <typename Record, typename Less>
typename ExternalSort<Record, Less>::Sorted ExternalSort<Record, Less>::sorted() && {
  Sorted out;
  if (runs_.empty()) {  // all in memory: no merge
    std::stable_sort(run_.begin(), run_.end(), less_);
    out.memory_ = std::move(run_);
  } else {
    if (!run_.empty()) spill_run();
    out.runs_ = std::move(runs_);
    out.merger_.emplace(out.runs_, 0, less_);
  }
  run_ = {};  // the merge needs a piece of each run, not a run
  runs_.clear();
  count_ = 0;
  return out;
}

}  // namespace gpuprof
