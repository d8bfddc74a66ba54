#include "gpu_kernel_table.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>

#include "call_tree.h"
#include "launch_table.h"
#include "op_table.h"
#include "text_table.h"

namespace gpuprof {

GpuKernelSummary summarize_gpu_kernels(const Recording& recording) {
  GpuKernelSummary out;
  if (recording.cupti_shim) {
    out.shim = true;
    out.state = recording.cupti_shim->state;
    out.shim_path = recording.cupti_shim->shim_path;
    out.dropped = recording.cupti_shim->records_dropped;
    out.lost = recording.cupti_shim->events_lost;
  }
  // The op of each launch, from its thread and moment.
  std::vector<ThreadMoment> moments;
  moments.reserve(recording.gpu_correlations.size());
  for (const GpuCorrelation& c : recording.gpu_correlations) moments.push_back({c.ts_ns, c.tid});
  const std::vector<std::string> ops = op_names_at(recording, moments);
  std::unordered_map<uint64_t, std::string> op_of_correlation;
  for (size_t i = 0; i < recording.gpu_correlations.size(); ++i)
    op_of_correlation[recording.gpu_correlations[i].correlation_id] = ops[i].empty() ? kNoOpName : ops[i];
  std::map<std::pair<std::string, uint32_t>, GpuKernelRow> rows;  // (op, name id)
  for (const GpuActivity& a : recording.gpu_activities) {
    auto it = op_of_correlation.find(a.correlation_id);
    const std::string op = it == op_of_correlation.end() ? kLaunchNotSeen : it->second;
    if (it == op_of_correlation.end()) out.launch_not_seen++;
    else if (op == kNoOpName) out.outside_ops++;
    GpuKernelRow& row = rows[{op, a.name_id}];
    if (row.calls == 0) {
      row.op = op;
      row.kernel = a.name_id < recording.launch_names.size() ? recording.launch_names[a.name_id]
                                                             : "[kernel " + std::to_string(a.name_id) + "]";
    }
    row.calls++;
    row.total_ns += a.end_ns - a.start_ns;
    out.activities++;
    out.total_ns += a.end_ns - a.start_ns;
  }
  for (auto& [key, row] : rows) out.rows.push_back(std::move(row));
  std::stable_sort(out.rows.begin(), out.rows.end(), [](const GpuKernelRow& a, const GpuKernelRow& b) {
    return std::tie(b.total_ns, a.op, a.kernel) < std::tie(a.total_ns, b.op, b.kernel);
  });
  return out;
}

std::string format_gpu_kernel_table(const GpuKernelSummary& summary, int row_limit) {
  if (!summary.shim)
    return "No GPU times: the target did not have gpuprof's CUPTI shim loaded (record -- CMD "
           "injects it; for -p, start the job with CUDA_INJECTION64_PATH=<dir of gpuprof>/"
           "libgpuprof_cupti.so; see docs/cuda.md).\n";
  const size_t shown = row_limit < 0 ? summary.rows.size()
                                     : std::min(summary.rows.size(), static_cast<size_t>(row_limit));
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
  if (shown < summary.rows.size())
    out += "; " + std::to_string(summary.rows.size() - shown) + " more rows (--row-limit -1 shows all)";
  out += "\n";
  if (summary.state != 1)
    out += "WARNING: the CUPTI shim was not tracing (gpuprof_cupti_state " + std::to_string(summary.state) +
           "): see the target's stderr (gpuprof-cupti: ...)\n";
  if (summary.dropped)
    out += "WARNING: CUPTI dropped " + std::to_string(summary.dropped) + " records: GPU times are incomplete\n";
  if (summary.lost)
    out += "WARNING: " + std::to_string(summary.lost) +
           " GPU records lost (ring buffer full): GPU times are incomplete\n";
  return out;
}

}  // namespace gpuprof
