// session.h: the one recording session of `record -p`, `record -- CMD`,
// `record -a` and `top`, whatever its target.
//
// Session::run() is the whole of a session: the target's checks, the stop
// signals blocked and read through a signalfd, the target's start, the one
// event loop (epoll on the rings, the signals, the -d timer and top's
// terminal; each turn the rings read, a probe-cost round, the chunks to
// disk, the progress line and top's tick) and the finish (the probes
// detached and drained, the last figures, the file closed, the stop line).
// What differs by target is its attachment, a subclass's few hooks below:
// ProcessSession (process_session.cpp: one process, by pid or launched, the
// attach machine of launch_attach.h deciding when) and SystemSession
// (system_session.cpp: every process that maps a libtorch_cpu).
//
// The session holds the record files (the output switcher and its outputs),
// the collectors that write to them (one interner, CPU samples, launches),
// the op tracer and the CPU sampler, the diagnostics path, the progress
// line and the probe-cost rounds (docs/architecture.md, "collect/").
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
#include "base/unique_fd.h"

namespace gpuprof {

class Session {
 public:
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Runs the session to its end. Progress lines go to stderr.
  RecordOutcome run();

 protected:
  explicit Session(const RecordConfig& config) : config_(config) {}
  virtual ~Session() = default;

  // --- The target's part, in the order run() calls them. ---
  // Before anything is loaded or blocked: privileges, the target there and
  // readable; its error is the session's.
  virtual Result<void> check_target() = 0;
  // Whether the session reads SIGCHLD (record -- CMD's command).
  virtual bool reads_sigchld() const { return false; }
  // The tracers loaded and the probes in (or armed to go in), the record
  // file begun, their descriptors watched (watch()); its error is the
  // session's.
  virtual Result<void> start() = 0;
  // The loop's wait, at most (ms).
  virtual int poll_timeout_ms() const { return kPollTimeoutMs; }
  // The loop starts; a SIGCHLD came; a watched descriptor of the target's
  // (not a ring: those are read every turn) is readable.
  virtual void on_loop_start() {}
  virtual void on_child_signal() {}
  virtual void on_ready(int fd) { (void)fd; }
  // Every turn: the rings read and what waits retried; then, before the
  // turn ends, its writing (chunks to disk when flush_due(), rotation and
  // cycles); after it, what the target retries now and then.
  virtual void read_rings() = 0;
  virtual void write_turn(uint64_t now_ns) = 0;
  virtual void after_turn(uint64_t now_ns) { (void)now_ns; }
  // Whether the loop's end finishes a recording; false when the session
  // ended before there was one (its error is set then).
  virtual bool ended_recording() { return true; }
  // The probes out (the sampler's first or last, as the target wants) and
  // what was in flight drained; the detach's ms.
  virtual double stop_probes() = 0;
  // The last figures into the file while it is open (losses, thread names,
  // the through-recording probe costs, ...).
  virtual void record_last_figures() = 0;
  // The stop line's own figures ("; N samples, M lost..."), and the files
  // written, once the file is closed.
  virtual std::string stop_line_part() = 0;
  virtual std::string files_written() const { return config_.output_path; }
  // The session is over (record -- CMD: whether the command still runs).
  virtual void after_run() {}

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

  // Adds a descriptor (>= 0) to the loop's epoll set, from start() on.
  void watch(int fd);
  // The op tracer loaded (--ring-buffer's size), its ring watched.
  Result<void> load_tracer(TracerSinks sinks);

  // Whether the chunks are due to go to disk (at least every
  // kFlushIntervalNs); true starts the next interval.
  bool flush_due(uint64_t now_ns);
  // The chunks to disk, and rotation and cycles ticked (output_switcher.h),
  // unless a write failed already; a failure is latched.
  void flush_chunks();
  void tick_outputs(uint64_t now_ns);
  // After a write error: the session's error. A full disk leaves the main
  // file with every chunk written before, closed with the room kept for
  // that (RecordWriter::disk_full) or, where none could be kept, ending at
  // its last whole chunk: readable either way, and said so. Any cycle file
  // open is closed (and pushed) too.
  bool close_after_write_error();

  static constexpr uint64_t kFlushIntervalNs = 250'000'000;  // chunks to disk at least this often
  static constexpr int kPollTimeoutMs = 100;

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
  // Reads the signals that arrived on the signalfd: SIGINT, SIGTERM and
  // SIGHUP stop the session (the stop line says which), SIGCHLD goes to
  // on_child_signal().
  void read_signals(int signal_fd);
  void loop(int signal_fd);
  // The end of a turn: a write error stops the session ("disk full" when
  // the disk had no room for a file's next chunk), the progress line and
  // top's live tables tick (top's tick may stop it: "quit").
  void end_turn(uint64_t now_ns);
  // The probes out, the last figures in, the file closed, the stop line;
  // false when it failed.
  bool finish();
  // The stop line: the reason, how long the probes took to detach, the
  // events and what was lost, `more` (each target's own figures) and the
  // files written; the note on stacks cut short before it.
  void say_stopped(double detach_ms, const std::string& more, const std::string& written) const;

  UniqueFd epoll_;
  uint64_t last_flush_ns_ = 0;
};

}  // namespace gpuprof
