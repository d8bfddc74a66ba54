// target_gpu.h: the CUDA side of one target (record -p, record -- CMD):
// its kernel launches and, through the CUPTI shim, its GPU times.
//
// Launch probes go on every libcudart the target maps (and its libcuda, for
// driver API launches), the shim's USDT probes on libgpuprof_cupti once the
// CUDA driver loads it (docs/cuda.md); each is looked for until it is found
// (launch mode also stops the command at each mapping: `now`). Launches are
// recorded by a LaunchCollector, GPU activities and correlations here, all
// named through the session's one interner.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "collect/diagnostics.h"
#include "collect/interner.h"
#include "collect/launch_collector.h"
#include "collect/progress_line.h"
#include "collect/record_session.h"
#include "collect/retry_every.h"
#include "launch_tracer_abi.h"
#include "probe/launch_tracer.h"
#include "probe/thread_names.h"
#include "record/output_switcher.h"
#include "record/record_outputs.h"
#include "symbols/native_symbolizer.h"
#include "symbols/target_maps.h"
#include "target/target_process.h"

namespace gpuprof {

// The CUPTI shim's file name starts so (cupti_shim/).
inline constexpr const char* kCuptiShimFilePrefix = "libgpuprof_cupti";

// libgpuprof_cupti.so next to the gpuprof executable (where `make` builds
// it and where an install puts it); nullopt when it is not there.
std::optional<std::string> cupti_shim_next_to_gpuprof();

// `record -- CMD`: sets CUDA_INJECTION64_PATH to the shim next to gpuprof
// (a value the user set is kept, and said).
void inject_cupti_shim(Diagnostics& diagnostics);

class TargetGpu {
 public:
  // The session's state it reads: whether the op probes are in (nothing
  // is looked for before) and whether the target has exited.
  TargetGpu(const RecordConfig& config, int target_pid, const bool& attached, const bool& child_exited,
            uint64_t record_start_ns, Diagnostics& diagnostics, RecordOutputs& writer,
            const OutputSwitcher& switcher, ThreadNameCollector& thread_names, Interner& interner,
            LaunchCollector& launches)
      : config_(config),
        target_pid_(target_pid),
        attached_(attached),
        child_exited_(child_exited),
        record_start_ns_(record_start_ns),
        diagnostics_(diagnostics),
        writer_(&writer),
        switcher_(switcher),
        thread_names_(thread_names),
        interner_(interner),
        launches_(launches) {}

  // What launch mode stops the command at next (handle_child_state).
  bool needs_libcudart() const;
  bool needs_libcuda() const { return config_.ops && !driver_probed_ && driver_error_.empty(); }
  bool needs_shim() const { return config_.ops && !cupti_shim_ && shim_error_.empty(); }

  void try_attach_launches(bool now = false);
  void try_attach_shim(bool now = false);
  void read_shim_state();
  // The shim's state as the record file and the stop lines give it.
  CuptiShimInfo shim_info_for_file() const;
  // "+1.2 s": the time since the recording began.
  std::string since_start() const;
  // The loop's turn: launch and GPU records read (polled: no wakeup per launch).
  void consume() {
    if (launch_tracer_) launch_tracer_->consume();
  }
  void detach() {
    if (launch_tracer_) launch_tracer_->detach();
  }
  // At the stop of a target that runs on, before the op probes go: the
  // launches recorded so far are the recording's; the records of later
  // launches are left out (the activity probe drops them in BPF).
  void stop_launches();
  // Then, once the op probes went: the launch probes go, and the GPU
  // records of the recorded launches are waited for (CUPTI hands them over
  // every 100 ms, after their kernels end; the shim flushes at once when it
  // sees the launch probe go) while the shim's activity probes stay, until
  // each stream has had a record of a later launch (the earlier ones came
  // before it) or none for 300 ms; 3 s at most.
  void drain_activities();
  // The progress line's GPU records and losses.
  void add_progress(ProgressCounters& counters) const;
  // CUDA_RUNTIME and CUPTI_SHIM as known now, for every file closed.
  void update_file_info();
  // At the stop: the shim's last state read and said.
  void finish();
  // The stop line's launch and GPU parts ("; N CUDA launches, M lost...").
  std::string stop_line_part() const;

 private:
  bool looks_for_more_libcudarts() const;
  void attach_new_libcudarts();
  Result<void> attach_launch_library(const MappedLibrary& library, LaunchApi api);
  Result<void> ensure_launch_tracer();
  Result<void> attach_shim(const MappedLibrary& shim);
  void wait_for_shim_switch();
  void on_launch(const gp_launch_event& event);
  void on_gpu_correlation(const gp_gpu_correlation& c);
  void on_gpu_activity(const gp_gpu_activity& a);
  uint32_t gpu_activity_name_id(const gp_gpu_activity& a);

  const RecordConfig& config_;
  const int target_pid_;
  const bool& attached_;
  const bool& child_exited_;
  // GPU activities that began before the recording did (CUPTI delivers its
  // buffers late: a job started with the shim hands over, after the attach,
  // what ran before it): left out like the ops called before the attach.
  const uint64_t record_start_ns_;
  Diagnostics& diagnostics_;
  RecordOutputs* writer_;
  const OutputSwitcher& switcher_;
  ThreadNameCollector& thread_names_;
  Interner& interner_;
  LaunchCollector& launches_;
  // CUDA launches: probes on the target's libcudart once it is mapped.
  std::unique_ptr<LaunchTracer> launch_tracer_;
  std::optional<CudaRuntimeInfo> cuda_runtime_;
  std::string launch_error_;  // why launches cannot be traced (said once)
  // Driver API launches: probes on the target's libcuda once it is mapped.
  bool driver_probed_ = false;
  std::string driver_error_;
  RetryEvery launch_retry_;
  // The libcudarts probed (a process may map several copies: torch's, and
  // torchvision's own), and those that could not be; another copy is
  // looked for every second once the first is probed.
  std::vector<MappedLibrary> libcudarts_;
  std::vector<MappedLibrary> libcudarts_refused_;
  RetryEvery more_libcudarts_retry_{1'000'000'000};
  std::unique_ptr<NativeSymbolizer> kernel_symbolizer_;
  std::unordered_map<uint64_t, uint32_t> name_of_cupti_string_;  // kernel name address -> name id
  // GPU times: the CUPTI shim's USDT probes, once the target maps it.
  std::optional<CuptiShimInfo> cupti_shim_;
  std::optional<uint64_t> shim_state_address_;
  // The shim gave CUPTI up to the job's own profiler during the recording
  // (state 7 read once): the file says so, whatever the state after.
  bool shim_yielded_ = false;
  bool gpu_records_seen_ = false;
  uint64_t gpu_activities_before_start_ = 0;
  std::string shim_error_;
  RetryEvery shim_retry_;
  uint64_t gpu_activities_recorded_ = 0;
  // The largest CUPTI correlation id of a launch recorded (CUPTI numbers
  // them in order): once stopping, records of a larger id are of launches
  // made after the stop, and left out.
  uint64_t last_correlation_ = 0;
  bool stopping_ = false;  // stop_launches() ran
  // Per (device, stream) with GPU records: during the drain, when its last
  // record came, and whether one of a launch made after the stop did.
  struct StreamDrain {
    uint64_t last_record_ns = 0;
    bool past_stop = false;
  };
  std::map<std::pair<uint32_t, uint32_t>, StreamDrain> streams_;
  std::pair<uint32_t, uint32_t> last_stream_{UINT32_MAX, UINT32_MAX};  // the last record's, in streams_
  uint64_t drain_ms_ = 0;
  // CUPTI correlation ids of launches made in recorded steps (--schedule):
  // their GPU activities are kept, whenever they ran.
  std::set<uint64_t> recorded_correlations_;
};

}  // namespace gpuprof
