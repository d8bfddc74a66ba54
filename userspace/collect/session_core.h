// session_core.h: what every recording session holds and does, whatever
// its target. `record -p` and `record -- CMD` (record_session.cpp) attach
// to one process, `record -a` and `top -a` (system_session.cpp) to every
// PyTorch process; each is a SessionCore plus its own attachment.
//
// The core holds the record files (the output switcher and its outputs),
// the collectors that write to them (one interner, CPU samples, launches),
// the op tracer and the CPU sampler, the diagnostics path, the progress
// line and the probe-cost rounds. It does what each turn of a session's
// loop does once the rings are read (chunks to disk, rotation and cycles,
// a write error's stop, the progress line, top's tick), reads the signals
// that stop a session, and prints the stop line (docs/architecture.md,
// "collect/").
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "collect/calibration_rounds.h"
#include "collect/diagnostics.h"
#include "collect/interner.h"
#include "collect/launch_collector.h"
#include "collect/progress_line.h"
#include "collect/record_session.h"
#include "collect/sample_collector.h"
#include "probe/cpu_sampler.h"
#include "probe/op_tracer.h"
#include "probe/thread_names.h"
#include "record/frames_not_read.h"
#include "record/output_switcher.h"
#include "record/record_outputs.h"
#include "torch/exitless_calls.h"
#include "torch/runtime_ops.h"

namespace gpuprof {

class SessionCore {
 public:
  SessionCore(const SessionCore&) = delete;
  SessionCore& operator=(const SessionCore&) = delete;

 protected:
  explicit SessionCore(const RecordConfig& config) : config_(config) {}
  virtual ~SessionCore() = default;

  // The progress line's figures and the counters each file closes with
  // (its losses: RecordOutputs::close), as they stand now.
  virtual ProgressCounters progress_counters(uint64_t now_ns) const = 0;
  virtual RecordStats counters_now() const = 0;

  // Warnings, notes, write errors, stop and fail (diagnostics.h).
  void warn(const std::string& what) { diagnostics_.warn(what); }
  void note_problem(const std::string& what) { diagnostics_.note(what); }
  bool write_failed(const std::string& error) { return diagnostics_.write_failed(error); }
  void stop(const char* reason) { diagnostics_.stop(reason); }
  bool fail(std::string message) { return diagnostics_.fail(std::move(message)); }

  // Reads the signals that arrived on the session's signalfd: SIGINT,
  // SIGTERM and SIGHUP stop it (the stop line says which); any other goes
  // to on_other (record -- CMD's SIGCHLD).
  void read_signals(int signal_fd, const std::function<void(int)>& on_other = {});

  // The loop starts: its first flush is due kFlushIntervalNs from now, and
  // the progress line (when asked for) counts from now.
  void start_loop(uint64_t now_ns);
  // Whether the chunks are due to go to disk (at least every
  // kFlushIntervalNs); true starts the next interval.
  bool flush_due(uint64_t now_ns);
  // The chunks to disk, and rotation and cycles ticked (output_switcher.h),
  // unless a write failed already; a failure is latched.
  void flush_chunks();
  void tick_outputs(uint64_t now_ns);
  // The end of a turn: a write error stops the session ("disk full" when
  // the disk had no room for a file's next chunk), the progress line and
  // top's live tables tick (top's tick may stop it: "quit").
  void end_turn(uint64_t now_ns);

  // After a write error: the session's error. A full disk leaves the main
  // file with every chunk written before, closed with the room kept for
  // that (RecordWriter::disk_full) or, where none could be kept, ending at
  // its last whole chunk: readable either way, and said so. Any cycle file
  // open is closed (and pushed) too.
  bool close_after_write_error();

  // The stop line: the reason, how long the probes took to detach, the
  // events and what was lost, `more` (each session's own figures) and the
  // files written; the note on stacks cut short before it.
  void say_stopped(double detach_ms, const std::string& more, const std::string& written) const;

  static constexpr uint64_t kFlushIntervalNs = 250'000'000;  // chunks to disk at least this often

  const RecordConfig& config_;
  RecordOutcome outcome_;
  RecordStats stats_;
  Diagnostics diagnostics_{stats_, outcome_};
  // The record files: the main one (rotated or not), and with --push-every
  // the cycle in progress, each standing alone (record_outputs.h).
  std::optional<OutputSwitcher> switcher_;
  RecordOutputs* writer_ = nullptr;  // switcher_'s outputs, once begun
  // The collectors, once the recording is begun (record_sink.h).
  std::optional<Interner> interner_;
  std::optional<SampleCollector> samples_;  // -F HZ
  std::optional<LaunchCollector> launches_;
  std::unique_ptr<OpTracer> tracer_;
  std::unique_ptr<CpuSampler> sampler_;
  std::unique_ptr<ThreadNameCollector> thread_names_;
  std::optional<RuntimeOps> runtime_ops_;  // the engine rows' names (runtime_ops.h)
  StackCuts stack_cuts_;  // samples and entries whose stacks have frames not read
  uint64_t op_calls_recorded_ = 0;          // op entries: the progress line's ops/s
  std::optional<RecordProgress> progress_;  // the terminal's progress line (progress_line.h)
  ExitlessCalls exitless_;
  // The op probes' cost, calibrated before the probes go in and in rounds
  // through the recording (calibration_rounds.h).
  CalibrationRounds calibration_{config_, diagnostics_};

 private:
  uint64_t last_flush_ns_ = 0;
};

}  // namespace gpuprof
