// gpu_time.cpp: busy, idle and what the idle time waited for, per device.
#include "analyze/gpu_time.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <tuple>
#include <unordered_map>

#include "analyze/call_tree.h"
#include "analyze/gpu_attribution.h"
#include "analyze/op_timeline.h"

namespace gpuprof {
namespace {

using Interval = std::pair<uint64_t, uint64_t>;  // [start, end)

// Sorted, non-overlapping intervals covering the same time.
std::vector<Interval> merged(std::vector<Interval> spans) {
  std::sort(spans.begin(), spans.end());
  std::vector<Interval> out;
  for (const Interval& s : spans) {
    if (s.second <= s.first) continue;
    if (!out.empty() && s.first <= out.back().second)
      out.back().second = std::max(out.back().second, s.second);
    else
      out.push_back(s);
  }
  return out;
}

uint64_t length(const std::vector<Interval>& spans) {
  uint64_t total = 0;
  for (const Interval& s : spans) total += s.second - s.first;
  return total;
}

// Time covered by both (each merged).
uint64_t intersection(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  uint64_t total = 0;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const uint64_t lo = std::max(a[i].first, b[j].first), hi = std::min(a[i].second, b[j].second);
    if (hi > lo) total += hi - lo;
    (a[i].second < b[j].second ? i : j)++;
  }
  return total;
}

using Category = GpuCategory;

GpuTimeByCategory category_times(const std::vector<Interval> (&spans)[kGpuCategories]) {
  return {length(merged(spans[kGpuCompute])), length(merged(spans[kGpuCommunication])), length(merged(spans[kGpuMemcpy])),
          length(merged(spans[kGpuMemset]))};
}

}  // namespace

std::string gpu_activity_name(const std::vector<std::string>& launch_names, uint32_t name_id) {
  return name_id < launch_names.size() ? launch_names[name_id] : "[kernel " + std::to_string(name_id) + "]";
}

GpuCategory gpu_category_of(GpuActivityKind kind, const std::string& name) {
  if (kind == GpuActivityKind::memcpy) return kGpuMemcpy;
  if (kind == GpuActivityKind::memset) return kGpuMemset;
  std::string lower(name.size(), ' ');
  std::transform(name.begin(), name.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  return lower.find("nccl") != std::string::npos ? kGpuCommunication : kGpuCompute;
}

uint64_t nearest_rank_of(uint64_t count, double p) {
  if (count == 0) return 0;
  const auto rank = static_cast<uint64_t>(std::ceil(p / 100.0 * static_cast<double>(count)));
  return std::clamp<uint64_t>(rank, 1, count);
}

uint64_t nearest_rank(const std::vector<uint64_t>& ascending, double p) {
  if (ascending.empty()) return 0;
  return ascending[nearest_rank_of(ascending.size(), p) - 1];
}

QueueDelays queue_delays_of(const std::vector<uint64_t>& ascending) {
  if (ascending.empty()) return {};
  return {.count = ascending.size(),
          .p50_ns = nearest_rank(ascending, 50),
          .p90_ns = nearest_rank(ascending, 90),
          .p99_ns = nearest_rank(ascending, 99),
          .max_ns = ascending.back()};
}

GpuTimeDraft draft_gpu_time(const Recording& recording) {
  std::unordered_map<uint64_t, const GpuCorrelation*> launch_of;
  for (const GpuCorrelation& c : recording.gpu_correlations) launch_of.emplace(c.correlation_id, &c);

  auto name_of = [&](const GpuActivity& a) { return gpu_activity_name(recording.launch_names, a.name_id); };
  auto category_of = [&](const GpuActivity& a) { return gpu_category_of(a.kind, name_of(a)); };

  std::map<uint32_t, std::vector<const GpuActivity*>> by_device;
  for (const GpuActivity& a : recording.gpu_activities) by_device[a.device].push_back(&a);

  GpuTimeDraft draft;
  for (auto& [device, activities] : by_device) {
    GpuDeviceTime d;
    d.device = device;
    d.activities = activities.size();
    std::vector<uint64_t> queue_delays;
    std::vector<Interval> all;
    std::vector<Interval> by_category[kGpuCategories];
    std::map<uint32_t, std::pair<std::vector<Interval>, std::vector<Interval>[kGpuCategories]>> by_stream;
    std::map<uint32_t, uint64_t> stream_count;
    std::map<std::string, GpuKernelTime> kernels;
    for (const GpuActivity* a : activities) {
      const Interval span{a->start_ns, std::max(a->start_ns, a->end_ns)};
      const Category c = category_of(*a);
      all.push_back(span);
      by_category[c].push_back(span);
      auto& stream = by_stream[a->stream];
      stream.first.push_back(span);
      stream.second[c].push_back(span);
      stream_count[a->stream]++;
      GpuKernelTime& k = kernels[name_of(*a)];
      k.name = name_of(*a);
      k.calls++;
      k.total_ns += gpu_activity_ns(*a);
      if (auto l = launch_of.find(a->correlation_id); l != launch_of.end() && a->start_ns >= l->second->ts_ns)
        queue_delays.push_back(a->start_ns - l->second->ts_ns);
    }
    const std::vector<Interval> busy = merged(all);
    if (busy.empty()) {  // only records CUPTI could not time
      d.window_start_ns = d.window_end_ns = activities.front()->start_ns;
      draft.devices.push_back(std::move(d));
      continue;
    }
    d.window_start_ns = busy.front().first;
    d.window_end_ns = busy.back().second;
    d.busy_ns = length(busy);
    d.by_category = category_times(by_category);
    d.overlap_ns = intersection(merged(by_category[kGpuCompute]), merged(by_category[kGpuCommunication]));
    std::sort(queue_delays.begin(), queue_delays.end());
    d.queue_delays = queue_delays_of(queue_delays);
    for (auto& [stream, spans] : by_stream)
      d.streams.push_back({stream, stream_count[stream], length(merged(spans.first)), category_times(spans.second)});

    // Each gap ends at the start of the earliest activity starting there.
    std::sort(activities.begin(), activities.end(), [](const GpuActivity* a, const GpuActivity* b) {
      return std::tie(a->start_ns, a->correlation_id) < std::tie(b->start_ns, b->correlation_id);
    });
    size_t next = 0;
    for (size_t g = 0; g + 1 < busy.size(); ++g) {
      const uint64_t gap_start = busy[g].second, gap_end = busy[g + 1].first;
      while (next + 1 < activities.size() && activities[next]->start_ns < gap_end) ++next;
      const GpuActivity* first = activities[next];  // starts at gap_end
      d.idle_gaps++;
      auto l = launch_of.find(first->correlation_id);
      if (l == launch_of.end()) {
        d.launch_not_seen_ns += gap_end - gap_start;
        continue;
      }
      const uint64_t launch = l->second->ts_ns;
      const uint64_t wait = launch > gap_start ? std::min(launch, gap_end) - gap_start : 0;
      d.host_wait_ns += wait;
      d.queued_ns += gap_end - gap_start - wait;
      if (wait) {
        draft.moments.push_back({gap_start, l->second->tid});
        draft.waits.push_back({draft.devices.size(), wait});
      }
    }
    for (auto& [name, k] : kernels) d.kernels.push_back(std::move(k));
    std::stable_sort(d.kernels.begin(), d.kernels.end(), [](const GpuKernelTime& a, const GpuKernelTime& b) {
      return std::tie(b.total_ns, a.name) < std::tie(a.total_ns, b.name);
    });
    draft.devices.push_back(std::move(d));
  }
  return draft;
}

std::vector<GpuDeviceTime> finish_gpu_time(GpuTimeDraft draft, const std::vector<RunningAt>& running) {
  std::vector<std::map<std::pair<std::string, std::string>, GpuHostWait>> waits(draft.devices.size());
  for (size_t i = 0; i < draft.moments.size(); ++i) {
    const RunningAt& ran = running[i];
    GpuHostWait& w = waits[draft.waits[i].device][{ran.op, ran.python_frame}];
    w.op = ran.op;
    w.python_frame = ran.python_frame;
    w.wait_ns += draft.waits[i].wait_ns;
    w.gaps++;
  }
  for (size_t device = 0; device < draft.devices.size(); ++device)
    draft.devices[device].host_waits = listed_host_waits(std::move(waits[device]));
  return std::move(draft.devices);
}

std::vector<GpuHostWait> listed_host_waits(std::map<std::pair<std::string, std::string>, GpuHostWait> waits) {
  std::vector<GpuHostWait> host_waits;
  for (auto& [key, w] : waits) host_waits.push_back(std::move(w));
  std::stable_sort(host_waits.begin(), host_waits.end(), [](const GpuHostWait& a, const GpuHostWait& b) {
    return std::tie(b.wait_ns, a.op, a.python_frame) < std::tie(a.wait_ns, b.op, b.python_frame);
  });
  return host_waits;
}

std::string innermost_frame(const Recording& recording, std::optional<uint32_t> stack_id) {
  if (!stack_id || *stack_id >= recording.sample_stacks.size()) return "";
  const std::vector<uint32_t>& frames = recording.sample_stacks[*stack_id];
  if (frames.empty() || frames.back() >= recording.sample_frames.size()) return "";
  return recording.sample_frames[frames.back()];
}

std::vector<RunningAt> running_at(const Recording& recording, const std::vector<ThreadMoment>& moments) {
  std::vector<RunningAt> out(moments.size());
  if (moments.empty()) return out;
  const Timeline timeline = build_timeline(recording.events);
  const CallTree tree = build_call_tree(timeline);
  std::unordered_map<uint64_t, uint32_t> entry_stack;
  for (const EntryStack& e : recording.entry_stacks) entry_stack.emplace(e.event_index, e.stack_id);
  const std::vector<int64_t> running = innermost_calls_at(timeline, tree, moments);
  for (size_t i = 0; i < moments.size(); ++i) {
    if (running[i] < 0) continue;
    out[i].op = op_display_name(recording.ops, timeline.calls[running[i]].op_id);
    int64_t outer = running[i];
    while (tree.parent[outer] >= 0) outer = tree.parent[outer];
    if (auto s = entry_stack.find(timeline.calls[outer].entry_index); s != entry_stack.end())
      out[i].python_frame = innermost_frame(recording, s->second);
  }
  return out;
}

std::vector<GpuDeviceTime> gpu_time_by_device(const Recording& recording) {
  GpuTimeDraft draft = draft_gpu_time(recording);
  const std::vector<RunningAt> running = running_at(recording, draft.moments);
  return finish_gpu_time(std::move(draft), running);
}

}  // namespace gpuprof
