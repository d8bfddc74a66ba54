// record_session.h: one `gpuprof record`, from attach to a finished file.
//
// Owns the moving parts: the target (attached by pid or launched), the op
// tracer, the library watch (launch mode), and the record writer. The event
// loop waits on the ring buffer, a signalfd (SIGINT, SIGTERM, SIGCHLD), a
// timer for -d and a pidfd for the target's exit, and flushes a chunk to the
// record file every flush interval so a killed gpuprof loses little.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "torch/dispatcher_catalog.h"
#include "op_tracer_abi.h"
#include "record/output_switcher.h"
#include "record/recording.h"

namespace gpuprof {

// The output of a session whose events only feed a live view (top): the
// writer writes to it as to any file, and the stop line names no file.
inline const std::string kLiveOnly = "/dev/null";

struct RecordConfig {
  int pid = 0;                       // -p: attach to this process
  bool system_wide = false;          // -a: every process (system_session.h)
  std::vector<std::string> command;  // -- CMD...: launch this
  std::string output_path;  // kLiveOnly: nothing kept (top)
  mode_t output_mode = 0600;  // --mode: the record file's permissions (file_mode.h)
  double duration_s = 0;  // 0: until stopped
  uint32_t ring_buffer_bytes = 32u << 20;
  ExitMode exit_mode = ExitMode::emulated;
  bool record_shapes = false;   // --record-shapes: tensor sizes of every op's arguments
  bool profile_memory = false;  // --profile-memory: allocator events
  uint32_t sample_hz = 0;       // -F HZ: CPU samples of the target's threads (0: none)
  bool ops = true;              // false (--no-ops): samples only, no op probes
  bool with_stack = false;      // --with-stack: the Python stack at every op entry
  bool with_modules = false;    // --with-modules: and the module attribute names (python_stacks.h)
  bool follow_forks = false;    // --follow-forks: trace the ops of the target's child processes too
  bool verbose = false;
  // A progress line on stderr while recording, when stderr is a terminal
  // (record without -q: progress_line.h).
  bool progress = false;
  // --schedule (schedule.h): mode GP_SCHEDULE_OFF for none; with
  // GP_SCHEDULE_BY_OP, step_ops names the step ops (--step-op).
  gp_schedule schedule = {};
  std::vector<std::string> step_ops;
  // --rotate/--keep and --on-cycle (output_switcher.h); main_path and
  // schedule are taken from output_path and schedule above.
  OutputPlan outputs;
  // Live consumers (gpuprof top). on_op_event sees every op event as it is
  // read from the ring buffer, with its index in the recording; on_tick is
  // called from the session's loop about every 100 ms, after the events
  // read so far (also before the probes are in), and when it returns false
  // the session stops ("quit");
  // input_fd (top's terminal) also wakes the loop when readable.
  // on_begin: the target and its op table (op ids index it), once the
  // recording begins (after the probes are in).
  std::function<void(const ProcessInfo&, const std::vector<OpInfo>&, uint64_t start_ns)> on_begin;
  std::function<void(const gp_event&, uint64_t index)> on_op_event;
  // The probes' calibrated costs, before the first op event (none when the
  // calibration failed: times stay raw).
  std::function<void(const ProbeCosts&)> on_probe_costs;
  // Keep calibrating through the recording, a round every 250 ms, and
  // write that estimate at detach (it supersedes attach's: recording.h,
  // ProbeCosts); top, whose table is gone when it stops, does not.
  bool calibrate_through_recording = true;
  // How the user stops an open-ended session, for the start line (top: q).
  std::string stop_key = "Ctrl-C";
  // CPU samples (-F HZ): each frame name once, as it is first defined (ids
  // from 0, Recording::sample_frames), then each sample with its Python
  // stack (frame ids, outermost first; empty without Python frames).
  std::function<void(uint32_t frame_id, const std::string& name)> on_sample_frame;
  std::function<void(const CpuSample&, const std::vector<uint32_t>& python_stack)> on_sample;
  // The CUPTI shim's records, as they are recorded.
  std::function<void(const GpuCorrelation&)> on_gpu_correlation;
  std::function<void(const GpuActivity&)> on_gpu_activity;
  std::function<bool(uint64_t now_ns, uint64_t events_lost)> on_tick;
  // System-wide (-a): each process as it is first seen (with its libtorch
  // when it maps one; again, once, when a process seen before maps one),
  // each thread's process as it is first seen, and the ops of each
  // libtorch_cpu found, with the id of the first (op ids index the
  // concatenation; on_begin gave an empty table).
  std::function<void(const ProcessInfo&)> on_process;
  std::function<void(uint32_t tid, uint32_t pid)> on_thread;
  std::function<void(uint32_t first_id, const std::vector<OpInfo>&)> on_ops;
  // Each CUDA kernel launch as it is recorded, with its process (-a only).
  std::function<void(const CudaLaunch&, uint32_t pid)> on_launch;
  int input_fd = -1;
};

// "; KEY to stop" for the start line of a session without -d, else "".
std::string stop_hint(const RecordConfig& config);
// The session's error when the disk filled under the record file at `path`
// (RecordWriter::disk_full): what failed, and that the file reads.
std::string disk_full_error(const std::string& write_error, const std::string& path);
// "; wrote FILES" for the stop line ("" for kLiveOnly).
std::string wrote_part(const RecordConfig& config, const std::string& files);

struct RecordOutcome {
  bool ok = false;
  std::string error;        // one line, when !ok
  std::string stop_reason;  // "duration", "interrupted", "terminated", "target exited"
  bool target_running = false;  // launch mode: the child is still running after the stop
  int launched_pid = -1;
};

// Runs the session to its end. Progress lines go to stderr.
RecordOutcome run_record_session(const RecordConfig& config);

}  // namespace gpuprof
