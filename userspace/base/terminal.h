// terminal.h: a full-screen text view on a terminal (gpuprof top).
//
// enter() switches the terminal to its alternate screen, hides the cursor
// and reads keys one at a time without echo; the destructor (and restore())
// puts everything back, so leaving by return, by exception or through the
// session's Ctrl-C handling restores the user's terminal. A process exit
// without unwinding (exit() from elsewhere) is covered by an atexit hook.
#pragma once

#include "base/result.h"

#include <termios.h>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace gpuprof {

// The width of the terminal `fd` is (columns); nullopt when it is not one.
std::optional<size_t> terminal_columns(int fd);

class FullScreen {
 public:
  // An error when fd_in/fd_out is not a terminal.
  static Result<std::unique_ptr<FullScreen>> enter(int fd_in, int fd_out);
  ~FullScreen();
  FullScreen(const FullScreen&) = delete;
  FullScreen& operator=(const FullScreen&) = delete;

  // (columns, rows) now: it follows resizes.
  std::pair<size_t, size_t> size() const;
  // Redraws the whole screen with `text` (lines separated by '\n').
  void draw(std::string_view text);
  // The keys typed since the last call (non-blocking; "" when none).
  std::string read_keys();
  void restore();

 private:
  FullScreen(int fd_in, int fd_out, const termios& saved) : in_(fd_in), out_(fd_out), saved_(saved) {}
  int in_, out_;
  termios saved_;
  bool active_ = true;
};

}  // namespace gpuprof
