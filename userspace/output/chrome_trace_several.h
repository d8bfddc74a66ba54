// chrome_trace_several.h: report A B ... --chrome-trace OUT: several
// recordings in one Chrome/Perfetto trace (docs/chrome-trace.md, "Several
// recordings"; docs/fleet.md).
//
// One process track per recording of one process (a system-wide
// recording's processes each count as one): named after its rank ("rank 1:
// python3 (4243)") when its process had one (torchrun's workers), else
// after its file ("b.gpuprof: python3 (4243)"), labelled with its host and
// file; the ranks first, in rank order, then the others in the order given.
// Its GPUs' tracks follow it ("rank 1: GPU 0").
//
// Timelines are aligned on wall-clock time: each file holds the
// CLOCK_MONOTONIC and CLOCK_REALTIME instants of its start (the CLOCK
// chunk, docs/record-file.md, read one after the other), so an event at
// monotonic time t of a recording is at wall-clock time t - start_monotonic
// + start_realtime. The trace's zero is the earliest start's wall-clock
// time; every timestamp is exact to the nanosecond relative to it. Files
// of one host line up as that host's clocks do; files of different hosts
// line up to the precision of their clocks' synchronisation (NTP), which
// the trace's otherData says, with each recording's shift.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "output/chrome_trace.h"
#include "record/recording.h"

namespace gpuprof {

struct TraceInput {
  const Recording* recording;  // of one process
  std::string file;
  // A streamed read's calls (streamed_chrome_trace.h; the recording was
  // read without its events); nullptr: the recording's events.
  const StreamedTraceCalls* calls = nullptr;
};

// How each recording is placed (its track, name, shift), in track order.
// An error (one line) when a recording holds no wall-clock start: it could
// not be aligned with the others.
Result<std::vector<TracePart>> place_trace_parts(const std::vector<TraceInput>& inputs);

// The members of the trace's otherData: the producer, the time zero (its
// CLOCK_REALTIME and UTC), how the timelines are aligned (to NTP precision
// across hosts), that times are raw, each recording with its shift, and
// the --ops pattern.
std::string several_trace_other_data(const std::vector<TraceInput>& inputs, const std::vector<TracePart>& parts,
                                     const ChromeTraceOptions& options);

// The whole trace; an error as place_trace_parts.
Result<ChromeTraceStats> write_chrome_trace_of_several(const std::vector<TraceInput>& inputs,
                                                       const ChromeTraceOptions& options,
                                                       const std::function<void(std::string_view)>& write);

}  // namespace gpuprof
