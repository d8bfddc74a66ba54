// record_session.h: what a recording session (`record`, `top`) is asked to
// do, RecordConfig, and what it ends with, RecordOutcome.
//
// run_record_session() runs the one session (session.h) with the target
// part the config names: one process, by pid or launched
// (process_session.h), or every process (system_session.h). Its loop
// waits on the rings, a signalfd (SIGINT, SIGTERM, SIGHUP; SIGCHLD of a
// launched command), a timer for -d and the target's own descriptors, and
// flushes a chunk to the record file every flush interval, so that a
// killed gpuprof loses little.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "collect/live_consumer.h"
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
  // Keep calibrating through the recording, a round every 250 ms, and
  // write that estimate at detach (it supersedes attach's: recording.h,
  // ProbeCosts); top, whose table is gone when it stops, does not.
  bool calibrate_through_recording = true;
  // How the user stops an open-ended session, for the start line (top: q).
  std::string stop_key = "Ctrl-C";
  // A live view of the recording (top): what the session records, as it
  // records it (live_consumer.h). Null: the file only.
  LiveConsumer* live = nullptr;
  // A descriptor that also wakes the session's loop when readable (top's
  // terminal), so that the consumer's tick sees a key at once.
  int input_fd = -1;

  LiveConsumer& live_consumer() const { return live ? *live : no_live_consumer(); }
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

// Runs the session to its end (session.cpp). Progress lines go to stderr.
RecordOutcome run_record_session(const RecordConfig& config);

}  // namespace gpuprof
