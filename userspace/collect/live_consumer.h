// live_consumer.h: what a session hands, as it records, to a consumer that
// shows the recording live (gpuprof top, top -a).
//
// The record writer is one sink of a session (record_sink.h: the file); a
// LiveConsumer is the other: the same events, in the order they are
// recorded, for tables that live in memory. A session without one
// (`record`) only writes. Every method but tick() is a notification; a
// consumer overrides what it shows.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "op_tracer_abi.h"
#include "record/recording.h"

namespace gpuprof {

class LiveConsumer {
 public:
  virtual ~LiveConsumer() = default;

  // Once the recording begins (after the probes are in): the target and
  // its op table (op ids index it; empty for -a, whose ops come by
  // ops_found), and the recording's start.
  virtual void begin(const ProcessInfo& /*process*/, const std::vector<OpInfo>& /*ops*/, uint64_t /*start_ns*/) {}
  // Ops found after begin, with the id of the first (op ids index the
  // concatenation): rows named at run time (record_function ranges, the
  // engine's rows), and each libtorch_cpu file -a finds.
  virtual void ops_found(uint32_t /*first_id*/, const std::vector<OpInfo>& /*ops*/) {}
  // -a: each process as it is first seen (again, once, when a process seen
  // before maps a libtorch_cpu), and each thread's process as it is first seen.
  virtual void process_seen(const ProcessInfo& /*process*/) {}
  virtual void thread_seen(uint32_t /*tid*/, uint32_t /*pid*/) {}
  // Every op event as it is read from the ring buffer, with its index in
  // the recording.
  virtual void op_event(const gp_event& /*event*/, uint64_t /*index*/) {}
  // The probes' calibrated costs, before the first op event (never, when
  // the calibration failed: times stay raw); -a hands them again, with
  // more op sites, as it finds libtorch files.
  virtual void probe_costs(const ProbeCosts& /*costs*/) {}
  // CPU samples (-F HZ): each frame name once, as it is first defined (ids
  // from 0, Recording::sample_frames), then each sample with its Python
  // stack (frame ids, outermost first; empty without Python frames).
  virtual void sample_frame(uint32_t /*frame_id*/, const std::string& /*name*/) {}
  virtual void sample(const CpuSample& /*sample*/, const std::vector<uint32_t>& /*python_stack*/) {}
  // Stacks (interned: each once, as first defined, ids from 0,
  // Recording::sample_stacks: frame ids outermost first), the Python stack
  // of each op entry (--with-stack, --with-modules: the op event's index),
  // and the module attribute names read (--with-modules).
  virtual void sample_stack(uint32_t /*stack_id*/, const std::vector<uint32_t>& /*frame_ids*/) {}
  virtual void entry_stack(uint64_t /*event_index*/, uint32_t /*stack_id*/) {}
  // --with-modules: an engine call's forward stack (Recording::backward_stacks).
  virtual void backward_stack(uint64_t /*event_index*/, uint32_t /*stack_id*/) {}
  virtual void module_names(const std::vector<ModuleName>& /*names*/) {}
  // The CUPTI shim's records, as they are recorded.
  virtual void gpu_correlation(const GpuCorrelation& /*launch*/) {}
  virtual void gpu_activity(const GpuActivity& /*activity*/) {}
  // -a: each CUDA kernel launch as it is recorded, with its process.
  virtual void launch(const CudaLaunch& /*launch*/, uint32_t /*pid*/) {}
  // From the session's loop about every 100 ms, after the events read so
  // far (also before the probes are in); false stops the session ("quit").
  virtual bool tick(uint64_t /*now_ns*/, uint64_t /*events_lost*/) { return true; }
};

// The consumer of a session that only writes (`record`): it takes nothing.
inline LiveConsumer& no_live_consumer() {
  static LiveConsumer none;
  return none;
}

}  // namespace gpuprof
