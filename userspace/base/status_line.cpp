// status_line.cpp: the in-place stderr line and the stderr wrapper that
// erases it before other output (status_line.h).
#include "base/status_line.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>

namespace gpuprof {
namespace {

constexpr std::string_view kEraseLine = "\r\x1b[K";  // column 0, clear to the end of the line

void write_all(std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(STDERR_FILENO, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    data.remove_prefix(static_cast<size_t>(n));
  }
}

size_t stderr_columns() {
  winsize ws = {};
  if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) != 0 || ws.ws_col == 0) return 80;
  return ws.ws_col;
}

}  // namespace

std::string fit_to_width(std::string_view text, size_t columns) {
  const size_t room = columns > 1 ? columns - 1 : 0;
  return std::string(text.substr(0, room));
}

std::unique_ptr<StatusLine> StatusLine::open() {
  if (!isatty(STDERR_FILENO)) return nullptr;
  std::unique_ptr<StatusLine> line(new StatusLine());
  cookie_io_functions_t io = {};
  io.write = &StatusLine::write_through;
  line->wrapper_ = fopencookie(line.get(), "w", io);
  if (!line->wrapper_) return nullptr;
  // Line-buffered: a message reaches the terminal whole, one erase before it.
  setvbuf(line->wrapper_, nullptr, _IOLBF, 0);
  std::fflush(stderr);
  line->original_ = stderr;
  stderr = line->wrapper_;
  return line;
}

StatusLine::~StatusLine() {
  std::fflush(wrapper_);
  erase();
  stderr = original_;
  std::fclose(wrapper_);
}

ssize_t StatusLine::write_through(void* cookie, const char* data, size_t size) {
  static_cast<StatusLine*>(cookie)->erase();
  write_all(std::string_view(data, size));
  return static_cast<ssize_t>(size);
}

void StatusLine::show(std::string_view text) {
  std::fflush(wrapper_);  // a message without its '\n' yet goes out first (and erases)
  std::string frame(kEraseLine);
  frame += fit_to_width(text, stderr_columns());
  write_all(frame);
  shown_ = true;
}

void StatusLine::erase() {
  if (!shown_) return;
  shown_ = false;
  write_all(kEraseLine);
}

}  // namespace gpuprof
