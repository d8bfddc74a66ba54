// process_session.cpp: the target part of `record -p` and `record -- CMD`
// (collect/process_session.h): it attaches to one process (the `-- CMD`
// attach machine decides when, launch_attach.h) and hands every event to
// the collectors and the record writer. The run, its loop and its finish
// are the one session's (session.h); the collectors it shares with `-a`
// live in their own files (interner, sample_collector, launch_collector,
// target_gpu, target_python, target_shapes, calibration_rounds).
#include "collect/process_session.h"

#include <signal.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>

#include "torch/dispatcher_catalog.h"
#include "collect/backward_origins.h"
#include "collect/calibration_rounds.h"
#include "collect/diagnostics.h"
#include "collect/interner.h"
#include "collect/launch_attach.h"
#include "collect/launch_collector.h"
#include "collect/launched_process.h"
#include "record/record_sink.h"
#include "collect/sample_collector.h"
#include "collect/session.h"
#include "collect/target_python.h"
#include "collect/target_shapes.h"
#include "collect/target_gpu.h"
#include "probe/launch_tracer.h"
#include "target/job_environment.h"
#include "target/launcher.h"
#include "probe/library_watch.h"
#include "probe/op_tracer.h"
#include "probe/cpu_sampler.h"
#include "torch/autograd_names.h"
#include "torch/exitless_calls.h"
#include "torch/runtime_ops.h"
#include "probe/fork_watch.h"
#include "collect/native_files.h"
#include "symbols/native_symbolizer.h"
#include "record/frames_not_read.h"
#include "record/output_switcher.h"
#include "target/privileges.h"
#include "record/record_file.h"
#include "record/record_outputs.h"
#include "record/schedule.h"
#include "base/session_loop.h"
#include "collect/progress_line.h"
#include "target/target_process.h"
#include "probe/thread_names.h"
#include "base/unique_fd.h"

namespace gpuprof {
namespace {

// With --with-modules the ring is read more often: a module's class and
// attribute name are read from the target when its first call's stack is
// read, and the modules a short job calls last (resnet18's avgpool and fc)
// are gone with the process if that is more than the job's exit away.
constexpr int kModulesPollTimeoutMs = 10;
constexpr uint64_t kCatchRetryIntervalNs = 1'000'000'000;  // look for libstdc++ again

double ms_since(uint64_t start_ns) { return (clock_ns(CLOCK_MONOTONIC) - start_ns) / 1e6; }

// The collectors of one target, attached when the target allows it: at once
// with -p, at the stops of a launched command otherwise (launch_attach.h).
class ProcessSession final : public Session, public AttachCollectors {
 public:
  explicit ProcessSession(const RecordConfig& config) : Session(config) {}

  // AttachCollectors: the attach machine's calls.
  bool attached() const override { return attached_; }
  bool attach_ops(const MappedLibrary& libtorch) override {
    Result<void> attached = attach_library(target_pid_, libtorch);
    return attached || fail(attached.error());
  }
  void attach_late() override {
    try_attach_memory();
    try_find_undefined_tensor();
    try_attach_gpu(/*now=*/true);
  }
  std::string next_stop() const override;

 private:
  // Session: the target's part.
  Result<void> check_target() override;
  bool reads_sigchld() const override { return true; }
  Result<void> start() override;
  int poll_timeout_ms() const override { return config_.with_modules ? kModulesPollTimeoutMs : kPollTimeoutMs; }
  void on_loop_start() override {
    if (launched_) handle_child_state();  // it may already be stopped or gone
  }
  void on_child_signal() override {
    if (launched_) handle_child_state();
  }
  void on_ready(int fd) override {
    if (fd == pidfd_.get()) stop("target exited");
  }
  void read_rings() override;
  void write_turn(uint64_t now_ns) override;
  void after_turn(uint64_t now_ns) override;
  bool ended_recording() override;
  double stop_probes() override;
  void record_last_figures() override;
  std::string stop_line_part() override;
  std::string files_written() const override;
  void after_run() override { outcome_.target_running = launched_ && !child_exited_; }

  Result<void> attach_library(int pid, const MappedLibrary& library);
  Result<void> attach_sampling_only(int pid);
  Result<void> begin_record(int pid, const std::vector<OpInfo>& ops, const MappedLibrary* library,
                    const std::string& build_id);
  void try_attach_catch();
  void try_attach_memory();
  void try_find_undefined_tensor() {
    if (shapes_) shapes_->find_undefined_tensor();
  }
  bool needs_libc10() const;
  // The CUDA side, once the recording is begun (target_gpu.h).
  void try_attach_gpu(bool now = false) {
    if (gpu_) gpu_->try_attach_launches(now), gpu_->try_attach_shim(now);
  }
  void on_op_event(const gp_event& event, const EntryPayload& payload);
  void retry_python();
  void new_python_epoch();
  void on_mem_event(const gp_mem_event& event);
  void on_cpu_sample(const gp_cpu_sample& sample);
  Result<void> start_sampling(int pid);
  void drain_shapes() {
    if (shapes_ && writer_) shapes_->drain(*writer_);
  }
  void handle_child_state();
  RecordStats counters_now() const override;
  ProgressCounters progress_counters(uint64_t now_ns) const override;
  bool recorded_at(uint64_t ts_ns) const { return switcher_->recorded_at(ts_ns); }
  Result<void> setup_schedule(DispatcherCatalog& catalog, std::vector<OpInfo>& ops);
  void update_file_info();
  // The target's job rank (RANK, ... of its environment), into the file.
  void record_job_rank(int pid);
  void on_fork(const gp_fork& fork);

  int target_pid_ = 0;
  LibraryLookup library_;  // -p: the target's libtorch_cpu, looked up by check_target()
  UniqueFd pidfd_;         // -p: readable when the target exits
  std::optional<LaunchedCommand> launched_;
  std::optional<ProcessInfo> launched_info_;  // --no-ops launch: the command, described before it runs
  bool child_exited_ = false;
  std::unique_ptr<LibraryWatch> watch_;
  // Launch mode: the command's stops and exit (launch_attach.h).
  std::optional<LaunchedProcess> launched_process_;
  std::optional<LaunchAttach> launch_attach_;
  bool attached_ = false;
  uint64_t last_catch_try_ns_ = 0;
  std::optional<TargetShapes> shapes_;  // --record-shapes (target_shapes.h)
  std::optional<BackwardOrigins> backward_origins_;  // --with-modules (backward_origins.h)
  bool memory_attached_ = false;
  uint64_t mem_events_recorded_ = 0;
  std::unique_ptr<NativeSymbolizer> symbolizer_;
  // The target's CPython (found once, for samples and entry stacks).
  TargetPython python_{stack_cuts_, config_.verbose, config_.with_modules};
  std::string memory_error_;
  std::optional<TargetGpu> gpu_;
  // --follow-forks: the op probe sites (as attached to the target) for each
  // child, and the children's fork events.
  ProbeSites probe_sites_;
  std::unique_ptr<ForkWatch> fork_watch_;
  uint32_t children_followed_ = 0;
};

Result<void> ProcessSession::attach_library(int pid, const MappedLibrary& library) {
  auto catalog = load_dispatcher_catalog(library.path_for_us, config_.exit_mode);
  if (!catalog) return Error(catalog.error());
  if (config_.record_shapes) {
    shapes_.emplace(*tracer_, diagnostics_, target_pid_);
    if (!shapes_->setup(*catalog)) shapes_.reset();
  }
  std::vector<OpInfo> ops = catalog->ops;
  RETURN_IF_ERROR(setup_schedule(*catalog, ops));
  // Before the recording's clock starts: its time zero stays at the attach.
  calibration_.at_attach(catalog->op_sites);
  RETURN_IF_ERROR(begin_record(pid, ops, &library, catalog->build_id));
  calibration_.record(*writer_);
  if (auto bias = load_bias(pid, library))
    runtime_ops_->add_process(static_cast<uint32_t>(pid), 0, *catalog, *bias);
  else
    warn("backward nodes' engine rows are named " + std::string(kUnknownNode) + ": the load address of " +
         library.path_in_target + " is unknown");
  if (config_.with_stack) {
    python_.find(pid);
    if (python_.config())
      tracer_->set_python_stacks(*python_.config());
    else
      warn("--with-stack: no Python stacks: " + python_.missing());
  }
  // --with-modules: backward calls are charged to the module whose forward
  // made their node, through the nodes' numbers (backward_origins.h).
  if (config_.with_modules) {
    if (catalog->node_made_sites.size() == 0) {
      warn("--with-modules: backward ops stay under [backward]: " + library.path_in_target +
           " has no at::sequence_number::get_and_increment to number autograd nodes by");
    } else {
      for (size_t i = 0; i < catalog->node_made_sites.size(); i++)
        catalog->sites.add(catalog->node_made_sites.offsets[i], catalog->node_made_sites.cookies[i]);
      backward_origins_.emplace();
    }
  }
  uint64_t attach_start = clock_ns(CLOCK_MONOTONIC);
  if (Result<void> attached = tracer_->attach_ops(library.path_for_us, catalog->sites, pid); !attached)
    return Error(attached.error());
  double attach_ms = ms_since(attach_start);
  if (config_.follow_forks) {
    probe_sites_ = catalog->sites;
    if (auto fork_watch = ForkWatch::load(pid, [this](const gp_fork& fork) { on_fork(fork); })) {
      fork_watch_ = std::move(*fork_watch);
      watch(fork_watch_->poll_fd());  // a child is attached as soon as it is forked
    } else
      warn("--follow-forks: children are not traced: " + fork_watch.error());
  }
  if (config_.schedule.mode == GP_SCHEDULE_BY_TIME) {  // step 0 starts with the tracing
    gp_schedule schedule = config_.schedule;
    schedule.start_ns = clock_ns(CLOCK_MONOTONIC);
    tracer_->set_schedule(schedule);
    switcher_->start_time_steps(schedule.start_ns);
  }
  tracer_->set_tracing(true);  // only now is every entry and exit site in place
  attached_ = true;
  if (config_.sample_hz) RETURN_IF_ERROR(start_sampling(pid));
  stats_.entry_probes = catalog->entry_sites;
  stats_.exit_probes = catalog->exit_sites;
  stats_.ops_without_exit = catalog->ops_without_exit;
  try_attach_catch();
  try_attach_memory();
  try_attach_gpu();

  std::fprintf(stderr,
               "gpuprof: tracing %d (%s): %zu ops, %u entry + %u exit probes on %s "
               "(attach %.1f ms); exits %s (%u single-stepped)%s\n",
               pid, describe_process(pid).comm.c_str(), catalog->ops.size(), catalog->entry_sites,
               catalog->exit_sites, library.path_in_target.c_str(), attach_ms,
               config_.exit_mode == ExitMode::emulated ? "emulated" : "on ret",
               catalog->exit_sites_single_stepped,
               stop_hint(config_).c_str());
  exitless_.add_ops(0, *catalog);
  if (std::string exitless = describe_exitless_ops(*catalog); !exitless.empty() && config_.verbose)
    std::fprintf(stderr, "gpuprof: %s\n", exitless.c_str());
  if (config_.verbose)
    std::fprintf(stderr,
                 "gpuprof: %zu schemas read; %u ops without a ret; %u entries single-stepped; "
                 "catch probe %s\n",
                 catalog->schemas_found, catalog->ops_without_exit,
                 catalog->entries_single_stepped, tracer_->catch_attached() ? "on" : "pending");
  if (config_.record_shapes) {
    size_t with_plan = 0;
    for (const OpInfo& op : catalog->ops) with_plan += op.arg_count >= 0;
    std::fprintf(stderr,
                 "gpuprof: recording input shapes of %zu of %zu ops (the rest print as ?); "
                 "calibrating the TensorImpl layout on the first tensors\n",
                 with_plan, catalog->ops.size());
  }
  if (config_.profile_memory && !memory_attached_ && memory_error_.empty())
    std::fprintf(stderr, "gpuprof: memory: libc10 is not mapped yet; its probes go in when it is\n");
  return {};
}

// record --schedule: with --step-op, the step ops' ENTRY sites start steps
// (GP_COOKIE_STEP) and the op table gets a "ProfilerStep*" op for the step
// frames (op_timeline.h); the BPF gate gets the schedule. Time-mode steps
// start when the tracing does (attach_library).
Result<void> ProcessSession::setup_schedule(DispatcherCatalog& catalog, std::vector<OpInfo>& ops) {
  if (config_.schedule.mode != GP_SCHEDULE_BY_OP) return {};
  std::vector<bool> is_step(catalog.ops.size(), false);
  size_t matched = 0;
  for (size_t i = 0; i < catalog.ops.size(); i++) {
    const OpInfo& op = catalog.ops[i];
    for (const std::string& want : config_.step_ops)
      if (want == op.name || (!op.overload.empty() && want == op.name + "." + op.overload)) is_step[i] = true;
    matched += is_step[i];
  }
  if (matched == 0) {
    std::string names;
    for (const std::string& want : config_.step_ops) names += (names.empty() ? "" : ", ") + want;
    return Error("--step-op " + names + ": no such op in this libtorch_cpu (give a name as the table prints it, "
                "e.g. aten::addmm, or one overload: aten::add.Tensor)");
  }
  for (size_t i = 0; i < catalog.sites.size(); i++) {
    const uint64_t cookie = catalog.sites.cookies[i];
    if (GP_COOKIE_KIND(cookie) == GP_EV_OP_ENTRY && is_step[GP_COOKIE_OP(cookie)])
      catalog.sites.cookies[i] = cookie | GP_COOKIE_STEP;
  }
  gp_schedule schedule = config_.schedule;
  schedule.step_marker_op = static_cast<uint32_t>(ops.size());
  ops.push_back(OpInfo{.name = std::string(kProfilerStepOp), .overload = "", .symbol = "", .arg_count = 0,
                       .tensor_args = 0});
  tracer_->set_schedule(schedule);
  std::fprintf(stderr, "gpuprof: schedule %s; a step starts at each call of %zu op%s\n",
               format_schedule(schedule).c_str(), matched, matched == 1 ? "" : "s");
  return {};
}

// --follow-forks: a followed process forked. The child runs the parent's
// libtorch_cpu (same file, same offsets): the same probe sites, in a link
// for the child's pid. Its ops before the link is in (a few ms) are missed;
// a child that exec'd or exited by then is not followed.
void ProcessSession::on_fork(const gp_fork& fork) {
  const int child = static_cast<int>(fork.child_pid);
  auto library = find_mapped_library(child, "libtorch_cpu");
  if (!library.unreadable.empty()) {
    warn("--follow-forks: child " + std::to_string(child) + " not traced: " + library.unreadable);
    return;
  }
  if (!library) {
    std::fprintf(stderr, "gpuprof: %d (forked by %u) has no libtorch_cpu mapped any more: not followed\n", child,
                 fork.parent_pid);
    return;
  }
  const uint64_t start = clock_ns(CLOCK_MONOTONIC);
  if (Result<void> attached = tracer_->attach_ops(library->path_for_us, probe_sites_, child); !attached) {
    warn("--follow-forks: child " + std::to_string(child) + " not traced: " + attached.error());
    return;
  }
  children_followed_++;
  runtime_ops_->add_forked(static_cast<uint32_t>(child), fork.parent_pid);
  std::fprintf(stderr, "gpuprof: following %d (forked by %u): attach %.1f ms\n", child, fork.parent_pid,
               ms_since(start));
}

// Counters as they stand now (the files of rotation and cycles count their
// own losses from them).
RecordStats ProcessSession::counters_now() const {
  RecordStats counters = stats_;
  counters.events_lost = tracer_->events_lost();
  counters.mem_events_lost = tracer_->mem_events_lost();
  if (sampler_) counters.samples_lost = sampler_->lost();
  return counters;
}

// The progress line's figures: counters kept anyway, and the BPF programs'
// lost counters (memory-mapped reads).
ProgressCounters ProcessSession::progress_counters(uint64_t now_ns) const {
  ProgressCounters counters = progress_figures(
      now_ns, op_calls_recorded_, stats_.events_recorded,
      config_.sample_hz ? std::optional<uint64_t>(samples_ ? samples_->recorded() : 0) : std::nullopt,
      writer_ ? writer_->bytes_written(RecordOutputs::kMain) : 0);
  counters.lost = tracer_->events_lost() + tracer_->mem_events_lost();
  if (sampler_) counters.lost += sampler_->lost();
  if (gpu_) gpu_->add_progress(counters);
  return counters;
}

// What every file gets when it is closed, as known now.
void ProcessSession::update_file_info() {
  if (!writer_) return;
  gpu_->update_file_info();
  writer_->set_thread_names(thread_names_->names());
}

// The record file's header: the process, the clocks, the op table (empty
// when no libtorch_cpu is mapped: --no-ops) and the options.
Result<void> ProcessSession::begin_record(int pid, const std::vector<OpInfo>& ops, const MappedLibrary* library,
                           const std::string& build_id) {
  ProcessInfo process = launched_info_ ? *launched_info_ : describe_process(pid);
  if (library) process.libtorch_path = library->path_in_target;
  process.libtorch_build_id = build_id;
  const ClockInfo clock = ClockInfo::started_now();
  RecordOptions options;
  options.shapes = config_.record_shapes;
  options.memory = config_.profile_memory;
  options.sample_hz = config_.sample_hz;
  options.ops = config_.ops;
  options.with_stack = config_.with_stack;
  thread_names_ = std::make_unique<ThreadNameCollector>(pid);
  if (auto watching = thread_names_->watch_exits(); !watching)
    warn("threads that exit before gpuprof reads their events keep no name: " + watching.error());
  OutputPlan plan = config_.outputs;
  plan.main_path = config_.output_path;
  plan.schedule = config_.schedule;
  switcher_.emplace(std::move(plan), RecordOutputs(process, clock, ops, options, config_.output_mode));
  RETURN_IF_ERROR(switcher_->begin(clock.start_monotonic_ns, stats_));
  writer_ = &switcher_->outputs();
  interner_.emplace(*writer_, diagnostics_, config_.live_consumer());
  launches_.emplace(*interner_, *writer_, diagnostics_, stats_, /*count_unresolved=*/true);
  python_.start_recording(*interner_, *writer_, diagnostics_);
  gpu_.emplace(config_, target_pid_, attached_, child_exited_, clock.start_monotonic_ns, diagnostics_, *writer_,
               *switcher_, *thread_names_, *interner_, *launches_);
  runtime_ops_.emplace([this](const OpInfo& op) -> Result<uint32_t> {
    ASSIGN_OR_RETURN(const uint32_t id, writer_->add_op(op));
    config_.live_consumer().ops_found(id, {op});
    return id;
  });
  config_.live_consumer().begin(process, ops, clock.start_monotonic_ns);
  // A command not yet exec'd has gpuprof's environment, not its own: read
  // once it runs (run()).
  if (!launched_info_) record_job_rank(pid);
  return {};
}

void ProcessSession::record_job_rank(int pid) {
  auto rank = read_job_rank(pid);
  if (!rank) return;
  if (Result<void> written = writer_->add_job_ranks({*rank}); !written) write_failed(written.error());
}

// --no-ops: CPU samples only, no op probes and no op table, so any process
// will do (PyTorch or not), and a launched command is sampled from its exec.
Result<void> ProcessSession::attach_sampling_only(int pid) {
  RETURN_IF_ERROR(begin_record(pid, {}, nullptr, ""));
  attached_ = true;
  RETURN_IF_ERROR(start_sampling(pid));
  if (!launched_)
    std::fprintf(stderr, "gpuprof: sampling %d (%s) at %u Hz on %zu CPUs, no op tracing%s\n", pid,
                 describe_process(pid).comm.c_str(), config_.sample_hz, sampler_->cpus(),
                 stop_hint(config_).c_str());
  return {};
}

bool ProcessSession::needs_libc10() const {
  return (config_.profile_memory && !memory_attached_ && memory_error_.empty()) ||
         (shapes_ && shapes_->waits_for_libc10());
}

// Allocations are attached once libc10 is mapped (in launch mode it may
// come after libtorch_cpu); a failure is reported once and not retried.
void ProcessSession::try_attach_memory() {
  if (!config_.profile_memory || !attached_ || memory_attached_ || !memory_error_.empty()) return;
  auto libc10 = find_mapped_library(target_pid_, "libc10.so");
  std::string error = libc10.unreadable;
  if (!libc10 && error.empty()) return;
  Result<void> attached = libc10 ? tracer_->attach_memory(libc10->path_for_us, target_pid_) : Error(error);
  if (attached) {
    memory_attached_ = true;
    if (config_.verbose) std::fprintf(stderr, "gpuprof: memory probes on %s\n", libc10->path_in_target.c_str());
  } else {
    memory_error_ = attached.error();
    warn("no memory columns: " + attached.error());
  }
}

void ProcessSession::on_op_event(const gp_event& raw, const EntryPayload& payload) {
  if (!writer_ || !diagnostics_.writing()) return;
  if (raw.kind == GP_EV_NODE_MADE) {  // not recorded: it links the node's backward call (backward_origins.h)
    if (backward_origins_) backward_origins_->node_made(raw.pid, raw.tid, raw.sp);
    return;
  }
  gp_event event = raw;  // ranges and evaluate_function named (runtime_ops.h)
  const bool named_by_payload = event.kind == GP_EV_RANGE_BEGIN || runtime_ops_->names_by_node(event.op_id);
  // An evaluate_function ENTRY's payload: the node's vtable pointer (0 when
  // unreadable), then its sequence number.
  const bool runs_node = event.kind == GP_EV_OP_ENTRY && named_by_payload && payload.words.size() >= 2 &&
                         payload.words[0] != 0;
  const uint64_t node_sequence_nr = runs_node ? payload.words[1] : 0;
  if (const Result<void> named = runtime_ops_->name(event, payload.words); !named) {
    write_failed(named.error());
    return;
  }
  if (config_.schedule.mode != GP_SCHEDULE_OFF) {  // a cycle's window may end (a CUT event) or begin here
    const Result<void> switched = event.kind == GP_EV_STEP
                                      ? switcher_->on_step(event, counters_now())
                                      : switcher_->before_record(event.ts_ns, [this] { return counters_now(); });
    if (!switched) {
      write_failed(switched.error());
      return;
    }
  }
  const uint64_t index = writer_->events_appended();  // its index in the recording's events
  if (Result<void> appended = writer_->append_events(&event, 1); !appended) {
    write_failed(appended.error());
    return;
  }
  config_.live_consumer().op_event(event, index);
  stats_.events_recorded++;
  thread_names_->saw(event.tid);
  if (event.kind == GP_EV_OP_ENTRY) {
    exitless_.on_entry(event.op_id);
    op_calls_recorded_++;
  }
  if (shapes_ && event.kind == GP_EV_OP_ENTRY && !named_by_payload) shapes_->on_entry(index, event.op_id, payload);
  if (python_.config() && config_.with_stack && (event.kind == GP_EV_OP_ENTRY || event.kind == GP_EV_RANGE_BEGIN)) {
    const std::optional<uint32_t> stack = python_.on_entry(index, payload);
    if (backward_origins_) backward_origins_->entry(event.tid, stack);
  }
  if (!backward_origins_ || !runs_node) return;
  if (std::optional<uint32_t> origin = backward_origins_->origin(event.pid, node_sequence_nr)) {
    if (Result<void> linked = writer_->append_backward_stack(index, *origin); !linked) {
      write_failed(linked.error());
      return;
    }
    config_.live_consumer().backward_stack(index, *origin);
  }
}

Result<void> ProcessSession::start_sampling(int pid) {
  symbolizer_ = std::make_unique<NativeSymbolizer>(pid);
  samples_.emplace(*interner_, *writer_, diagnostics_, stats_, stack_cuts_, config_.live_consumer());
  auto sampler =
      CpuSampler::start(pid, config_.sample_hz, [this](const gp_cpu_sample& sample) { on_cpu_sample(sample); });
  if (!sampler) return Error(sampler.error());
  sampler_ = std::move(*sampler);
  python_.find(pid);
  if (python_.config())
    sampler_->set_python(*python_.config());
  else if (!python_.may_appear())
    note_problem("samples without Python frames: " + python_.missing());
  sampler_->set_sampling(true);
  return {};
}

// A command launched with --no-ops is sampled from its exec, before any
// interpreter is up: look again every 100 ms until there is an answer that
// will not change (found, or an interpreter gpuprof cannot walk).
void ProcessSession::retry_python() {
  if (!sampler_ || child_exited_ || !python_.retry_due()) return;
  python_.look_again(target_pid_);
  if (python_.config()) {
    sampler_->set_python(*python_.config());
  } else if (!python_.may_appear()) {
    note_problem("samples without Python frames: " + python_.missing());
  }
}

// Frame names are cached by code object address, which the target may free
// and reuse: every epoch (target_python.h) the caches keyed by raw
// addresses are dropped and each code object is checked again on its next use.
void ProcessSession::new_python_epoch() {
  if (!python_.next_epoch()) return;
  if (samples_) samples_->new_python_epoch();
}

// A sample's leaf is symbolized now, while the target's mappings are there
// to read (sample_collector.h).
void ProcessSession::on_cpu_sample(const gp_cpu_sample& sample) {
  if (!writer_ || !diagnostics_.writing() || !recorded_at(sample.ts_ns)) return;
  thread_names_->saw(sample.tid);
  samples_->record(
      sample, 0, [this](uint64_t user_ip) { return symbolizer_->symbolize(user_ip); }, python_.namer());
  if (Result<void> recorded = record_opened_files(*symbolizer_, *writer_); !recorded) write_failed(recorded.error());
}

void ProcessSession::on_mem_event(const gp_mem_event& event) {
  if (!writer_ || !diagnostics_.writing()) return;
  if (Result<void> appended = writer_->append_mem_events(&event, 1); appended)
    mem_events_recorded_++;
  else
    write_failed(appended.error());
}

// The catch probe only sharpens the end time of frames an exception
// unwound, so it is attached whenever libstdc++ shows up in the target.
void ProcessSession::try_attach_catch() {
  if (!attached_ || tracer_->catch_attached()) return;
  last_catch_try_ns_ = clock_ns(CLOCK_MONOTONIC);
  auto libstdcxx = find_mapped_library(target_pid_, "libstdc++");
  if (!libstdcxx && libstdcxx.unreadable.empty()) return;
  Result<void> attached =
      libstdcxx ? tracer_->attach_catch(libstdcxx->path_for_us, target_pid_) : Error(libstdcxx.unreadable);
  if (!attached && config_.verbose) std::fprintf(stderr, "gpuprof: no catch probe: %s\n", attached.error().c_str());
}

// The order the loader and the CUDA driver map them in: no allocation (or
// undefined tensor) of the first op and no launch is missed.
std::string ProcessSession::next_stop() const {
  if (needs_libc10()) return "libc10.so";
  if (gpu_->needs_libcudart()) return "libcudart";
  if (gpu_->needs_shim()) return kCuptiShimFilePrefix;
  // CUDA maps libcuda just before the shim (cuInit loads the shim), so
  // the shim's stop attaches it too; without a shim (or with a Triton
  // that maps libcuda itself) it gets its own stop.
  if (gpu_->needs_libcuda()) return "libcuda.so";
  return "";
}

void ProcessSession::handle_child_state() {
  launch_attach_->on_child_state();
  child_exited_ = launch_attach_->exited();
}

double ProcessSession::stop_probes() {
  if (gpu_) gpu_->stop_launches();
  const uint64_t detach_start = clock_ns(CLOCK_MONOTONIC);
  tracer_->detach();
  if (sampler_) sampler_->stop();
  const double detach_ms = ms_since(detach_start);
  if (gpu_) {
    gpu_->drain_activities();
    gpu_->detach();
  }
  tracer_->consume();  // what was in flight when the probes went away
  if (sampler_) sampler_->consume();
  if (gpu_) gpu_->consume();
  return detach_ms;
}

void ProcessSession::record_last_figures() {
  calibration_.record_through_recording(*writer_);
  if (shapes_) shapes_->finish(*writer_, stats_);
  stats_.events_lost = tracer_->events_lost();
  stats_.mem_events_lost = tracer_->mem_events_lost();
  if (sampler_) stats_.samples_lost = sampler_->lost();
  gpu_->finish();
  thread_names_->poll();
  update_file_info();
}

std::string ProcessSession::stop_line_part() {
  if (sampler_ && !python_.config() && python_.may_appear())  // never came up: say so now
    note_problem("samples without Python frames: " + python_.missing());
  std::string part;
  if (config_.sample_hz)
    part += "; " + std::to_string(samples_->recorded()) + " samples, " + std::to_string(stats_.samples_lost) + " lost";
  part += gpu_->stop_line_part();
  if (config_.follow_forks)
    part += "; " + std::to_string(children_followed_) + " child processes followed" +
            (fork_watch_ && fork_watch_->lost() ? " (" + std::to_string(fork_watch_->lost()) + " forks missed)" : "");
  if (config_.with_stack && python_.config() && python_.entries_without_stack())
    part += "; " + std::to_string(python_.entries_without_stack()) + " entries without a Python stack";
  if (config_.profile_memory)
    part += "; " + std::to_string(mem_events_recorded_) + " memory events, " +
            std::to_string(stats_.mem_events_lost) + " lost";
  return part;
}

std::string ProcessSession::files_written() const {
  if (config_.outputs.rotate_bytes || config_.outputs.rotate_ns) {
    const uint64_t last = switcher_->files_rotated() + 1;
    std::string written =
        rotated_path(config_.output_path, 1) + (last > 1 ? " to " + rotated_path(config_.output_path, last) : "");
    if (config_.outputs.keep && last > config_.outputs.keep)
      written += " (the last " + std::to_string(config_.outputs.keep) + " kept)";
    return written;
  }
  if (config_.output_path.empty()) return std::to_string(switcher_->cycles_saved()) + " cycle files";
  return config_.output_path;
}

Result<void> ProcessSession::check_target() {
  if (std::string missing = missing_privileges(config_.pid > 0 ? "" : "launch mode (-- CMD)"); !missing.empty())
    return Error(missing);
  if (config_.pid <= 0) return {};
  target_pid_ = config_.pid;
  if (!process_alive(target_pid_)) return Error("no such process: " + std::to_string(target_pid_));
  // Capabilities never reach past what the invoking user could ptrace.
  if (std::string refusal = ptrace_refusal(target_pid_); !refusal.empty()) return Error(refusal);
  library_ = find_mapped_library(target_pid_, "libtorch_cpu");
  if (!library_.unreadable.empty() && config_.ops) return Error(library_.unreadable);
  if (!library_ && config_.ops)
    return Error("process " + std::to_string(target_pid_) + " (" + describe_process(target_pid_).comm +
                 ") has no libtorch_cpu mapped: is it a PyTorch process, and has it imported torch yet? "
                 "(-F HZ --no-ops samples any process's CPU time without tracing ops)");
  return {};
}

Result<void> ProcessSession::start() {
  auto abandon_with = [this](const std::string& error) {
    if (launched_) launched_->abandon();  // never let CMD run unprofiled behind our back
    return Error(error);
  };
  if (!config_.command.empty()) {
    if (config_.ops) inject_cupti_shim(diagnostics_);
    auto launched = LaunchedCommand::spawn(config_.command);
    if (!launched) return Error(launched.error());
    launched_.emplace(std::move(*launched));
    target_pid_ = launched_->pid();
    outcome_.launched_pid = target_pid_;
    auto watch = LibraryWatch::load(target_pid_);
    if (!watch) return abandon_with(watch.error());
    watch_ = std::move(*watch);
  }
  TracerSinks sinks;
  sinks.op = [this](const gp_event& event, const EntryPayload& payload) { on_op_event(event, payload); };
  sinks.memory = [this](const gp_mem_event& event) { on_mem_event(event); };
  if (Result<void> loaded = load_tracer(std::move(sinks)); !loaded) return abandon_with(loaded.error());
  if (launched_) {
    launched_process_.emplace(target_pid_, *watch_);
    launch_attach_.emplace(*launched_process_, *this, diagnostics_);
  }

  if (launched_ && !config_.ops) {
    // Sampling is on before the command runs: it is sampled from its exec.
    // Until then the child is gpuprof waiting at its gate: the recording
    // describes the command instead.
    python_.expect_late();
    launched_info_ = describe_launched_command(target_pid_, config_.command);
    if (Result<void> attached = attach_sampling_only(target_pid_); !attached) {
      launched_->abandon();
      return attached;
    }
    if (const auto started = launched_->start(); !started) return Error(started.error());
    record_job_rank(target_pid_);  // exec'd: its own environment now
    std::fprintf(stderr, "gpuprof: started %s as %d\n", config_.command[0].c_str(), target_pid_);
    std::fprintf(stderr, "gpuprof: sampling %d (%s) at %u Hz on %zu CPUs, no op tracing%s\n", target_pid_,
                 launched_info_->comm.c_str(), config_.sample_hz, sampler_->cpus(), stop_hint(config_).c_str());
  } else if (launched_) {
    launch_attach_->arm_first();
    if (const auto started = launched_->start(); !started) return Error(started.error());
    std::fprintf(stderr, "gpuprof: started %s as %d; probes go in when it loads libtorch_cpu\n",
                 config_.command[0].c_str(), target_pid_);
  } else {
    pidfd_.reset(static_cast<int>(syscall(SYS_pidfd_open, target_pid_, 0)));
    watch(pidfd_.get());
    return config_.ops ? attach_library(target_pid_, *library_) : attach_sampling_only(target_pid_);
  }
  return {};
}

void ProcessSession::read_rings() {
  new_python_epoch();
  retry_python();
  tracer_->consume();
  if (sampler_) sampler_->consume();  // polled: its ring buffer is small and slow
  if (gpu_) gpu_->consume();          // polled too: no wakeup per launch
  if (thread_names_) thread_names_->poll();
  if (fork_watch_) fork_watch_->consume();
  drain_shapes();
  try_attach_memory();
  try_attach_gpu();
  if (gpu_) gpu_->read_shim_state();
  try_find_undefined_tensor();
}

void ProcessSession::write_turn(uint64_t now_ns) {
  if (writer_ && flush_due(now_ns)) flush_chunks();
  if (writer_ && diagnostics_.writing()) update_file_info();
  tick_outputs(now_ns);
}

void ProcessSession::after_turn(uint64_t now_ns) {
  if (attached_ && !tracer_->catch_attached() && now_ns - last_catch_try_ns_ >= kCatchRetryIntervalNs)
    try_attach_catch();
}

// A launched command that ended (or a session stopped) before the op
// probes went in has no recording: the error says why.
bool ProcessSession::ended_recording() {
  if (attached_) return true;
  tracer_->detach();
  if (outcome_.error.empty()) fail(launch_attach_->unattached_error(config_.command[0], outcome_.stop_reason));
  return false;
}

}  // namespace

RecordOutcome run_process_session(const RecordConfig& config) { return ProcessSession(config).run(); }

}  // namespace gpuprof
