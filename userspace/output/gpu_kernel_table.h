// gpu_kernel_table.h: GPU time per operator and kernel (report --kernels),
// from the CUPTI shim's records.
//
// A GPU activity (kernel, memcpy, memset) carries CUPTI's correlation id;
// the launch that made it carries the same id, published by the shim on the
// launching thread at the launch (GpuCorrelation). That launch's moment
// and thread give the op that launched the activity: the innermost op
// running there, as torch.profiler charges a kernel to the op whose
// cudaLaunchKernel made it (its Self CUDA). Activities are joined to
// launches by correlation id only, never by time. An activity whose
// launch was not seen (made before gpuprof attached, or lost) is counted
// under "[launch not seen]"; one launched outside every op under "[no op]".
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "record/recording.h"

namespace gpuprof {

inline constexpr const char* kLaunchNotSeen = "[launch not seen]";

struct GpuKernelRow {
  std::string op;      // torch's op name, "[no op]" or kLaunchNotSeen
  std::string kernel;  // CUPTI's kernel name, "[memcpy HtoD]", "[memset]"
  uint64_t calls = 0;
  uint64_t total_ns = 0;  // sum of end - start
  bool operator==(const GpuKernelRow&) const = default;
};

struct GpuKernelSummary {
  std::optional<CuptiShimInfo> shim;  // set when the recording found the shim in the target
  uint64_t activities = 0;
  uint64_t total_ns = 0;
  uint64_t launch_not_seen = 0;  // activities whose correlation id has no launch record
  uint64_t outside_ops = 0;      // activities launched under no op
  std::vector<GpuKernelRow> rows;  // most GPU time first, then op, kernel
};

GpuKernelSummary summarize_gpu_kernels(const Recording& recording);

// The summary's rows summed as activities are charged (summarize_gpu_kernels,
// and a streamed read: streamed_kernel_table.h): by (op, kernel name id).
class GpuKernelSums {
 public:
  // `calls` activities named name_id, `ns` of GPU time together, charged to
  // `op`: an op's display name, kNoOpName (launched outside every op) or
  // kLaunchNotSeen.
  void add(const std::string& op, uint32_t name_id, uint64_t calls, uint64_t ns);
  // The rows named (recording: its kernel names and shim) and sorted.
  GpuKernelSummary summary(const Recording& recording) &&;

 private:
  struct Sums {
    uint64_t calls = 0, ns = 0;
  };
  std::map<std::pair<std::string, uint32_t>, Sums> rows_;
  uint64_t launch_not_seen_ = 0, outside_ops_ = 0;
};

// The table, then totals and what is missing; row_limit < 0: every row.
std::string format_gpu_kernel_table(const GpuKernelSummary& summary, int row_limit);
// One WARNING line each for a shim that was not tracing, records CUPTI
// dropped and records the ring buffer lost: what every GPU view prints.
std::string format_gpu_record_warnings(const CuptiShimInfo& shim);
// Why a recording has no GPU times, and how to get them.
inline constexpr const char* kNoCuptiShimReason =
    "the target did not have gpuprof's CUPTI shim loaded (record -- CMD injects it; for -p, start the job "
    "with CUDA_INJECTION64_PATH=<dir of gpuprof>/libgpuprof_cupti.so; see docs/cuda.md)";

}  // namespace gpuprof
