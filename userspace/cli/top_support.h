// cli/top_support.h: what both tops (top -p / --, top -a) read of a process
// and do with stderr and the session while the screen is full.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "collect/record_session.h"
#include "base/terminal.h"

namespace gpuprof::cli {

// A process's CPU time (utime + stime, clock ticks) and thread count, from
// /proc/PID/stat; ok false when it is gone.
struct ProcessCpu {
  uint64_t ticks = 0;
  uint32_t threads = 0;
  bool ok = false;
};
ProcessCpu read_process_cpu(int pid);

// The width of what a top prints on its standard output (--batch
// refreshes, the summary at the end): the terminal's, so that its tables
// fit it as the screen's do (docs/top.md, "Narrow terminals"); 200 columns
// into a file or a pipe.
size_t printed_table_width();

// Captures this process's stderr while the screen is full (the session's
// progress lines would draw over it) and prints it once the screen is back.
class StderrCapture {
 public:
  StderrCapture();
  ~StderrCapture() { release(); }
  StderrCapture(const StderrCapture&) = delete;
  StderrCapture& operator=(const StderrCapture&) = delete;
  void release();

 private:
  int saved_ = -1, capture_ = -1;
};

// The full screen of an interactive top (stdin and stdout terminals, no
// --batch), with stderr captured while it is up; nullptr for batch output.
std::unique_ptr<FullScreen> enter_screen(bool batch, std::optional<StderrCapture>& capture);

// Runs a top's record session, keys read from stdin while the screen is up.
// The terminal and stderr are given back before the session's error, if
// any, is printed. Nothing when the session failed.
std::optional<RecordOutcome> run_top_session(RecordConfig& config, FullScreen* screen, std::optional<StderrCapture>& capture);

}  // namespace gpuprof::cli
