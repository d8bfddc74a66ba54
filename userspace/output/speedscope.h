// speedscope.h: a recording in speedscope's own file format
// (https://www.speedscope.app/file-format-schema.json), report --speedscope
// OUT, docs/speedscope.md.
//
// Speedscope opens Chrome traces too, but keys their frames by name and
// args, so every op call there is a frame of its own ("aten::conv2d
// {"call":3,...}"), and its Sandwich view lists one row per call. Its own
// format shares frames by index: one frame per op name, per Python frame,
// per native function, and so one Sandwich row each.
//
// What goes in:
//   * shared.frames: every name a profile below uses, once;
//   * per thread that completed an op call, an evented profile ("python3
//     (1234) / pt_main_thread (1234): ops") of its op calls, nested as they
//     ran, under the Python frames of each outermost call's entry when the
//     recording has them (record --with-stack): a Python frame opens at the
//     first call made under it and closes when a call is made under other
//     frames, or at the end. gpuprof's step frames (record --schedule
//     --step-op) are left out: a call may run across a step's end
//     (op_timeline.h), which an evented profile cannot show nested;
//   * per thread that was sampled (record -F HZ), a sampled profile
//     ("...: CPU samples") whose stacks are, outermost first, the sample's
//     Python frames, the op calls running on its thread then, its native leaf
//     and its kernel frames (as the folded stacks', docs/folded.md, without
//     torch's same-name fold), each weighted by the sampling period.
// Times are nanoseconds since the recording started. Profiles come in
// process, then thread order, the main thread first.
//
// One writer serves a recording read whole and one read as a stream
// (streamed_chrome_trace.h, whose replay of each thread's calls it takes):
// the threads' calls are replayed in the profiles' order, each thread's in
// trace order, its evented profile written as they come (its end value
// last, once known) and its sampled profile after it, each sample with the
// op calls open at its moment, found as its thread's calls came by. Memory
// then grows with the threads, the open calls and the samples, not with
// the op events; the two give the same bytes. Frames are numbered by first
// use in the document.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>

#include "output/chrome_trace.h"
#include "record/recording.h"

namespace gpuprof {

struct SpeedscopeStats {
  uint64_t frames = 0;    // shared frames
  uint64_t profiles = 0;  // evented and sampled profiles
  uint64_t op_calls = 0;  // calls in the evented profiles
  uint64_t samples = 0;   // samples in the sampled profiles
};

// Writes the whole JSON document through `write` (in pieces of about 64
// KiB); returns what it wrote.
SpeedscopeStats write_speedscope(const Recording& recording, const std::function<void(std::string_view)>& write);
// The same of a recording read without its events (`head`), its calls
// replayed by `calls` (StreamedChromeTrace::finish without --ops).
SpeedscopeStats write_speedscope(const Recording& head, const StreamedTraceCalls& calls,
                                 const std::function<void(std::string_view)>& write);

}  // namespace gpuprof
