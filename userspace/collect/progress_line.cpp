// progress_line.cpp: record's progress line (progress_line.h).
#include "collect/progress_line.h"

#include <cstdio>

#include "base/status_line.h"

namespace gpuprof {
namespace {

constexpr uint64_t kRedrawIntervalNs = 1'000'000'000;

}  // namespace

std::string format_progress_line(const ProgressCounters& now, const ProgressCounters& before,
                                 uint64_t start_ns) {
  const double elapsed_s = now.now_ns > start_ns ? static_cast<double>(now.now_ns - start_ns) / 1e9 : 0;
  const double span_s = now.now_ns > before.now_ns ? static_cast<double>(now.now_ns - before.now_ns) / 1e9 : 0;
  const uint64_t calls = now.op_calls >= before.op_calls ? now.op_calls - before.op_calls : 0;
  const unsigned long long rate = span_s > 0 ? static_cast<unsigned long long>(static_cast<double>(calls) / span_s + 0.5) : 0;
  char text[256];
  int n = std::snprintf(text, sizeof text, "gpuprof: %.0fs, %llu ops/s, %llu events", elapsed_s, rate,
                        static_cast<unsigned long long>(now.events));
  std::string line(text, static_cast<size_t>(n));
  if (now.samples) line += ", " + std::to_string(*now.samples) + " samples";
  if (now.gpu_records) line += ", " + std::to_string(*now.gpu_records) + " GPU records";
  n = std::snprintf(text, sizeof text, ", %.1f MB, %llu lost", static_cast<double>(now.bytes_written) / 1e6,
                    static_cast<unsigned long long>(now.lost));
  line.append(text, static_cast<size_t>(n));
  return line;
}

RecordProgress::RecordProgress(bool wanted, uint64_t start_ns) : start_ns_(start_ns) {
  if (wanted) line_ = StatusLine::open();
  shown_.now_ns = start_ns;
}

RecordProgress::~RecordProgress() = default;

void RecordProgress::tick(const ProgressCounters& now) {
  if (!line_ || now.now_ns - shown_.now_ns < kRedrawIntervalNs) return;
  last(now);
}

void RecordProgress::last(const ProgressCounters& now) {
  if (!line_) return;
  // Soon after the previous line, the rate over so short a span says
  // little: the whole recording's is shown instead.
  ProgressCounters since = shown_;
  if (now.now_ns - shown_.now_ns < kRedrawIntervalNs / 2) {
    since = {};
    since.now_ns = start_ns_;
  }
  line_->show(format_progress_line(now, since, start_ns_));
  shown_ = now;
}

}  // namespace gpuprof
