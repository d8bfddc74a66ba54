// op_tracer.h: loads bpf/op_tracer.bpf.c and attaches it to one process.
//
// Lifecycle (libbpf-bootstrap style): open -> size the ring buffer -> load
// -> attach links. Links are uprobe_multi links filtered to the target pid;
// destroying the OpTracer (or gpuprof dying, even by SIGKILL) closes them
// and the kernel removes every breakpoint from the target.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/result.h"
#include "op_tracer_abi.h"
#include "probe/bpf_program.h"
#include "probe/uprobe_multi.h"
#include "torch/dispatcher_catalog.h"

struct op_tracer_bpf;

namespace gpuprof {

// What followed an ENTRY or a RANGE_BEGIN in the ring (op_tracer_abi.h): with
// Python stacks on, has_stack and the frames, GP_ENTRY_FRAME_WORDS words
// each, innermost first (none: the thread had no Python frames), with the
// word that says which frames were not read (bpf/abi_common.h); then the
// event's own words: an ENTRY's shape slots ("Input shapes"), or
// evaluate_function's node vtable pointer (GP_COOKIE_NODE_ARG), or a
// RANGE_BEGIN's name; empty when there are none.
struct EntryPayload {
  bool has_stack = false;
  std::span<const uint64_t> stack_words;
  uint32_t stack_not_read = 0;  // PythonStackCut::from_event (record/frames_not_read.h)
  std::span<const uint64_t> words;
};

// Where the ring buffers' records go. `op` gets every op/catch event with
// its payload (empty but for ENTRY events that carry one). `memory` gets the
// allocator events.
struct TracerSinks {
  std::function<void(const gp_event& event, const EntryPayload& payload)> op;
  std::function<void(const gp_mem_event& event)> memory;
};

struct TracerConfig {
  uint32_t ring_buffer_bytes = 32u << 20;     // op events (a power of two, >= page size)
  uint32_t mem_ring_buffer_bytes = 8u << 20;  // memory events
};

class OpTracer {
 public:
  // Loads the BPF programs. Fails with a message that says what to do when
  // not root or when the kernel lacks BPF, BTF or ring buffers.
  static Result<std::unique_ptr<OpTracer>> load(const TracerConfig& config, TracerSinks sinks);
  ~OpTracer();

  // One uprobe_multi link over every site of a libtorch_cpu. path must be
  // reachable from gpuprof's mount namespace (/proc/PID/root/...).
  Result<void> attach_ops(const std::string& path, const ProbeSites& sites, int pid);

  // Entry probe on __cxa_begin_catch in the target's libstdc++ (see
  // GP_EV_CATCH). Optional: without it, unwound frames still end at the next
  // event of their thread, with a less precise end time.
  Result<void> attach_catch(const std::string& libstdcxx_path, int pid);
  bool catch_attached() const { return catch_link_.has_value(); }

  // Entry probes on libc10's allocator accounting (gp_mem_kind in op_tracer_abi.h):
  // ProfiledCPUMemoryReporter::New/Delete and reportMemoryUsageToProfiler.
  Result<void> attach_memory(const std::string& libc10_path, int pid);

  // Input shapes: one plan per op id (count 0: no tensor arguments to
  // read); then set_shapes(true). Until set_tensor_layout(), entries carry
  // raw TensorImpl windows for calibration.
  Result<void> set_shape_plans(std::span<const gp_shape_plan> plans);
  // On: entries may carry raw windows until calibrated, in at most a
  // quarter of the ring buffer (then without shapes until calibrated).
  void set_shapes(bool on);
  void set_tensor_layout(const gp_tensor_layout& layout);
  // Where c10::UndefinedTensorImpl::_singleton is in the target, so that
  // undefined tensors read as [] (0: not known; they may then read as [0]).
  void set_undefined_tensor_impl(uint64_t address);

  // Python stacks at op entry (record --with-stack): where the target's
  // frames are (python_frames.bpf.h); turns them on, before tracing starts.
  void set_python_stacks(const gp_python_config& config);
  // The same for record -a: stacks on, each process's frames where
  // set_process_python says (a process not set has none).
  void set_python_stacks_per_process();
  bool set_process_python(uint32_t pid, const gp_python_config& config);
  // The process is gone: its slot is free for another.
  void forget_process_python(uint32_t pid);

  // Gates event emission for every probe (see tracing_on in the BPF side).
  void set_tracing(bool on);

  // record --schedule (op_tracer_abi.h, "Schedules"): before tracing starts. With
  // GP_SCHEDULE_BY_OP, the step op's ENTRY sites carry GP_COOKIE_STEP.
  void set_schedule(const gp_schedule& schedule);

  // Removes every probe. Events already in the ring buffer stay readable.
  void detach();

  // fd to poll for readable events; consume() drains into the sink.
  int poll_fd() const { return bpf_.poll_fd(); }
  int consume() { return bpf_.consume(); }

  uint64_t events_lost() const;
  uint64_t mem_events_lost() const;

 private:
  explicit OpTracer(TracerSinks sinks);
  static int on_op_record(void* ctx, void* data, size_t size);
  BpfProgram<op_tracer_bpf> bpf_;
  TracerSinks sinks_;
  bool stacks_on_ = false;
  uint32_t ring_buffer_bytes_ = 0;
  std::vector<UprobeMultiLink> op_links_;
  std::optional<UprobeMultiLink> catch_link_;
  std::optional<UprobeMultiLink> memory_link_;
};

// libbpf prints nothing unless verbose (its warnings are for developers).
void set_libbpf_verbose(bool verbose);

}  // namespace gpuprof
