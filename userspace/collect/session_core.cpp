// session_core.cpp: what every recording session does, whatever its target
// (collect/session_core.h).
#include "collect/session_core.h"

#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cstdio>

#include "base/session_loop.h"

namespace gpuprof {

void SessionCore::read_signals(int signal_fd, const std::function<void(int)>& on_other) {
  signalfd_siginfo info;
  while (read(signal_fd, &info, sizeof info) == sizeof info) {
    switch (info.ssi_signo) {
      case SIGINT: stop("interrupted"); break;
      case SIGTERM: stop("terminated"); break;
      case SIGHUP: stop("hangup"); break;
      default:
        if (on_other) on_other(static_cast<int>(info.ssi_signo));
    }
  }
}

void SessionCore::start_loop(uint64_t now_ns) {
  last_flush_ns_ = now_ns;
  progress_.emplace(config_.progress, now_ns);
}

bool SessionCore::flush_due(uint64_t now_ns) {
  if (now_ns - last_flush_ns_ < kFlushIntervalNs) return false;
  last_flush_ns_ = now_ns;
  return true;
}

void SessionCore::flush_chunks() {
  if (!writer_ || !diagnostics_.writing()) return;
  if (Result<void> flushed = writer_->flush(); !flushed) write_failed(flushed.error());
}

void SessionCore::tick_outputs(uint64_t now_ns) {
  if (!writer_ || !diagnostics_.writing()) return;
  if (Result<void> ticked = switcher_->tick(now_ns, counters_now()); !ticked) write_failed(ticked.error());
}

void SessionCore::end_turn(uint64_t now_ns) {
  if (!diagnostics_.writing()) {
    const bool disk_full =
        writer_ && (writer_->disk_full(RecordOutputs::kMain) || writer_->disk_full(RecordOutputs::kCycle));
    stop(disk_full ? "disk full" : "write error");
  }
  if (progress_->active()) progress_->tick(progress_counters(now_ns));
  if (!config_.live_consumer().tick(now_ns, tracer_ ? tracer_->events_lost() : 0)) stop("quit");
}

bool SessionCore::close_after_write_error() {
  stats_.stop_reason = outcome_.stop_reason;
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

void SessionCore::say_stopped(double detach_ms, const std::string& more, const std::string& written) const {
  if (std::string cuts = stack_cuts_note(stack_cuts_); !cuts.empty()) std::fputs(cuts.c_str(), stderr);
  std::fprintf(stderr, "gpuprof: stopped (%s); detach %.1f ms; %llu events, %llu lost%s%s\n",
               outcome_.stop_reason.c_str(), detach_ms, static_cast<unsigned long long>(stats_.events_recorded),
               static_cast<unsigned long long>(stats_.events_lost), more.c_str(),
               wrote_part(config_, written).c_str());
}

}  // namespace gpuprof
