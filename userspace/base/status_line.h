// status_line.h: one line of stderr kept up to date in place on a terminal
// (record's progress: docs/record.md), as perf and py-spy keep theirs.
//
// While it exists, the process's `stderr` stream is a wrapper that erases
// the line before anything else is written through it, so a message printed
// anywhere (a warning, the stop line, libbpf's log) starts at column 0 of a
// clean line and never shares it with a half-drawn status; the next show()
// draws the line again below it. The destructor erases the line and gives
// stderr back. Output written to fd 2 by another process (a launched
// command) is not seen.
#pragma once

#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

namespace gpuprof {

class StatusLine {
 public:
  // nullptr when stderr is not a terminal (a pipe, a file): nothing to draw on.
  static std::unique_ptr<StatusLine> open();
  ~StatusLine();
  StatusLine(const StatusLine&) = delete;
  StatusLine& operator=(const StatusLine&) = delete;

  // Draws `text` (one line, no '\n') in place of the line shown, cut to the
  // terminal's width (read at every call: it follows resizes) so that it
  // never wraps.
  void show(std::string_view text);
  // Erases the line shown, if any.
  void erase();

 private:
  StatusLine() = default;
  static ssize_t write_through(void* cookie, const char* data, size_t size);
  std::FILE* original_ = nullptr;  // stderr before the wrapper
  std::FILE* wrapper_ = nullptr;
  bool shown_ = false;
};

// `text` cut to at most `columns` - 1 characters (the last column left
// empty: some terminals wrap when it is written). Text is ASCII.
std::string fit_to_width(std::string_view text, size_t columns);

}  // namespace gpuprof
