// job_profiler_library.cpp: libjob_profiler.so, the job's own profiler
// (job_profiler.h, Kineto-like) in a library of its own that imports CUPTI
// as torch's libraries do: linked against libcupti.so.13, -z relro -z now,
// so that its calls go through GOT slots the loader made read-only (the
// CUPTI shim must still hear its cuptiSubscribe: import_redirect.h).
// launch_driver loads it before the CUDA driver's cuInit, as torch is
// loaded before CUDA starts.
#include <cstdint>

#include "job_profiler.h"

namespace {
JobProfiler& profiler() {
  static JobProfiler instance(JobProfiler::Kind::kineto);
  return instance;
}
}  // namespace

extern "C" {
__attribute__((visibility("default"))) void job_profiler_start() { profiler().start(); }
__attribute__((visibility("default"))) void job_profiler_stop() { profiler().stop(); }
__attribute__((visibility("default"))) int job_profiler_cpu_only() { return profiler().cpu_only(); }
__attribute__((visibility("default"))) uint64_t job_profiler_records() { return JobProfiler::records(); }
}
