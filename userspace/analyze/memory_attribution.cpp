#include "analyze/memory_attribution.h"

#include <algorithm>
#include <numeric>
#include <unordered_map>
#include <utility>

#include "analyze/call_tree.h"

namespace gpuprof {
namespace {

// An allocator event that counts, with its size resolved.
struct Counted {
  uint64_t ts_ns;
  uint32_t tid;
  int64_t cpu_bytes;
  int64_t cuda_bytes;
  bool device;
  int64_t device_total;
  int device_index;
  int64_t call = -1;  // innermost op call running on tid, -1 if none
};

// Sizes of CPU releases from their allocations, across threads (a block
// allocated on one thread may be released on another), in time order.
std::vector<Counted> resolve_sizes(std::span<const gp_mem_event> events, uint64_t* unmatched_frees) {
  std::vector<size_t> order(events.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return events[a].ts_ns < events[b].ts_ns; });
  AllocationSizes sizes;
  std::vector<Counted> counted;
  counted.reserve(events.size());
  for (size_t i : order) {
    const gp_mem_event& e = events[i];
    const std::optional<AllocationSizes::Counted> c = sizes.count(e);
    if (!c) continue;
    counted.push_back({.ts_ns = e.ts_ns, .tid = e.tid, .cpu_bytes = c->cpu_bytes, .cuda_bytes = c->cuda_bytes,
                       .device = c->device, .device_total = static_cast<int64_t>(e.total_allocated),
                       .device_index = e.device_index});
  }
  *unmatched_frees += sizes.unmatched_frees();
  return counted;
}

}  // namespace

std::optional<AllocationSizes::Counted> AllocationSizes::count(const gp_mem_event& e) {
  switch (e.kind) {
    case GP_MEM_CPU_ALLOC:
      live_[e.addr] = e.bytes;
      return Counted{.cpu_bytes = e.bytes};
    case GP_MEM_CPU_FREE: {
      auto it = live_.find(e.addr);
      if (it == live_.end()) {
        ++unmatched_frees_;
        return std::nullopt;
      }
      const int64_t bytes = it->second;
      live_.erase(it);
      return Counted{.cpu_bytes = -bytes};
    }
    case GP_MEM_DEVICE:
      return Counted{.cuda_bytes = e.bytes, .device = true};
    default:
      return std::nullopt;
  }
}

std::vector<CountedMemoryEvent> counted_memory_events(std::span<const gp_mem_event> events) {
  uint64_t unmatched = 0;
  std::vector<CountedMemoryEvent> out;
  for (const Counted& c : resolve_sizes(events, &unmatched))
    out.push_back({.ts_ns = c.ts_ns, .tid = c.tid, .cpu_bytes = c.cpu_bytes, .cuda_bytes = c.cuda_bytes});
  return out;
}

std::vector<MemoryLevel> memory_levels(std::span<const gp_mem_event> events) {
  std::vector<size_t> order(events.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return events[a].ts_ns < events[b].ts_ns; });
  AllocationSizes sizes;
  MemoryLevelFollower follower;
  std::vector<MemoryLevel> levels;
  for (size_t i : order)
    if (const std::optional<AllocationSizes::Counted> c = sizes.count(events[i])) levels.push_back(follower.after(events[i], *c));
  return levels;
}

MemoryAttribution attribute_memory(const Timeline& timeline, std::span<const gp_mem_event> events) {
  MemoryAttribution out;
  std::vector<Counted> counted = resolve_sizes(events, &out.unmatched_frees);
  CallTree tree = build_call_tree(timeline);
  const std::vector<int64_t> calls = innermost_calls_at(timeline, tree, thread_moments(counted));
  for (size_t i = 0; i < counted.size(); i++) counted[i].call = calls[i];
  out.parent = std::move(tree.parent);
  out.own_cpu.assign(timeline.calls.size(), 0);
  out.own_cuda.assign(timeline.calls.size(), 0);
  int64_t cpu_level = 0;
  for (const Counted& c : counted) {
    if (c.call >= 0) {
      out.own_cpu[c.call] += c.cpu_bytes;
      out.own_cuda[c.call] += c.cuda_bytes;
    } else {
      ++out.outside_events;
      out.outside_cpu += c.cpu_bytes;
      out.outside_cuda += c.cuda_bytes;
    }
    if (c.device) {
      if (!out.cuda_peak.seen || c.device_total > out.cuda_peak.bytes)
        out.cuda_peak = {true, c.device_total, c.ts_ns, c.call, c.device_index};
    } else {
      cpu_level += c.cpu_bytes;
      if (!out.cpu_peak.seen || cpu_level > out.cpu_peak.bytes)
        out.cpu_peak = {true, cpu_level, c.ts_ns, c.call, -1};
    }
  }
  return out;
}

}  // namespace gpuprof
