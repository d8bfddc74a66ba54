// recording.h: the in-memory form of a record file.
//
// `record` fills one of these while it runs and streams it to disk through
// RecordWriter (record_file.h); `report` gets one back from read_recording().
// Everything an output needs is here, so a recording can be reported on
// another machine without the target's libraries.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/clock_pair.h"
#include "launch_tracer_abi.h"
#include "op_tracer_abi.h"

namespace gpuprof {

// One traced operator. Its id is its index in Recording::ops and the op_id of
// its events.
// What a row of the op table is (record format version 5; older files
// hold aten ops only).
enum class OpKind : uint32_t {
  aten = 0,             // an at::_ops::<op>::call
  autograd_node = 1,    // a backward node's apply ("AddmmBackward0")
  autograd_engine = 2,  // Engine::evaluate_function of one node's class
  guard_range = 3,      // a RECORD_FUNCTION guard a kernel opens ("detach")
  user_range = 4,       // a record_function range ("model_inference", "Optimizer.step#SGD.step")
  collective = 5,       // a c10d backend's collective or a work's wait (collective_names.h)
};

struct OpInfo {
  std::string name;      // torch.profiler's name: "aten::add"
  std::string overload;  // schema overload name: "Tensor" ("" when none)
  std::string symbol;    // mangled at::_ops::<op>::call symbol it came from
  // Input shapes (record --record-shapes): the op's schema argument count,
  // -1 when its arguments cannot be located (no shapes for it), and how
  // many of them are tensors whose sizes each ENTRY records. An op with a
  // known argument count and no tensor arguments has the static shapes
  // "[[], [], ...]" and no per-entry record.
  int32_t arg_count = -1;
  uint32_t tensor_args = 0;
  OpKind kind = OpKind::aten;
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
// Which process a thread belongs to (system-wide recordings).
struct ThreadProcess {
  uint32_t tid = 0;
  uint32_t pid = 0;
  bool operator==(const ThreadProcess&) const = default;
};

struct ClockInfo {
  uint64_t start_monotonic_ns = 0;
  uint64_t start_realtime_ns = 0;
  uint64_t end_monotonic_ns = 0;  // 0 until the recording finished
  bool operator==(const ClockInfo&) const = default;

  // A recording starting now: one moment on both clocks, exact to the
  // bracket's half (base/clock_pair.h).
  static ClockInfo started_now() {
    const ClockPair now = clock_pair_now();
    return ClockInfo{.start_monotonic_ns = now.monotonic_ns, .start_realtime_ns = now.realtime_ns};
  }
};

// Counters written at the end of a recording. Nothing is lost silently:
// every number here is printed by report when non-zero.
struct RecordStats {
  uint64_t events_recorded = 0;  // events written to the file
  uint64_t events_lost = 0;      // ring buffer full: events dropped in BPF
  uint32_t entry_probes = 0;     // uprobe_multi sites attached
  uint32_t exit_probes = 0;
  uint32_t ops_without_exit = 0;  // ::call bodies with no `ret` found
  uint64_t mem_events_lost = 0;   // memory ring buffer full: allocator events dropped
  uint64_t samples_lost = 0;      // sample ring buffer full: CPU samples dropped
  // Tensor arguments whose sizes could not be read (target memory not
  // readable, layout never calibrated, > GP_MAX_DIMS dims) or failed the
  // numel check; they print as "?".
  uint64_t shapes_unknown = 0;
  std::string tensor_layout;  // calibration result, one line ("" without --record-shapes)
  std::string stop_reason;       // "duration", "signal", "target exited", ...
  // Version 3: what could not be attached, read or named, one line each
  // ("no memory columns: ..."), as the recorder warned; and the CPU samples
  // and kernel launches whose code has no symbol to name it by.
  std::vector<std::string> problems;
  uint64_t symbols_unresolved = 0;
  bool operator==(const RecordStats&) const = default;
};

// One argument as torch.profiler's record_shapes lists it: the sizes of a
// tensor argument, empty for anything else (torch prints [] for non-tensors,
// 0-dim and undefined tensors alike), nullopt when gpuprof could not read
// or verify it (printed as "?").
using ArgShape = std::optional<std::vector<int64_t>>;
using InputShapes = std::vector<ArgShape>;

// What `record` was asked to collect beyond op times.
struct RecordOptions {
  bool shapes = false;  // --record-shapes
  bool memory = false;  // --profile-memory
  uint32_t sample_hz = 0;  // -F HZ: CPU samples (0: none)
  bool ops = true;         // false: --no-ops (samples only, no op events)
  bool with_stack = false;  // --with-stack: ENTRY events carry the Python stack
  bool operator==(const RecordOptions&) const = default;
};

// One ENTRY event's input shapes: events[event_index] has shapes[shape_id].
struct EntryShapes {
  uint64_t event_index = 0;
  uint32_t shape_id = 0;
  bool operator==(const EntryShapes&) const = default;
};

// The Python stack at one op ENTRY (record --with-stack): events[event_index]
// was called under sample_stacks[stack_id].
// record --with-modules: the attribute name of a module in its parent
// module's _modules (`layer1`, `0`, `conv1`), by their module frames in
// Recording::sample_frames ("nn.Module: Sequential_0", "nn.Module:
// BasicBlock_0"): a module shared by two parents has a name under each.
struct ModuleName {
  uint32_t parent_frame = 0;
  uint32_t frame = 0;
  std::string name;
  uint32_t position = 0;  // the name's place in the parent's _modules (0 first): named_modules()'s order
  bool operator==(const ModuleName&) const = default;
};

struct EntryStack {
  uint64_t event_index = 0;
  uint32_t stack_id = 0;
  bool operator==(const EntryStack&) const = default;
};

// The kernel stack of one CPU sample that interrupted its thread in the
// kernel: samples[sample_index] was in sample_stacks[stack_id].
struct SampleKernelStack {
  uint64_t sample_index = 0;
  uint32_t stack_id = 0;
  bool operator==(const SampleKernelStack&) const = default;
};

// One CPU sample (record -F HZ): the thread was on a CPU at ts_ns, running
// frames[frame_id] (its native leaf function, symbolized when recorded).
inline constexpr uint32_t kNoPythonStack = 0xffffffffu;

struct CpuSample {
  uint64_t ts_ns = 0;
  uint32_t tid = 0;
  uint32_t frame_id = 0;   // index into Recording::sample_frames
  bool in_kernel = false;  // the sample interrupted the thread in the kernel
  // Index into Recording::sample_stacks: the thread's Python frames at the
  // sample; kNoPythonStack when it had none (not a Python thread, or the
  // interpreter is not supported).
  uint32_t python_stack = kNoPythonStack;
  bool operator==(const CpuSample&) const = default;
};

// One CUDA kernel launch (bpf/launch_tracer_abi.h, struct gp_launch_event): a call of
// a launch entry point of the target's libcudart on thread tid at ts_ns.
// name_id indexes Recording::launch_names: the demangled symbol of the
// host-side kernel function ("void at::native::vectorized_elementwise_kernel<...>(...)"),
// "[CUDA graph]" for graph launches, or "[unknown kernel 0x...]".
struct CudaLaunch {
  uint64_t ts_ns = 0;
  uint64_t function = 0;  // host-side kernel function, or the cudaGraphExec_t
  uint64_t stream = 0;    // cudaStream_t (0: the legacy default stream)
  uint32_t grid[3] = {0, 0, 0};
  uint32_t block[3] = {0, 0, 0};
  uint32_t tid = 0;
  uint16_t api = 0;  // enum gp_launch_api (GP_LAUNCH_KERNEL ...)
  uint32_t name_id = 0;
  bool operator==(const CudaLaunch&) const = default;
};

// What the launch tracing saw: the libcudart it probed (empty: none was
// mapped while recording, so no launch could be seen), how many of its
// entry points, and how many launches the ring buffer dropped.
struct CudaRuntimeInfo {
  std::string libcudart_path;  // as the target maps it
  uint32_t entry_points = 0;
  uint64_t launches_lost = 0;
  bool operator==(const CudaRuntimeInfo&) const = default;
};

// CUPTI, through the injection shim (cupti_shim/): the moment a launch API
// was entered on a thread, with the correlation id CUPTI gave it. GPU
// activities carry the same id: the only join between them (never time).
struct GpuCorrelation {
  uint64_t ts_ns = 0;  // CLOCK_MONOTONIC, when the probe fired
  uint64_t correlation_id = 0;
  uint32_t tid = 0;
  uint32_t cbid = 0;     // CUPTI callback id of the launch API
  uint32_t domain = 0;   // CUpti_CallbackDomain: 1 driver API, 2 runtime API
  bool operator==(const GpuCorrelation&) const = default;
};

enum class GpuActivityKind : uint16_t { kernel = 1, memcpy = 2, memset = 3 };

// One GPU activity record of CUPTI: a kernel, memcpy or memset on a device
// stream, timed on CLOCK_MONOTONIC (the shim registers that clock).
struct GpuActivity {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint64_t correlation_id = 0;
  uint64_t bytes = 0;  // memcpy/memset: size and CUPTI kinds, packed (gpu_activity_names.h)
  uint32_t device = 0;
  uint32_t stream = 0;
  GpuActivityKind kind = GpuActivityKind::kernel;
  uint32_t name_id = 0;  // Recording::launch_names: "void at::native::...", "Memcpy HtoD (Pageable -> Device)"
  bool operator==(const GpuActivity&) const = default;
};

// The shim in the target as gpuprof found it: its path and
// gpuprof_cupti_state (cupti_shim/gpuprof_cupti_probes.h: 1 tracing, 2
// disabled, 3 CUPTI taken by another subscriber, 4 no libcupti, 5 error,
// 6 dormant: never switched on for this recording, 7 given up to the job's
// own profiler during the recording), and how many records
// CUPTI or the ring buffer dropped.
struct CuptiShimInfo {
  std::string shim_path;
  uint32_t state = 0;
  uint64_t records_dropped = 0;  // CUPTI's own count (gpuprof:dropped)
  uint64_t events_lost = 0;      // gpuprof's ring buffer full
  bool operator==(const CuptiShimInfo&) const = default;
};

// What one hit of an op probe costs the traced thread, split at the BPF
// timestamp the event carries: `before_ns` passes between the probed
// instruction and the timestamp (the trap, the BPF program up to
// bpf_ktime_get_ns), `after_ns` between the timestamp and the thread's next
// instruction (the rest of the program, the emulation or single-step, the
// return to user mode).
struct ProbeCost {
  uint32_t before_ns = 0;
  uint32_t after_ns = 0;
  bool operator==(const ProbeCost&) const = default;
};

// The op probes' costs as record calibrated them on gpuprof's own code at
// attach (probe_calibration.h; docs/overhead.md, "Compensation"), per kind
// of probed instruction: the kernel emulates a push or a jcc in the trap,
// and single-steps anything else (a `ret`, a `sub`) out of line, which
// costs more. Reports remove them from op times unless asked for raw times.
inline constexpr uint8_t kEntrySingleStepped = 1;  // ProbeCosts::op_sites bits
inline constexpr uint8_t kExitSingleStepped = 2;
struct ProbeCosts {
  ProbeCost entry;          // an entry probe on an emulated push
  ProbeCost exit;           // an exit probe on an emulated jcc (the stack-protector branch)
  ProbeCost entry_stepped;  // an entry probe on a single-stepped instruction
  ProbeCost exit_stepped;   // an exit probe on a single-stepped `ret`
  // Per op id, how its sites were probed (kEntrySingleStepped,
  // kExitSingleStepped: most of its exits); ops past the end (named at run
  // time: ranges, backward nodes) have emulated sites.
  std::vector<uint8_t> op_sites;
  uint32_t calls = 0;   // calibration calls per probe kind in the rounds kept
  uint32_t rounds = 0;  // rounds run until the estimate was stable
  uint32_t spread_permille = 0;  // spread of the kept rounds' totals, per mille of their median
  uint64_t took_ns = 0;          // the calibration's wall time, loading included
  // When record wrote its calibration through the recording at detach (a
  // second PROBE_COSTS chunk, rounds spread through the recording: what
  // the job paid through the machine's slow and fast phases), the two
  // totals; the second is the estimate kept. 0: one calibration (at
  // attach: a killed recorder, top). Not in the chunk: the reader sets them.
  uint32_t attach_total_ns = 0;
  uint32_t recording_total_ns = 0;
  // An op's two hits, or those of op_id's sites.
  uint32_t total_ns() const { return entry.before_ns + entry.after_ns + exit.before_ns + exit.after_ns; }
  ProbeCost entry_of(uint32_t op_id) const {
    return op_id < op_sites.size() && (op_sites[op_id] & kEntrySingleStepped) ? entry_stepped : entry;
  }
  ProbeCost exit_of(uint32_t op_id) const {
    return op_id < op_sites.size() && (op_sites[op_id] & kExitSingleStepped) ? exit_stepped : exit;
  }
  // Ops with a single-stepped entry or exit.
  size_t ops_single_stepped() const {
    return static_cast<size_t>(std::count_if(op_sites.begin(), op_sites.end(), [](uint8_t s) { return s != 0; }));
  }
  bool operator==(const ProbeCosts&) const = default;
};

// A thread of the target as gpuprof first saw it: its name
// (/proc/PID/task/TID/comm: "python3", "pt_autograd_0").
struct ThreadName {
  uint32_t tid = 0;
  std::string name;
  bool operator==(const ThreadName&) const = default;
};

// A process's place in a distributed job, as torchrun (torch.distributed.run)
// and DDP launchers put it in its environment: RANK, LOCAL_RANK,
// WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, TORCHELASTIC_RUN_ID,
// MASTER_ADDR, MASTER_PORT (target/job_environment.h reads them). Only a
// process with a RANK has one; the other numbers are absent (nullopt) when
// their variable was unset or not a number.
struct JobRank {
  int32_t pid = 0;
  uint32_t rank = 0;
  std::optional<uint32_t> local_rank;
  std::optional<uint32_t> world_size;
  std::optional<uint32_t> local_world_size;
  std::optional<uint32_t> group_rank;  // the node's rank among the job's nodes
  std::optional<uint32_t> master_port;
  std::string run_id;       // TORCHELASTIC_RUN_ID ("" when unset)
  std::string master_addr;  // MASTER_ADDR ("" when unset)
  bool operator==(const JobRank&) const = default;
};

// An op's name by id, as every output prints it: "<unknown op N>" for an
// id outside the op table (a damaged file), which gets a row of its own
// rather than being dropped.
inline std::string op_display_name(const std::vector<OpInfo>& ops, uint32_t op_id) {
  return op_id < ops.size() ? ops[op_id].name : "<unknown op " + std::to_string(op_id) + ">";
}

// An op's row in a table, as key_averages() keys it: torch folds its own
// "ProfilerStep#N" ranges (a record_function of the target's own
// torch.profiler loop) into one "ProfilerStep*" row.
inline std::string op_table_name(const std::vector<OpInfo>& ops, uint32_t op_id) {
  if (op_id < ops.size() && ops[op_id].kind == OpKind::user_range && ops[op_id].name.starts_with("ProfilerStep#"))
    return "ProfilerStep*";
  return op_display_name(ops, op_id);
}

// A native file that CPU samples' frames name ("libc.so.6!memcpy",
// "python3.11+0x1234" name it by its base name): its path as the process's
// maps gave it (from gpuprof's side: a chroot's prefix included) and its
// hex GNU build id ("" when it has none or could not be read), for pprof's
// mappings (output/pprof.h). Per process: two processes may map different
// files of one base name (a chroot's python3.11 and the host's).
struct NativeFile {
  int32_t pid = 0;
  std::string path;
  std::string build_id;
  bool operator==(const NativeFile&) const = default;
};

// The job rank of process pid, nullptr when the recording has none.
inline const JobRank* job_rank_of(const std::vector<JobRank>& ranks, int32_t pid) {
  for (const JobRank& r : ranks)
    if (r.pid == pid) return &r;
  return nullptr;
}

// A chunk the reader skipped because it was corrupt (record_file.h,
// "Corrupt chunks"; docs/record-file.md): where it was and what it held.
struct LostChunk {
  uint64_t index = 0;   // its number in the file, the first chunk being 1
  uint64_t offset = 0;  // where it began
  uint64_t bytes = 0;   // the bytes skipped, its header included
  // The whole line report prints for it, starting with the file's name:
  // "F: corrupt chunk 42 (EVENTS) at offset 367777: checksum mismatch;
  // skipped: lost 2048 events".
  std::string message;
};

struct Recording {
  uint32_t format_version = 0;
  ProcessInfo process;
  ClockInfo clock;
  std::vector<OpInfo> ops;
  std::vector<gp_event> events;
  // A streaming read (record_stream.h) hands the op events on instead of
  // keeping them in `events`, and drops the per-event records the op table
  // leaves unused; what they were: how many events and launches, and how
  // many op entries had each stack (by stack id; entry_stacks stays empty).
  uint64_t streamed_events = 0;
  uint64_t streamed_launches = 0;
  uint64_t streamed_gpu_activities = 0;  // taken by the stream (RecordStream::on_gpu_activities)
  bool streamed = false;                 // a stream took the events (it did not decline the recording)
  std::vector<uint64_t> streamed_entry_stacks;
  RecordOptions options;
  // Input shapes, interned: entry_shapes points ENTRY events (by index in
  // `events`, ascending) at the distinct shape lists in `shapes`.
  std::vector<InputShapes> shapes;
  std::vector<EntryShapes> entry_shapes;
  // record --profile-memory: allocator events in the order each thread
  // produced them (bpf/op_tracer_abi.h, struct gp_mem_event).
  std::vector<gp_mem_event> mem_events;
  // record -F HZ (options.sample_hz): CPU samples of the target's threads,
  // in time order per thread, and the interned native leaf frames they name
  // ("libtorch_cpu.so.1.13.0!at::native::addmm_impl_cpu_", "[unknown]").
  std::vector<CpuSample> samples;
  std::vector<std::string> sample_frames;
  // Interned stacks: ids into sample_frames, outermost frame first. Python
  // stacks of samples and of op entries ("train.py(42): main", ...,
  // "nn.Module: Conv2d_0", ...) and kernel stacks of samples
  // ("do_syscall_64_[k]", ...). Frames and stacks are shared by samples and
  // entries: the names say where they were first used.
  std::vector<std::vector<uint32_t>> sample_stacks;
  // record --with-stack: the Python stacks of ENTRY events (by index in
  // `events`, ascending); entries that are not here had no Python frames
  // (a thread without Python, such as autograd's) or no readable stack.
  std::vector<EntryStack> entry_stacks;
  // record --with-modules: the evaluate_function ENTRY events (by index in
  // `events`, ascending) whose node a forward op made, each with that
  // op's entry stack (its module: docs/modules.md).
  std::vector<EntryStack> backward_stacks;
  // record --with-modules: the module frames' attribute names (ModuleName).
  std::vector<ModuleName> module_names;
  // Kernel stacks of samples (by index in `samples`, ascending); in-kernel
  // samples that are not here have no known kernel stack.
  std::vector<SampleKernelStack> sample_kernel_stacks;
  // CUDA kernel launches (op tracing on, once the target maps libcudart):
  // in the order each thread made them; names interned in launch_names.
  std::vector<CudaLaunch> launches;
  std::vector<std::string> launch_names;
  std::optional<CudaRuntimeInfo> cuda_runtime;  // present when libcudart was probed
  // From the CUPTI shim, when the target has it loaded: launch correlations
  // (in the order each thread made them) and GPU activities (in the order
  // CUPTI delivered them); names in launch_names.
  std::vector<GpuCorrelation> gpu_correlations;
  std::vector<GpuActivity> gpu_activities;
  std::optional<CuptiShimInfo> cupti_shim;
  // The probes' calibrated costs (recordings with ops, from this build on).
  std::optional<ProbeCosts> probe_costs;
  // Names of the threads that ran ops, were sampled or launched, read when
  // gpuprof first saw each (written at the end: a killed recorder has none).
  std::vector<ThreadName> thread_names;
  // System-wide recordings (record -a): every process that ran traced ops or
  // was sampled (`process` then describes the recording, pid 0), and the
  // process of every thread seen (samples, launches and memory events carry
  // only a thread id). Empty for the recording of one process.
  std::vector<ProcessInfo> processes;
  std::vector<ThreadProcess> thread_processes;
  // The job ranks of the processes whose environment had a RANK (JobRank):
  // the target of a recording of one process, or each process of a
  // system-wide one; empty in files written before them.
  std::vector<JobRank> job_ranks;
  // The native files of the samples' frames (NativeFile), in the order
  // they were first symbolized; empty in files written before them.
  std::vector<NativeFile> native_files;
  RecordStats stats;
  // False when the file has no end chunk (the recorder was killed or the
  // file was cut): events are those of the complete chunks.
  bool complete = false;
  // When !complete: one line saying why and how many trailing bytes (a torn
  // chunk) were ignored, for report to print as a warning.
  std::string incomplete_reason;
  // Chunks skipped as corrupt (read_recording with CorruptChunks::skip), in
  // file order; what they held is missing from the fields above, and what
  // named it reads with placeholders ("[lost frame]", "[lost op]", ...).
  std::vector<LostChunk> lost_chunks;
};

}  // namespace gpuprof
