// recording.h: the in-memory form of a record file.
//
// `record` fills one of these while it runs and streams it to disk through
// RecordWriter (record_file.h); `report` gets one back from read_recording().
// Everything an output needs is here, so a recording can be reported on
// another machine without the target's libraries.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "events.h"

namespace gpuprof {

// One traced operator. Its id is its index in Recording::ops and the op_id of
// its events.
struct OpInfo {
  std::string name;      // torch.profiler's name: "aten::add"
  std::string overload;  // schema overload name: "Tensor" ("" when none)
  std::string symbol;    // mangled at::_ops::<op>::call symbol it came from
  bool operator==(const OpInfo&) const = default;
};

// The traced process, as seen when recording started.
struct ProcessInfo {
  int32_t pid = 0;
  std::string comm;           // /proc/PID/comm
  std::string cmdline;        // /proc/PID/cmdline, NULs turned into spaces
  std::string libtorch_path;  // the libtorch_cpu file the probes sit on
  std::string libtorch_build_id;  // hex GNU build-id ("" when absent)
  std::string hostname;
  bool operator==(const ProcessInfo&) const = default;
};

// Clock data: event timestamps are CLOCK_MONOTONIC nanoseconds; the realtime
// pair lets a report print wall-clock times.
struct ClockInfo {
  uint64_t start_monotonic_ns = 0;
  uint64_t start_realtime_ns = 0;
  uint64_t end_monotonic_ns = 0;  // 0 until the recording finished
  bool operator==(const ClockInfo&) const = default;
};

// Counters written at the end of a recording. Nothing is lost silently:
// every number here is printed by report when non-zero.
struct RecordStats {
  uint64_t events_recorded = 0;  // events written to the file
  uint64_t events_lost = 0;      // ring buffer full: events dropped in BPF
  uint32_t entry_probes = 0;     // uprobe_multi sites attached
  uint32_t exit_probes = 0;
  uint32_t ops_without_exit = 0;  // ::call bodies with no `ret` found
  std::string stop_reason;       // "duration", "signal", "target exited", ...
  bool operator==(const RecordStats&) const = default;
};

struct Recording {
  uint32_t format_version = 0;
  ProcessInfo process;
  ClockInfo clock;
  std::vector<OpInfo> ops;
  std::vector<gp_event> events;
  RecordStats stats;
  // False when the file has no end chunk (the recorder was killed or the
  // file was cut): events are those of the complete chunks.
  bool complete = false;
  // When !complete: one line saying why and how many trailing bytes (a torn
  // chunk) were ignored, for report to print as a warning.
  std::string incomplete_reason;
};

}  // namespace gpuprof
