#include "collect/record_session.h"

#include <signal.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <memory>
#include <optional>
#include <unordered_map>

#include "torch/dispatcher_catalog.h"
#include "base/bounded_cache.h"
#include "record/cupti_shim_state.h"
#include "record/gpu_activity_names.h"
#include "probe/launch_tracer.h"
#include "target/launcher.h"
#include "probe/library_watch.h"
#include "probe/op_tracer.h"
#include "probe/cpu_sampler.h"
#include "symbols/elf_image.h"
#include "torch/autograd_names.h"
#include "torch/exitless_calls.h"
#include "torch/runtime_ops.h"
#include "probe/fork_watch.h"
#include "symbols/native_symbolizer.h"
#include "record/output_switcher.h"
#include "target/privileges.h"
#include "probe/probe_calibration.h"
#include "symbols/kernel_symbols.h"
#include "python/python_paths.h"
#include "python/python_runtime.h"
#include "python/python_stacks.h"
#include "record/frames_not_read.h"
#include "record/record_file.h"
#include "record/record_outputs.h"
#include "record/schedule.h"
#include "base/session_loop.h"
#include "torch/shape_collector.h"
#include "collect/progress_line.h"
#include "collect/system_session.h"
#include "target/target_process.h"
#include "probe/thread_names.h"
#include "base/unique_fd.h"

namespace gpuprof {
namespace {

// The CUPTI shim's file (cupti_shim/) and its gpuprof_cupti_state values
// (cupti_shim/gpuprof_cupti_probes.h).
constexpr const char* kShimFilePrefix = "libgpuprof_cupti";

// libgpuprof_cupti.so next to the gpuprof executable (where `make` builds
// it and where an install puts it); nullopt when it is not there.
std::optional<std::string> shim_next_to_executable() {
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n <= 0) return std::nullopt;
  std::string path(exe, static_cast<size_t>(n));
  path = path.substr(0, path.rfind('/') + 1) + kShimFilePrefix + ".so";
  if (access(path.c_str(), R_OK) != 0) return std::nullopt;
  return path;
}

constexpr int kPollTimeoutMs = 100;
constexpr size_t kMaxLibcudarts = GP_MAX_RUNTIMES;  // copies of libcudart probed in one target
// A probe calibration round (about 10 ms of gpuprof's own CPU on the machine
// of docs/overhead.md) this often while recording: 4% of a core.
constexpr uint64_t kCalibrationRoundIntervalNs = 250'000'000;
constexpr uint64_t kFlushIntervalNs = 250'000'000;       // chunk to disk at least this often
constexpr uint64_t kCatchRetryIntervalNs = 1'000'000'000;  // look for libstdc++ again

double ms_since(uint64_t start_ns) { return (clock_ns(CLOCK_MONOTONIC) - start_ns) / 1e6; }

// Orders word sequences of any container alike, so that a map keyed by
// vectors can be searched with a span.
struct LexicographicLess {
  using is_transparent = void;
  template <class A, class B>
  bool operator()(const A& a, const B& b) const {
    return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
  }
};

// "Look again at most every 100 ms" (or another period): the polls for
// things a target maps or sets up late (libcudart, the CUPTI shim, the
// interpreter), which read /proc or ELF files and must not do so on every
// turn of the loop.
class RetryEvery {
 public:
  explicit RetryEvery(uint64_t period_ns = 100'000'000) : period_ns_(period_ns) {}
  // True when the last try was a period ago or more (or `now` forces it);
  // then counts as a try.
  bool due(bool now = false) {
    const uint64_t t = clock_ns(CLOCK_MONOTONIC);
    if (!now && t - last_ns_ < period_ns_) return false;
    last_ns_ = t;
    return true;
  }

 private:
  uint64_t period_ns_;
  uint64_t last_ns_ = 0;
};

class Session {
 public:
  explicit Session(const RecordConfig& config) : config_(config) {}
  RecordOutcome run();

 private:
  bool attach_library(int pid, const MappedLibrary& library);
  bool attach_sampling_only(int pid);
  bool begin_record(int pid, const std::vector<OpInfo>& ops, const MappedLibrary* library,
                    const std::string& build_id);
  void setup_shapes(DispatcherCatalog& catalog);
  void try_attach_catch();
  void try_attach_memory();
  void try_attach_launches(bool now = false);
  bool attach_launch_library(const MappedLibrary& library, LaunchApi api, std::string* error);
  void on_launch(const gp_launch_event& event);
  uint32_t launch_name_id(const gp_launch_event& event);
  uint32_t launch_name_id_of(const std::string& name);
  bool ensure_launch_tracer(std::string* error);
  void inject_cupti_shim();
  void try_attach_shim(bool now = false);
  void read_shim_state();
  bool needs_shim() const { return config_.ops && !cupti_shim_ && shim_error_.empty(); }
  void on_gpu_correlation(const gp_gpu_correlation& c);
  void on_gpu_activity(const gp_gpu_activity& a);
  uint32_t gpu_activity_name_id(const gp_gpu_activity& a);
  void try_find_undefined_tensor();
  bool needs_libc10() const;
  bool needs_libcudart() const;
  bool looks_for_more_libcudarts() const;
  void attach_new_libcudarts();
  bool needs_libcuda() const { return config_.ops && !driver_probed_ && driver_error_.empty(); }
  void on_op_event(const gp_event& event, const EntryPayload& payload);
  void record_entry_stack(uint64_t event_index, std::span<const uint64_t> frame_words, PythonStackCut cut);
  std::optional<uint32_t> stack_id(const std::vector<std::string>& frames_outermost_first);
  void record_kernel_stack(uint64_t sample_index, std::span<const uint64_t> ips);
  void setup_python(int pid);
  void retry_python();
  void new_python_epoch();
  void on_mem_event(const gp_mem_event& event);
  void on_cpu_sample(const gp_cpu_sample& sample);
  bool start_sampling(int pid);
  std::optional<uint32_t> sample_frame_id(const std::string& name);
  void drain_shapes();
  // A warning on stderr, kept for the record file (RecordStats::problems)
  // so that the table says it too.
  void warn(const std::string& what) {
    std::fprintf(stderr, "gpuprof: warning: %s\n", what.c_str());
    keep_problem(what);
  }
  // The same, said as a plain note on stderr.
  void note_problem(const std::string& what) {
    std::fprintf(stderr, "gpuprof: %s\n", what.c_str());
    keep_problem(what);
  }
  void keep_problem(const std::string& what) {
    if (stats_.problems.size() < 64 &&
        std::find(stats_.problems.begin(), stats_.problems.end(), what) == stats_.problems.end())
      stats_.problems.push_back(what);
  }
  void write_failed(const std::string& error) {
    if (write_error_.empty()) write_error_ = error;
  }
  void handle_signals();
  void handle_child_state();
  RecordStats counters_now() const;
  ProgressCounters progress_counters(uint64_t now_ns) const;
  bool recorded_at(uint64_t ts_ns) const { return switcher_->recorded_at(ts_ns); }
  bool setup_schedule(DispatcherCatalog& catalog, std::vector<OpInfo>& ops);
  void update_file_info();
  std::optional<ProbeCosts> calibrate(const DispatcherCatalog& catalog);
  void record_probe_costs(const ProbeCosts& costs);
  void calibration_round();
  void record_calibration_through_recording();
  void on_fork(const gp_fork& fork);
  void stop(const char* reason) {
    if (!stopped_) outcome_.stop_reason = reason;
    stopped_ = true;
  }
  bool fail(std::string message) {
    outcome_.ok = false;
    outcome_.error = std::move(message);
    return false;
  }
  bool finish();
  bool close_after_write_error();

  const RecordConfig& config_;
  RecordOutcome outcome_;
  int target_pid_ = 0;
  std::optional<LaunchedCommand> launched_;
  std::optional<ProcessInfo> launched_info_;  // --no-ops launch: the command, described before it runs
  bool child_exited_ = false;
  std::unique_ptr<LibraryWatch> watch_;
  std::unique_ptr<OpTracer> tracer_;
  std::optional<OutputSwitcher> switcher_;  // the record files (output_switcher.h)
  RecordOutputs* writer_ = nullptr;         // switcher_'s outputs, once begun
  RecordStats stats_;
  std::string write_error_;
  bool attached_ = false;
  bool stopped_ = false;
  uint64_t last_catch_try_ns_ = 0;
  std::optional<ShapeCollector> shapes_;
  std::vector<uint32_t> catalog_tensor_args_;  // per op id, for entries without payload
  bool shapes_refused_reported_ = false;
  bool undefined_tensor_found_ = false;
  bool memory_attached_ = false;
  uint64_t mem_events_recorded_ = 0;
  std::unique_ptr<CpuSampler> sampler_;
  std::unique_ptr<NativeSymbolizer> symbolizer_;
  std::unordered_map<std::string, uint32_t> sample_frame_ids_;
  std::unordered_map<uint64_t, uint32_t> frame_of_address_;
  std::set<uint32_t> unresolved_frames_;       // sample leaf frames without a symbol
  std::set<uint32_t> unresolved_launch_names_;  // kernel names without a symbol
  // The target's CPython (found once, for samples and entry stacks).
  std::optional<gp_python_config> python_config_;
  std::string python_missing_;  // why there is none
  // Launched with --no-ops, sampling starts before the interpreter is up:
  // the lookup is retried while its answer may still change.
  bool python_may_appear_ = false;
  RetryEvery python_retry_;
  std::unique_ptr<PythonStackNamer> python_;
  std::map<std::pair<uint64_t, uint64_t>, uint32_t> frame_of_python_;  // (code, instr) -> frame id
  std::map<std::vector<uint32_t>, uint32_t> stack_ids_;                 // frame ids -> stack id
  // Raw entry frames -> stack id; looked up by span (transparent compare).
  std::map<std::vector<uint64_t>, uint32_t, LexicographicLess> stack_of_entry_words_;
  uint64_t entries_without_stack_ = 0;  // ENTRY events whose stack could not be captured
  StackCuts stack_cuts_;                // samples and entries whose stacks have frames not read
  uint64_t python_epoch_ns_ = 0;
  std::unique_ptr<KernelSymbols> kernel_symbols_;
  std::map<std::vector<uint64_t>, uint32_t> stack_of_kernel_ips_;  // innermost first -> stack id
  uint64_t samples_recorded_ = 0;
  std::string memory_error_;
  // CUDA launches: probes on the target's libcudart once it is mapped.
  std::unique_ptr<LaunchTracer> launch_tracer_;
  std::optional<CudaRuntimeInfo> cuda_runtime_;
  std::string launch_error_;  // why launches cannot be traced (said once)
  // Driver API launches: probes on the target's libcuda once it is mapped.
  bool driver_probed_ = false;
  std::string driver_error_;
  RetryEvery launch_retry_;
  // The libcudarts probed (a process may map several copies: torch's, and
  // torchvision's own), and those that could not be; another copy is
  // looked for every second once the first is probed.
  std::vector<MappedLibrary> libcudarts_;
  std::vector<MappedLibrary> libcudarts_refused_;
  RetryEvery more_libcudarts_retry_{1'000'000'000};
  std::unique_ptr<NativeSymbolizer> kernel_symbolizer_;
  std::unordered_map<uint64_t, uint32_t> launch_name_of_function_;
  std::unordered_map<std::string, uint32_t> launch_name_ids_;
  std::unordered_map<uint64_t, uint32_t> name_of_cupti_string_;  // kernel name address -> name id
  // GPU times: the CUPTI shim's USDT probes, once the target maps it.
  std::optional<CuptiShimInfo> cupti_shim_;
  std::optional<uint64_t> shim_state_address_;
  bool gpu_records_seen_ = false;
  // GPU activities that began before the recording did (CUPTI delivers its
  // buffers late: a job started with the shim hands over, after the attach,
  // what ran before it): left out like the ops called before the attach.
  uint64_t record_start_ns_ = 0;
  uint64_t gpu_activities_before_start_ = 0;
  std::string shim_error_;
  RetryEvery shim_retry_;
  uint64_t launches_recorded_ = 0;
  uint64_t op_calls_recorded_ = 0;       // op entries: the progress line's ops/s
  uint64_t gpu_activities_recorded_ = 0;
  std::optional<RecordProgress> progress_;  // the terminal's progress line (progress_line.h)
  ExitlessCalls exitless_;
  std::optional<RuntimeOps> runtime_ops_;  // from begin_record on
  std::unique_ptr<ThreadNameCollector> thread_names_;  // from begin_record on
  int signal_fd_ = -1;
  // --follow-forks: the op probe sites (as attached to the target) for each
  // child, and the children's fork events.
  ProbeSites probe_sites_;
  std::unique_ptr<ForkWatch> fork_watch_;
  uint32_t children_followed_ = 0;
  // CUPTI correlation ids of launches made in recorded steps (--schedule):
  // their GPU activities are kept, whenever they ran.
  std::set<uint64_t> recorded_correlations_;
  bool calibration_tried_ = false;  // once per session, failed or not
  // Attach's calibration (and the op sites' kinds), and the calibrator that
  // keeps running rounds through the recording (probe_calibration.h).
  std::optional<ProbeCosts> attach_costs_;
  std::unique_ptr<ProbeCalibrator> calibrator_;
  RetryEvery calibration_retry_{kCalibrationRoundIntervalNs};
};

bool Session::attach_library(int pid, const MappedLibrary& library) {
  std::string error;
  auto catalog = load_dispatcher_catalog(library.path_for_us, config_.exit_mode, &error);
  if (!catalog) return fail(error);
  if (config_.record_shapes) setup_shapes(*catalog);
  std::vector<OpInfo> ops = catalog->ops;
  if (!setup_schedule(*catalog, ops)) return false;
  // Before the recording's clock starts: its time zero stays at the attach.
  std::optional<ProbeCosts> costs = calibrate(*catalog);
  if (!begin_record(pid, ops, &library, catalog->build_id)) return false;
  if (costs) record_probe_costs(*costs);
  if (auto bias = load_bias(pid, library))
    runtime_ops_->add_process(static_cast<uint32_t>(pid), 0, *catalog, *bias);
  else
    warn("backward nodes' engine rows are named " + std::string(kUnknownNode) + ": the load address of " +
         library.path_in_target + " is unknown");
  if (config_.with_stack) {
    setup_python(pid);
    if (python_config_)
      tracer_->set_python_stacks(*python_config_);
    else
      warn("--with-stack: no Python stacks: " + python_missing_);
  }
  uint64_t attach_start = clock_ns(CLOCK_MONOTONIC);
  if (!succeeded(tracer_->attach_ops(library.path_for_us, catalog->sites, pid), &error)) return fail(error);
  double attach_ms = ms_since(attach_start);
  if (config_.follow_forks) {
    probe_sites_ = catalog->sites;
    fork_watch_ = value_or_error(ForkWatch::load(pid, [this](const gp_fork& fork) { on_fork(fork); }), &error);
    if (!fork_watch_) warn("--follow-forks: children are not traced: " + error);
  }
  if (config_.schedule.mode == GP_SCHEDULE_BY_TIME) {  // step 0 starts with the tracing
    gp_schedule schedule = config_.schedule;
    schedule.start_ns = clock_ns(CLOCK_MONOTONIC);
    tracer_->set_schedule(schedule);
    switcher_->start_time_steps(schedule.start_ns);
  }
  tracer_->set_tracing(true);  // only now is every entry and exit site in place
  attached_ = true;
  if (config_.sample_hz && !start_sampling(pid)) return false;
  stats_.entry_probes = catalog->entry_sites;
  stats_.exit_probes = catalog->exit_sites;
  stats_.ops_without_exit = catalog->ops_without_exit;
  try_attach_catch();
  try_attach_memory();
  try_attach_launches();
  try_attach_shim();

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
  return true;
}

// record --schedule: with --step-op, the step ops' ENTRY sites start steps
// (GP_COOKIE_STEP) and the op table gets a "ProfilerStep*" op for the step
// frames (op_timeline.h); the BPF gate gets the schedule. Time-mode steps
// start when the tracing does (attach_library).
bool Session::setup_schedule(DispatcherCatalog& catalog, std::vector<OpInfo>& ops) {
  if (config_.schedule.mode != GP_SCHEDULE_BY_OP) return true;
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
    return fail("--step-op " + names + ": no such op in this libtorch_cpu (give a name as the table prints it, "
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
  return true;
}

// --follow-forks: a followed process forked. The child runs the parent's
// libtorch_cpu (same file, same offsets): the same probe sites, in a link
// for the child's pid. Its ops before the link is in (a few ms) are missed;
// a child that exec'd or exited by then is not followed.
void Session::on_fork(const gp_fork& fork) {
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
  std::string error;
  const uint64_t start = clock_ns(CLOCK_MONOTONIC);
  if (!succeeded(tracer_->attach_ops(library->path_for_us, probe_sites_, child), &error)) {
    warn("--follow-forks: child " + std::to_string(child) + " not traced: " + error);
    return;
  }
  children_followed_++;
  runtime_ops_->add_forked(static_cast<uint32_t>(child), fork.parent_pid);
  std::fprintf(stderr, "gpuprof: following %d (forked by %u): attach %.1f ms\n", child, fork.parent_pid,
               ms_since(start));
}

// Counters as they stand now (the files of rotation and cycles count their
// own losses from them).
RecordStats Session::counters_now() const {
  RecordStats counters = stats_;
  counters.events_lost = tracer_->events_lost();
  counters.mem_events_lost = tracer_->mem_events_lost();
  if (sampler_) counters.samples_lost = sampler_->lost();
  return counters;
}

// The progress line's figures: counters kept anyway, and the BPF programs'
// lost counters (memory-mapped reads).
ProgressCounters Session::progress_counters(uint64_t now_ns) const {
  ProgressCounters counters;
  counters.now_ns = now_ns;
  counters.op_calls = op_calls_recorded_;
  counters.events = stats_.events_recorded;
  if (config_.sample_hz) counters.samples = samples_recorded_;
  if (cupti_shim_) counters.gpu_records = gpu_activities_recorded_;
  if (writer_) counters.bytes_written = writer_->bytes_written(RecordOutputs::kMain);
  counters.lost = tracer_->events_lost() + tracer_->mem_events_lost();
  if (sampler_) counters.lost += sampler_->lost();
  if (launch_tracer_) counters.lost += launch_tracer_->lost() + launch_tracer_->gpu_records_lost();
  return counters;
}

// What every file gets when it is closed, as known now.
void Session::update_file_info() {
  if (!writer_) return;
  if (cuda_runtime_) {
    CudaRuntimeInfo runtime = *cuda_runtime_;
    runtime.launches_lost = launch_tracer_->lost();
    writer_->set_cuda_runtime(runtime);
  }
  if (cupti_shim_) {
    CuptiShimInfo shim = *cupti_shim_;
    if (shim.state == 0 && gpu_records_seen_) shim.state = kCuptiShimTracing;
    shim.events_lost = launch_tracer_->gpu_records_lost();
    writer_->set_cupti_shim(shim);
  }
  writer_->set_thread_names(thread_names_->names());
}

// Calibrates the op probes' costs on gpuprof's own code (probe_calibration.h),
// once per session, before the target's probes go in: the target does not
// wait on it.
std::optional<ProbeCosts> Session::calibrate(const DispatcherCatalog& catalog) {
  if (std::exchange(calibration_tried_, true)) return std::nullopt;
  std::string error;
  auto calibrator = value_or_error(ProbeCalibrator::start(), &error);
  std::optional<ProbeCosts> costs;
  if (calibrator) {
    if (auto calibrated = calibrator->calibrate()) costs = *calibrated;
    else error = calibrated.error();
  }
  if (!costs) {
    warn("reports will show raw op times (the probes' cost is in them): " + error);
    return std::nullopt;
  }
  costs->op_sites = catalog.op_sites;
  attach_costs_ = costs;
  if (config_.calibrate_through_recording) calibrator_ = std::move(calibrator);
  return costs;
}

// A calibration round now and then while the target runs: on the machine
// of docs/overhead.md the probes' cost moves by 20% with the host's phases,
// for seconds at a time, so the rounds follow the recording.
void Session::calibration_round() {
  if (!calibrator_ || !calibration_retry_.due()) return;
  std::string error;
  if (!succeeded(calibrator_->round(), &error)) {
    if (config_.verbose) std::fprintf(stderr, "gpuprof: calibration rounds stopped: %s\n", error.c_str());
    calibrator_.reset();
  }
}

// Once the target's probes are out: the estimate from every round, written
// after attach's, which it supersedes (recording.h, ProbeCosts).
void Session::record_calibration_through_recording() {
  if (!calibrator_ || !attach_costs_) return;
  std::string error;
  // Two rounds more: a recording shorter than the rounds' period still
  // gets an estimate (from attach's rounds and these).
  for (int i = 0; i < 2 && calibrator_->round(); i++) {
  }
  auto costs = calibrator_->through_rounds();
  calibrator_.reset();
  if (!costs) return;
  costs->op_sites = attach_costs_->op_sites;
  if (!writer_->set_probe_costs(*costs, &error)) return write_failed(error);
  if (config_.verbose)
    std::fprintf(stderr, "gpuprof: calibrated through the recording: %.2f us per call from %u rounds (at attach: %.2f us)\n",
                 costs->total_ns() / 1000.0, costs->rounds, attach_costs_->total_ns() / 1000.0);
}

// Records them, so that reports can take them out of op times.
void Session::record_probe_costs(const ProbeCosts& costs) {
  std::string error;
  if (!writer_->set_probe_costs(costs, &error)) return write_failed(error);
  if (config_.on_probe_costs) config_.on_probe_costs(costs);
  if (config_.verbose) std::fprintf(stderr, "gpuprof: %s\n", describe_probe_costs(costs).c_str());
}

// The record file's header: the process, the clocks, the op table (empty
// when no libtorch_cpu is mapped: --no-ops) and the options.
bool Session::begin_record(int pid, const std::vector<OpInfo>& ops, const MappedLibrary* library,
                           const std::string& build_id) {
  std::string error;
  ProcessInfo process = launched_info_ ? *launched_info_ : describe_process(pid);
  if (library) process.libtorch_path = library->path_in_target;
  process.libtorch_build_id = build_id;
  ClockInfo clock;
  clock.start_realtime_ns = clock_ns(CLOCK_REALTIME);
  clock.start_monotonic_ns = clock_ns(CLOCK_MONOTONIC);
  record_start_ns_ = clock.start_monotonic_ns;
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
  if (!switcher_->begin(clock.start_monotonic_ns, stats_, &error)) return fail(error);
  writer_ = &switcher_->outputs();
  runtime_ops_.emplace([this](const OpInfo& op, std::string* error) {
    auto id = writer_->add_op(op, error);
    if (id && config_.on_ops) config_.on_ops(*id, {op});
    return id;
  });
  if (config_.on_begin) config_.on_begin(process, ops, clock.start_monotonic_ns);
  return true;
}

// --no-ops: CPU samples only, no op probes and no op table, so any process
// will do (PyTorch or not), and a launched command is sampled from its exec.
bool Session::attach_sampling_only(int pid) {
  if (!begin_record(pid, {}, nullptr, "")) return false;
  attached_ = true;
  if (!start_sampling(pid)) return false;
  if (!launched_)
    std::fprintf(stderr, "gpuprof: sampling %d (%s) at %u Hz on %zu CPUs, no op tracing%s\n", pid,
                 describe_process(pid).comm.c_str(), config_.sample_hz, sampler_->cpus(),
                 stop_hint(config_).c_str());
  return true;
}

// Shape plans go to BPF before any probe fires; OpInfo records, per op,
// what report needs to print the arguments that are not read per call.
void Session::setup_shapes(DispatcherCatalog& catalog) {
  std::vector<gp_shape_plan> plans(catalog.ops.size());
  for (size_t op = 0; op < catalog.ops.size() && op < catalog.arg_plans.size(); op++) {
    const OpArgPlan& plan = catalog.arg_plans[op];
    if (!plan.ok || op >= GP_MAX_SHAPE_PLANS) continue;
    plans[op] = to_bpf_plan(plan);
    catalog.ops[op].arg_count = static_cast<int32_t>(plan.arg_count);
    catalog.ops[op].tensor_args = static_cast<uint32_t>(plan.tensors.size());
  }
  catalog_tensor_args_.clear();
  for (const OpInfo& op : catalog.ops) catalog_tensor_args_.push_back(op.tensor_args);
  std::vector<OpArgPlan> collector_plans = catalog.arg_plans;
  for (size_t op = GP_MAX_SHAPE_PLANS; op < collector_plans.size(); op++) collector_plans[op].ok = false;
  shapes_.emplace(std::move(collector_plans));
  std::string error;
  if (!succeeded(tracer_->set_shape_plans(plans), &error)) {
    warn("no input shapes: " + error);
    for (OpInfo& op : catalog.ops) op.arg_count = -1, op.tensor_args = 0;
    shapes_.reset();
    return;
  }
  try_find_undefined_tensor();
  tracer_->set_shapes(true, ShapeCollector::kRawEntryBudget);
}

// c10::UndefinedTensorImpl::_singleton lives in libc10, which launch mode
// may see mapped only after libtorch_cpu.
void Session::try_find_undefined_tensor() {
  if (!shapes_ || undefined_tensor_found_) return;
  if (auto undefined = find_symbol_in_target(target_pid_, "libc10.so",
                                              "_ZN3c1019UndefinedTensorImpl10_singletonE")) {
    tracer_->set_undefined_tensor_impl(*undefined);
    undefined_tensor_found_ = true;
  }
}

bool Session::needs_libcudart() const {
  return config_.ops && libcudarts_.empty() && launch_error_.empty();
}

bool Session::looks_for_more_libcudarts() const {
  return config_.ops && !libcudarts_.empty() && libcudarts_.size() < kMaxLibcudarts;
}

bool Session::needs_libc10() const {
  return (config_.profile_memory && !memory_attached_ && memory_error_.empty()) ||
         (shapes_ && !undefined_tensor_found_);
}

// Allocations are attached once libc10 is mapped (in launch mode it may
// come after libtorch_cpu); a failure is reported once and not retried.
void Session::try_attach_memory() {
  if (!config_.profile_memory || !attached_ || memory_attached_ || !memory_error_.empty()) return;
  auto libc10 = find_mapped_library(target_pid_, "libc10.so");
  std::string error = libc10.unreadable;
  if (!libc10 && error.empty()) return;
  if (libc10 && succeeded(tracer_->attach_memory(libc10->path_for_us, target_pid_), &error)) {
    memory_attached_ = true;
    if (config_.verbose) std::fprintf(stderr, "gpuprof: memory probes on %s\n", libc10->path_in_target.c_str());
  } else {
    memory_error_ = error;
    warn("no memory columns: " + error);
  }
}

// Kernel launches are traced with the ops: once the target maps a
// libcudart (at `import torch` in a CUDA build) and a libcuda (at the first
// CUDA call, or when Triton loads it), looked for every 100 ms (launch mode
// also stops the command when it maps them: `now`).
void Session::try_attach_launches(bool now) {
  if (!attached_) return;
  if (looks_for_more_libcudarts() && more_libcudarts_retry_.due(now)) attach_new_libcudarts();
  if ((!needs_libcudart() && !needs_libcuda()) || !launch_retry_.due(now)) return;
  std::string error;
  if (needs_libcudart()) attach_new_libcudarts();
  if (needs_libcuda()) {
    if (auto libcuda = find_mapped_library(target_pid_, "libcuda.so"); libcuda || !libcuda.unreadable.empty()) {
      error = libcuda.unreadable;
      if (!libcuda || !attach_launch_library(*libcuda, LaunchApi::driver, &error)) {
        driver_error_ = error;
        warn("no CUDA driver API launches: " + error);
      }
    }
  }
}

// Every libcudart the target maps gets the launch probes: a launch through
// a copy left unprobed would be seen only as a driver call, unnamed.
void Session::attach_new_libcudarts() {
  std::string unreadable;
  auto same = [](const MappedLibrary& a, const MappedLibrary& b) { return a.dev == b.dev && a.inode == b.inode; };
  for (const MappedLibrary& library : find_mapped_libraries(target_pid_, "libcudart", &unreadable)) {
    auto is = [&](const MappedLibrary& known) { return same(known, library); };
    if (std::any_of(libcudarts_.begin(), libcudarts_.end(), is) ||
        std::any_of(libcudarts_refused_.begin(), libcudarts_refused_.end(), is))
      continue;
    std::string error;
    if (libcudarts_.size() == kMaxLibcudarts) {
      error = "gpuprof probes at most " + std::to_string(kMaxLibcudarts) + " copies of libcudart";
    } else if (attach_launch_library(library, LaunchApi::runtime, &error)) {
      continue;
    }
    libcudarts_refused_.push_back(library);
    if (libcudarts_.empty()) {
      launch_error_ = error;
      warn("no CUDA launches: " + error);
      return;
    }
    warn("no CUDA launches through " + library.path_in_target + ": " + error);
  }
  if (libcudarts_.empty() && !unreadable.empty()) {
    launch_error_ = unreadable;
    warn("no CUDA launches: " + unreadable);
  }
}

bool Session::attach_launch_library(const MappedLibrary& library, LaunchApi api, std::string* error) {
  auto sites = find_launch_sites(library.path_for_us, api);
  if (!sites) return succeeded(std::move(sites).take_error(), error);
  if (!ensure_launch_tracer(error) || !succeeded(launch_tracer_->attach(library.path_for_us, *sites, target_pid_), error))
    return false;
  if (!kernel_symbolizer_) {
    // The kernels' libraries are mapped by now (libtorch_cuda before the
    // libcudart it needs): read the maps while the target surely lives.
    kernel_symbolizer_ = std::make_unique<NativeSymbolizer>(target_pid_);
    kernel_symbolizer_->refresh_maps();
  }
  if (api == LaunchApi::runtime) {
    // The driver calls libcudart makes inside its launches are those
    // launches: the driver probes skip calls returning into it.
    if (auto range = mapped_address_range(target_pid_, library))
      launch_tracer_->add_runtime_range(range->first, range->second);
    libcudarts_.push_back(library);
    const auto entry_points = static_cast<uint32_t>(sites->offsets.size());
    if (!cuda_runtime_) {
      cuda_runtime_ = CudaRuntimeInfo{library.path_in_target, entry_points, 0};
    } else {  // a second copy: the file's CUDA_RUNTIME names them all
      cuda_runtime_->libcudart_path += ", " + library.path_in_target;
      cuda_runtime_->entry_points += entry_points;
    }
    std::fprintf(stderr, "gpuprof: CUDA launches: %zu entry points in %s\n", sites->offsets.size(),
                 library.path_in_target.c_str());
  } else {
    driver_probed_ = true;
    std::fprintf(stderr, "gpuprof: CUDA driver API launches: %zu entry points in %s\n", sites->offsets.size(),
                 library.path_in_target.c_str());
  }
  return true;
}

// `record -- CMD`: the CUDA driver of CMD loads the shim at cuInit from
// CUDA_INJECTION64_PATH (docs/cuda.md). A value the user set is
// theirs: kept, and said.
void Session::inject_cupti_shim() {
  if (const char* set = std::getenv("CUDA_INJECTION64_PATH")) {
    if (std::string_view(set).find(kShimFilePrefix) == std::string_view::npos)
      warn("CUDA_INJECTION64_PATH is already set (" + std::string(set) +
           "): gpuprof's CUPTI shim is not injected, no GPU times");
    return;
  }
  auto shim = shim_next_to_executable();
  if (!shim) {
    warn(std::string(kShimFilePrefix) + ".so is not next to gpuprof: no GPU times");
    return;
  }
  setenv("CUDA_INJECTION64_PATH", shim->c_str(), 1);
}

bool Session::ensure_launch_tracer(std::string* error) {
  if (launch_tracer_) return true;
  LaunchSinks sinks;
  sinks.launch = [this](const gp_launch_event& e) { on_launch(e); };
  sinks.correlation = [this](const gp_gpu_correlation& c) { on_gpu_correlation(c); };
  sinks.activity = [this](const gp_gpu_activity& a) { on_gpu_activity(a); };
  sinks.dropped = [this](uint64_t n) {
    if (cupti_shim_) cupti_shim_->records_dropped += n;
  };
  launch_tracer_ = value_or_error(LaunchTracer::load(4u << 20, std::move(sinks)), error);
  return launch_tracer_ != nullptr;
}

// The CUPTI shim (cupti_shim/) is loaded by the CUDA driver at cuInit, from
// CUDA_INJECTION64_PATH: looked for like libcudart.
void Session::try_attach_shim(bool now) {
  if (!attached_ || !needs_shim() || !shim_retry_.due(now)) return;
  auto shim = find_mapped_library(target_pid_, kShimFilePrefix);
  std::string error = shim.unreadable;
  if (!shim && error.empty()) return;
  if (!shim || !ensure_launch_tracer(&error) || !succeeded(launch_tracer_->attach_shim(shim->path_for_us, target_pid_), &error)) {
    shim_error_ = error;
    warn("no GPU times: " + error);
    return;
  }
  if (!kernel_symbolizer_) {
    kernel_symbolizer_ = std::make_unique<NativeSymbolizer>(target_pid_);
    kernel_symbolizer_->refresh_maps();
  }
  cupti_shim_ = CuptiShimInfo{shim->path_in_target, 0, 0, 0};
  // Stopped at the shim's mapping (`now`), its data is not mapped yet:
  // the loop reads the state later. Otherwise it is there to read.
  if (!now) read_shim_state();
  std::fprintf(stderr, "gpuprof: CUPTI shim probes in %s\n", shim->path_in_target.c_str());
}

// gpuprof_cupti_state, which the shim sets in InitializeInjection (0 until
// the driver calls it): read on every turn of the loop while the target
// lives (one 4-byte read), kept as last read once it is gone. A value
// outside the known states is a read of the file's bytes before the loader
// has mapped the shim's data (the shim is found as soon as its code is
// mapped): ignored.
void Session::read_shim_state() {
  if (!cupti_shim_ || child_exited_) return;
  if (!shim_state_address_)
    shim_state_address_ = find_symbol_in_target(target_pid_, kShimFilePrefix, "gpuprof_cupti_state");
  int32_t state = 0;
  if (shim_state_address_ && read_target_memory(target_pid_, *shim_state_address_, &state, sizeof(state)) &&
      state >= 0 && state <= static_cast<int32_t>(kCuptiShimLastState))
    cupti_shim_->state = static_cast<uint32_t>(state);
}

void Session::on_gpu_correlation(const gp_gpu_correlation& c) {
  gpu_records_seen_ = true;
  if (!writer_ || !write_error_.empty() || !recorded_at(c.ts_ns)) return;
  if (config_.schedule.mode != GP_SCHEDULE_OFF) {
    recorded_correlations_.insert(c.correlation);
    if (recorded_correlations_.size() > 65536) recorded_correlations_.erase(recorded_correlations_.begin());
  }
  thread_names_->saw(c.tid);
  GpuCorrelation correlation{c.ts_ns, c.correlation, c.tid, c.cbid, c.domain};
  if (config_.on_gpu_correlation) config_.on_gpu_correlation(correlation);
  std::string err;
  if (!writer_->append_gpu_correlations(&correlation, 1, &err)) write_failed(err);
}

// Activities are named as torch.profiler names them (gpu_activity_names.h).
// Kernel names come from CUPTI (mangled), demangled once per kernel:
// interned by the address of CUPTI's string (one per kernel); a name the
// probe had to cut is read again whole from the target.
uint32_t Session::gpu_activity_name_id(const gp_gpu_activity& a) {
  if (a.kind == static_cast<uint32_t>(GpuActivityKind::memcpy))
    return launch_name_id_of(memcpy_activity_name(a.bytes));
  if (a.kind != static_cast<uint32_t>(GpuActivityKind::kernel)) return launch_name_id_of(memset_activity_name(a.bytes));
  if (auto known = name_of_cupti_string_.find(a.name_ptr); a.name_ptr && known != name_of_cupti_string_.end())
    return known->second;
  std::string name = a.name;
  if (name.size() + 1 >= sizeof(a.name) && a.name_ptr) {
    // Cut at GP_GPU_NAME_BYTES: read more (a read that would cross into an
    // unmapped page fails whole, so try a shorter one too).
    for (size_t len : {4096, 1024}) {
      std::vector<char> whole(len, 0);
      if (!read_target_memory(target_pid_, a.name_ptr, whole.data(), whole.size())) continue;
      whole.back() = 0;
      name = whole.data();
      break;
    }
  }
  const uint32_t id = launch_name_id_of(name.empty() ? "[unnamed kernel]" : kernel_activity_name(name));
  if (a.name_ptr) name_of_cupti_string_.emplace(a.name_ptr, id);
  return id;
}

void Session::on_gpu_activity(const gp_gpu_activity& a) {
  gpu_records_seen_ = true;
  if (!writer_ || !write_error_.empty()) return;
  if (a.start_ns == 0 && a.end_ns == 0) return;  // CUPTI could not time it (the shim's contract)
  if (a.start_ns < record_start_ns_) {
    gpu_activities_before_start_++;
    return;
  }
  if (config_.schedule.mode != GP_SCHEDULE_OFF && !recorded_correlations_.count(a.correlation) &&
      !recorded_at(a.start_ns))
    return;  // launched outside the recorded steps
  if (a.kind < static_cast<uint32_t>(GpuActivityKind::kernel) ||
      a.kind > static_cast<uint32_t>(GpuActivityKind::memset))
    return;  // a kind a newer shim may send: not ours to record
  GpuActivity activity;
  activity.start_ns = a.start_ns;
  activity.end_ns = std::max(a.end_ns, a.start_ns);
  activity.correlation_id = a.correlation;
  activity.bytes = a.bytes;
  activity.device = a.device;
  activity.stream = a.stream;
  activity.kind = static_cast<GpuActivityKind>(a.kind);
  activity.name_id = gpu_activity_name_id(a);
  if (config_.on_gpu_activity) config_.on_gpu_activity(activity);
  std::string err;
  if (!write_error_.empty()) return;
  if (writer_->append_gpu_activities(&activity, 1, &err))
    gpu_activities_recorded_++;
  else
    write_failed(err);
}

// The id of a kernel name in the record (defined on first use), shared by
// launches and GPU activities.
uint32_t Session::launch_name_id_of(const std::string& name) {
  if (auto it = launch_name_ids_.find(name); it != launch_name_ids_.end()) return it->second;
  const uint32_t id = writer_->launch_names_defined();
  std::string err;
  if (!writer_->add_launch_name(name, &err)) write_failed(err);
  launch_name_ids_.emplace(name, id);
  return id;
}

// Kernel names are interned per host function: the symbol that starts at
// the launched function pointer, demangled whole as CUPTI names kernels.
uint32_t Session::launch_name_id(const gp_launch_event& event) {
  const uint64_t key = event.api == GP_LAUNCH_GRAPH ? 0 : event.function;
  if (auto it = launch_name_of_function_.find(key); it != launch_name_of_function_.end())
    return it->second;
  std::string name;
  const bool driver = event.api == GP_LAUNCH_DRIVER_KERNEL || event.api == GP_LAUNCH_DRIVER_KERNEL_EX;
  if (event.api == GP_LAUNCH_GRAPH) {
    name = "[CUDA graph]";
  } else if (driver) {
    // A CUfunction is a driver handle, not a host symbol: no name without
    // CUPTI (the shim's activity records name the kernel).
    char hex[32];
    std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(event.function));
    name = std::string("[CUfunction ") + hex + "]";
  } else if (auto symbol = kernel_symbolizer_->function_starting_at(event.function)) {
    name = *symbol;
  } else {
    char hex[32];
    std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(event.function));
    name = std::string("[unknown kernel ") + hex + "]";
  }
  const uint32_t id = launch_name_id_of(name);
  if (name.starts_with("[unknown kernel ")) unresolved_launch_names_.insert(id);
  launch_name_of_function_.emplace(key, id);
  return id;
}

void Session::on_launch(const gp_launch_event& event) {
  if (!writer_ || !write_error_.empty() || !recorded_at(event.ts_ns)) return;
  CudaLaunch launch;
  launch.ts_ns = event.ts_ns;
  launch.function = event.function;
  launch.stream = event.stream;
  std::copy(std::begin(event.grid), std::end(event.grid), launch.grid);
  std::copy(std::begin(event.block), std::end(event.block), launch.block);
  launch.tid = event.tid;
  thread_names_->saw(event.tid);
  launch.api = event.api;
  launch.name_id = launch_name_id(event);
  if (unresolved_launch_names_.count(launch.name_id)) stats_.symbols_unresolved++;
  std::string err;
  if (!write_error_.empty()) return;
  if (writer_->append_launches(&launch, 1, &err))
    launches_recorded_++;
  else
    write_failed(err);
}

void Session::on_op_event(const gp_event& raw, const EntryPayload& payload) {
  if (!writer_ || !write_error_.empty()) return;
  std::string err;
  gp_event event = raw;  // ranges and evaluate_function named (runtime_ops.h)
  const bool named_by_payload = event.kind == GP_EV_RANGE_BEGIN || runtime_ops_->names_by_node(event.op_id);
  if (!runtime_ops_->name(event, payload.words, &err)) {
    if (!err.empty()) write_failed(err);
    return;
  }
  if (config_.schedule.mode != GP_SCHEDULE_OFF) {  // a cycle's window may end (a CUT event) or begin here
    const bool switched = event.kind == GP_EV_STEP
                              ? switcher_->on_step(event, counters_now(), &err)
                              : switcher_->before_record(event.ts_ns, [this] { return counters_now(); }, &err);
    if (!switched) return write_failed(err);
  }
  const uint64_t index = writer_->events_appended();  // its index in the recording's events
  if (!writer_->append_events(&event, 1, &err)) return write_failed(err);
  if (config_.on_op_event) config_.on_op_event(event, index);
  stats_.events_recorded++;
  thread_names_->saw(event.tid);
  if (event.kind == GP_EV_OP_ENTRY) {
    exitless_.on_entry(event.op_id);
    op_calls_recorded_++;
  }
  if (shapes_ && event.kind == GP_EV_OP_ENTRY && !named_by_payload) {
    if (!payload.words.empty())
      shapes_->add_entry(index, event.op_id, payload.words);
    else if (event.op_id < catalog_tensor_args_.size() && catalog_tensor_args_[event.op_id] > 0)
      shapes_->note_entry_without_shapes(event.op_id);
  }
  if (python_config_ && config_.with_stack && (event.kind == GP_EV_OP_ENTRY || event.kind == GP_EV_RANGE_BEGIN)) {
    if (!payload.has_stack)
      entries_without_stack_++;
    else if (!payload.stack_words.empty())
      record_entry_stack(index, payload.stack_words, PythonStackCut::from_event(payload.stack_not_read));
  }
}

// Nested ops of one Python call carry the same frames: the raw words are
// interned first, so most entries cost one lookup. A cut stack's key ends
// with its not-read word (one word more than whole frames: no uncut key
// can equal it).
void Session::record_entry_stack(uint64_t event_index, std::span<const uint64_t> frame_words, PythonStackCut cut) {
  std::vector<uint64_t> cut_key;
  if (cut.cut()) {
    cut_key.assign(frame_words.begin(), frame_words.end());
    cut_key.push_back(uint64_t{cut.not_read} | uint64_t{cut.root_not_reached} << 32);
  }
  const std::span<const uint64_t> key = cut.cut() ? std::span<const uint64_t>(cut_key) : frame_words;
  auto known = stack_of_entry_words_.find(key);  // no copy of the words: most are known
  if (known == stack_of_entry_words_.end()) {
    const uint32_t depth = static_cast<uint32_t>(frame_words.size() / GP_ENTRY_FRAME_WORDS);
    // Named in two parts when cut: the frames on either side of the cut
    // were not called from one another.
    const size_t inner = std::min<size_t>(depth, PythonStackCut::innermost_kept()) * GP_ENTRY_FRAME_WORDS;
    std::vector<std::string> names = python_->entry_stack(frame_words.first(cut.cut() ? inner : frame_words.size()));
    if (cut.cut()) {
      std::vector<std::string> outer = python_->entry_stack(frame_words.subspan(inner));
      names.insert(names.end(), outer.begin(), outer.end());
    }
    std::vector<std::string> frames;  // the record keeps the outermost first
    cut.outermost_first(
        depth, [&](uint32_t i) { return names[i]; }, [](std::string marker) { return marker; },
        [&](std::string frame) {
          frames.push_back(std::move(frame));
          return true;
        });
    auto id = stack_id(frames);
    if (!id) return;
    keep_bounded(stack_of_entry_words_, kStackCacheEntries);
    known = stack_of_entry_words_.emplace(std::vector<uint64_t>(key.begin(), key.end()), *id).first;
  }
  stack_cuts_.entries++;
  stack_cuts_.entries_cut += cut.cut();
  std::string err;
  if (!writer_->append_entry_stack(event_index, known->second, &err)) write_failed(err);
}

// The id of a stack of frame names (interned, defined in the record on first use).
std::optional<uint32_t> Session::stack_id(const std::vector<std::string>& frames_outermost_first) {
  std::vector<uint32_t> ids;
  ids.reserve(frames_outermost_first.size());
  for (const std::string& name : frames_outermost_first) {
    auto id = sample_frame_id(name);
    if (!id) return std::nullopt;
    ids.push_back(*id);
  }
  auto [it, inserted] = stack_ids_.try_emplace(ids, writer_->sample_stacks_defined());
  std::string err;
  if (inserted && !writer_->add_sample_stack(ids, &err)) {
    stack_ids_.erase(it);
    write_failed(err);
    return std::nullopt;
  }
  return it->second;
}

bool Session::start_sampling(int pid) {
  std::string error;
  symbolizer_ = std::make_unique<NativeSymbolizer>(pid);
  kernel_symbols_ = std::make_unique<KernelSymbols>(KernelSymbols::load());
  sampler_ = value_or_error(
      CpuSampler::start(pid, config_.sample_hz, [this](const gp_cpu_sample& sample) { on_cpu_sample(sample); }), &error);
  if (!sampler_) return fail(error);
  setup_python(pid);
  if (python_config_)
    sampler_->set_python(*python_config_);
  else if (!python_may_appear_)
    note_problem("samples without Python frames: " + python_missing_);
  sampler_->set_sampling(true);
  return true;
}

// A command launched with --no-ops is sampled from its exec, before any
// interpreter is up: look again every 100 ms until there is an answer that
// will not change (found, or an interpreter gpuprof cannot walk).
void Session::retry_python() {
  if (!python_may_appear_ || python_config_ || !sampler_ || child_exited_ || !python_retry_.due()) return;
  python_missing_.clear();
  setup_python(target_pid_);
  if (python_config_) {
    sampler_->set_python(*python_config_);
  } else if (!python_may_appear_) {
    note_problem("samples without Python frames: " + python_missing_);
  }
}

// Samples and op entries carry the thread's Python frames when the target
// runs a CPython gpuprof knows (found, never assumed: python_runtime.h).
void Session::setup_python(int pid) {
  if (python_config_ || !python_missing_.empty()) return;  // looked already
  std::string why;
  bool may_change = false;
  auto runtime = find_python_runtime(pid, &why, &may_change);
  std::optional<gp_python_config> config = runtime ? python_walk_config(*runtime, &why) : std::nullopt;
  if (!config) {
    python_missing_ = why;
    python_may_appear_ = python_may_appear_ && !runtime && may_change;
    return;
  }
  python_may_appear_ = false;
  python_config_ = *config;
  python_ = std::make_unique<PythonStackNamer>(pid, runtime->offsets, PythonPathShortener::for_process(pid));
  if (config_.verbose) std::fprintf(stderr, "gpuprof: Python frames: %s\n", runtime->description.c_str());
}

// Frame names are cached by code object address, which the target may free
// and reuse: every kPythonEpochNs the caches keyed by raw addresses are
// dropped and each code object is checked again on its next use.
void Session::new_python_epoch() {
  constexpr uint64_t kPythonEpochNs = 100'000'000;
  if (!python_) return;
  const uint64_t now = clock_ns(CLOCK_MONOTONIC);
  if (now - python_epoch_ns_ < kPythonEpochNs) return;
  python_epoch_ns_ = now;
  python_->next_epoch();
  frame_of_python_.clear();
  stack_of_entry_words_.clear();
}

std::optional<uint32_t> Session::sample_frame_id(const std::string& name) {
  std::string err;
  auto [it, inserted] = sample_frame_ids_.try_emplace(name, writer_->sample_frames_defined());
  if (inserted && !writer_->add_sample_frame(name, &err)) {
    sample_frame_ids_.erase(it);
    write_failed(err);
    return std::nullopt;
  }
  if (inserted && config_.on_sample_frame) config_.on_sample_frame(it->second, name);
  return it->second;
}

// A sample's leaf is symbolized now, while the target's mappings are there
// to read; the record keeps the names (a report needs no target).
void Session::on_cpu_sample(const gp_cpu_sample& sample) {
  if (!writer_ || !write_error_.empty() || !recorded_at(sample.ts_ns)) return;
  thread_names_->saw(sample.tid);
  std::string err;
  auto known = frame_of_address_.find(sample.user_ip);
  uint32_t frame_id;
  if (known != frame_of_address_.end()) {
    frame_id = known->second;
  } else {
    const std::string name = symbolizer_->symbolize(sample.user_ip);
    auto id = sample_frame_id(name);
    if (!id) return;
    frame_id = *id;
    keep_bounded(frame_of_address_, kAddressCacheEntries);
    frame_of_address_.emplace(sample.user_ip, frame_id);
    if (name == "[unknown]" || name.find("+0x") != std::string::npos) unresolved_frames_.insert(frame_id);
  }
  if (unresolved_frames_.count(frame_id)) stats_.symbols_unresolved++;
  uint32_t python_stack = kNoPythonStack;
  const uint32_t depth = std::min<uint32_t>(sample.py_depth, GP_MAX_PY_FRAMES);
  std::vector<uint32_t> stack;
  if (python_ && depth > 0) {
    // Innermost first in the sample; the record keeps the outermost first.
    auto frame = [&](uint32_t i) -> std::optional<uint32_t> {
      const auto key = std::make_pair(sample.frames[2 * i], sample.frames[2 * i + 1]);
      auto it = frame_of_python_.find(key);
      if (it == frame_of_python_.end()) {
        auto id = sample_frame_id(python_->frame(key.first, key.second));
        if (!id) return std::nullopt;
        keep_bounded(frame_of_python_, kAddressCacheEntries);
        it = frame_of_python_.emplace(key, *id).first;
      }
      return it->second;
    };
    const PythonStackCut cut = PythonStackCut::from_event(sample.py_not_read);
    if (!cut.outermost_first(depth, frame, [&](const std::string& marker) { return sample_frame_id(marker); },
                             [&](std::optional<uint32_t> id) {
                               if (id) stack.push_back(*id);
                               return id.has_value();
                             }))
      return;
    stack_cuts_.samples++;
    stack_cuts_.samples_cut += cut.cut();
    auto [it, inserted] = stack_ids_.try_emplace(stack, writer_->sample_stacks_defined());
    if (inserted && !writer_->add_sample_stack(stack, &err)) {
      stack_ids_.erase(it);
      return write_failed(err);
    }
    python_stack = it->second;
  }
  CpuSample record{.ts_ns = sample.ts_ns, .tid = sample.tid, .frame_id = frame_id,
                   .in_kernel = sample.in_kernel != 0, .python_stack = python_stack};
  const uint64_t sample_index = writer_->samples_appended();
  if (!writer_->append_samples(&record, 1, &err)) return write_failed(err);
  samples_recorded_++;
  if (config_.on_sample) config_.on_sample(record, stack);
  if (sample.in_kernel && sample.kernel_depth > 0)
    record_kernel_stack(sample_index, std::span<const uint64_t>(reinterpret_cast<const uint64_t*>(&sample.frames[2 * depth]), sample.kernel_depth));
}

// Kernel stacks repeat: each distinct one is named once.
void Session::record_kernel_stack(uint64_t sample_index, std::span<const uint64_t> ips) {
  std::vector<uint64_t> key(ips.begin(), ips.end());
  auto known = stack_of_kernel_ips_.find(key);
  if (known == stack_of_kernel_ips_.end()) {
    std::vector<std::string> frames;
    for (auto ip = ips.rbegin(); ip != ips.rend(); ++ip) frames.push_back(kernel_symbols_->frame(*ip));
    auto id = stack_id(frames);
    if (!id) return;
    keep_bounded(stack_of_kernel_ips_, kStackCacheEntries);
    known = stack_of_kernel_ips_.emplace(std::move(key), *id).first;
  }
  std::string err;
  if (!writer_->append_sample_kernel_stack(sample_index, known->second, &err)) write_failed(err);
}

void Session::on_mem_event(const gp_mem_event& event) {
  if (!writer_ || !write_error_.empty()) return;
  std::string err;
  if (writer_->append_mem_events(&event, 1, &err))
    mem_events_recorded_++;
  else
    write_failed(err);
}

// Calibration result to BPF, decoded shapes to the file.
void Session::drain_shapes() {
  if (!shapes_ || !writer_) return;
  if (auto layout = shapes_->take_new_layout()) {
    tracer_->set_tensor_layout(*layout);
    std::fprintf(stderr, "gpuprof: %s\n", shapes_->status_line().c_str());
  }
  if (shapes_->refused() && !shapes_refused_reported_) {
    // No layout: stop paying for payloads that cannot be decoded.
    tracer_->set_shapes(false);
    shapes_refused_reported_ = true;
    warn("no input shapes: " + shapes_->status_line());
  }
  for (ShapeCollector::Ready& ready : shapes_->take_ready()) {
    std::string err;
    if (write_error_.empty() && !writer_->append_shapes(ready.event_index, ready.shapes, &err))
      write_failed(err);
  }
}

// The catch probe only sharpens the end time of frames an exception
// unwound, so it is attached whenever libstdc++ shows up in the target.
void Session::try_attach_catch() {
  if (!attached_ || tracer_->catch_attached()) return;
  last_catch_try_ns_ = clock_ns(CLOCK_MONOTONIC);
  auto libstdcxx = find_mapped_library(target_pid_, "libstdc++");
  std::string error = libstdcxx.unreadable;
  if (!libstdcxx && error.empty()) return;
  if ((!libstdcxx || !succeeded(tracer_->attach_catch(libstdcxx->path_for_us, target_pid_), &error)) && config_.verbose)
    std::fprintf(stderr, "gpuprof: no catch probe: %s\n", error.c_str());
}

void Session::handle_child_state() {
  int status;
  pid_t pid;
  while ((pid = waitpid(target_pid_, &status, WNOHANG | WUNTRACED)) > 0) {
    if (WIFSTOPPED(status)) {
      if (!watch_->take_stop_sent()) continue;  // someone else's stop (Ctrl-Z): not ours to undo
      // Our SIGSTOP: the child has just mapped libtorch_cpu (or, second,
      // libc10). Attach, then always let it go, whatever happened.
      if (attached_) {
        try_attach_memory();
        try_find_undefined_tensor();
        try_attach_launches(/*now=*/true);
        try_attach_shim(/*now=*/true);
      } else if (auto library = find_mapped_library(target_pid_, "libtorch_cpu")) {
        attach_library(target_pid_, *library);
      } else if (!library.unreadable.empty()) {
        fail(library.unreadable);
      } else {
        fail("the launched command mapped a libtorch_cpu that /proc does not show");
      }
      // The loader may map libc10 and libcudart after libtorch_cpu, and the
      // CUDA driver maps the shim at cuInit: stop there too, one at a time,
      // so that no allocation (or undefined tensor) of the first op and no
      // launch is missed. One mapped already was attached above.
      if (attached_ && needs_libc10())
        watch_->arm("libc10.so");
      else if (attached_ && needs_libcudart())
        watch_->arm("libcudart");
      else if (attached_ && needs_shim())
        watch_->arm(kShimFilePrefix);
      else if (attached_ && needs_libcuda())
        // CUDA maps libcuda just before the shim (cuInit loads the shim), so
        // the shim's stop attaches it too; without a shim (or with a Triton
        // that maps libcuda itself) it gets its own stop.
        watch_->arm("libcuda.so");
      kill(target_pid_, SIGCONT);
      if (!outcome_.error.empty()) stop("error");
    } else if (WIFEXITED(status) || WIFSIGNALED(status)) {
      child_exited_ = true;
      if (WIFEXITED(status))
        std::fprintf(stderr, "gpuprof: %d exited with status %d\n", target_pid_, WEXITSTATUS(status));
      else
        std::fprintf(stderr, "gpuprof: %d was killed by signal %d (%s)\n", target_pid_,
                     WTERMSIG(status), strsignal(WTERMSIG(status)));
      stop("target exited");
    }
  }
}

void Session::handle_signals() {
  signalfd_siginfo info;
  while (read(signal_fd_, &info, sizeof(info)) == sizeof(info)) {
    switch (info.ssi_signo) {
      case SIGINT: stop("interrupted"); break;
      case SIGTERM: stop("terminated"); break;
      case SIGHUP: stop("hangup"); break;
      case SIGCHLD: if (launched_) handle_child_state(); break;
    }
  }
}

bool Session::finish() {
  uint64_t detach_start = clock_ns(CLOCK_MONOTONIC);
  tracer_->detach();
  if (sampler_) sampler_->stop();
  double detach_ms = ms_since(detach_start);
  if (launch_tracer_) launch_tracer_->detach();
  tracer_->consume();  // what was in flight when the probes went away
  if (sampler_) sampler_->consume();
  if (launch_tracer_) launch_tracer_->consume();
  if (!writer_) return false;
  record_calibration_through_recording();
  if (shapes_) {
    bool was_calibrated = shapes_->calibrated();
    shapes_->finish();
    drain_shapes();
    if (!shapes_->calibrated() || !was_calibrated)
      std::fprintf(stderr, "gpuprof: %s\n", shapes_->status_line().c_str());
    stats_.shapes_unknown = shapes_->unknown_tensors();
    stats_.tensor_layout = shapes_->status_line();
  }
  stats_.events_lost = tracer_->events_lost();
  stats_.mem_events_lost = tracer_->mem_events_lost();
  if (sampler_) stats_.samples_lost = sampler_->lost();
  stats_.stop_reason = outcome_.stop_reason;
  std::string error;
  if (cuda_runtime_) cuda_runtime_->launches_lost = launch_tracer_->lost();
  if (cupti_shim_) {
    read_shim_state();  // the driver may have initialized it after the attach
    // Only a tracing shim sends records: a target that exited before the
    // loop read the state (a short command) still reads as tracing then.
    if (cupti_shim_->state == 0 && gpu_records_seen_) cupti_shim_->state = kCuptiShimTracing;
    cupti_shim_->events_lost = launch_tracer_->gpu_records_lost();
    if (cupti_shim_->state != kCuptiShimTracing)
      std::fprintf(stderr, "gpuprof: warning: no GPU times: the CUPTI shim %s\n",
                   cupti_shim_state_text(cupti_shim_->state));
    else
      std::fprintf(stderr, "gpuprof: CUPTI shim: %s\n", cupti_shim_state_text(cupti_shim_->state));
  }
  thread_names_->poll();
  if (std::string exitless = exitless_.warning(); !exitless.empty()) warn(exitless);
  update_file_info();
  if (!write_error_.empty()) return close_after_write_error();
  // The final counts, while the file is open (its size), for the stop line to erase.
  if (progress_) progress_->last(progress_counters(clock_ns(CLOCK_MONOTONIC)));
  if (!switcher_->finish(stats_, clock_ns(CLOCK_MONOTONIC), &error)) return fail(error);
  if (sampler_ && !python_config_ && python_may_appear_)  // never came up: say so now
    note_problem("samples without Python frames: " + python_missing_);
  std::string memory;
  if (config_.sample_hz)
    memory += "; " + std::to_string(samples_recorded_) + " samples, " +
              std::to_string(stats_.samples_lost) + " lost";
  if (cuda_runtime_ || driver_probed_)
    memory += "; " + std::to_string(launches_recorded_) + " CUDA launches, " +
              std::to_string(launch_tracer_->lost()) + " lost";
  if (launch_tracer_ && launch_tracer_->driver_calls_from_runtime())
    memory += " (" + std::to_string(launch_tracer_->driver_calls_from_runtime()) +
              " driver calls made by libcudart's own launches not counted again)";
  if (gpu_activities_before_start_)
    memory += "; " + std::to_string(gpu_activities_before_start_) +
              " GPU activities that began before the recording left out";
  // GPU records the ring had no room for (the shim's, docs/cuda.md): said
  // here too, for top, whose tables hold no file to say it later.
  if (launch_tracer_ && launch_tracer_->gpu_records_lost())
    memory += "; " + std::to_string(launch_tracer_->gpu_records_lost()) + " GPU records lost (ring buffer full)";
  if (config_.follow_forks)
    memory += "; " + std::to_string(children_followed_) + " child processes followed" +
              (fork_watch_ && fork_watch_->lost() ? " (" + std::to_string(fork_watch_->lost()) + " forks missed)" : "");
  if (config_.with_stack && python_config_ && entries_without_stack_)
    memory += "; " + std::to_string(entries_without_stack_) + " entries without a Python stack";
  if (config_.profile_memory)
    memory += "; " + std::to_string(mem_events_recorded_) + " memory events, " +
             std::to_string(stats_.mem_events_lost) + " lost";
  std::string written = config_.output_path;
  if (config_.outputs.rotate_bytes || config_.outputs.rotate_ns) {
    const uint64_t last = switcher_->files_rotated() + 1;
    written = rotated_path(config_.output_path, 1) + (last > 1 ? " to " + rotated_path(config_.output_path, last) : "");
    if (config_.outputs.keep && last > config_.outputs.keep)
      written += " (the last " + std::to_string(config_.outputs.keep) + " kept)";
  } else if (written.empty()) {
    written = std::to_string(switcher_->cycles_saved()) + " cycle files";
  }
  if (std::string cuts = stack_cuts_note(stack_cuts_); !cuts.empty()) std::fputs(cuts.c_str(), stderr);
  std::fprintf(stderr, "gpuprof: stopped (%s); detach %.1f ms; %llu events, %llu lost%s%s\n",
               outcome_.stop_reason.c_str(), detach_ms,
               static_cast<unsigned long long>(stats_.events_recorded),
               static_cast<unsigned long long>(stats_.events_lost), memory.c_str(),
               wrote_part(config_, written).c_str());
  return true;
}

// A full disk leaves the main file with every chunk written before, closed
// with the room kept for that (RecordWriter::disk_full) or, where none could
// be kept, ending at its last whole chunk: readable either way, and said so.
bool Session::close_after_write_error() {
  if (!writer_->disk_full(RecordOutputs::kMain)) return fail(write_error_);
  const std::string path = writer_->path(RecordOutputs::kMain);
  keep_problem("the disk filled: the recording stops there");
  stats_.stop_reason = outcome_.stop_reason;
  std::string ignored;  // the file may not close (no room kept): it is readable all the same
  switcher_->finish(stats_, clock_ns(CLOCK_MONOTONIC), &ignored);
  return fail(disk_full_error(write_error_, path));
}

RecordOutcome Session::run() {
  std::string error;
  set_libbpf_verbose(config_.verbose);  // -v: libbpf's own log
  if (std::string missing = missing_privileges(config_.pid > 0 ? "" : "launch mode (-- CMD)");
      !missing.empty()) {
    fail(missing);
    return outcome_;
  }
  LibraryLookup library;
  if (config_.pid > 0) {
    target_pid_ = config_.pid;
    if (!process_alive(target_pid_)) {
      fail("no such process: " + std::to_string(target_pid_));
      return outcome_;
    }
    // Capabilities never reach past what the invoking user could ptrace.
    if (std::string refusal = ptrace_refusal(target_pid_); !refusal.empty()) {
      fail(refusal);
      return outcome_;
    }
    library = find_mapped_library(target_pid_, "libtorch_cpu");
    if (!library.unreadable.empty() && config_.ops) {
      fail(library.unreadable);
      return outcome_;
    }
    if (!library && config_.ops) {
      fail("process " + std::to_string(target_pid_) + " (" + describe_process(target_pid_).comm +
           ") has no libtorch_cpu mapped: is it a PyTorch process, and has it imported torch yet? "
           "(-F HZ --no-ops samples any process's CPU time without tracing ops)");
      return outcome_;
    }
  }

  SignalGuard signals({SIGINT, SIGTERM, SIGHUP, SIGCHLD});
  signal_fd_ = signals.fd();
  if (!config_.command.empty()) {
    if (config_.ops) inject_cupti_shim();
    auto launched = LaunchedCommand::spawn(config_.command, &error);
    if (!launched) {
      fail(error);
      return outcome_;
    }
    launched_.emplace(std::move(*launched));
    target_pid_ = launched_->pid();
    outcome_.launched_pid = target_pid_;
    watch_ = value_or_error(LibraryWatch::load(target_pid_), &error);
  }
  TracerSinks sinks;
  sinks.op = [this](const gp_event& event, const EntryPayload& payload) { on_op_event(event, payload); };
  sinks.memory = [this](const gp_mem_event& event) { on_mem_event(event); };
  TracerConfig tracer_config;
  tracer_config.ring_buffer_bytes = config_.ring_buffer_bytes;
  if (error.empty()) tracer_ = value_or_error(OpTracer::load(tracer_config, std::move(sinks)), &error);
  if (!tracer_) {
    if (launched_) launched_->abandon();  // never let CMD run unprofiled behind our back
    fail(error);
    return outcome_;
  }

  UniqueFd pidfd;
  if (launched_ && !config_.ops) {
    // Sampling is on before the command runs: it is sampled from its exec.
    // Until then the child is gpuprof waiting at its gate: the recording
    // describes the command instead.
    python_may_appear_ = true;
    launched_info_ = describe_launched_command(target_pid_, config_.command);
    if (!attach_sampling_only(target_pid_)) {
      launched_->abandon();
      return outcome_;
    }
    if (!launched_->start(&error)) {
      fail(error);
      return outcome_;
    }
    std::fprintf(stderr, "gpuprof: started %s as %d\n", config_.command[0].c_str(), target_pid_);
    std::fprintf(stderr, "gpuprof: sampling %d (%s) at %u Hz on %zu CPUs, no op tracing%s\n", target_pid_,
                 launched_info_->comm.c_str(), config_.sample_hz, sampler_->cpus(),
                 stop_hint(config_).c_str());
  } else if (launched_) {
    watch_->arm("libtorch_cpu");
    if (!launched_->start(&error)) {
      fail(error);
      return outcome_;
    }
    std::fprintf(stderr, "gpuprof: started %s as %d; probes go in when it loads libtorch_cpu\n",
                 config_.command[0].c_str(), target_pid_);
  } else {
    pidfd.reset(static_cast<int>(syscall(SYS_pidfd_open, target_pid_, 0)));
    const bool attached = config_.ops ? attach_library(target_pid_, *library)
                                      : attach_sampling_only(target_pid_);
    if (!attached) return outcome_;
  }

  UniqueFd timer = duration_timer(config_.duration_s);
  UniqueFd epoll(epoll_create1(EPOLL_CLOEXEC));
  for (int fd : {tracer_->poll_fd(), signal_fd_, timer.get(), pidfd.get(), config_.input_fd}) epoll_watch(epoll.get(), fd);

  uint64_t last_flush = clock_ns(CLOCK_MONOTONIC);
  progress_.emplace(config_.progress, last_flush);
  if (launched_) handle_child_state();  // it may already be stopped or gone
  bool fork_fd_polled = false;
  while (!stopped_) {
    if (fork_watch_ && !fork_fd_polled) {  // --follow-forks: attach to a child as soon as it is forked
      epoll_watch(epoll.get(), fork_watch_->poll_fd());
      fork_fd_polled = true;
    }
    epoll_event events[4];
    int n = epoll_wait(epoll.get(), events, 4, kPollTimeoutMs);
    for (int i = 0; i < n; i++) {
      int fd = events[i].data.fd;
      if (fd == signal_fd_) handle_signals();
      else if (fd == timer.get()) stop("duration");
      else if (fd == pidfd.get()) stop("target exited");
    }
    new_python_epoch();
    retry_python();
    tracer_->consume();
    if (sampler_) sampler_->consume();  // polled: its ring buffer is small and slow
    if (launch_tracer_) launch_tracer_->consume();  // polled too: no wakeup per launch
    if (thread_names_) thread_names_->poll();
    if (fork_watch_) fork_watch_->consume();
    drain_shapes();
    try_attach_memory();
    try_attach_launches();
    try_attach_shim();
    read_shim_state();
    try_find_undefined_tensor();
    calibration_round();
    uint64_t now = clock_ns(CLOCK_MONOTONIC);
    if (writer_ && now - last_flush >= kFlushIntervalNs) {
      std::string err;
      if (write_error_.empty() && !writer_->flush(&err)) write_error_ = err;
      last_flush = now;
    }
    if (writer_ && write_error_.empty()) {
      std::string err;
      update_file_info();
      if (!switcher_->tick(now, counters_now(), &err)) write_error_ = err;
    }
    if (!write_error_.empty()) stop(writer_ && writer_->disk_full(RecordOutputs::kMain) ? "disk full" : "write error");
    if (progress_->active()) progress_->tick(progress_counters(now));
    if (config_.on_tick && !config_.on_tick(now, tracer_->events_lost())) stop("quit");
    if (attached_ && !tracer_->catch_attached() && now - last_catch_try_ns_ >= kCatchRetryIntervalNs)
      try_attach_catch();
  }

  if (!attached_) {
    tracer_->detach();
    if (outcome_.error.empty()) {
      if (child_exited_)
        fail(config_.command[0] + " exited without loading libtorch_cpu: nothing was profiled");
      else
        fail("stopped (" + outcome_.stop_reason + ") before " + config_.command[0] +
             " loaded libtorch_cpu: nothing was profiled");
    }
    outcome_.target_running = launched_ && !child_exited_;
    return outcome_;
  }
  outcome_.ok = outcome_.error.empty();
  if (!finish()) outcome_.ok = false;
  outcome_.target_running = launched_ && !child_exited_;
  return outcome_;
}

}  // namespace

std::string stop_hint(const RecordConfig& config) {
  return config.duration_s > 0 ? "" : "; " + config.stop_key + " to stop";
}

std::string disk_full_error(const std::string& write_error, const std::string& path) {
  return write_error + "; " + path + " is valid up to its last complete chunk: gpuprof report " + path + " reads it";
}

std::string wrote_part(const RecordConfig& config, const std::string& files) {
  return config.output_path == kLiveOnly ? "" : "; wrote " + files;
}

RecordOutcome run_record_session(const RecordConfig& config) {
  return config.system_wide ? run_system_session(config) : Session(config).run();
}

}  // namespace gpuprof
