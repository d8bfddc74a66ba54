// diagnostics.h: how a collector session says what went wrong, one way for
// -p, -- CMD and -a.
//
// Warnings go to stderr and into the record file (RecordStats::problems),
// so that the report's table says them too; the first write error is kept
// and ends the session at the loop's next turn; stop() and fail() set the
// session's outcome (the stop reason, the one-line error).
#pragma once

#include <string>

#include "collect/record_session.h"
#include "record/recording.h"

namespace gpuprof {

class Diagnostics {
 public:
  Diagnostics(RecordStats& stats, RecordOutcome& outcome) : stats_(stats), outcome_(outcome) {}

  // "gpuprof: warning: WHAT" on stderr, kept for the file.
  void warn(const std::string& what);
  // The same, said as a plain note on stderr ("gpuprof: WHAT").
  void note(const std::string& what);
  // Kept for the file only (at most 64, each once).
  void keep(const std::string& what);

  // The first write error is kept; false, for `return write_failed(...)`.
  bool write_failed(const std::string& error);
  const std::string& write_error() const { return write_error_; }
  bool writing() const { return write_error_.empty(); }

  // The first reason given is the one the stop line says.
  void stop(const char* reason) {
    if (!stopped_) outcome_.stop_reason = reason;
    stopped_ = true;
  }
  bool stopped() const { return stopped_; }
  bool failed() const { return !outcome_.error.empty(); }
  // Records the error that ends the session; false, for `return fail(...)`.
  bool fail(std::string message) {
    outcome_.ok = false;
    outcome_.error = std::move(message);
    return false;
  }

 private:
  RecordStats& stats_;
  RecordOutcome& outcome_;
  std::string write_error_;
  bool stopped_ = false;
};

}  // namespace gpuprof
