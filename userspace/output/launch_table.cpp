#include "output/launch_table.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>

#include "analyze/call_tree.h"
#include "base/text_table.h"
#include "output/row_limit.h"

namespace gpuprof {

const char* launch_api_name(uint16_t api) {
  switch (api) {
    case GP_LAUNCH_KERNEL:
      return "cudaLaunchKernel";
    case GP_LAUNCH_KERNEL_EXC:
      return "cudaLaunchKernelExC";
    case GP_LAUNCH_GRAPH:
      return "cudaGraphLaunch";
    case GP_LAUNCH_DRIVER_KERNEL:
      return "cuLaunchKernel";
    case GP_LAUNCH_DRIVER_KERNEL_EX:
      return "cuLaunchKernelEx";
    default:
      return "?";
  }
}

namespace {

std::string dims(const uint32_t (&d)[3]) {
  return "(" + std::to_string(d[0]) + ", " + std::to_string(d[1]) + ", " + std::to_string(d[2]) + ")";
}

std::string stream_name(uint64_t stream) {
  if (stream == 0) return "default";
  char hex[32];
  std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(stream));
  return hex;
}

// The probes name a runtime launch by the symbol at its host function; a
// wheel's stripped libtorch_cuda leaves them "[unknown kernel 0x...]".
bool unnamed(const std::string& name) { return name.starts_with("[unknown kernel "); }

}  // namespace

// The join (docs/cuda.md): the CUPTI shim publishes a correlation id on the
// launching thread inside the launch call, and the kernel's activity
// carries it. A launch's correlations are its thread's runtime-domain ones
// from the launch's moment up to its next launch; the first of them with a
// kernel activity names it. Driver launches (cuDNN's, cuBLAS's) are left as
// "[CUfunction 0x...]": on an H200 (docs/gpu.md) their correlations did not
// follow their probe hits in time, and the join named them after the next
// op's kernels.
std::vector<std::optional<uint32_t>> cupti_names(const Recording& recording) {
  CuptiLaunchNames join;
  join.add_launches(recording.launches);
  join.add_correlations(recording.gpu_correlations);
  join.add_activities(recording.gpu_activities);
  return std::move(join).names(recording.launch_names);
}

void LaunchCount::add(const CudaLaunch& l) {
  const bool graph = l.api == GP_LAUNCH_GRAPH;
  add(LaunchCount{1, graph ? "-" : dims(l.grid), graph ? "-" : dims(l.block), stream_name(l.stream)});
}

void LaunchCount::add(const LaunchCount& part) {
  if (part.n == 0) return;
  if (n == 0) {
    *this = part;
    return;
  }
  n += part.n;
  if (grid != part.grid) grid = "mixed";
  if (block != part.block) block = "mixed";
  if (stream != part.stream) stream = "mixed";
}

std::vector<LaunchRow> LaunchRows::sorted() const {
  std::vector<LaunchRow> rows;
  for (const auto& [key, c] : counts_) {
    const auto& [op, kernel, api] = key;
    rows.push_back({op, kernel, api, c.n, c.grid, c.block, c.stream});
  }
  std::stable_sort(rows.begin(), rows.end(), [](const LaunchRow& a, const LaunchRow& b) {
    return std::tie(b.launches, a.op, a.kernel, a.api) < std::tie(a.launches, b.op, b.kernel, b.api);
  });
  return rows;
}

LaunchSummary launch_summary_of(const Recording& recording) {
  LaunchSummary out;
  if (recording.cuda_runtime) {
    out.traced = true;
    out.libcudart_path = recording.cuda_runtime->libcudart_path;
    out.lost = recording.cuda_runtime->launches_lost;
  }
  return out;
}

void CuptiLaunchNames::add_launches(std::span<const CudaLaunch> launches) {
  for (const CudaLaunch& l : launches) launches_.push_back({l.ts_ns, l.tid, l.name_id, l.api});
}

void CuptiLaunchNames::add_correlations(std::span<const GpuCorrelation> correlations) {
  for (const GpuCorrelation& c : correlations)
    if (c.domain == kCuptiRuntimeDomain) correlations_[c.tid].push_back({c.ts_ns, c.correlation_id});
}

void CuptiLaunchNames::add_activities(std::span<const GpuActivity> activities) {
  for (const GpuActivity& a : activities)
    if (a.kind == GpuActivityKind::kernel) kernel_of_.emplace(a.correlation_id, a.name_id);
}

std::vector<std::optional<uint32_t>> CuptiLaunchNames::names(const std::vector<std::string>& launch_names) && {
  std::vector<std::optional<uint32_t>> names(launches_.size());
  if (kernel_of_.empty()) return names;
  std::unordered_map<uint32_t, std::vector<size_t>> launches;  // tid -> launch indices
  for (size_t i = 0; i < launches_.size(); ++i) launches[launches_[i].tid].push_back(i);
  for (auto& [tid, ids] : correlations_) std::stable_sort(ids.begin(), ids.end());
  for (auto& [tid, indices] : launches) {
    std::stable_sort(indices.begin(), indices.end(),
                     [&](size_t a, size_t b) { return launches_[a].ts_ns < launches_[b].ts_ns; });
    auto thread = correlations_.find(tid);
    if (thread == correlations_.end()) continue;
    const auto& ids = thread->second;
    for (size_t k = 0; k < indices.size(); ++k) {
      const Moment& l = launches_[indices[k]];
      if (!may_take_cupti_name(launch_names, CudaLaunch{.api = l.api, .name_id = l.name_id})) continue;
      const uint64_t until = k + 1 < indices.size() ? launches_[indices[k + 1]].ts_ns : UINT64_MAX;
      for (auto it = std::lower_bound(ids.begin(), ids.end(), std::pair<uint64_t, uint64_t>{l.ts_ns, 0});
           it != ids.end() && it->first < until; ++it)
        if (auto kernel = kernel_of_.find(it->second); kernel != kernel_of_.end()) {
          names[indices[k]] = kernel->second;
          break;
        }
    }
  }
  return names;
}

bool may_take_cupti_name(const std::vector<std::string>& launch_names, const CudaLaunch& l) {
  return (l.api == GP_LAUNCH_KERNEL || l.api == GP_LAUNCH_KERNEL_EXC) && l.name_id < launch_names.size() &&
         unnamed(launch_names[l.name_id]);
}

std::string launch_kernel_name(const Recording& recording, uint32_t name_id) {
  return name_id < recording.launch_names.size() ? recording.launch_names[name_id]
                                                 : "[kernel " + std::to_string(name_id) + "]";
}

LaunchSummary summarize_launches(const Recording& recording) {
  LaunchSummary out = launch_summary_of(recording);
  const std::vector<std::string> ops = op_names_at(recording, thread_moments(recording.launches));
  const std::vector<std::optional<uint32_t>> from_cupti = cupti_names(recording);
  LaunchRows rows;
  for (size_t i = 0; i < recording.launches.size(); ++i) {
    const CudaLaunch& l = recording.launches[i];
    if (ops[i].empty()) out.outside_ops++;
    if (from_cupti[i]) out.named_by_cupti++;
    rows.row(ops[i].empty() ? kNoOpName : ops[i], launch_kernel_name(recording, from_cupti[i].value_or(l.name_id)),
             l.api)
        .add(l);
    out.launches++;
  }
  out.rows = rows.sorted();
  return out;
}

std::string format_launch_table(const LaunchSummary& summary, int row_limit) {
  if (!summary.traced)
    return std::string("No CUDA launches were traced: ") + kNoCudaRuntimeReason + ".\n";
  const size_t shown = rows_shown(summary.rows.size(), row_limit);
  std::vector<std::vector<std::string>> cells = {
      {"Operator", "Kernel", "Launched with", "Grid", "Block", "Stream", "Launches"}};
  for (size_t i = 0; i < shown; ++i) {
    const LaunchRow& r = summary.rows[i];
    cells.push_back({r.op, r.kernel, launch_api_name(r.api), r.grid, r.block, r.stream,
                     std::to_string(r.launches)});
  }
  std::string out = format_text_table(cells, 1);
  out += std::to_string(summary.launches) + " CUDA launches (" + std::to_string(summary.outside_ops) +
         " outside any op";
  if (summary.named_by_cupti)
    out += "; " + std::to_string(summary.named_by_cupti) + " named from CUPTI, their probe finding no symbol";
  out += ") through " + summary.libcudart_path;
  if (shown < summary.rows.size()) out += "; " + rows_left_out(summary.rows.size(), shown);
  out += "\n";
  if (summary.lost)
    out += "WARNING: " + std::to_string(summary.lost) +
           " launches lost (ring buffer full): the counts are incomplete\n";
  return out;
}

}  // namespace gpuprof
