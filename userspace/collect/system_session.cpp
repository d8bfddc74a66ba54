// system_session.cpp: the target part of `record -a` and `top -a`
// (collect/system_session.h): it watches every process's library loads,
// puts the op probes on each libtorch_cpu file found, describes processes
// and their threads as they turn up, and hands every event to the
// collectors it shares with `record -p` (interner, sample_collector,
// launch_collector, target_python, calibration_rounds) and the record
// writer. The run, its loop and its finish are the one session's
// (session.h); what stays here is the process bookkeeping.
#include "collect/system_session.h"

#include <dirent.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <unordered_map>

#include "collect/calibration_rounds.h"
#include "collect/diagnostics.h"
#include "collect/interner.h"
#include "collect/launch_collector.h"
#include "collect/native_files.h"
#include "collect/progress_line.h"
#include "record/record_sink.h"
#include "collect/sample_collector.h"
#include "collect/session.h"
#include "collect/target_python.h"
#include "probe/cpu_sampler.h"
#include "torch/dispatcher_catalog.h"
#include "torch/exitless_calls.h"
#include "torch/runtime_ops.h"
#include "probe/launch_tracer.h"
#include "probe/library_loads.h"
#include "symbols/native_symbolizer.h"
#include "probe/op_tracer.h"
#include "target/job_environment.h"
#include "target/privileges.h"
#include "python/python_paths.h"
#include "python/python_runtime.h"
#include "python/python_stacks.h"
#include "record/frames_not_read.h"
#include "record/output_switcher.h"
#include "record/record_file.h"
#include "base/session_loop.h"
#include "target/target_process.h"
#include "probe/thread_names.h"
#include "base/unique_fd.h"

namespace gpuprof {
namespace {

// A library load is seen at the mmap's entry: the mapping is in the maps
// file once the call returns. Looked for again on each turn until then.
constexpr uint64_t kLoadPatienceNs = 2'000'000'000;
constexpr uint64_t kPythonEpochNs = 100'000'000;
// A process whose interpreter is not up yet (its first samples come while
// CPython starts) is looked at again soon, then less and less often: a
// process that lives 0.2 s must get its frames, and one that never runs
// Python must not cost a maps read per sample.
constexpr uint64_t kPythonFirstRetryNs = 10'000'000;
constexpr uint64_t kPythonLastRetryNs = 1'000'000'000;
// How often exited processes are let go (their symbols, their interpreter),
// and how long their description stays for events still on their way.
constexpr uint64_t kReapIntervalNs = 2'000'000'000;
constexpr uint64_t kExitedGraceNs = 10'000'000'000;
// --push-every: op events open the next window as they come (their ring is
// read in order, as record -p's); a CPU sample or a launch, read from rings
// of their own, opens it only once it is stamped this far past the window's
// end, so that the op events stamped before that end, still on their way
// (a turn of the loop or a few behind), land in the window's own file. Each
// record is in exactly one window's file either way; a sample stamped just
// after the end may count in the window before.
constexpr uint64_t kOtherRingsLagNs = 500'000'000;

uint64_t now_ns() { return clock_ns(CLOCK_MONOTONIC); }

// A file as the kernel knows it: the same library through different paths
// (another mount namespace, a symlink) is one set of probes.
struct FileId {
  dev_t dev = 0;
  ino_t ino = 0;
  auto operator<=>(const FileId&) const = default;
};

// The process a thread belongs to ("Tgid:" of /proc/TID/status); 0 when
// the thread is gone.
uint32_t process_of_thread(uint32_t tid) {
  std::ifstream status("/proc/" + std::to_string(tid) + "/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("Tgid:", 0) == 0) return static_cast<uint32_t>(std::strtoul(line.c_str() + 5, nullptr, 10));
  return 0;
}

std::vector<int> all_pids() {
  std::vector<int> pids;
  if (DIR* proc = opendir("/proc")) {
    while (dirent* entry = readdir(proc)) {
      char* end = nullptr;
      long pid = std::strtol(entry->d_name, &end, 10);
      if (pid > 0 && end && *end == 0) pids.push_back(static_cast<int>(pid));
    }
    closedir(proc);
  }
  return pids;
}

// What the session knows of one process.
struct Process {
  ProcessInfo info;
  bool info_written = false;  // info as it stands is in the file
  // Its job rank (RANK, ... of its environment), read when it is first
  // seen and again once it runs its libtorch; whether that is in the file.
  std::optional<JobRank> rank;
  bool rank_written = false;
  bool traced = false;        // maps a libtorch_cpu that has its probes
  bool launches_attached = false;
  bool unreadable_reported = false;  // its libtorch_cpu cannot be opened: said once
  std::unique_ptr<NativeSymbolizer> symbolizer;  // for samples and kernel names, on first use
  // Its CPython, when it runs one gpuprof knows: names the Python frames of
  // its samples and (--with-stack) records its op entries' stacks.
  std::unique_ptr<TargetPython> python;
  bool python_final = false;  // the answer will not change
  uint64_t python_checked_ns = 0;
  uint64_t python_retry_ns = kPythonFirstRetryNs;  // doubles after each miss
  uint64_t exited_ns = 0;  // when gpuprof found it gone (0: alive)
};

// A library load waiting for its mapping to show in the maps.
struct PendingLoad {
  uint32_t pid;
  uint32_t kind;  // enum gp_library_kind
  uint64_t since_ns;
  uint64_t tried_ns = 0;
};

class SystemSession final : public Session {
 public:
  explicit SystemSession(const RecordConfig& config) : Session(config) {}

 private:
  // Session: the target's part.
  Result<void> check_target() override;
  Result<void> start() override;
  void read_rings() override;
  void write_turn(uint64_t now_ns) override;
  double stop_probes() override;
  void record_last_figures() override;
  std::string stop_line_part() override;

  Result<void> begin();
  void scan_processes();
  void on_library_load(const gp_library_load& load) { pending_loads_.push_back({load.pid, load.kind, now_ns()}); }
  void retry_pending_loads();
  bool trace_libtorch(uint32_t pid);
  bool trace_launches(uint32_t pid);
  // `comm_if_gone`: the name to give a process already gone from /proc.
  Process& process(uint32_t pid, const char* comm_if_gone = nullptr);
  void note_thread(uint32_t tid, uint32_t pid);
  void setup_python(uint32_t pid, Process& p);
  void on_op_event(const gp_event& event, const EntryPayload& payload);
  void on_cpu_sample(const gp_cpu_sample& sample);
  void on_launch(const gp_launch_event& event);
  void new_python_epoch();
  void reap_exited();
  bool flush_tables();
  // --push-every: the window a record stamped ts_ns falls in gets its
  // cycle file open (output_switcher.h), with the processes and threads
  // known so far defined in it; false after a write error.
  bool switch_cycle(uint64_t ts_ns);
  bool tables_pending_ = false;  // processes or threads not yet in the file
  RecordStats counters_now() const override;
  ProgressCounters progress_counters(uint64_t now) const override;

  std::unique_ptr<LibraryLoads> loads_;
  std::unique_ptr<LaunchTracer> launch_tracer_;
  // libtorch_cpu files looked at: the op id of their first op (UINT32_MAX:
  // not traced) and their catalog (runtime_ops.h names their rows with it).
  struct TracedFile {
    uint32_t first_op = UINT32_MAX;
    std::shared_ptr<const DispatcherCatalog> catalog;
  };
  std::map<FileId, TracedFile> libtorch_files_;
  std::map<FileId, LaunchSites> launch_sites_;  // libcudart files read
  std::set<FileId> launch_files_refused_;
  // The first libcudart probed, for the file's CUDA_RUNTIME (what a report
  // of launches names); every traced process's launches are recorded.
  std::optional<CudaRuntimeInfo> cuda_runtime_;
  std::unordered_map<uint32_t, Process> processes_;
  std::unordered_map<uint32_t, uint32_t> process_of_tid_;
  std::vector<ThreadProcess> pending_threads_;  // not yet in the file
  std::vector<PendingLoad> pending_loads_;
  uint32_t traced_processes_ = 0;
  uint64_t python_epoch_ns_ = 0;
  uint64_t last_reap_ns_ = 0;
};

Process& SystemSession::process(uint32_t pid, const char* comm_if_gone) {
  auto [it, inserted] = processes_.try_emplace(pid);
  if (inserted) {
    ProcessInfo& info = it->second.info;
    info = describe_process(static_cast<int>(pid));
    info.pid = static_cast<int32_t>(pid);
    info.hostname.clear();  // the recording's, not each process's
    if (info.comm.empty() && comm_if_gone && *comm_if_gone) info.comm = comm_if_gone;
    if (info.comm.empty()) info.comm = "[exited]";
    if (info.cmdline.empty() && !process_alive(static_cast<int>(pid))) info.cmdline = "[exited before gpuprof read it]";
    it->second.rank = read_job_rank(static_cast<int32_t>(pid));
    tables_pending_ = true;
  }
  return it->second;
}

void SystemSession::note_thread(uint32_t tid, uint32_t pid) {
  if (tid == 0 || pid == 0) return;
  auto [it, inserted] = process_of_tid_.try_emplace(tid, pid);
  if (!inserted) return;
  pending_threads_.push_back({tid, pid});
  tables_pending_ = true;
  Process& p = process(pid);
  config_.live_consumer().thread_seen(tid, pid);
  if (!p.info_written) config_.live_consumer().process_seen(p.info);
  thread_names_->saw(tid);
}

// The processes and threads found since the last flush, into the file.
bool SystemSession::flush_tables() {
  tables_pending_ = false;
  std::vector<ProcessInfo> fresh;
  for (auto& [pid, p] : processes_)
    if (!p.info_written) {
      fresh.push_back(p.info);
      p.info_written = true;
    }
  if (!fresh.empty()) {
    if (Result<void> added = writer_->add_processes(fresh); !added) return write_failed(added.error());
  }
  std::vector<JobRank> ranks;
  for (auto& [pid, p] : processes_)
    if (p.rank && !p.rank_written) {
      ranks.push_back(*p.rank);
      p.rank_written = true;
    }
  if (!ranks.empty()) {
    if (Result<void> added = writer_->add_job_ranks(ranks); !added) return write_failed(added.error());
  }
  if (!pending_threads_.empty()) {
    if (Result<void> added = writer_->add_thread_processes(pending_threads_); !added)
      return write_failed(added.error());
  }
  pending_threads_.clear();
  return true;
}

// Op probes on the libtorch_cpu `pid` maps, unless its file has them
// already (then the kernel put them in this process when it mapped it).
bool SystemSession::trace_libtorch(uint32_t pid) {
  auto library = find_mapped_library(static_cast<int>(pid), "libtorch_cpu");
  if (!library.unreadable.empty()) {
    Process& p = process(pid);
    if (!p.unreadable_reported)
      warn("process " + std::to_string(pid) + " (" + p.info.comm + ") not traced: " + library.unreadable);
    p.unreadable_reported = true;
    return true;
  }
  if (!library) return false;
  const FileId id{static_cast<dev_t>(library->dev), static_cast<ino_t>(library->inode)};
  Process& p = process(pid);
  if (!libtorch_files_.count(id)) {
    auto catalog = load_dispatcher_catalog(library->path_for_us, config_.exit_mode);
    if (!catalog) {
      warn("pid " + std::to_string(pid) + " (" + p.info.comm + "): " + library->path_in_target +
           " not traced: " + catalog.error());
      libtorch_files_.emplace(id, TracedFile{});  // not tried again
      return true;
    }
    const uint32_t base = static_cast<uint32_t>(writer_->ops_defined());
    bool lost_guards = false;
    ProbeSites sites = sites_for_ops_from(*catalog, base, &lost_guards);
    if (lost_guards)
      warn(library->path_in_target + ": too many ops in this recording for its ops' own ranges (detach): not shown");
    // The ops are in the table before the first event can name them.
    if (Result<void> added = writer_->add_ops(catalog->ops); !added) {
      write_failed(added.error());
      return true;
    }
    config_.live_consumer().ops_found(base, catalog->ops);
    calibration_.add_op_sites(base, catalog->op_sites);
    const uint64_t start = now_ns();
    if (Result<void> attached = tracer_->attach_ops(library->path_for_us, sites, 0); !attached) {
      warn(library->path_in_target + " not traced: " + attached.error());
      libtorch_files_.emplace(id, TracedFile{});
      return true;
    }
    libtorch_files_.emplace(id, TracedFile{base, std::make_shared<const DispatcherCatalog>(std::move(*catalog))});
    const DispatcherCatalog& traced = *libtorch_files_[id].catalog;  // *catalog is moved from
    stats_.entry_probes += traced.entry_sites;
    stats_.exit_probes += traced.exit_sites;
    stats_.ops_without_exit += traced.ops_without_exit;
    std::fprintf(stderr, "gpuprof: tracing %s: %zu ops, %u entry + %u exit probes (attach %.1f ms), for every process that maps it\n",
                 library->path_in_target.c_str(), traced.ops.size(), traced.entry_sites, traced.exit_sites,
                 (now_ns() - start) / 1e6);
    exitless_.add_ops(base, traced);
    if (std::string exitless = describe_exitless_ops(traced); !exitless.empty() && config_.verbose)
      std::fprintf(stderr, "gpuprof: %s: %s\n", library->path_in_target.c_str(), exitless.c_str());
  }
  const TracedFile& file = libtorch_files_[id];
  if (file.first_op == UINT32_MAX || p.traced) return true;
  p.traced = true;
  traced_processes_++;
  if (auto bias = load_bias(static_cast<int>(pid), *library))
    runtime_ops_->add_process(pid, file.first_op, *file.catalog, *bias);
  // Described again: a process seen before it exec'd into Python (`chroot
  // ... python3`, a shell) had another name and command line then.
  ProcessInfo now = describe_process(static_cast<int>(pid));
  if (!now.comm.empty()) {
    p.info.comm = now.comm;
    p.info.cmdline = now.cmdline;
  }
  p.info.libtorch_path = library->path_in_target;
  p.info_written = false;  // defined again, with its libtorch
  tables_pending_ = true;
  // Its environment too: a shell's or chroot's before the exec.
  if (auto rank = read_job_rank(static_cast<int32_t>(pid)); rank && rank != p.rank) {
    p.rank = rank;
    p.rank_written = false;
  }
  config_.live_consumer().process_seen(p.info);
  std::fprintf(stderr, "gpuprof: process %u (%s) runs %s\n", pid, p.info.comm.c_str(),
               library->path_in_target.c_str());
  // --with-stack: its op entries' stacks need its interpreter in the op
  // probe's map; the sooner found, the fewer of its first ops lack them.
  if (config_.with_stack) setup_python(pid, p);
  trace_launches(pid);
  return true;
}

// Launch probes on the process's libcudart, with its pid: libcudart is
// mapped by every CUDA program, and only PyTorch processes are traced (one
// that maps libcudart before libtorch_cpu gets them from trace_libtorch).
bool SystemSession::trace_launches(uint32_t pid) {
  auto known = processes_.find(pid);
  if (known == processes_.end() || !known->second.traced || known->second.launches_attached) return true;
  Process& p = known->second;
  auto library = find_mapped_library(static_cast<int>(pid), "libcudart");
  if (!library.unreadable.empty()) {
    warn("no CUDA launches in process " + std::to_string(pid) + ": " + library.unreadable);
    p.launches_attached = true;  // said once
    return true;
  }
  if (!library) return false;
  const FileId id{static_cast<dev_t>(library->dev), static_cast<ino_t>(library->inode)};
  if (launch_files_refused_.count(id)) return true;
  auto sites = launch_sites_.find(id);
  if (sites == launch_sites_.end()) {
    auto found = find_launch_sites(library->path_for_us, LaunchApi::runtime);
    if (!found) {
      launch_files_refused_.insert(id);
      warn("no CUDA launches from " + library->path_in_target + ": " + found.error());
      return true;
    }
    sites = launch_sites_.emplace(id, std::move(*found)).first;
  }
  if (!launch_tracer_) {
    LaunchSinks sinks;
    sinks.launch = [this](const gp_launch_event& e) { on_launch(e); };
    sinks.correlation = [](const gp_gpu_correlation&) {};
    sinks.activity = [](const gp_gpu_activity&) {};
    sinks.dropped = [](uint64_t) {};
    auto launch_tracer = LaunchTracer::load(config_.ring_buffer_bytes, std::move(sinks));
    if (!launch_tracer) {
      launch_files_refused_.insert(id);
      warn("no CUDA launches: " + launch_tracer.error());
      return true;
    }
    launch_tracer_ = std::move(*launch_tracer);
  }
  if (Result<void> attached = launch_tracer_->attach(library->path_for_us, sites->second, static_cast<int>(pid));
      !attached) {
    warn("no CUDA launches in process " + std::to_string(pid) + ": " + attached.error());
  } else {
    p.launches_attached = true;
    if (!cuda_runtime_)
      cuda_runtime_ = CudaRuntimeInfo{library->path_in_target, static_cast<uint32_t>(sites->second.offsets.size()), 0};
    // Kernel names come from the process's own libraries: its maps now.
    if (!p.symbolizer) p.symbolizer = std::make_unique<NativeSymbolizer>(static_cast<int>(pid));
    p.symbolizer->refresh_maps();
    std::fprintf(stderr, "gpuprof: process %u: CUDA launches: %zu entry points in %s\n", pid,
                 sites->second.offsets.size(), library->path_in_target.c_str());
  }
  return true;
}

// Each waiting load is looked at again every 10 ms at most (a libtorch
// process's maps are long) until its mapping shows, for kLoadPatienceNs.
void SystemSession::retry_pending_loads() {
  constexpr uint64_t kRetryNs = 10'000'000;
  const uint64_t now = now_ns();
  std::vector<PendingLoad> waiting;
  for (PendingLoad& load : pending_loads_) {
    if (load.tried_ns && now - load.tried_ns < kRetryNs) {
      waiting.push_back(load);
      continue;
    }
    load.tried_ns = now;
    const bool done = load.kind == GP_LOAD_LIBTORCH ? trace_libtorch(load.pid) : trace_launches(load.pid);
    if (!done && now - load.since_ns < kLoadPatienceNs && process_alive(static_cast<int>(load.pid)))
      waiting.push_back(load);
  }
  pending_loads_ = std::move(waiting);
}

// Every process that has a libtorch_cpu mapped when the recording starts.
void SystemSession::scan_processes() {
  const uint32_t self = static_cast<uint32_t>(getpid());
  for (int pid : all_pids())
    if (static_cast<uint32_t>(pid) != self) trace_libtorch(static_cast<uint32_t>(pid));
}

void SystemSession::setup_python(uint32_t pid, Process& p) {
  if (p.python || p.python_final) return;
  const uint64_t now = now_ns();
  if (p.python_checked_ns && now - p.python_checked_ns < p.python_retry_ns) return;
  if (p.python_checked_ns) p.python_retry_ns = std::min(2 * p.python_retry_ns, kPythonLastRetryNs);
  p.python_checked_ns = now;
  auto python = std::make_unique<TargetPython>(stack_cuts_, /*verbose=*/false);
  python->expect_late();  // may_appear() then says whether another look may find one
  python->find(static_cast<int>(pid));
  if (!python->config()) {
    p.python_final = !python->may_appear() || !process_alive(static_cast<int>(pid));
    return;
  }
  p.python_final = true;
  if (sampler_ && !sampler_->set_process_python(pid, *python->config())) return;
  if (config_.with_stack && tracer_ && !tracer_->set_process_python(pid, *python->config())) {
    if (sampler_) sampler_->forget_process_python(pid);
    return;
  }
  python->start_recording(*interner_, *writer_, diagnostics_);
  p.python = std::move(python);
}

// A machine runs processes without end: what gpuprof keeps per process
// (mapped ELF images, a code-object reader, a slot in the sampler's map)
// goes when the process does; its description (in the file already) stays
// a little longer for the samples and events still on their way, then goes
// too. A pid seen after that is a new process, described again (the reader
// keeps the latest description of a pid).
void SystemSession::reap_exited() {
  const uint64_t now = now_ns();
  if (now - last_reap_ns_ < kReapIntervalNs) return;
  last_reap_ns_ = now;
  std::vector<uint32_t> gone;
  for (auto& [pid, p] : processes_) {
    if (p.exited_ns) {
      if (now - p.exited_ns > kExitedGraceNs && p.info_written) gone.push_back(pid);
      continue;
    }
    if (process_alive(static_cast<int>(pid))) continue;
    p.exited_ns = now;
    if (p.python && sampler_) sampler_->forget_process_python(pid);
    if (p.python && config_.with_stack && tracer_) tracer_->forget_process_python(pid);
    p.python.reset();
    p.python_final = true;
    p.symbolizer.reset();
  }
  for (uint32_t pid : gone) {
    processes_.erase(pid);
    writer_->forget_process(pid);
  }
  auto forgotten = [&](uint32_t pid) { return !processes_.count(pid); };
  if (samples_) samples_->forget(forgotten);
  launches_->forget(forgotten);
}

void SystemSession::new_python_epoch() {
  const uint64_t now = now_ns();
  if (now - python_epoch_ns_ < kPythonEpochNs) return;
  python_epoch_ns_ = now;
  for (auto& [pid, p] : processes_)
    if (p.python) p.python->next_epoch();
  if (samples_) samples_->new_python_epoch();
}

void SystemSession::on_op_event(const gp_event& raw, const EntryPayload& payload) {
  if (!diagnostics_.writing()) return;
  gp_event event = raw;  // ranges and evaluate_function named (runtime_ops.h)
  if (const Result<void> named = runtime_ops_->name(event, payload.words); !named) {
    write_failed(named.error());
    return;
  }
  note_thread(event.tid, event.pid);
  if (!switch_cycle(event.ts_ns)) return;
  const uint64_t index = writer_->events_appended();
  if (Result<void> appended = writer_->append_events(&event, 1); !appended) {
    write_failed(appended.error());
    return;
  }
  stats_.events_recorded++;
  if (event.kind == GP_EV_OP_ENTRY) {
    exitless_.on_entry(event.op_id);
    op_calls_recorded_++;
  }
  config_.live_consumer().op_event(event, index);
  if (config_.with_stack && (event.kind == GP_EV_OP_ENTRY || event.kind == GP_EV_RANGE_BEGIN)) {
    Process& p = process(event.pid);
    setup_python(event.pid, p);  // a process whose interpreter was not found yet is looked at again
    if (p.python) p.python->on_entry(index, payload);
  }
}

// Keyed by process: a leaf address and a code object mean something only in theirs.
void SystemSession::on_cpu_sample(const gp_cpu_sample& sample) {
  if (!diagnostics_.writing()) return;
  char comm[sizeof sample.comm + 1] = {};
  std::memcpy(comm, sample.comm, sizeof sample.comm);
  Process& p = process(sample.pid, comm);  // before note_thread, which would describe it without the name
  note_thread(sample.tid, sample.pid);
  setup_python(sample.pid, p);
  if (!switch_cycle(sample.ts_ns > kOtherRingsLagNs ? sample.ts_ns - kOtherRingsLagNs : 0)) return;
  auto leaf = [&](uint64_t user_ip) -> std::string {
    if (user_ip == 0) return "[kernel thread]";
    if (!p.symbolizer && !p.exited_ns) p.symbolizer = std::make_unique<NativeSymbolizer>(static_cast<int>(sample.pid));
    return p.symbolizer ? p.symbolizer->symbolize(user_ip) : "[unknown]";
  };
  samples_->record(sample, sample.pid, leaf, p.python ? p.python->namer() : nullptr);
  if (!p.symbolizer) return;
  if (Result<void> recorded = record_opened_files(*p.symbolizer, *writer_); !recorded) write_failed(recorded.error());
}

void SystemSession::on_launch(const gp_launch_event& event) {
  if (!diagnostics_.writing()) return;
  auto known = process_of_tid_.find(event.tid);
  const uint32_t pid = known != process_of_tid_.end() ? known->second : process_of_thread(event.tid);
  note_thread(event.tid, pid);
  if (!switch_cycle(event.ts_ns > kOtherRingsLagNs ? event.ts_ns - kOtherRingsLagNs : 0)) return;
  auto launch = launches_->record(event, pid, process(pid).symbolizer.get());
  if (launch) config_.live_consumer().launch(*launch, pid);
}

bool SystemSession::switch_cycle(uint64_t ts_ns) {
  if (config_.schedule.mode == GP_SCHEDULE_OFF) return true;
  // Every record in a cycle file has its process and thread defined there:
  // a window may close before the next periodic flush.
  if (tables_pending_ && !flush_tables()) return false;
  Result<void> switched = switcher_->before_record(ts_ns, [this] { return counters_now(); });
  if (switched) return true;
  write_failed(switched.error());
  return false;
}

// The counters as they stand: each file's lost counts are what was lost
// while it was open (RecordOutputs::close).
RecordStats SystemSession::counters_now() const {
  RecordStats now = stats_;
  if (tracer_) now.events_lost = tracer_->events_lost();
  if (sampler_) now.samples_lost = sampler_->lost();
  return now;
}

Result<void> SystemSession::begin() {
  ProcessInfo system = describe_process(getpid());
  system.pid = 0;
  system.comm = "[system-wide]";
  system.cmdline = "gpuprof record -a";
  const ClockInfo clock = ClockInfo::started_now();
  RecordOptions options;
  options.ops = config_.ops;
  options.sample_hz = config_.sample_hz;
  options.with_stack = config_.with_stack;
  OutputPlan plan = config_.outputs;
  plan.main_path = config_.output_path;
  // --push-every: back-to-back windows from the start, every record in one
  // (nothing is gated: the BPF programs get no schedule).
  plan.schedule = config_.schedule;
  switcher_.emplace(std::move(plan), RecordOutputs(system, clock, {}, options, config_.output_mode));
  RETURN_IF_ERROR(switcher_->begin(clock.start_monotonic_ns, stats_));
  if (config_.schedule.mode == GP_SCHEDULE_BY_TIME) {
    switcher_->start_time_steps(clock.start_monotonic_ns);
    // The first window's file opens now: records that come before any op
    // event (CPU samples, a lag behind) have a file to go to.
    RETURN_IF_ERROR(switcher_->before_record(clock.start_monotonic_ns, [this] { return counters_now(); }));
  }
  writer_ = &switcher_->outputs();
  runtime_ops_.emplace([this](const OpInfo& op) -> Result<uint32_t> {
    const auto id = static_cast<uint32_t>(writer_->ops_defined());
    RETURN_IF_ERROR(writer_->add_ops({op}));
    config_.live_consumer().ops_found(id, {op});
    return id;
  });
  thread_names_ = std::make_unique<ThreadNameCollector>(0);
  interner_.emplace(*writer_, diagnostics_, config_.live_consumer());
  launches_.emplace(*interner_, *writer_, diagnostics_, stats_, /*count_unresolved=*/false);
  config_.live_consumer().begin(system, {}, clock.start_monotonic_ns);
  return {};
}

Result<void> SystemSession::check_target() {
  if (std::string missing = missing_privileges("-a (every process)"); !missing.empty()) return Error(missing);
  // Capabilities (setcap) are not enough to watch other users' processes.
  if (getuid() != 0)
    return Error("record -a watches every process on the machine: run it as root (capabilities suffice only "
                 "for your own processes, with -p)");
  return {};
}

Result<void> SystemSession::start() {
  RETURN_IF_ERROR(begin());
  if (config_.ops) {
    TracerSinks sinks;
    sinks.op = [this](const gp_event& event, const EntryPayload& payload) { on_op_event(event, payload); };
    sinks.memory = [](const gp_mem_event&) {};
    RETURN_IF_ERROR(load_tracer(std::move(sinks)));
    // Stacks on before the first probe: every op entry then carries its
    // stack word, empty until its process's interpreter is in the map.
    if (config_.with_stack) tracer_->set_python_stacks_per_process();
    // Before any target's probes go in: no process waits on it.
    calibration_.at_attach({});
    // Watch first, then scan: a process that maps libtorch in between is
    // found twice, never missed.
    auto loads = LibraryLoads::load([this](const gp_library_load& load) { on_library_load(load); });
    if (!loads) return Error(loads.error());
    loads_ = std::move(*loads);
    watch(loads_->poll_fd());
    scan_processes();
    // With the sites of the files found so far; those of files found later
    // are in the estimate recorded at the end.
    calibration_.record(*writer_);
    // The files found so far have every site in place: their processes'
    // first events are whole calls. A file found later is attached while
    // the program runs (its process may be mid-call for those ~100 ms; the
    // timeline counts such calls as running at the start).
    tracer_->set_tracing(true);
  }
  if (config_.sample_hz) {
    samples_.emplace(*interner_, *writer_, diagnostics_, stats_, stack_cuts_, config_.live_consumer());
    auto sampler = CpuSampler::start(0, config_.sample_hz, [this](const gp_cpu_sample& s) { on_cpu_sample(s); });
    if (!sampler) return Error(sampler.error());
    sampler_ = std::move(*sampler);
    // The sample ring is polled too (unlike record -p): a process's first
    // sample wakes the loop (cpu_sampler.bpf.c), so that its maps and
    // interpreter are looked at within ms, while a short-lived process
    // still runs; the samples after it wait for the loop's next turn.
    watch(sampler_->poll_fd());
    sampler_->set_sampling(true);
  }
  std::fprintf(stderr, "gpuprof: system-wide: %s%s; %u PyTorch process%s traced now, more as they load libtorch_cpu%s\n",
               config_.ops ? "ops in every PyTorch process" : "no ops",
               config_.sample_hz ? (", CPU samples of every process at " + std::to_string(config_.sample_hz) + " Hz").c_str() : "",
               traced_processes_, traced_processes_ == 1 ? "" : "es",
               stop_hint(config_).c_str());
  return {};
}

void SystemSession::read_rings() {
  if (loads_) loads_->consume();
  retry_pending_loads();
  new_python_epoch();
  if (tracer_) tracer_->consume();
  if (sampler_) sampler_->consume();
  if (launch_tracer_) launch_tracer_->consume();
}

void SystemSession::write_turn(uint64_t now_ns) {
  if (!flush_due(now_ns)) return;
  if (flush_tables()) flush_chunks();
  tick_outputs(now_ns);
  reap_exited();  // after the flush: only processes whose description is written
}

// The progress line's figures: counters kept anyway, and the BPF programs'
// lost counters (memory-mapped reads). No GPU records: -a takes none.
ProgressCounters SystemSession::progress_counters(uint64_t now) const {
  ProgressCounters counters =
      progress_figures(now, op_calls_recorded_, stats_.events_recorded,
                       config_.sample_hz ? std::optional<uint64_t>(samples_->recorded()) : std::nullopt,
                       writer_->bytes_written(RecordOutputs::kMain));
  if (tracer_) counters.lost = tracer_->events_lost();
  if (sampler_) counters.lost += sampler_->lost();
  if (launch_tracer_) counters.lost += launch_tracer_->lost();
  return counters;
}

double SystemSession::stop_probes() {
  // Sampling stops first: gpuprof's own teardown is no part of the picture.
  if (sampler_) sampler_->stop();
  const uint64_t detach_start = now_ns();
  if (tracer_) tracer_->detach();
  if (launch_tracer_) launch_tracer_->detach();
  const double detach_ms = (now_ns() - detach_start) / 1e6;
  loads_.reset();
  if (tracer_) tracer_->consume();  // what was in flight when the probes went away
  if (sampler_) sampler_->consume();
  if (launch_tracer_) launch_tracer_->consume();
  return detach_ms;
}

void SystemSession::record_last_figures() {
  stats_.events_lost = tracer_ ? tracer_->events_lost() : 0;
  if (sampler_) stats_.samples_lost = sampler_->lost();
  if (diagnostics_.writing()) calibration_.record_through_recording(*writer_);
  flush_tables();
  writer_->set_thread_names(thread_names_->names());
  if (cuda_runtime_ && diagnostics_.writing()) {
    cuda_runtime_->launches_lost = launch_tracer_->lost();
    writer_->set_cuda_runtime(*cuda_runtime_);
  }
}

std::string SystemSession::stop_line_part() {
  std::string part;
  if (config_.sample_hz)
    part += "; " + std::to_string(samples_->recorded()) + " samples, " + std::to_string(stats_.samples_lost) + " lost";
  if (launch_tracer_)
    part += "; " + std::to_string(launches_->recorded()) + " CUDA launches, " + std::to_string(launch_tracer_->lost()) +
            " lost";
  return part + "; " + std::to_string(processes_.size()) + " processes seen, " + std::to_string(traced_processes_) +
         " traced";
}

}  // namespace

RecordOutcome run_system_session(const RecordConfig& config) { return SystemSession(config).run(); }

}  // namespace gpuprof
