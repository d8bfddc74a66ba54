// sorted_gpu_time.cpp: the join by correlation id, then one pass over each
// device's activities in start order.
#include "analyze/sorted_gpu_time.h"

#include <algorithm>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "analyze/gpu_attribution.h"

namespace gpuprof {
namespace {

// The union of intervals [start, end) that come by start: its length so
// far, and the gap a new interval leaves after the union's last one
// (touching intervals merge, empty ones are skipped, as gpu_time.cpp's
// merged() does).
class StartOrderedUnion {
 public:
  // The gap [from, to) before this interval, if it opens a new piece after
  // an earlier one.
  std::optional<std::pair<uint64_t, uint64_t>> add(uint64_t start, uint64_t end) {
    if (end <= start) return std::nullopt;
    if (!open_) {
      open_ = true;
      first_ = start;
      lo_ = start;
      hi_ = end;
      return std::nullopt;
    }
    if (start <= hi_) {
      hi_ = std::max(hi_, end);
      return std::nullopt;
    }
    const std::pair<uint64_t, uint64_t> gap{hi_, start};
    closed_ += hi_ - lo_;
    lo_ = start;
    hi_ = end;
    return gap;
  }
  bool empty() const { return !open_; }
  uint64_t length() const { return closed_ + (open_ ? hi_ - lo_ : 0); }
  uint64_t first() const { return first_; }
  uint64_t last() const { return hi_; }

 private:
  bool open_ = false;
  uint64_t first_ = 0, lo_ = 0, hi_ = 0, closed_ = 0;
};

struct CategoryUnions {
  StartOrderedUnion of[kGpuCategories];
  void add(GpuCategory c, uint64_t start, uint64_t end) { of[c].add(start, end); }
  GpuTimeByCategory times() const {
    return {of[kGpuCompute].length(), of[kGpuCommunication].length(), of[kGpuMemcpy].length(),
            of[kGpuMemset].length()};
  }
};

struct StreamState {
  uint64_t activities = 0;
  StartOrderedUnion busy;
  CategoryUnions categories;
};

// One device's figures as its activities come in TimeOrder.
class DeviceTime {
 public:
  DeviceTime(uint32_t device, size_t index, size_t run_bytes)
      : index_(index), delays_(run_bytes / sizeof(uint64_t)) {
    d_.device = device;
  }

  void add(const SortedGpuTime::Joined& a, GpuCategory category, GpuKernelTime& kernel, HostWaitMoments& moments) {
    d_.activities++;
    const uint64_t end = std::max(a.start_ns, a.end_ns);
    // The first activity in this order that starts at a's start: an idle
    // gap a ends is charged to its launch (gpu_time.cpp's `next`).
    if (!first_at_start_ || first_at_start_->start_ns != a.start_ns) first_at_start_ = a;
    if (auto gap = busy_.add(a.start_ns, end)) end_gap(gap->first, gap->second, moments);
    categories_.add(category, a.start_ns, end);
    if (category == kGpuCompute || category == kGpuCommunication) compute_or_communication_.add(a.start_ns, end);
    StreamState& stream = streams_[a.stream];
    stream.activities++;
    stream.busy.add(a.start_ns, end);
    stream.categories.add(category, a.start_ns, end);
    kernel.calls++;
    kernel.total_ns += a.end_ns > a.start_ns ? a.end_ns - a.start_ns : 0;
    if (a.launch_seen && a.start_ns >= a.launch_ns) delays_.add(a.start_ns - a.launch_ns);
  }

  // first_start: the device's first activity's start in file order.
  GpuDeviceTime finish(uint64_t first_start, std::map<std::string, GpuKernelTime> kernels) && {
    if (busy_.empty()) {  // only records CUPTI could not time
      d_.window_start_ns = d_.window_end_ns = first_start;  // no streams, kernels or delays listed
      return std::move(d_);
    }
    d_.window_start_ns = busy_.first();
    d_.window_end_ns = busy_.last();
    d_.busy_ns = busy_.length();
    d_.by_category = categories_.times();
    // |compute ∩ communication| = |compute| + |communication| - |either|.
    d_.overlap_ns = d_.by_category.compute_ns + d_.by_category.communication_ns - compute_or_communication_.length();
    d_.queue_delays = percentiles(delays_);
    for (const auto& [id, s] : streams_) d_.streams.push_back({id, s.activities, s.busy.length(), s.categories.times()});
    for (auto& [name, k] : kernels) d_.kernels.push_back(std::move(k));
    std::stable_sort(d_.kernels.begin(), d_.kernels.end(), [](const GpuKernelTime& a, const GpuKernelTime& b) {
      return std::tie(b.total_ns, a.name) < std::tie(a.total_ns, b.name);
    });
    return std::move(d_);
  }

 private:
  void end_gap(uint64_t gap_start, uint64_t gap_end, HostWaitMoments& moments) {
    const SortedGpuTime::Joined& first = *first_at_start_;
    d_.idle_gaps++;
    if (!first.launch_seen) {
      d_.launch_not_seen_ns += gap_end - gap_start;
      return;
    }
    const uint64_t launch = first.launch_ns;
    const uint64_t wait = launch > gap_start ? std::min(launch, gap_end) - gap_start : 0;
    d_.host_wait_ns += wait;
    d_.queued_ns += gap_end - gap_start - wait;
    if (wait)
      moments.add({.ts_ns = gap_start, .wait_ns = wait, .device = static_cast<uint32_t>(index_), .tid = first.launch_tid});
  }

  static QueueDelays percentiles(ExternalSort<uint64_t>& delays) {
    const uint64_t count = delays.size();
    if (count == 0) return {};
    QueueDelays q{.count = count};
    const uint64_t r50 = nearest_rank_of(count, 50), r90 = nearest_rank_of(count, 90),
                   r99 = nearest_rank_of(count, 99);
    uint64_t rank = 0;
    delays.drain([&](uint64_t delay) {
      rank++;
      if (rank == r50) q.p50_ns = delay;
      if (rank == r90) q.p90_ns = delay;
      if (rank == r99) q.p99_ns = delay;
      q.max_ns = delay;
    });
    return q;
  }

  GpuDeviceTime d_;
  size_t index_;  // in the draft's devices
  StartOrderedUnion busy_;
  CategoryUnions categories_;
  StartOrderedUnion compute_or_communication_;
  std::map<uint32_t, StreamState> streams_;
  std::optional<SortedGpuTime::Joined> first_at_start_;
  ExternalSort<uint64_t> delays_;
};

}  // namespace

SortedGpuTime::SortedGpuTime(size_t run_bytes)
    : run_bytes_(run_bytes), by_correlation_(run_bytes / sizeof(ByCorrelation)) {}

void SortedGpuTime::add_correlations(std::span<const GpuCorrelation> correlations) {
  for (const GpuCorrelation& c : correlations)
    by_correlation_.add({.correlation_id = c.correlation_id, .start_ns = c.ts_ns, .tid = c.tid});
}

void SortedGpuTime::add_activities(std::span<const GpuActivity> activities) {
  for (const GpuActivity& a : activities) {
    first_start_.try_emplace(a.device, a.start_ns);
    by_correlation_.add({.correlation_id = a.correlation_id,
                         .start_ns = a.start_ns,
                         .end_ns = a.end_ns,
                         .device = a.device,
                         .stream = a.stream,
                         .name_id = a.name_id,
                         .kind = static_cast<uint16_t>(a.kind),
                         .activity = true});
  }
}

GpuTimeDraft SortedGpuTime::finish(const std::vector<std::string>& launch_names, HostWaitMoments& moments) && {
  // 1. Each activity joined to its id's first launch (launches sort first).
  ExternalSort<Joined, TimeOrder> by_time(run_bytes_ / sizeof(Joined));
  std::optional<ByCorrelation> launch;
  by_correlation_.drain([&](const ByCorrelation& r) {
    if (!r.activity) {
      if (!launch || launch->correlation_id != r.correlation_id) launch = r;
      return;
    }
    const bool seen = launch && launch->correlation_id == r.correlation_id;
    by_time.add({.start_ns = r.start_ns,
                 .end_ns = r.end_ns,
                 .correlation_id = r.correlation_id,
                 .launch_ns = seen ? launch->start_ns : 0,
                 .device = r.device,
                 .stream = r.stream,
                 .name_id = r.name_id,
                 .launch_tid = seen ? launch->tid : 0,
                 .kind = r.kind,
                 .launch_seen = seen});
  });

  // 2. Each device's activities in start order.
  GpuTimeDraft draft;
  std::optional<DeviceTime> device;
  std::map<std::string, GpuKernelTime> kernels;  // the device's, by name
  // Each (kind, name id)'s kernel entry and category, looked up once per
  // device.
  std::unordered_map<uint64_t, std::pair<GpuKernelTime*, GpuCategory>> by_name_id;
  uint32_t device_id = 0;
  auto finish_device = [&] {
    if (!device) return;
    draft.devices.push_back(std::move(*device).finish(first_start_.at(device_id), std::move(kernels)));
    device.reset();
    kernels.clear();
    by_name_id.clear();
  };
  by_time.drain([&](const Joined& a) {
    if (!device || a.device != device_id) {
      finish_device();
      device_id = a.device;
      device.emplace(a.device, draft.devices.size(), run_bytes_);
    }
    auto [at, added] = by_name_id.try_emplace(uint64_t{a.kind} << 32 | a.name_id);
    if (added) {
      const std::string name = gpu_activity_name(launch_names, a.name_id);
      GpuKernelTime& kernel = kernels[name];
      kernel.name = name;
      at->second = {&kernel, gpu_category_of(static_cast<GpuActivityKind>(a.kind), name)};
    }
    device->add(a, at->second.second, *at->second.first, moments);
  });
  finish_device();
  return draft;
}

}  // namespace gpuprof
