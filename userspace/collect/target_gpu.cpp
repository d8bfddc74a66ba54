#include "collect/target_gpu.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "base/session_loop.h"
#include "python/python_runtime.h"
#include "record/cupti_shim_state.h"
#include "record/gpu_activity_names.h"
#include "symbols/elf_image.h"

namespace gpuprof {
namespace {

constexpr size_t kMaxLibcudarts = GP_MAX_RUNTIMES;  // copies of libcudart probed in one target

}  // namespace

std::optional<std::string> cupti_shim_next_to_gpuprof() {
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n <= 0) return std::nullopt;
  std::string path(exe, static_cast<size_t>(n));
  path = path.substr(0, path.rfind('/') + 1) + kCuptiShimFilePrefix + ".so";
  if (access(path.c_str(), R_OK) != 0) return std::nullopt;
  return path;
}

// `record -- CMD`: the CUDA driver of CMD loads the shim at cuInit from
// CUDA_INJECTION64_PATH (docs/cuda.md). A value the user set is
// theirs: kept, and said.
void inject_cupti_shim(Diagnostics& diagnostics) {
  if (const char* set = std::getenv("CUDA_INJECTION64_PATH")) {
    if (std::string_view(set).find(kCuptiShimFilePrefix) == std::string_view::npos)
      diagnostics.warn("CUDA_INJECTION64_PATH is already set (" + std::string(set) +
           "): gpuprof's CUPTI shim is not injected, no GPU times");
    return;
  }
  auto shim = cupti_shim_next_to_gpuprof();
  if (!shim) {
    diagnostics.warn(std::string(kCuptiShimFilePrefix) + ".so is not next to gpuprof: no GPU times");
    return;
  }
  setenv("CUDA_INJECTION64_PATH", shim->c_str(), 1);
}

bool TargetGpu::needs_libcudart() const {
  return config_.ops && libcudarts_.empty() && launch_error_.empty();
}

bool TargetGpu::looks_for_more_libcudarts() const {
  return config_.ops && !libcudarts_.empty() && libcudarts_.size() < kMaxLibcudarts;
}

// Kernel launches are traced with the ops: once the target maps a
// libcudart (at `import torch` in a CUDA build) and a libcuda (at the first
// CUDA call, or when Triton loads it), looked for every 100 ms (launch mode
// also stops the command when it maps them: `now`).
void TargetGpu::try_attach_launches(bool now) {
  if (!attached_) return;
  if (looks_for_more_libcudarts() && more_libcudarts_retry_.due(now)) attach_new_libcudarts();
  if ((!needs_libcudart() && !needs_libcuda()) || !launch_retry_.due(now)) return;
  if (needs_libcudart()) attach_new_libcudarts();
  if (needs_libcuda()) {
    if (auto libcuda = find_mapped_library(target_pid_, "libcuda.so"); libcuda || !libcuda.unreadable.empty()) {
      Result<void> attached = libcuda ? attach_launch_library(*libcuda, LaunchApi::driver) : Error(libcuda.unreadable);
      if (!attached) {
        driver_error_ = attached.error();
        diagnostics_.warn("no CUDA driver API launches: " + driver_error_);
      }
    }
  }
}

// Every libcudart the target maps gets the launch probes: a launch through
// a copy left unprobed would be seen only as a driver call, unnamed.
void TargetGpu::attach_new_libcudarts() {
  std::string unreadable;
  auto same = [](const MappedLibrary& a, const MappedLibrary& b) { return a.dev == b.dev && a.inode == b.inode; };
  for (const MappedLibrary& library : find_mapped_libraries(target_pid_, "libcudart", &unreadable)) {
    auto is = [&](const MappedLibrary& known) { return same(known, library); };
    if (std::any_of(libcudarts_.begin(), libcudarts_.end(), is) ||
        std::any_of(libcudarts_refused_.begin(), libcudarts_refused_.end(), is))
      continue;
    Result<void> attached = libcudarts_.size() == kMaxLibcudarts
                                ? Error("gpuprof probes at most " + std::to_string(kMaxLibcudarts) +
                                        " copies of libcudart")
                                : attach_launch_library(library, LaunchApi::runtime);
    if (attached) continue;
    const std::string& error = attached.error();
    libcudarts_refused_.push_back(library);
    if (libcudarts_.empty()) {
      launch_error_ = error;
      diagnostics_.warn("no CUDA launches: " + error);
      return;
    }
    diagnostics_.warn("no CUDA launches through " + library.path_in_target + ": " + error);
  }
  if (libcudarts_.empty() && !unreadable.empty()) {
    launch_error_ = unreadable;
    diagnostics_.warn("no CUDA launches: " + unreadable);
  }
}

Result<void> TargetGpu::attach_launch_library(const MappedLibrary& library, LaunchApi api) {
  ASSIGN_OR_RETURN(const LaunchSites sites, find_launch_sites(library.path_for_us, api));
  RETURN_IF_ERROR(ensure_launch_tracer());
  RETURN_IF_ERROR(launch_tracer_->attach(library.path_for_us, sites, target_pid_));
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
    const auto entry_points = static_cast<uint32_t>(sites.offsets.size());
    if (!cuda_runtime_) {
      cuda_runtime_ = CudaRuntimeInfo{library.path_in_target, entry_points, 0};
    } else {  // a second copy: the file's CUDA_RUNTIME names them all
      cuda_runtime_->libcudart_path += ", " + library.path_in_target;
      cuda_runtime_->entry_points += entry_points;
    }
    std::fprintf(stderr, "gpuprof: CUDA launches: %zu entry points in %s\n", sites.offsets.size(),
                 library.path_in_target.c_str());
  } else {
    driver_probed_ = true;
    std::fprintf(stderr, "gpuprof: CUDA driver API launches: %zu entry points in %s\n", sites.offsets.size(),
                 library.path_in_target.c_str());
  }
  return {};
}

Result<void> TargetGpu::ensure_launch_tracer() {
  if (launch_tracer_) return {};
  LaunchSinks sinks;
  sinks.launch = [this](const gp_launch_event& e) { on_launch(e); };
  sinks.correlation = [this](const gp_gpu_correlation& c) { on_gpu_correlation(c); };
  sinks.activity = [this](const gp_gpu_activity& a) { on_gpu_activity(a); };
  sinks.dropped = [this](uint64_t n) {
    if (cupti_shim_) cupti_shim_->records_dropped += n;
  };
  // --ring-buffer's size: CUPTI hands over a buffer of activities at a
  // time, thousands of records in a burst that can outrun a small ring
  // between two reads (docs/cuda.md).
  ASSIGN_OR_RETURN(launch_tracer_, LaunchTracer::load(config_.ring_buffer_bytes, std::move(sinks)));
  return {};
}

// The CUPTI shim (cupti_shim/) is loaded by the CUDA driver at cuInit, from
// CUDA_INJECTION64_PATH: looked for like libcudart.
Result<void> TargetGpu::attach_shim(const MappedLibrary& shim) {
  RETURN_IF_ERROR(ensure_launch_tracer());
  return launch_tracer_->attach_shim(shim.path_for_us, target_pid_);
}

void TargetGpu::try_attach_shim(bool now) {
  if (!attached_ || !needs_shim() || !shim_retry_.due(now)) return;
  auto shim = find_mapped_library(target_pid_, kCuptiShimFilePrefix);
  if (!shim && shim.unreadable.empty()) return;
  Result<void> attached = shim ? attach_shim(*shim) : Error(shim.unreadable);
  if (!attached) {
    shim_error_ = attached.error();
    diagnostics_.warn("no GPU times: " + shim_error_);
    return;
  }
  if (!kernel_symbolizer_) {
    kernel_symbolizer_ = std::make_unique<NativeSymbolizer>(target_pid_);
    kernel_symbolizer_->refresh_maps();
  }
  cupti_shim_ = CuptiShimInfo{shim->path_in_target, 0, 0, 0};
  // Stopped at the shim's mapping (`now`), its data is not mapped yet:
  // the loop reads the state later (the shim switches CUPTI on in
  // InitializeInjection: the probes are in before it runs). Otherwise it
  // is there to read.
  if (!now) wait_for_shim_switch();
  std::fprintf(stderr, "gpuprof: CUPTI shim probes in %s\n", shim->path_in_target.c_str());
}

// A dormant shim switches CUPTI on at its watcher's next look after the
// probes raised its semaphores (every 50 ms): waited for here, so that
// "tracing" is said once GPU times flow; what the job launched before is
// not seen (docs/cuda.md, "Dormant and active").
void TargetGpu::wait_for_shim_switch() {
  constexpr int kPollMs = 5, kMaxWaitMs = 1000;
  read_shim_state();
  for (int waited = 0; cupti_shim_->state == kCuptiShimDormant && waited < kMaxWaitMs && !child_exited_;
       waited += kPollMs) {
    usleep(kPollMs * 1000);
    read_shim_state();
  }
  if (cupti_shim_->state == kCuptiShimDormant)
    diagnostics_.warn("the CUPTI shim has not switched CUPTI on within " + std::to_string(kMaxWaitMs) +
                      " ms of the attach: GPU times begin when it does");
}

// gpuprof_cupti_state, which the shim sets in InitializeInjection (0 until
// the driver calls it) and its watcher moves as tracers come and go: read
// on every turn of the loop while the target lives (one 4-byte read), kept
// as last read once it is gone. Its address is taken only once the shim's
// data is mapped (find_variable_in_target: before, it holds the file's
// bytes, which read as any state); a value outside the known states is
// ignored all the same. Dormant read
// after what the shim did for this recording (tracing, taken, an error) is
// the shim switching off after gpuprof's detach, at the stop: ignored too.
void TargetGpu::read_shim_state() {
  if (!cupti_shim_ || child_exited_) return;
  if (!shim_state_address_)
    shim_state_address_ = find_variable_in_target(target_pid_, kCuptiShimFilePrefix, "gpuprof_cupti_state");
  int32_t state = 0;
  if (!shim_state_address_ || !read_target_memory(target_pid_, *shim_state_address_, &state, sizeof(state)) ||
      state < 0 || state > static_cast<int32_t>(kCuptiShimLastState))
    return;
  const uint32_t known = cupti_shim_->state;
  if (static_cast<uint32_t>(state) == kCuptiShimDormant && known != kCuptiShimNotInitialized &&
      known != kCuptiShimDormant)
    return;
  // The switches to and from the job's profiler, said as they come; once
  // given up, the recording reads as given up (shim_info_for_file). A shim
  // read as taken after it traced for this recording gave CUPTI up in
  // between (the watcher's asking again after state 7, read before 7 was).
  uint32_t now = static_cast<uint32_t>(state);
  if (now == kCuptiShimTaken && (known == kCuptiShimTracing || known == kCuptiShimYielded || gpu_records_seen_))
    now = kCuptiShimYielded;
  if (now == kCuptiShimYielded && known != kCuptiShimYielded) {
    shim_yielded_ = true;
    diagnostics_.warn("the job's own profiler (torch.profiler?) asked for CUPTI (seen at " + since_start() +
                      "): the CUPTI shim gave CUPTI up to it; no GPU times while it holds CUPTI (ops and launches go "
                      "on)");
  } else if (now == kCuptiShimTracing && known == kCuptiShimYielded) {
    diagnostics_.warn("the job's own profiler gave CUPTI back (seen at " + since_start() + "): GPU times again");
  }
  cupti_shim_->state = now;
}

void TargetGpu::on_gpu_correlation(const gp_gpu_correlation& c) {
  gpu_records_seen_ = true;
  if (stopping_ && c.correlation > last_correlation_) return;  // launched after the stop (stop_launches)
  last_correlation_ = std::max<uint64_t>(last_correlation_, c.correlation);
  if (!writer_ || !diagnostics_.writing() || !switcher_.recorded_at(c.ts_ns)) return;
  if (config_.schedule.mode != GP_SCHEDULE_OFF) {
    recorded_correlations_.insert(c.correlation);
    if (recorded_correlations_.size() > 65536) recorded_correlations_.erase(recorded_correlations_.begin());
  }
  thread_names_.saw(c.tid);
  GpuCorrelation correlation{c.ts_ns, c.correlation, c.tid, c.cbid, c.domain};
  config_.live_consumer().gpu_correlation(correlation);
  if (Result<void> written = writer_->append_gpu_correlations(&correlation, 1); !written)
    diagnostics_.write_failed(written.error());
}

// Activities are named as torch.profiler names them (gpu_activity_names.h).
// Kernel names come from CUPTI (mangled), demangled once per kernel:
// interned by the address of CUPTI's string (one per kernel); a name the
// probe had to cut is read again whole from the target.
uint32_t TargetGpu::gpu_activity_name_id(const gp_gpu_activity& a) {
  if (a.kind == static_cast<uint32_t>(GpuActivityKind::memcpy))
    return interner_.launch_name(memcpy_activity_name(a.bytes));
  if (a.kind != static_cast<uint32_t>(GpuActivityKind::kernel)) return interner_.launch_name(memset_activity_name(a.bytes));
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
  const uint32_t id = interner_.launch_name(name.empty() ? "[unnamed kernel]" : kernel_activity_name(name));
  if (a.name_ptr) name_of_cupti_string_.emplace(a.name_ptr, id);
  return id;
}

void TargetGpu::on_gpu_activity(const gp_gpu_activity& a) {
  gpu_records_seen_ = true;
  // The streams seen (the drain waits on each); the time of each record only
  // while draining. Records come in runs per stream: one lookup per run.
  const std::pair<uint32_t, uint32_t> key{a.device, a.stream};
  if (stopping_) {
    StreamDrain& stream = streams_[key];
    stream.last_record_ns = clock_ns(CLOCK_MONOTONIC);
    if (a.correlation > last_correlation_) {
      stream.past_stop = true;
      return;  // launched after the stop
    }
  } else if (key != last_stream_) {
    streams_.try_emplace(key);
    last_stream_ = key;
  }
  if (!writer_ || !diagnostics_.writing()) return;
  if (a.start_ns == 0 && a.end_ns == 0) return;  // CUPTI could not time it (the shim's contract)
  if (a.start_ns < record_start_ns_) {
    gpu_activities_before_start_++;
    return;
  }
  if (config_.schedule.mode != GP_SCHEDULE_OFF && !recorded_correlations_.count(a.correlation) &&
      !switcher_.recorded_at(a.start_ns))
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
  config_.live_consumer().gpu_activity(activity);
  if (!diagnostics_.writing()) return;
  if (Result<void> written = writer_->append_gpu_activities(&activity, 1); written)
    gpu_activities_recorded_++;
  else
    diagnostics_.write_failed(written.error());
}

void TargetGpu::on_launch(const gp_launch_event& event) {
  if (!writer_ || !diagnostics_.writing() || !switcher_.recorded_at(event.ts_ns)) return;
  thread_names_.saw(event.tid);
  launches_.record(event, 0, kernel_symbolizer_.get());
}

// The progress line's figures: GPU records while the shim traces, and the
// launch ring's losses (memory-mapped reads).
void TargetGpu::add_progress(ProgressCounters& counters) const {
  if (cupti_shim_) counters.gpu_records = gpu_activities_recorded_;
  if (launch_tracer_) counters.lost += launch_tracer_->lost() + launch_tracer_->gpu_records_lost();
}

// Only a tracing shim sends records: a target that exited before the loop
// read the state (a short command), or a shim that switched off before any
// read saw it on, still reads as tracing then.
CuptiShimInfo TargetGpu::shim_info_for_file() const {
  CuptiShimInfo shim = *cupti_shim_;
  if ((shim.state == kCuptiShimNotInitialized || shim.state == kCuptiShimDormant) && gpu_records_seen_)
    shim.state = kCuptiShimTracing;
  if (shim_yielded_) shim.state = kCuptiShimYielded;
  shim.events_lost = launch_tracer_->gpu_records_lost();
  return shim;
}

std::string TargetGpu::since_start() const {
  char text[32];
  std::snprintf(text, sizeof(text), "+%.1f s", double(clock_ns(CLOCK_MONOTONIC) - record_start_ns_) / 1e9);
  return text;
}

void TargetGpu::update_file_info() {
  if (cuda_runtime_) {
    CudaRuntimeInfo runtime = *cuda_runtime_;
    runtime.launches_lost = launch_tracer_->lost();
    writer_->set_cuda_runtime(runtime);
  }
  if (cupti_shim_) writer_->set_cupti_shim(shim_info_for_file());
}

void TargetGpu::finish() {
  if (cuda_runtime_) cuda_runtime_->launches_lost = launch_tracer_->lost();
  if (cupti_shim_) {
    read_shim_state();  // the driver may have initialized it after the attach
    *cupti_shim_ = shim_info_for_file();
    if (cupti_shim_->state == kCuptiShimYielded)
      std::fprintf(stderr, "gpuprof: warning: GPU times only until the job's own profiler took CUPTI: the CUPTI shim %s\n",
                   cupti_shim_state_text(cupti_shim_->state));
    else if (cupti_shim_->state != kCuptiShimTracing)
      std::fprintf(stderr, "gpuprof: warning: no GPU times: the CUPTI shim %s\n",
                   cupti_shim_state_text(cupti_shim_->state));
    else
      std::fprintf(stderr, "gpuprof: CUPTI shim: %s\n", cupti_shim_state_text(cupti_shim_->state));
  }
}

std::string TargetGpu::stop_line_part() const {
  std::string part;
  if (cuda_runtime_ || driver_probed_)
    part += "; " + std::to_string(launches_.recorded()) + " CUDA launches, " +
            std::to_string(launch_tracer_->lost()) + " lost";
  if (launch_tracer_ && launch_tracer_->driver_calls_from_runtime())
    part += " (" + std::to_string(launch_tracer_->driver_calls_from_runtime()) +
            " driver calls made by libcudart's own launches not counted again)";
  if (gpu_activities_before_start_)
    part += "; " + std::to_string(gpu_activities_before_start_) +
            " GPU activities that began before the recording left out";
  // GPU records the ring had no room for (the shim's, docs/cuda.md): said
  // here too, for top, whose tables hold no file to say it later.
  if (launch_tracer_ && launch_tracer_->gpu_records_lost())
    part += "; " + std::to_string(launch_tracer_->gpu_records_lost()) + " GPU records lost (ring buffer full)";
  return part;
}

}  // namespace gpuprof

namespace gpuprof {

void TargetGpu::stop_launches() {
  if (!launch_tracer_ || !cupti_shim_ || child_exited_) return;
  // The launches recorded so far, their correlations read: the stop is the
  // largest id among them (CUPTI numbers launches in order); later ones
  // are left out with their records.
  launch_tracer_->consume();
  stopping_ = true;
  launch_tracer_->drop_activities_after(std::max<uint64_t>(last_correlation_, 1));
}

void TargetGpu::drain_activities() {
  if (!stopping_ || !gpu_records_seen_) return;
  constexpr uint64_t kQuietNs = 300'000'000, kMaxNs = 3'000'000'000;
  const uint64_t start = clock_ns(CLOCK_MONOTONIC);
  launch_tracer_->detach_launches();
  for (auto& [key, stream] : streams_) stream = {start, false};
  // A stream is done when a record of a launch made after the stop came
  // on it (a stream runs its work in order, and CUPTI hands records over
  // in the order they end), or none came on it for 300 ms (three of
  // CUPTI's flush periods: it had nothing left).
  auto all_done = [&](uint64_t now) {
    return std::all_of(streams_.begin(), streams_.end(), [&](const auto& entry) {
      return entry.second.past_stop || now - entry.second.last_record_ns >= kQuietNs;
    });
  };
  for (;;) {
    launch_tracer_->consume();
    const uint64_t now = clock_ns(CLOCK_MONOTONIC);
    if (all_done(now) || now - start >= kMaxNs) break;
    struct timespec nap = {0, 10'000'000};
    nanosleep(&nap, nullptr);
  }
  drain_ms_ = (clock_ns(CLOCK_MONOTONIC) - start) / 1'000'000;
}

}  // namespace gpuprof
