// terminal.cpp: alternate screen, raw keys, and putting them back.
#include "base/terminal.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace gpuprof {
namespace {

// What restore() writes: show the cursor, leave the alternate screen.
constexpr std::string_view kLeave = "\x1b[?25h\x1b[?1049l";

// For an exit that skips destructors: the one active screen's settings.
int g_in = -1, g_out = -1;
termios g_saved;
bool g_active = false;

void restore_at_exit() {
  if (!g_active) return;
  g_active = false;
  tcsetattr(g_in, TCSANOW, &g_saved);
  (void)!::write(g_out, kLeave.data(), kLeave.size());
}

void write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    data.remove_prefix(static_cast<size_t>(n));
  }
}

}  // namespace

Result<std::unique_ptr<FullScreen>> FullScreen::enter(int fd_in, int fd_out) {
  termios saved;
  if (!isatty(fd_in) || !isatty(fd_out) || tcgetattr(fd_in, &saved) != 0) return Error("not a terminal");
  termios raw = saved;
  raw.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO);  // keys one by one, unechoed; ^C stays a signal
  raw.c_cc[VMIN] = 0;
  raw.c_cc[VTIME] = 0;
  if (tcsetattr(fd_in, TCSANOW, &raw) != 0)
    return Error(std::string("cannot set the terminal mode: ") + std::strerror(errno));
  std::unique_ptr<FullScreen> screen(new FullScreen(fd_in, fd_out, saved));
  g_in = fd_in;
  g_out = fd_out;
  g_saved = saved;
  g_active = true;
  static bool hooked = false;
  if (!hooked) {
    std::atexit(restore_at_exit);
    hooked = true;
  }
  write_all(fd_out, "\x1b[?1049h\x1b[?25l\x1b[H\x1b[2J");  // alternate screen, no cursor, cleared
  return screen;
}

FullScreen::~FullScreen() { restore(); }

void FullScreen::restore() {
  if (!active_) return;
  active_ = false;
  tcsetattr(in_, TCSANOW, &saved_);
  write_all(out_, kLeave);
  g_active = false;
}

std::optional<size_t> terminal_columns(int fd) {
  winsize ws = {};
  if (!isatty(fd) || ioctl(fd, TIOCGWINSZ, &ws) != 0 || ws.ws_col == 0) return std::nullopt;
  return ws.ws_col;
}

std::pair<size_t, size_t> FullScreen::size() const {
  winsize ws = {};
  if (ioctl(out_, TIOCGWINSZ, &ws) != 0 || ws.ws_col == 0 || ws.ws_row == 0) return {80, 24};
  return {ws.ws_col, ws.ws_row};
}

void FullScreen::draw(std::string_view text) {
  // Home, then each line followed by "clear to its end", then clear below:
  // no flicker from clearing the whole screen first.
  std::string frame = "\x1b[H";
  size_t at = 0;
  while (at <= text.size()) {
    const size_t end = text.find('\n', at);
    frame.append(text.substr(at, end == std::string_view::npos ? std::string_view::npos : end - at));
    frame += "\x1b[K";
    if (end == std::string_view::npos) break;
    frame += "\r\n";
    at = end + 1;
  }
  frame += "\x1b[J";
  write_all(out_, frame);
}

std::string FullScreen::read_keys() {
  std::string keys;
  char buffer[64];
  for (;;) {
    ssize_t n = ::read(in_, buffer, sizeof buffer);
    if (n <= 0) break;
    keys.append(buffer, static_cast<size_t>(n));
  }
  return keys;
}

}  // namespace gpuprof
