// pprof.h: a recording as a pprof profile (profile.proto, gzipped by the
// caller when the file name ends in .gz): report --pprof, docs/pprof.md.
//
// One profile, its sample types the recording's:
//   calls/count, self_cpu/nanoseconds   traced ops (the op paths of
//                                       --folded's self_cpu_time: Python
//                                       frames of --with-stack, then ops)
//   samples/count, cpu/nanoseconds      CPU samples (record -F HZ): Python
//                                       frames, ops, native leaf, kernel
//                                       frames; cpu = count x period
//   gpu/nanoseconds                     GPU time each op launched itself
//                                       (the CUPTI shim's records)
// Each pprof sample is one distinct stack of one process, its values in
// every column (0 where the stack has none of that kind). Self CPU is
// compensated for the probes' cost as the table's is (raw with raw_times).
// Frames are functions: a Python frame's file and line are the Function's
// filename and the Line's line ("torch/nn/modules/conv.py(454): _conv_forward"
// -> _conv_forward, torch/nn/modules/conv.py, 454); op and kernel frames
// are their names; a native frame is its symbol (or its offset) in its
// file's mapping, named by the file's path with its GNU build id as the
// recording keeps them for its process (NATIVE_FILES, NativeFile); in a
// file from before them, the process's libtorch_cpu alone has its path and
// build id (PROCESS), other files their name only. Labels on every sample: pid, comm and
// hostname of its process, and rank, local_rank and world_size as its job
// rank has them (JobRank, none when its environment had no RANK).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "analyze/stack_sums.h"
#include "analyze/streamed_process_metric_sums.h"
#include "record/recording.h"

namespace gpuprof {

struct PprofStats {
  uint64_t samples = 0;  // pprof samples: distinct (stack, process)
  uint64_t functions = 0;
  uint64_t sample_types = 0;
};

struct PprofProfile {
  std::string data;  // the serialized Profile message (not compressed)
  PprofStats stats;
};

PprofProfile pprof_profile(const Recording& recording, bool raw_times = false);

// The stack sums a recording of one process has columns of, in the order
// pprof_profile sums them: kCalls and kSelfCpuTime (traced ops), kSamples
// (record -F), kSelfCudaTime (GPU activities).
std::vector<StackMetric> pprof_metrics(const Recording& recording);

// The profile of a recording of one process whose stacks were summed
// already, those of every metric pprof_metrics() names (a streamed read:
// analyze/streamed_metric_sums.h): the same bytes as pprof_profile of the
// recording read whole. Locations, functions, mappings and strings are
// numbered in an order of the frames themselves, not of the order the sums
// met them in (which a streamed read's differs from a whole one's).
PprofProfile pprof_profile(const Recording& recording, std::map<StackMetric, StackSums> sums,
                           bool raw_times = false);

// The profile of a system-wide recording (record -a) whose processes'
// stacks were summed already, by pid (a streamed read:
// analyze/streamed_process_metric_sums.h): the same bytes as
// pprof_profile of the recording read whole.
PprofProfile pprof_profile(const Recording& recording, std::map<uint32_t, ProcessMetricSums> processes,
                           bool raw_times = false);

// Several recordings in one profile (report A B ... --pprof): their
// processes' samples side by side, each also labelled with its file
// ("recording"). The sample types are those any of them has; a recording's
// cpu values use its own period (the profile's period is the first
// sampled recording's). A recording read as a stream comes with its stack
// sums, moved from: the same bytes as the recording read whole.
struct PprofInput {
  const Recording* recording;
  std::string file;
  // A streamed read's stack sums of a recording of one process, every
  // metric pprof_metrics() names (analyze/streamed_metric_sums.h), or
  std::map<StackMetric, StackSums>* sums = nullptr;
  // of a system-wide recording's processes, by pid
  // (analyze/streamed_process_metric_sums.h). Neither: the recording's
  // events are summed.
  std::map<uint32_t, ProcessMetricSums>* processes = nullptr;
};
PprofProfile pprof_profile(const std::vector<PprofInput>& inputs, bool raw_times = false);

}  // namespace gpuprof
