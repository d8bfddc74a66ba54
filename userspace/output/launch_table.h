// launch_table.h: CUDA kernel launches per operator (report --launches).
//
// Each launch recorded by the launch probes (launch_tracer.h) belongs to the
// innermost op call running on its thread at that moment, as torch.profiler
// puts a kernel under the op whose cudaLaunchKernel made it. The table has
// one row per (op, kernel, launch API), counted, with its launch
// configuration (grid, block, stream), most launches first; the
// launches made outside every op are the rows of "[no op]". Kernel times
// come from CUPTI (the shim), not from here: this table counts launches and
// names kernels, which the launch probes alone can do on any job whose
// kernels' host stubs have symbols. Where they have none (a pip wheel's
// libtorch_cuda), the name CUPTI gave the kernel is taken when the shim
// ran, joined through the shim's correlation id on the launching thread.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "record/recording.h"

namespace gpuprof {

inline constexpr const char* kNoOpName = "[no op]";

struct LaunchRow {
  std::string op;      // torch's op name, or kNoOpName
  std::string kernel;  // Recording::launch_names
  uint16_t api = 0;    // enum gp_launch_api
  uint64_t launches = 0;
  // The launch configuration when every launch of the row had the same
  // one, else "mixed": "(x, y, z)" dims ("-" for graph launches) and the
  // stream ("default" for stream 0, else its handle in hex).
  std::string grid, block, stream;
  bool operator==(const LaunchRow&) const = default;
};

struct LaunchSummary {
  bool traced = false;         // a libcudart was probed (Recording::cuda_runtime)
  std::string libcudart_path;  // when traced
  uint64_t launches = 0;
  uint64_t outside_ops = 0;  // launches under no op
  uint64_t named_by_cupti = 0;  // launches the probes could not name, named from CUPTI's records
  uint64_t lost = 0;         // dropped by the ring buffer
  std::vector<LaunchRow> rows;  // most launches first, then op, kernel, api
};

LaunchSummary summarize_launches(const Recording& recording);

// The pieces summarize_launches() is made of, shared with the streamed
// read's (streamed_launch_table.h).
//
// A row's count and launch configuration: grid, block and stream as its
// first launch had them, "mixed" once another differs (so counts summed
// in any order, or in parts, agree).
struct LaunchCount {
  uint64_t n = 0;
  std::string grid, block, stream;
  void add(const CudaLaunch& launch);
  void add(const LaunchCount& part);
};
// Rows summed by (op, kernel, api), then sorted as LaunchSummary keeps them.
class LaunchRows {
 public:
  LaunchCount& row(const std::string& op, const std::string& kernel, uint16_t api) {
    return counts_[{op, kernel, api}];
  }
  std::vector<LaunchRow> sorted() const;

 private:
  std::map<std::tuple<std::string, std::string, uint16_t>, LaunchCount> counts_;
};
// A summary without rows or counts: whether and where launches were traced.
LaunchSummary launch_summary_of(const Recording& recording);
// The kernel a launch names by name_id (Recording::launch_names).
std::string launch_kernel_name(const Recording& recording, uint32_t name_id);
// Whether a launch may take the name CUPTI gave its kernel: a runtime
// launch whose probe found no symbol ("[unknown kernel 0x...]" in
// launch_names), named from the GPU activities when the recording has them.
bool may_take_cupti_name(const std::vector<std::string>& launch_names, const CudaLaunch& launch);
// Per launch of a recording read whole, in its order, the name CUPTI gave
// its kernel when the probes could not (launch_table.cpp tells the join;
// nullopt: none).
std::vector<std::optional<uint32_t>> cupti_names(const Recording& recording);
// The runtime API's CUPTI domain: its correlation id is the one a kernel
// launched through it carries.
inline constexpr uint32_t kCuptiRuntimeDomain = 2;

// The names CUPTI gave the kernels of the launches that may take one
// (launch_table.cpp tells the join), in memory: the whole read's join. A
// streamed read joins the same way through external sorts
// (sorted_launch_names.h).
class CuptiLaunchNames {
 public:
  void add_launches(std::span<const CudaLaunch> launches);
  void add_correlations(std::span<const GpuCorrelation> correlations);
  void add_activities(std::span<const GpuActivity> activities);
  // Per launch, in the order added, the name id CUPTI gave its kernel
  // (nullopt: none, or a launch that takes none). launch_names: the
  // recording's.
  std::vector<std::optional<uint32_t>> names(const std::vector<std::string>& launch_names) &&;

 private:
  struct Moment {
    uint64_t ts_ns = 0;
    uint32_t tid = 0;
    uint32_t name_id = 0;
    uint16_t api = 0;
  };
  std::vector<Moment> launches_;
  std::unordered_map<uint64_t, uint32_t> kernel_of_;  // correlation id -> name id, the first kernel's
  std::unordered_map<uint32_t, std::vector<std::pair<uint64_t, uint64_t>>> correlations_;  // tid -> (ts, id)
};

// The cudart function behind an api: "cudaLaunchKernel", ...
const char* launch_api_name(uint16_t api);

// The table, then a line of totals; row_limit < 0: every row.
std::string format_launch_table(const LaunchSummary& summary, int row_limit);
// Why a recording has no CUDA launches at all (not even an empty table).
inline constexpr const char* kNoCudaRuntimeReason =
    "the target had no libcudart mapped while recording (a CPU-only PyTorch, or a CUDA runtime linked "
    "statically)";

}  // namespace gpuprof
