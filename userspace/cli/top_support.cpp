#include "cli/top_support.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace gpuprof::cli {

ProcessCpu read_process_cpu(int pid) {
  ProcessCpu out;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(stat, text)) return out;
  // Fields after the command, which may hold spaces and parentheses.
  const size_t close = text.rfind(')');
  if (close == std::string::npos) return out;
  std::istringstream fields(text.substr(close + 2));
  std::string field;
  uint64_t utime = 0, stime = 0;
  long threads = 0;
  for (int i = 3; fields >> field; ++i) {  // field 3 is the state
    if (i == 14) utime = std::stoull(field);
    if (i == 15) stime = std::stoull(field);
    if (i == 20) {
      threads = std::stol(field);
      break;
    }
  }
  out.ticks = utime + stime;
  out.threads = static_cast<uint32_t>(threads);
  out.ok = true;
  return out;
}

std::string times_status(const std::optional<ProbeCosts>& costs) {
  if (!costs) return "raw times";
  char removed[48];
  std::snprintf(removed, sizeof removed, "probes -%.2f us/call", costs->total_ns() / 1000.0);
  return removed;
}

size_t printed_table_width() { return terminal_columns(STDOUT_FILENO).value_or(200); }

StderrCapture::StderrCapture() {
  saved_ = dup(STDERR_FILENO);
  capture_ = memfd_create("gpuprof-top-stderr", MFD_CLOEXEC);
  if (saved_ >= 0 && capture_ >= 0) dup2(capture_, STDERR_FILENO);
}

void StderrCapture::release() {
  if (saved_ < 0) return;
  std::fflush(stderr);
  dup2(saved_, STDERR_FILENO);
  close(saved_);
  saved_ = -1;
  if (capture_ < 0) return;
  char buffer[4096];
  ssize_t n;
  off_t at = 0;
  while ((n = pread(capture_, buffer, sizeof buffer, at)) > 0) {
    (void)!write(STDERR_FILENO, buffer, static_cast<size_t>(n));
    at += n;
  }
  close(capture_);
  capture_ = -1;
}

std::unique_ptr<FullScreen> enter_screen(bool batch, std::optional<StderrCapture>& capture) {
  if (batch || !isatty(STDOUT_FILENO) || !isatty(STDIN_FILENO)) return nullptr;
  auto screen = FullScreen::enter(STDIN_FILENO, STDOUT_FILENO);
  if (!screen) return nullptr;
  capture.emplace();
  return std::move(screen).value();
}

std::optional<RecordOutcome> run_top_session(RecordConfig& config, FullScreen* screen,
                                             std::optional<StderrCapture>& capture) {
  if (screen) config.input_fd = STDIN_FILENO;
  const RecordOutcome outcome = run_record_session(config);
  if (screen) screen->restore();
  if (capture) capture->release();
  if (!outcome.ok && outcome.error.size()) {
    std::fprintf(stderr, "gpuprof: error: %s\n", outcome.error.c_str());
    return std::nullopt;
  }
  return outcome;
}

bool TopDisplay::refreshed(const std::function<std::string(size_t width)>& batch_text) {
  ++refreshes_;
  redraw_ = true;
  if (!screen_) {
    std::fputs((batch_text(printed_table_width()) + "\n").c_str(), stdout);
    std::fflush(stdout);
  }
  return iterations_ <= 0 || refreshes_ < iterations_;
}

void TopDisplay::draw(const std::function<std::string(size_t columns, size_t rows)>& screen_text) {
  if (!screen_) return;
  if (screen_->size() != drawn_size_) redraw_ = true;
  if (!redraw_) return;
  const auto [columns, rows] = screen_->size();
  drawn_size_ = {columns, rows};
  screen_->draw(screen_text(columns, rows));
  redraw_ = false;
}

void TopDisplay::draw_plain(std::string_view text) {
  if (!screen_ || !redraw_) return;
  screen_->draw(text);
  redraw_ = false;
}

}  // namespace gpuprof::cli
