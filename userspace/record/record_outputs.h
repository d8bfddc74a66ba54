// record_outputs.h: one recording written to several record files at once,
// each opened and closed on its own: the main file (split by --rotate) and
// the file of the schedule cycle in progress (--on-cycle).
//
// Every file is a complete recording on its own: the same process, op table
// and options, and every frame, stack and kernel name it uses defined in it.
// The dictionaries (frames, stacks, names) are kept here and defined again
// at the top of each new file with the same ids, so the session interns
// once and the ids it hands out stay valid in every file.
//
// Indices are global: event and sample indices count everything appended
// since the recording began, open files or not, as the session numbers
// them; each file translates them to its own. Shapes, entry stacks and
// kernel stacks of an event (sample) that went to an earlier file are
// dropped from a file that does not hold it (their event is not there).
// Appends while a file is closed go nowhere: that is the point of closing.
//
// A system-wide recording (record -a) also defines its processes, their
// threads and job ranks in every file; a process the session lets go
// (forget_process) is no longer defined in files opened after that, so
// what each new file repeats stays bounded by the processes alive.
#pragma once

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "record/record_file.h"
#include "record/record_sink.h"
#include "record/recording.h"

namespace gpuprof {

class RecordOutputs final : public RecordSink {
 public:
  enum Output { kMain = 0, kCycle = 1 };

  RecordOutputs(ProcessInfo process, ClockInfo clock, std::vector<OpInfo> ops, RecordOptions options,
                mode_t mode);

  // Creates `path` and begins a recording there whose CLOCK starts at
  // start_monotonic_ns. `counters_now`: the session's counters at this
  // moment; close() stores the lost counters as differences from them, so
  // each file counts what it lost itself.
  Result<void> open(Output output, const std::string& path, uint64_t start_monotonic_ns,
                    const RecordStats& counters_now);
  bool is_open(Output output) const { return files_[output].writer.has_value(); }
  // The disk had no room for `output`'s next chunk (RecordWriter::disk_full):
  // close() still ends it properly, with the chunks written before.
  bool disk_full(Output output) const { return is_open(output) && files_[output].writer->disk_full(); }
  const std::string& path(Output output) const { return files_[output].path; }
  uint64_t bytes_written(Output output) const;
  uint64_t opened_at_ns(Output output) const { return files_[output].start_ns; }
  // Finishes the file: its CUDA runtime, shim and thread names as last set,
  // then STATS (stats with events_recorded and the lost counters made the
  // file's own), END. The output is closed even when this fails.
  Result<void> close(Output output, const RecordStats& stats, uint64_t end_monotonic_ns);

  // An op defined during the recording (runtime_ops.h), in every open file
  // and in the op table of those opened later; its id.
  Result<uint32_t> add_op(const OpInfo& op);
  // Several ops at once (record -a: a libtorch_cpu's catalog), after those
  // defined so far.
  Result<void> add_ops(const std::vector<OpInfo>& ops);
  uint32_t ops_defined() const { return static_cast<uint32_t>(defined_.ops.size()); }

  // RecordWriter's calls (record_file.h), for every open file.
  Result<void> append_events(const gp_event* events, size_t count);
  Result<void> append_shapes(uint64_t event_index, const InputShapes& shapes);
  Result<void> append_mem_events(const gp_mem_event* events, size_t count);
  Result<void> add_sample_frame(const std::string& name) override;
  Result<void> add_sample_stack(const std::vector<uint32_t>& frame_ids) override;
  Result<void> append_samples(const CpuSample* samples, size_t count) override;
  Result<void> append_entry_stack(uint64_t event_index, uint32_t stack_id);
  Result<void> append_backward_stack(uint64_t event_index, uint32_t stack_id);
  Result<void> append_sample_kernel_stack(uint64_t sample_index, uint32_t stack_id) override;
  Result<void> add_launch_name(const std::string& name) override;
  Result<void> append_launches(const CudaLaunch* launches, size_t count) override;
  Result<void> append_gpu_correlations(const GpuCorrelation* correlations, size_t count);
  Result<void> append_gpu_activities(const GpuActivity* activities, size_t count);
  void set_cuda_runtime(const CudaRuntimeInfo& info) { defined_.cuda_runtime = info; }
  void set_cupti_shim(const CuptiShimInfo& info) { defined_.cupti_shim = info; }
  void set_thread_names(std::vector<ThreadName> names) { defined_.thread_names = std::move(names); }
  // Written at once to every open file and to each file opened later.
  Result<void> add_module_names(const std::vector<ModuleName>& names);
  // Job ranks (JobRank): written at once to every open file and to each
  // file opened later.
  Result<void> add_job_ranks(const std::vector<JobRank>& ranks);
  // record -a's tables (PROCESSES, THREAD_PROCESSES): written at once to
  // every open file and to each file opened later (a process described
  // again replaces its earlier description there).
  Result<void> add_processes(const std::vector<ProcessInfo>& processes);
  Result<void> add_thread_processes(const std::vector<ThreadProcess>& threads);
  // The native files of the samples' frames (NATIVE_FILES): written at once
  // to every open file and to each file opened later.
  Result<void> add_native_files(const std::vector<NativeFile>& files);
  // The process is gone: files opened from now on do not define it.
  void forget_process(uint32_t pid);
  // The probes' calibrated costs: written at once to every open file (a
  // killed recorder's files keep them) and to each file opened later.
  Result<void> set_probe_costs(const ProbeCosts& costs);
  Result<void> flush();

  // Global counts (every file shares them).
  uint32_t sample_frames_defined() const override { return static_cast<uint32_t>(defined_.sample_frames.size()); }
  uint32_t sample_stacks_defined() const override { return static_cast<uint32_t>(defined_.sample_stacks.size()); }
  uint32_t launch_names_defined() const override { return static_cast<uint32_t>(defined_.launch_names.size()); }
  uint64_t events_appended() const { return events_; }
  uint64_t samples_appended() const override { return samples_; }

 private:
  struct File {
    std::optional<RecordWriter> writer;
    std::string path;
    uint64_t start_ns = 0;
    uint64_t first_event = 0;   // global index of its event 0
    uint64_t first_sample = 0;  // global index of its sample 0
    uint64_t events = 0;        // events appended to it
    RecordStats counters_at_open;
  };
  // Runs `write` on every open file; the first failure wins (the file that
  // failed is left as it is: its writer refuses further writes).
  template <typename Write>
  Result<void> each(Write write);
  // Writes `items` to every open file with `add` and keeps them in
  // `defined` (defined_'s list) for the files opened later.
  template <typename T>
  Result<void> add_everywhere(Result<void> (RecordWriter::*add)(const std::vector<T>&), const std::vector<T>& items,
                              std::vector<T>& defined);

  // What every file defines, opened now or later, in the Recording fields
  // its reader puts them in: the process, clock, ops and options it begins
  // with, the dictionaries so far (sample frames and stacks, launch names),
  // the module names, job ranks and probe costs, and the CUDA runtime, shim
  // and thread names it ends with (the latest set). Nothing else is used.
  Recording defined_;
  mode_t mode_;
  std::array<File, 2> files_;
  uint64_t events_ = 0;
  uint64_t samples_ = 0;
};

}  // namespace gpuprof
