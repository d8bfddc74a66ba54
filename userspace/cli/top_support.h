// cli/top_support.h: what both tops (top -p / --, top -a) read of a process
// and do with stderr and the session while the screen is full.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

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

// What the status line says of op times: "probes -X us/call" (compensated
// by `costs`), or "raw times".
std::string times_status(const std::optional<ProbeCosts>& costs);

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

// How a top shows its view: in batch mode each refresh is printed on
// standard output (printed_table_width() wide), up to --iterations; on a
// full screen the view is redrawn after a refresh, after a key changed it,
// and when the terminal was resized (checked every tick: one ioctl).
class TopDisplay {
 public:
  // screen: null in batch mode.
  TopDisplay(FullScreen* screen, int iterations) : screen_(screen), iterations_(iterations) {}
  // A new interval was rolled: in batch mode batch_text(width) is printed
  // now. False once the last of --iterations is printed.
  bool refreshed(const std::function<std::string(size_t width)>& batch_text);
  // A key changed the view.
  void changed() { redraw_ = true; }
  // On a screen, when it needs it: screen_text(columns, rows), drawn.
  void draw(const std::function<std::string(size_t columns, size_t rows)>& screen_text);
  // On a screen, when it needs it: `text`, whatever its size (a waiting line).
  void draw_plain(std::string_view text);
  int refreshes() const { return refreshes_; }

 private:
  FullScreen* screen_;
  int iterations_;
  int refreshes_ = 0;
  bool redraw_ = true;
  std::pair<size_t, size_t> drawn_size_;  // the terminal size of the last redraw
};

// Runs a top's record session, keys read from stdin while the screen is up.
// The terminal and stderr are given back before the session's error, if
// any, is printed. Nothing when the session failed.
std::optional<RecordOutcome> run_top_session(RecordConfig& config, FullScreen* screen, std::optional<StderrCapture>& capture);

}  // namespace gpuprof::cli
