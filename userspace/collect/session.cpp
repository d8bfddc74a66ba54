// session.cpp: the one recording session, whatever its target
// (collect/session.h): its run, its loop, each turn's writing, its finish.
#include "collect/session.h"

#include <signal.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cstdio>

#include "base/session_loop.h"

namespace gpuprof {

RecordOutcome Session::run() {
  set_libbpf_verbose(config_.verbose);  // -v: libbpf's own log
  if (Result<void> checked = check_target(); !checked) {
    fail(checked.error());
    return outcome_;
  }
  SignalGuard signals = reads_sigchld() ? SignalGuard({SIGINT, SIGTERM, SIGHUP, SIGCHLD})
                                          : SignalGuard({SIGINT, SIGTERM, SIGHUP});
  epoll_.reset(epoll_create1(EPOLL_CLOEXEC));
  if (Result<void> started = start(); !started) {
    fail(started.error());
    return outcome_;
  }
  loop(signals.fd());
  if (ended_recording()) {
    outcome_.ok = outcome_.error.empty();
    if (!finish()) outcome_.ok = false;
  }
  after_run();
  return outcome_;
}

void Session::watch(int fd) { epoll_watch(epoll_.get(), fd); }

Result<void> Session::load_tracer(TracerSinks sinks) {
  TracerConfig tracer_config;
  tracer_config.ring_buffer_bytes = config_.ring_buffer_bytes;
  ASSIGN_OR_RETURN(tracer_, OpTracer::load(tracer_config, std::move(sinks)));
  watch(tracer_->poll_fd());
  return {};
}

void Session::loop(int signal_fd) {
  // -d counts from the start of the recording, once the target's start is done.
  UniqueFd timer = duration_timer(config_.duration_s);
  for (int fd : {signal_fd, timer.get(), config_.input_fd}) watch(fd);
  const uint64_t start_ns = clock_ns(CLOCK_MONOTONIC);
  last_flush_ns_ = start_ns;  // the first flush is due kFlushIntervalNs from now
  progress_.emplace(config_.progress, start_ns);
  on_loop_start();
  while (!diagnostics_.stopped()) {
    epoll_event events[4];
    const int n = epoll_wait(epoll_.get(), events, 4, poll_timeout_ms());
    for (int i = 0; i < n; i++) {
      const int fd = events[i].data.fd;
      if (fd == signal_fd)
        read_signals(signal_fd);
      else if (fd == timer.get())
        stop("duration");
      else
        on_ready(fd);
    }
    read_rings();
    calibration_.round();
    const uint64_t now = clock_ns(CLOCK_MONOTONIC);
    write_turn(now);
    end_turn(now);
    after_turn(now);
  }
}

bool Session::finish() {
  const double detach_ms = stop_probes();
  if (!writer_) return false;
  stats_.stop_reason = outcome_.stop_reason;
  record_last_figures();
  if (std::string exitless = exitless_.warning(); !exitless.empty()) warn(exitless);
  if (!diagnostics_.writing()) return close_after_write_error();
  // The final counts, while the file is open (its size), for the stop line to erase.
  if (progress_) progress_->last(progress_counters(clock_ns(CLOCK_MONOTONIC)));
  if (Result<void> finished = switcher_->finish(stats_, clock_ns(CLOCK_MONOTONIC)); !finished)
    return fail(finished.error());
  say_stopped(detach_ms, stop_line_part(), files_written());
  return true;
}

void Session::read_signals(int signal_fd) {
  signalfd_siginfo info;
  while (read(signal_fd, &info, sizeof info) == sizeof info) {
    switch (info.ssi_signo) {
      case SIGINT: stop("interrupted"); break;
      case SIGTERM: stop("terminated"); break;
      case SIGHUP: stop("hangup"); break;
      case SIGCHLD: on_child_signal(); break;
      default: break;
    }
  }
}

bool Session::flush_due(uint64_t now_ns) {
  if (now_ns - last_flush_ns_ < kFlushIntervalNs) return false;
  last_flush_ns_ = now_ns;
  return true;
}

void Session::flush_chunks() {
  if (!writer_ || !diagnostics_.writing()) return;
  if (Result<void> flushed = writer_->flush(); !flushed) write_failed(flushed.error());
}

void Session::tick_outputs(uint64_t now_ns) {
  if (!writer_ || !diagnostics_.writing()) return;
  if (Result<void> ticked = switcher_->tick(now_ns, counters_now()); !ticked) write_failed(ticked.error());
}

void Session::end_turn(uint64_t now_ns) {
  if (!diagnostics_.writing()) {
    const bool disk_full =
        writer_ && (writer_->disk_full(RecordOutputs::kMain) || writer_->disk_full(RecordOutputs::kCycle));
    stop(disk_full ? "disk full" : "write error");
  }
  if (progress_->active()) progress_->tick(progress_counters(now_ns));
  if (!config_.live_consumer().tick(now_ns, tracer_ ? tracer_->events_lost() : 0)) stop("quit");
}

bool Session::close_after_write_error() {
  if (!writer_->disk_full(RecordOutputs::kMain)) {
    (void)switcher_->finish(stats_, clock_ns(CLOCK_MONOTONIC));  // a cycle file open is closed (and pushed)
    return fail(diagnostics_.write_error());
  }
  const std::string path = writer_->path(RecordOutputs::kMain);
  diagnostics_.keep("the disk filled: the recording stops there");  // for report; the error says it now
  // The file may not close (no room kept): it is readable all the same.
  (void)switcher_->finish(stats_, clock_ns(CLOCK_MONOTONIC));
  return fail(disk_full_error(diagnostics_.write_error(), path));
}

void Session::say_stopped(double detach_ms, const std::string& more, const std::string& written) const {
  if (std::string cuts = stack_cuts_note(stack_cuts_); !cuts.empty()) std::fputs(cuts.c_str(), stderr);
  std::fprintf(stderr, "gpuprof: stopped (%s); detach %.1f ms; %llu events, %llu lost%s%s\n",
               outcome_.stop_reason.c_str(), detach_ms, static_cast<unsigned long long>(stats_.events_recorded),
               static_cast<unsigned long long>(stats_.events_lost), more.c_str(),
               wrote_part(config_, written).c_str());
}

std::string stop_hint(const RecordConfig& config) {
  return config.duration_s > 0 ? "" : "; " + config.stop_key + " to stop";
}

std::string disk_full_error(const std::string& write_error, const std::string& path) {
  return write_error + "; " + path + " is valid up to its last complete chunk: gpuprof report " + path + " reads it";
}

std::string wrote_part(const RecordConfig& config, const std::string& files) {
  return config.output_path == kLiveOnly ? "" : "; wrote " + files;
}

}  // namespace gpuprof
