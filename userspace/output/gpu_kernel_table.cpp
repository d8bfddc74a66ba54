#include "output/gpu_kernel_table.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "analyze/call_tree.h"
#include "analyze/gpu_attribution.h"
#include "output/launch_table.h"
#include "output/op_table.h"
#include "base/text_table.h"
#include "output/row_limit.h"
#include "record/cupti_shim_state.h"

namespace gpuprof {

GpuKernelSummary summarize_gpu_kernels(const Recording& recording) {
  const Timeline timeline = build_timeline(recording.events);
  const std::vector<int64_t> calls = calls_of_gpu_activities(recording, timeline, build_call_tree(timeline));
  GpuKernelSums sums;
  for (size_t i = 0; i < recording.gpu_activities.size(); ++i) {
    const GpuActivity& a = recording.gpu_activities[i];
    const std::string op = calls[i] == kLaunchNotSeenCall   ? std::string(kLaunchNotSeen)
                           : calls[i] == kLaunchedOutsideOps ? std::string(kNoOpName)
                                                             : op_display_name(recording.ops, timeline.calls[calls[i]].op_id);
    sums.add(op, a.name_id, 1, gpu_activity_ns(a));
  }
  return std::move(sums).summary(recording);
}

void GpuKernelSums::add(const std::string& op, uint32_t name_id, uint64_t calls, uint64_t ns) {
  Sums& sums = rows_[{op, name_id}];
  sums.calls += calls;
  sums.ns += ns;
  if (op == kLaunchNotSeen) launch_not_seen_ += calls;
  if (op == kNoOpName) outside_ops_ += calls;
}

GpuKernelSummary GpuKernelSums::summary(const Recording& recording) && {
  GpuKernelSummary out;
  out.shim = recording.cupti_shim;
  out.launch_not_seen = launch_not_seen_;
  out.outside_ops = outside_ops_;
  for (const auto& [key, sums] : rows_) {
    const auto& [op, name_id] = key;
    out.rows.push_back({.op = op,
                        .kernel = name_id < recording.launch_names.size() ? recording.launch_names[name_id]
                                                                          : "[kernel " + std::to_string(name_id) + "]",
                        .calls = sums.calls,
                        .total_ns = sums.ns});
    out.activities += sums.calls;
    out.total_ns += sums.ns;
  }
  std::stable_sort(out.rows.begin(), out.rows.end(), [](const GpuKernelRow& a, const GpuKernelRow& b) {
    return std::tie(b.total_ns, a.op, a.kernel) < std::tie(a.total_ns, b.op, b.kernel);
  });
  return out;
}

std::string format_gpu_kernel_table(const GpuKernelSummary& summary, int row_limit) {
  if (!summary.shim)
    return std::string("No GPU times: ") + kNoCuptiShimReason + ".\n";
  const size_t shown = rows_shown(summary.rows.size(), row_limit);
  std::vector<std::vector<std::string>> cells = {{"Operator", "Kernel", "Calls", "GPU total", "GPU avg"}};
  for (size_t i = 0; i < shown; ++i) {
    const GpuKernelRow& r = summary.rows[i];
    cells.push_back({r.op, r.kernel, std::to_string(r.calls), format_time_us(r.total_ns / 1e3),
                     format_time_us(r.total_ns / 1e3 / static_cast<double>(r.calls))});
  }
  std::string out = format_text_table(cells, 3);
  out += std::to_string(summary.activities) + " GPU activities, " + format_time_us(summary.total_ns / 1e3) +
         " of GPU time (" + std::to_string(summary.outside_ops) + " launched outside any op, " +
         std::to_string(summary.launch_not_seen) + " whose launch was not seen)";
  if (shown < summary.rows.size()) out += "; " + rows_left_out(summary.rows.size(), shown);
  out += "\n";
  return out + format_gpu_record_warnings(*summary.shim);
}

std::string format_gpu_record_warnings(const CuptiShimInfo& shim) {
  std::string out;
  if (shim.state == kCuptiShimYielded)
    out += "WARNING: the CUPTI shim gave CUPTI up to the job's own profiler (torch.profiler?) during the recording: "
           "GPU times stop there\n";
  else if (shim.state != kCuptiShimTracing)
    out += "WARNING: the CUPTI shim was not tracing (gpuprof_cupti_state " + std::to_string(shim.state) +
           "): see the target's stderr (gpuprof-cupti: ...)\n";
  if (shim.records_dropped)
    out += "WARNING: CUPTI dropped " + std::to_string(shim.records_dropped) + " records: GPU times are incomplete\n";
  if (shim.events_lost)
    out += "WARNING: " + std::to_string(shim.events_lost) +
           " GPU records lost (ring buffer full): GPU times are incomplete\n";
  return out;
}

}  // namespace gpuprof
