// gpuprof_cupti.cpp: libgpuprof_cupti.so, the CUPTI injection library.
//
// The CUDA driver loads it at cuInit (CUDA_INJECTION64_PATH) and calls
// InitializeInjection (or gpuprof does, into a running job: record -p PID
// --inject-cupti). It turns what only CUPTI knows into USDT probes that
// gpuprof's BPF side attaches to (gpuprof_cupti_probes.h): the correlation
// id of each launch, on the launching thread, and the GPU activity records
// carrying the same id.
//
// It costs nothing while no gpuprof traces the job: InitializeInjection
// only finds libcupti and starts one watcher thread; CUPTI is not called at
// all (no subscriber, no callback, no activity kind) until a tracer raises
// one of the probes' semaphores. The watcher looks every kWatchPeriodMs:
// when a semaphore is up it switches CUPTI on (subscribe, launch callbacks,
// activity kinds); when all are down again it flushes CUPTI's buffers and
// switches everything off, so attach, detach, attach again each start
// clean. What a job launches between a tracer's attach and the watcher's
// next look is not seen (docs/cuda.md, "Dormant and active"); gpuprof waits
// for the switch before it says it is tracing. At its stop gpuprof drops
// the launch probe first: the watcher then flushes what CUPTI holds, whose
// records gpuprof still takes, and only then the activity probe.
//
// The job's profiler comes first. CUPTI has one subscription per process,
// and torch.profiler's Kineto asks for it once, when the job's first
// profile starts; refused, it does without CUDA activities for the rest of
// the process. So while the shim holds CUPTI it listens for that request:
// at switch on (and at each look after it, if a library was loaded since)
// it points the job's libraries' calls to cuptiSubscribe (and _v2) at
// subscribe_for_the_job (import_redirect.h), which, when CUPTI
// refuses the job because the shim holds it, switches the shim off and
// asks again for the job. The job's profile is then whole; gpuprof's GPU
// times stop there (state 7, which gpuprof reports), and the watcher asks
// CUPTI again every second for as long as the tracer stays (Kineto keeps
// the subscription unless TEARDOWN_CUPTI=1 makes it give CUPTI back).
//
// It runs inside someone else's process, called by a driver that was not
// built for C++ exceptions: every entry point catches everything, nothing
// exits or aborts, and it has no files or sockets. Its one thread (named
// gpuprof-cupti) blocks every signal, so that none meant for the job lands
// on it, and sleeps between looks; CUPTI's own worker thread delivers the
// buffers while it is on. libcupti is dlopened, not linked, so that a
// process without it still starts.
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <mutex>

#include <cupti.h>

#include "gpuprof_cupti_probes.h"
#include "import_redirect.h"

#define GPUPROF_EXPORT extern "C" __attribute__((visibility("default")))

extern "C" {
// In .data, not .bss: gpuprof reads it from outside while the loader maps
// the shim, and .bss that shares a page with .data shows the file's bytes
// there (garbage, once read as 3, "taken") until the loader zeroes it; in
// .data the file itself holds the 0 ("not initialized").
__attribute__((visibility("default"), section(".data"))) volatile int gpuprof_cupti_state =
    GPUPROF_CUPTI_NOT_INITIALIZED;
}

volatile unsigned short gpuprof_launch_semaphore GPUPROF_SEMAPHORE_ATTRS = 0;
volatile unsigned short gpuprof_activity_semaphore GPUPROF_SEMAPHORE_ATTRS = 0;
volatile unsigned short gpuprof_dropped_semaphore GPUPROF_SEMAPHORE_ATTRS = 0;

namespace {

// The cbid numbers are CUPTI's ABI (never renumbered) and gpuprof's BPF side
// and docs name them by number.
static_assert(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000 == 211);
static_assert(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000 == 214);
static_assert(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060 == 430);
static_assert(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060 == 431);
static_assert(CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000 == 311);
static_assert(CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000 == 312);
static_assert(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel == 307);
static_assert(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz == 442);
static_assert(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx == 652);
static_assert(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz == 653);
static_assert(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020 == 31);
static_assert(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020 == 41);
static_assert(CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020 == 49);
static_assert(CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020 == 51);
static_assert(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_ptds_v7000 == 215);
static_assert(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000 == 225);
static_assert(CUPTI_RUNTIME_TRACE_CBID_cudaMemset_ptds_v7000 == 233);
static_assert(CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_ptsz_v7000 == 235);
static_assert(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch == 514);
static_assert(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz == 515);

// Records are read as this header's versions (CUDA 13: Kernel10, Memcpy6,
// Memset4). A CUDA 12 libcupti writes Kernel9 and Memcpy5: the fields read
// here must sit at the same offsets in those.
#define GPUPROF_SAME_OFFSET(a, b, field) static_assert(offsetof(a, field) == offsetof(b, field))
GPUPROF_SAME_OFFSET(CUpti_ActivityKernel10, CUpti_ActivityKernel9, start);
GPUPROF_SAME_OFFSET(CUpti_ActivityKernel10, CUpti_ActivityKernel9, end);
GPUPROF_SAME_OFFSET(CUpti_ActivityKernel10, CUpti_ActivityKernel9, deviceId);
GPUPROF_SAME_OFFSET(CUpti_ActivityKernel10, CUpti_ActivityKernel9, streamId);
GPUPROF_SAME_OFFSET(CUpti_ActivityKernel10, CUpti_ActivityKernel9, correlationId);
GPUPROF_SAME_OFFSET(CUpti_ActivityKernel10, CUpti_ActivityKernel9, name);
GPUPROF_SAME_OFFSET(CUpti_ActivityMemcpy6, CUpti_ActivityMemcpy5, copyKind);
GPUPROF_SAME_OFFSET(CUpti_ActivityMemcpy6, CUpti_ActivityMemcpy5, srcKind);
GPUPROF_SAME_OFFSET(CUpti_ActivityMemcpy6, CUpti_ActivityMemcpy5, dstKind);
GPUPROF_SAME_OFFSET(CUpti_ActivityMemcpy6, CUpti_ActivityMemcpy5, bytes);
GPUPROF_SAME_OFFSET(CUpti_ActivityMemcpy6, CUpti_ActivityMemcpy5, start);
GPUPROF_SAME_OFFSET(CUpti_ActivityMemcpy6, CUpti_ActivityMemcpy5, end);
GPUPROF_SAME_OFFSET(CUpti_ActivityMemcpy6, CUpti_ActivityMemcpy5, deviceId);
GPUPROF_SAME_OFFSET(CUpti_ActivityMemcpy6, CUpti_ActivityMemcpy5, streamId);
GPUPROF_SAME_OFFSET(CUpti_ActivityMemcpy6, CUpti_ActivityMemcpy5, correlationId);
#undef GPUPROF_SAME_OFFSET

struct LaunchCallback {
  CUpti_CallbackDomain domain;
  CUpti_CallbackId cbid;
};

constexpr LaunchCallback kLaunchCallbacks[] = {
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000},
    // Copies and fills: their memcpy/memset records carry the id of the
    // call, which ties them to the op that made it (aten::copy_, fill_).
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_ptds_v7000},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemset_ptds_v7000},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_ptsz_v7000},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz},
};

constexpr CUpti_ActivityKind kActivityKinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
    CUPTI_ACTIVITY_KIND_MEMCPY,
    CUPTI_ACTIVITY_KIND_MEMSET,
};

// About 4800 kernel records (CUpti_ActivityKernel10 is 216 bytes).
constexpr size_t kBufferBytes = 1 << 20;
constexpr uint32_t kFlushPeriodMs = 100;
// How often the watcher looks at the semaphores: what a job launches in
// the first look's worth of time after an attach is not seen, and each look
// is one wakeup of a sleeping thread (20 a second: nothing a job notices).
constexpr uint32_t kWatchPeriodMs = 50;
// While another subscriber holds CUPTI (the job's torch.profiler), the
// watcher asks again this often (in looks: once a second), so that gpuprof
// gets CUPTI once the job's profiler has given it back.
constexpr uint32_t kTakenRetryLooks = 20;
constexpr const char* kLibcuptiNames[] = {"libcupti.so.13", "libcupti.so.12", "libcupti.so"};
constexpr const char* kNoTimes = "no GPU kernel times from gpuprof";

// Filled by InitializeInjection before the watcher starts and never
// changed after, so the callbacks on other threads read them without locks.
struct CuptiApi {
  decltype(&cuptiGetResultString) get_result_string = nullptr;
  decltype(&cuptiSubscribe) subscribe = nullptr;
  decltype(&cuptiEnableCallback) enable_callback = nullptr;
  decltype(&cuptiActivityRegisterTimestampCallback) register_timestamp_callback = nullptr;
  decltype(&cuptiActivityRegisterCallbacks) register_callbacks = nullptr;
  decltype(&cuptiActivityEnable) activity_enable = nullptr;
  decltype(&cuptiActivityGetNextRecord) get_next_record = nullptr;
  decltype(&cuptiActivityGetNumDroppedRecords) get_num_dropped = nullptr;
  // Switching off needs these (every CUPTI since CUDA 5.5 has them).
  decltype(&cuptiActivityFlushAll) flush_all = nullptr;
  decltype(&cuptiActivityDisable) activity_disable = nullptr;
  decltype(&cuptiUnsubscribe) unsubscribe = nullptr;
  // Optional: without them the shim still traces.
  decltype(&cuptiActivityFlushPeriod) flush_period = nullptr;
  decltype(&cuptiSubscribe_v2) subscribe_v2 = nullptr;  // CUPTI 12.6 on; the job's profiler may use it
};

CuptiApi g_api;
const char* g_libcupti_path = "?";
pid_t g_pid = 0;

// Switching CUPTI on and off: the watcher's looks, InitializeInjection's
// first look, the exit handler and the job's cuptiSubscribe (which waits
// for it at most kJobWaitForSwitch: a job's call must never hang on the
// shim), one at a time under g_switch_mu.
std::timed_mutex g_switch_mu;
constexpr std::chrono::seconds kJobWaitForSwitch{2};
CUpti_SubscriberHandle g_subscriber = nullptr;
bool g_on = false;                 // subscribed, callbacks and activity kinds enabled
bool g_failed_this_attach = false;  // a CUPTI error: not asked again until the tracer leaves
bool g_exiting = false;            // exit() has begun: CUPTI is not touched again
uint32_t g_looks_while_taken = 0;
unsigned long long g_objects_at_listen = 0;  // objects_loaded() when the job's libraries were last redirected

// Whether CUPTI's records still come to the shim (the job's torch.profiler
// registers its own buffer callbacks when it starts a profile, and the
// activity kinds are the whole process's): launches the shim's callbacks
// saw, buffers with records CUPTI handed it, and how many launches it had
// seen when the last such buffer came.
std::atomic<uint64_t> g_launches_seen{0};
std::atomic<uint64_t> g_buffers_with_records{0};
std::atomic<uint64_t> g_launches_at_last_buffer{0};

// The correlation id of the runtime launch this thread is inside: the driver
// call that the runtime makes inside it carries the same id, and one probe
// per id is enough.
thread_local uint32_t t_runtime_correlation = 0;

__attribute__((format(printf, 1, 2))) void log_line(const char* format, ...) {
  char line[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(line, sizeof(line), format, args);
  va_end(args);
  std::fprintf(stderr, "gpuprof-cupti: %s\n", line);  // one write per line
}

const char* result_text(CUptiResult result) {
  const char* text = nullptr;
  if (g_api.get_result_string && g_api.get_result_string(result, &text) == CUPTI_SUCCESS && text) return text;
  return "unknown CUPTI error";
}

uint64_t CUPTIAPI monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1'000'000'000u + uint64_t(ts.tv_nsec);
}

// Called only while the shim is switched on (a tracer is attached).
void CUPTIAPI on_api_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  try {
    const auto* info = static_cast<const CUpti_CallbackData*>(data);
    if (!info || info->callbackSite != CUPTI_API_ENTER) return;
    const uint32_t correlation = info->correlationId;
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
      t_runtime_correlation = correlation;
    } else if (correlation == t_runtime_correlation) {
      return;  // the runtime launch around this driver call fired already
    }
    g_launches_seen.fetch_add(1, std::memory_order_relaxed);
    if (GPUPROF_LAUNCH_ENABLED()) GPUPROF_LAUNCH(correlation, domain, cbid);
  } catch (...) {
  }
}

void CUPTIAPI on_buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  // malloc's 16-byte alignment covers CUPTI's 8. On failure CUPTI drops
  // records and counts them (gpuprof:dropped).
  *buffer = static_cast<uint8_t*>(std::malloc(kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;  // as many as fit
}

void fire_activity_probes(uint8_t* buffer, size_t valid_bytes) {
  CUpti_Activity* record = nullptr;
  // Stops at CUPTI_ERROR_MAX_LIMIT_REACHED (the end) or on a record CUPTI
  // calls invalid; either way the rest of the buffer is unreadable.
  while (g_api.get_next_record(buffer, valid_bytes, &record) == CUPTI_SUCCESS) {
    switch (record->kind) {
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      case CUPTI_ACTIVITY_KIND_KERNEL: {
        const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
        GPUPROF_ACTIVITY(GPUPROF_ACTIVITY_KERNEL, k->correlationId, k->start, k->end, k->deviceId, k->streamId,
                         0, k->name);
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
        GPUPROF_ACTIVITY(GPUPROF_ACTIVITY_MEMCPY, m->correlationId, m->start, m->end, m->deviceId, m->streamId,
                         gpuprof_pack_memcpy(m->bytes, m->copyKind, m->srcKind, m->dstKind), nullptr);
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMSET: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
        GPUPROF_ACTIVITY(GPUPROF_ACTIVITY_MEMSET, m->correlationId, m->start, m->end, m->deviceId, m->streamId,
                         gpuprof_pack_memset(m->bytes, m->memoryKind), nullptr);
        break;
      }
      default:
        break;
    }
  }
}

void CUPTIAPI on_buffer_completed(CUcontext context, uint32_t stream, uint8_t* buffer, size_t, size_t valid_bytes) {
  try {
    if (buffer && valid_bytes) {
      g_launches_at_last_buffer.store(g_launches_seen.load());
      g_buffers_with_records.fetch_add(1);
    }
    if (buffer && GPUPROF_ACTIVITY_ENABLED()) fire_activity_probes(buffer, valid_bytes);
    // Asked even with no tracer: the count resets on each call, so a tracer
    // that attaches later sees only its own losses.
    size_t dropped = 0;
    if (g_api.get_num_dropped(context, stream, &dropped) == CUPTI_SUCCESS && dropped && GPUPROF_DROPPED_ENABLED())
      GPUPROF_DROPPED(dropped);
  } catch (...) {
  }
  std::free(buffer);
}

// Prefer a libcupti the process already has (torch links one): a second
// copy beside it would be a second CUPTI in one process.
void* open_libcupti(const char** tried) {
  if (const char* path = std::getenv("GPUPROF_CUPTI_LIBRARY"); path && *path) {
    *tried = path;
    return dlopen(path, RTLD_NOW | RTLD_LOCAL);
  }
  *tried = "libcupti.so.13, libcupti.so.12, libcupti.so";
  for (const char* name : kLibcuptiNames)
    if (void* lib = dlopen(name, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD)) return lib;
  for (const char* name : kLibcuptiNames)
    if (void* lib = dlopen(name, RTLD_NOW | RTLD_LOCAL)) return lib;
  return nullptr;
}

const char* library_path(void* lib) {
  link_map* map = nullptr;
  if (dlinfo(lib, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name && *map->l_name) return map->l_name;
  return "?";
}

template <typename F>
bool resolve(void* lib, const char* name, F* out, const char** missing) {
  *out = reinterpret_cast<F>(dlsym(lib, name));
  if (!*out && missing && !*missing) *missing = name;
  return *out != nullptr;
}

bool resolve_api(void* lib, const char** missing) {
  *missing = nullptr;
  resolve(lib, "cuptiGetResultString", &g_api.get_result_string, missing);
  resolve(lib, "cuptiSubscribe", &g_api.subscribe, missing);
  resolve(lib, "cuptiEnableCallback", &g_api.enable_callback, missing);
  resolve(lib, "cuptiActivityRegisterTimestampCallback", &g_api.register_timestamp_callback, missing);
  resolve(lib, "cuptiActivityRegisterCallbacks", &g_api.register_callbacks, missing);
  resolve(lib, "cuptiActivityEnable", &g_api.activity_enable, missing);
  resolve(lib, "cuptiActivityGetNextRecord", &g_api.get_next_record, missing);
  resolve(lib, "cuptiActivityGetNumDroppedRecords", &g_api.get_num_dropped, missing);
  resolve(lib, "cuptiActivityFlushAll", &g_api.flush_all, missing);
  resolve(lib, "cuptiActivityDisable", &g_api.activity_disable, missing);
  resolve(lib, "cuptiUnsubscribe", &g_api.unsubscribe, missing);
  resolve(lib, "cuptiActivityFlushPeriod", &g_api.flush_period, nullptr);
  resolve(lib, "cuptiSubscribe_v2", &g_api.subscribe_v2, nullptr);
  return *missing == nullptr;
}

// After a failure past cuptiSubscribe: give CUPTI back, so that
// torch.profiler can still have it.
void release_cupti(size_t kinds_enabled) {
  for (size_t i = 0; i < kinds_enabled; ++i) g_api.activity_disable(kActivityKinds[i]);
  if (g_subscriber) g_api.unsubscribe(g_subscriber);
  g_subscriber = nullptr;
}

int fail_cupti(const char* call, CUptiResult result, size_t kinds_enabled) {
  log_line("%s failed: %s (%d): %s", call, result_text(result), int(result), kNoTimes);
  release_cupti(kinds_enabled);
  return GPUPROF_CUPTI_ERROR;
}

// A tracer holds one of the probes' semaphores up (the kernel counts the
// uprobes attached to each: several gpuprof sessions share them).
bool tracer_attached() {
  return gpuprof_launch_semaphore != 0 || gpuprof_activity_semaphore != 0 || gpuprof_dropped_semaphore != 0;
}

void listen_for_the_jobs_profiler();

// Subscribes, enables the launch callbacks and the activity kinds; returns
// the state to publish. On any failure CUPTI is given back whole.
int switch_on_locked() {
  // Before subscribing: from the moment the shim holds CUPTI, the job's
  // profiler asking for it must reach subscribe_for_the_job.
  listen_for_the_jobs_profiler();
  // Subscribe first: if another subscriber holds CUPTI, its activity
  // callbacks must stay untouched.
  CUptiResult r = g_api.subscribe(&g_subscriber, on_api_callback, nullptr);
  if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    g_subscriber = nullptr;
    // Once per attach, not once per retry; not after giving CUPTI up to the
    // job, which said why already.
    if (gpuprof_cupti_state != GPUPROF_CUPTI_TAKEN && gpuprof_cupti_state != GPUPROF_CUPTI_YIELDED)
      log_line("CUPTI is taken by another subscriber (torch.profiler?): %s", kNoTimes);
    return GPUPROF_CUPTI_TAKEN;
  }
  if (r != CUPTI_SUCCESS) {
    g_subscriber = nullptr;
    return fail_cupti("cuptiSubscribe", r, 0);
  }
  for (const LaunchCallback& cb : kLaunchCallbacks) {
    r = g_api.enable_callback(1, g_subscriber, cb.domain, cb.cbid);
    if (r != CUPTI_SUCCESS) return fail_cupti("cuptiEnableCallback", r, 0);
  }
  // Before any activity kind: CUPTI's default clock is CLOCK_REALTIME, and
  // gpuprof compares these times with bpf_ktime_get_ns() (CLOCK_MONOTONIC).
  r = g_api.register_timestamp_callback(monotonic_ns);
  if (r != CUPTI_SUCCESS) return fail_cupti("cuptiActivityRegisterTimestampCallback", r, 0);
  // Again at every switch on: the job's torch.profiler registers its own
  // when it starts, and CUPTI keeps only the last pair.
  r = g_api.register_callbacks(on_buffer_requested, on_buffer_completed);
  if (r != CUPTI_SUCCESS) return fail_cupti("cuptiActivityRegisterCallbacks", r, 0);
  for (size_t i = 0; i < std::size(kActivityKinds); ++i) {
    r = g_api.activity_enable(kActivityKinds[i]);
    if (r != CUPTI_SUCCESS) return fail_cupti("cuptiActivityEnable", r, i);
  }
  // CUPTI's worker thread then hands buffers over every 100 ms instead of
  // when its heuristics say so.
  if (!g_api.flush_period)
    log_line("libcupti %s has no cuptiActivityFlushPeriod: GPU records come when CUPTI chooses", g_libcupti_path);
  else if ((r = g_api.flush_period(kFlushPeriodMs)) != CUPTI_SUCCESS)
    log_line("cuptiActivityFlushPeriod failed: %s (%d): GPU records come when CUPTI chooses", result_text(r), int(r));
  g_launches_at_last_buffer.store(g_launches_seen.load());
  g_on = true;
  log_line("tracing kernels, memcpy and memset (libcupti: %s)", g_libcupti_path);
  return GPUPROF_CUPTI_TRACING;
}

// Whether CUPTI's records still come to the shim: a flush hands CUPTI's
// finished buffers to whoever registered buffer callbacks last. Yes if no
// launch was seen since the last buffer that came here (nothing says
// otherwise), or if a buffer comes during a flush or within 100 ms after it
// (kernels still running at the first flush). No if launches were seen and
// nothing came: the job's torch.profiler registered its buffer callbacks
// meanwhile (it may be mid-profile), or turned the kinds off at the end of
// its profile.
bool records_still_ours() {
  const uint64_t buffers_before = g_buffers_with_records.load();
  const bool launched_since = g_launches_seen.load() != g_launches_at_last_buffer.load();
  g_api.flush_all(0);
  if (!launched_since || g_buffers_with_records.load() != buffers_before) return true;
  const timespec wait{0, 100'000'000};
  nanosleep(&wait, nullptr);
  g_api.flush_all(0);
  return g_buffers_with_records.load() != buffers_before;
}

// The tracer is gone: no new records (kinds off), the ones CUPTI still
// holds handed back now and freed unread (the semaphores are down), the
// launch callbacks gone with the subscription. Unless the records no longer come here: then the job's
// torch.profiler owns them, maybe mid-profile, and its kinds stay as they
// are (turning them off would cut its profile). Errors change nothing: a
// CUPTI that the job's profiler finalized meanwhile has nothing left of ours.
// Returns whether the records were still the shim's.
bool release_locked() {
  const bool ours = records_still_ours();
  if (ours) {
    for (CUpti_ActivityKind kind : kActivityKinds) g_api.activity_disable(kind);
    g_api.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  }
  g_api.unsubscribe(g_subscriber);
  g_subscriber = nullptr;
  g_on = false;
  return ours;
}

void switch_off_locked() {
  const bool ours = release_locked();
  log_line("tracer gone: CUPTI switched off%s, dormant until gpuprof attaches again",
           ours ? "" : " (its records went to another reader, the job's torch.profiler?: its activity kinds left as they are)");
}

// The job asked CUPTI for the subscription and CUPTI refused: if the shim
// is the one holding it, the shim lets go (its records so far flushed to
// the tracer) and says so. False if the shim does not hold CUPTI (someone
// else does: the job gets CUPTI's answer) or the switch stayed busy.
bool give_cupti_to_the_job() {
  std::unique_lock lock(g_switch_mu, std::defer_lock);
  if (!lock.try_lock_for(kJobWaitForSwitch) || g_exiting || !g_on) return false;
  release_locked();
  g_looks_while_taken = 0;
  gpuprof_cupti_state = GPUPROF_CUPTI_YIELDED;
  log_line("the job's own profiler (torch.profiler?) asked for CUPTI: given up to it, %s while it holds CUPTI",
           kNoTimes);
  return true;
}

// What the job's calls to cuptiSubscribe and cuptiSubscribe_v2 reach while
// the shim listens (listen_for_the_jobs_profiler): CUPTI's own answer,
// unless the shim was in the job's way.
CUptiResult CUPTIAPI subscribe_for_the_job(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback,
                                           void* userdata) {
  CUptiResult r = g_api.subscribe(subscriber, callback, userdata);
  try {
    if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED && give_cupti_to_the_job())
      r = g_api.subscribe(subscriber, callback, userdata);
  } catch (...) {
  }
  return r;
}

CUptiResult CUPTIAPI subscribe_v2_for_the_job(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback,
                                              void* userdata, CUpti_SubscriberParams* params) {
  CUptiResult r = g_api.subscribe_v2(subscriber, callback, userdata, params);
  try {
    if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED && give_cupti_to_the_job())
      r = g_api.subscribe_v2(subscriber, callback, userdata, params);
  } catch (...) {
  }
  return r;
}

// At every switch on (libraries loaded since the last are reached too;
// slots already redirected are left alone). libcupti's own calls and the
// shim's (through g_api, found with dlsym) are not redirected.
void listen_for_the_jobs_profiler() {
  g_objects_at_listen = gpuprof_shim::objects_loaded();
  const void* libcupti = reinterpret_cast<const void*>(g_api.subscribe);
  const void* shim = reinterpret_cast<const void*>(&subscribe_for_the_job);
  gpuprof_shim::redirect_imports("cuptiSubscribe", reinterpret_cast<void*>(&subscribe_for_the_job), libcupti, shim);
  if (g_api.subscribe_v2)
    gpuprof_shim::redirect_imports("cuptiSubscribe_v2", reinterpret_cast<void*>(&subscribe_v2_for_the_job), libcupti,
                                   shim);
}

// gpuprof stopping while the job runs on: its launch probe goes first and
// its activity probe stays for the records of the launches made before
// (TargetGpu::drain_activities); those already done are handed over now
// instead of at CUPTI's next period.
bool g_draining_flushed = false;

// One look at the semaphores: switch as they say, publish the state.
void look_locked() {
  if (tracer_attached()) {
    if (g_on && gpuprof_launch_semaphore == 0 && gpuprof_activity_semaphore != 0) {
      if (!g_draining_flushed) g_api.flush_all(0);
      g_draining_flushed = true;
      return;
    }
    g_draining_flushed = false;
    // A library loaded since the switch on may call cuptiSubscribe too.
    if (g_on && gpuprof_shim::objects_loaded() != g_objects_at_listen) listen_for_the_jobs_profiler();
    if (g_on || g_failed_this_attach) return;
    const bool waiting = gpuprof_cupti_state == GPUPROF_CUPTI_TAKEN || gpuprof_cupti_state == GPUPROF_CUPTI_YIELDED;
    if (waiting && ++g_looks_while_taken < kTakenRetryLooks) return;
    g_looks_while_taken = 0;
    int state = switch_on_locked();
    g_failed_this_attach = state == GPUPROF_CUPTI_ERROR;
    // Still the job's profiler's: it keeps saying why.
    if (state == GPUPROF_CUPTI_TAKEN && gpuprof_cupti_state == GPUPROF_CUPTI_YIELDED) state = GPUPROF_CUPTI_YIELDED;
    gpuprof_cupti_state = state;
    return;
  }
  if (g_on) switch_off_locked();
  g_draining_flushed = false;
  g_failed_this_attach = false;
  g_looks_while_taken = 0;
  gpuprof_cupti_state = GPUPROF_CUPTI_DORMANT;
}

void* watch(void*) {
  for (;;) {
    const timespec period{0, long(kWatchPeriodMs) * 1'000'000};
    nanosleep(&period, nullptr);  // no signal reaches this thread: it sleeps it all
    try {
      std::lock_guard lock(g_switch_mu);
      if (g_exiting) return nullptr;
      look_locked();
    } catch (...) {
    }
  }
}

// The watcher starts with every signal blocked (it inherits the mask of
// the thread that creates it): a SIGINT or SIGTERM for the job must land
// on one of the job's threads, and CUDA's callers may have handlers that
// expect their own threads.
bool start_watcher() {
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_t thread;
  const int err = pthread_create(&thread, &attr, watch, nullptr);
  pthread_attr_destroy(&attr);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (err != 0) {
    log_line("cannot start its watcher thread (error %d): %s", err, kNoTimes);
    return false;
  }
  pthread_setname_np(thread, "gpuprof-cupti");
  return true;
}

// CUPTI's own advice: a forced flush at exit hands over the records still
// in its buffers (the last 100 ms or more). Only while a tracer listens,
// and not in a forked child, whose CUDA state is not its own. The watcher
// touches CUPTI no more after this (libcupti's destructors run next).
void at_exit() {
  // A forked child first: it has no watcher, and the lock may have been
  // held by the parent's watcher when it forked (taking it would hang).
  if (getpid() != g_pid) return;
  try {
    std::lock_guard lock(g_switch_mu);
    g_exiting = true;
    if (!g_on || !(GPUPROF_ACTIVITY_ENABLED() || GPUPROF_DROPPED_ENABLED())) return;
    g_api.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  } catch (...) {
  }
}

// Finds libcupti and its functions; calls none of them. Returns the state
// to publish: GPUPROF_CUPTI_DORMANT, or why the shim will never trace.
int load_cupti() {
  if (const char* flag = std::getenv("GPUPROF_CUPTI"); flag && flag[0] == '0' && flag[1] == 0) {
    log_line("disabled by GPUPROF_CUPTI=0: %s", kNoTimes);
    return GPUPROF_CUPTI_DISABLED;
  }
  const char* tried = nullptr;
  void* lib = open_libcupti(&tried);
  if (!lib) {
    const char* why = dlerror();
    log_line("libcupti not found (tried %s: %s); install CUPTI or set GPUPROF_CUPTI_LIBRARY=/path/to/libcupti.so: %s",
             tried, why ? why : "?", kNoTimes);
    return GPUPROF_CUPTI_NO_LIBCUPTI;
  }
  // libcupti stays loaded on every path: closing it could run its
  // destructors under code that still holds its pointers.
  g_libcupti_path = library_path(lib);
  const char* missing = nullptr;
  if (!resolve_api(lib, &missing)) {
    log_line("libcupti %s has no %s (too old?): %s", g_libcupti_path, missing, kNoTimes);
    return GPUPROF_CUPTI_NO_LIBCUPTI;
  }
  return GPUPROF_CUPTI_DORMANT;
}

// Publishes the state before it returns, under g_switch_mu once the
// watcher may run (it could publish a newer one right after).
void initialize() {
  const int loaded = load_cupti();
  if (loaded != GPUPROF_CUPTI_DORMANT) {
    gpuprof_cupti_state = loaded;  // no watcher: nothing will change it
    return;
  }
  g_pid = getpid();
  std::atexit(at_exit);
  std::lock_guard lock(g_switch_mu);
  // A tracer may be attached already: gpuprof record -- CMD attaches when
  // the driver maps the shim, before it calls this; --inject-cupti attaches
  // before it calls this. Then CUPTI goes on now, before any launch.
  gpuprof_cupti_state = GPUPROF_CUPTI_DORMANT;
  look_locked();
  if (!start_watcher()) {
    if (g_on) switch_off_locked();
    gpuprof_cupti_state = GPUPROF_CUPTI_ERROR;
    return;
  }
  if (!g_on && gpuprof_cupti_state == GPUPROF_CUPTI_DORMANT)
    log_line("dormant until gpuprof attaches (libcupti: %s)", g_libcupti_path);
}

}  // namespace

GPUPROF_EXPORT int InitializeInjection(void) {
  // The driver calls this once per process, gpuprof --inject-cupti at most
  // once more (from any thread, CUDA running): a second call changes
  // nothing. The state is published before the first call returns.
  static std::atomic<bool> called{false};
  if (called.exchange(true)) return 1;
  try {
    initialize();
  } catch (...) {
    if (gpuprof_cupti_state == GPUPROF_CUPTI_NOT_INITIALIZED) gpuprof_cupti_state = GPUPROF_CUPTI_ERROR;
    std::fputs("gpuprof-cupti: internal error: no GPU kernel times from gpuprof\n", stderr);
  }
  // 1 on every path: a failure here must not become the application's.
  return 1;
}
