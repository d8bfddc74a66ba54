#include "launch_table.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <tuple>

#include "call_tree.h"
#include "text_table.h"

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

}  // namespace

LaunchSummary summarize_launches(const Recording& recording) {
  LaunchSummary out;
  if (recording.cuda_runtime) {
    out.traced = true;
    out.libcudart_path = recording.cuda_runtime->libcudart_path;
    out.lost = recording.cuda_runtime->launches_lost;
  }
  std::vector<ThreadMoment> moments;
  moments.reserve(recording.launches.size());
  for (const CudaLaunch& l : recording.launches) moments.push_back({l.ts_ns, l.tid});
  const std::vector<std::string> ops = op_names_at(recording, moments);
  struct Count {
    uint64_t n = 0;
    std::string grid, block, stream;
  };
  std::map<std::tuple<std::string, uint32_t, uint16_t>, Count> counts;  // (op, name id, api)
  for (size_t i = 0; i < recording.launches.size(); ++i) {
    const CudaLaunch& l = recording.launches[i];
    const std::string op = ops[i].empty() ? kNoOpName : ops[i];
    if (ops[i].empty()) out.outside_ops++;
    Count& c = counts[{op, l.name_id, l.api}];
    const bool graph = l.api == GP_LAUNCH_GRAPH;
    const std::string grid = graph ? "-" : dims(l.grid), block = graph ? "-" : dims(l.block);
    const std::string stream = stream_name(l.stream);
    if (c.n++ == 0) {
      c.grid = grid, c.block = block, c.stream = stream;
    } else {
      if (c.grid != grid) c.grid = "mixed";
      if (c.block != block) c.block = "mixed";
      if (c.stream != stream) c.stream = "mixed";
    }
    out.launches++;
  }
  for (const auto& [key, c] : counts) {
    const auto& [op, name_id, api] = key;
    out.rows.push_back({op,
                        name_id < recording.launch_names.size() ? recording.launch_names[name_id]
                                                                : "[kernel " + std::to_string(name_id) + "]",
                        api, c.n, c.grid, c.block, c.stream});
  }
  std::stable_sort(out.rows.begin(), out.rows.end(), [](const LaunchRow& a, const LaunchRow& b) {
    return std::tie(b.launches, a.op, a.kernel, a.api) < std::tie(a.launches, b.op, b.kernel, b.api);
  });
  return out;
}

std::string format_launch_table(const LaunchSummary& summary, int row_limit) {
  if (!summary.traced)
    return "No CUDA launches were traced: the target had no libcudart mapped while recording "
           "(a CPU-only PyTorch, or a CUDA runtime linked statically).\n";
  const size_t shown = row_limit < 0 ? summary.rows.size()
                                     : std::min(summary.rows.size(), static_cast<size_t>(row_limit));
  std::vector<std::vector<std::string>> cells = {
      {"Operator", "Kernel", "Launched with", "Grid", "Block", "Stream", "Launches"}};
  for (size_t i = 0; i < shown; ++i) {
    const LaunchRow& r = summary.rows[i];
    cells.push_back({r.op, r.kernel, launch_api_name(r.api), r.grid, r.block, r.stream,
                     std::to_string(r.launches)});
  }
  std::string out = format_text_table(cells, 1);
  out += std::to_string(summary.launches) + " CUDA launches (" + std::to_string(summary.outside_ops) +
         " outside any op) through " + summary.libcudart_path;
  if (shown < summary.rows.size())
    out += "; " + std::to_string(summary.rows.size() - shown) + " more rows (--row-limit -1 shows all)";
  out += "\n";
  if (summary.lost)
    out += "WARNING: " + std::to_string(summary.lost) +
           " launches lost (ring buffer full): the counts are incomplete\n";
  return out;
}

}  // namespace gpuprof
