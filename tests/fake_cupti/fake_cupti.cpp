// fake_cupti.cpp: a stand-in libcupti.so.13 for testing the CUPTI shim
// without a GPU. See fake_cupti_hooks.h for what it does and how tests
// drive it.
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include <cupti.h>

#include "fake_cupti_hooks.h"

namespace {

struct Callback {
  uint32_t domain;
  uint32_t cbid;
};

// All state behind one lock, never held while calling into the client (its
// buffer callback calls cuptiActivityGetNextRecord and friends).
std::mutex g_mu;
bool g_subscribed = false;
CUpti_CallbackFunc g_callback = nullptr;
void* g_userdata = nullptr;
std::vector<Callback> g_enabled_callbacks;
std::vector<uint32_t> g_enabled_kinds;
CUpti_BuffersCallbackRequestFunc g_buffer_requested = nullptr;
CUpti_BuffersCallbackCompleteFunc g_buffer_completed = nullptr;
CUpti_TimestampCallbackFunc g_timestamp = nullptr;
uint32_t g_flush_period_ms = 0;
uint64_t g_dropped = 0;
std::vector<std::vector<uint8_t>> g_queue;  // records in their real layout
std::unordered_set<std::string> g_names;    // nodes never move: c_str() lives as long as the process
std::string g_call_log;
std::atomic<uint64_t> g_next_correlation{1};
std::atomic<uint64_t> g_records_walked{0};
std::string g_subscriber_name;  // cuptiSubscribe_v2's subscriberName ("" for cuptiSubscribe)
char g_subscriber_storage;  // CUpti_SubscriberHandle is opaque: any unique address

void log_call(const std::string& call) {
  std::lock_guard lock(g_mu);
  if (!g_call_log.empty()) g_call_log += ' ';
  g_call_log += call;
}

bool forced_failure(const char* function) {
  const char* fail = std::getenv("FAKE_CUPTI_FAIL");
  return fail && std::strcmp(fail, function) == 0;
}

bool callback_enabled_locked(uint32_t domain, uint32_t cbid) {
  return std::any_of(g_enabled_callbacks.begin(), g_enabled_callbacks.end(),
                     [&](const Callback& c) { return c.domain == domain && c.cbid == cbid; });
}

bool kind_enabled_locked(uint32_t kind) {
  return std::find(g_enabled_kinds.begin(), g_enabled_kinds.end(), kind) != g_enabled_kinds.end();
}

size_t record_size(CUpti_ActivityKind kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return sizeof(CUpti_ActivityKernel10);
    case CUPTI_ACTIVITY_KIND_MEMCPY: return sizeof(CUpti_ActivityMemcpy6);
    case CUPTI_ACTIVITY_KIND_MEMSET: return sizeof(CUpti_ActivityMemset4);
    default: return 0;
  }
}

// Without a registered callback CUPTI stamps CLOCK_REALTIME.
uint64_t now_ns() {
  CUpti_TimestampCallbackFunc timestamp;
  {
    std::lock_guard lock(g_mu);
    timestamp = g_timestamp;
  }
  if (timestamp) return timestamp();
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return uint64_t(ts.tv_sec) * 1'000'000'000u + uint64_t(ts.tv_nsec);
}

template <typename Record>
void queue_record(const Record& record) {
  std::vector<uint8_t> bytes(sizeof(Record));
  std::memcpy(bytes.data(), &record, sizeof(Record));
  std::lock_guard lock(g_mu);
  g_queue.push_back(std::move(bytes));
}

// A stream runs its work in order: the next record on (device, stream)
// starts when the previous one ended, or now if that is later.
uint64_t stream_start_ns(uint32_t device, uint32_t stream, uint64_t duration_ns) {
  static std::map<std::pair<uint32_t, uint32_t>, uint64_t> busy_until;
  const uint64_t now = now_ns();
  std::lock_guard lock(g_mu);
  uint64_t& until = busy_until[{device, stream}];
  const uint64_t start = std::max(now, until);
  until = start + duration_ns;
  return start;
}

void queue_kernel(uint64_t correlation_id, const char* name, uint64_t duration_ns, uint32_t device,
                  uint32_t stream) {
  {
    std::lock_guard lock(g_mu);
    if (!kind_enabled_locked(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)) return;
  }
  CUpti_ActivityKernel10 k{};
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = stream_start_ns(device, stream, duration_ns);
  k.end = k.start + duration_ns;
  k.completed = k.end;
  k.deviceId = device;
  k.contextId = 1;
  k.streamId = stream;
  k.gridX = k.gridY = k.gridZ = 1;
  k.blockX = 32;
  k.blockY = k.blockZ = 1;
  k.correlationId = uint32_t(correlation_id);
  {
    std::lock_guard lock(g_mu);
    k.name = g_names.insert(name ? name : "").first->c_str();
  }
  queue_record(k);
}

bool is_graph_launch(uint32_t domain, uint32_t cbid) {
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API)
    return cbid == CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000 ||
           cbid == CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000;
  return cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch || cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz;
}

const char* function_name(uint32_t domain, uint32_t cbid) {
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    switch (cbid) {
      case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000: return "cudaLaunchKernel";
      case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000: return "cudaLaunchKernel_ptsz";
      case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060: return "cudaLaunchKernelExC";
      case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060: return "cudaLaunchKernelExC_ptsz";
      case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000: return "cudaGraphLaunch";
      case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000: return "cudaGraphLaunch_ptsz";
    }
  } else if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
    switch (cbid) {
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel: return "cuLaunchKernel";
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz: return "cuLaunchKernel_ptsz";
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx: return "cuLaunchKernelEx";
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz: return "cuLaunchKernelEx_ptsz";
      case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch: return "cuGraphLaunch";
      case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz: return "cuGraphLaunch_ptsz";
    }
  }
  return "cudaSomethingElse";
}

void call_subscriber(uint32_t domain, uint32_t cbid, CUpti_ApiCallbackSite site, uint32_t correlation_id,
                     const char* symbol) {
  CUpti_CallbackFunc callback;
  void* userdata;
  {
    std::lock_guard lock(g_mu);
    if (!g_subscribed || !g_callback || !callback_enabled_locked(domain, cbid)) return;
    callback = g_callback;
    userdata = g_userdata;
  }
  CUpti_CallbackData data{};
  data.callbackSite = site;
  data.functionName = function_name(domain, cbid);
  data.symbolName = symbol;
  data.correlationId = correlation_id;
  callback(userdata, CUpti_CallbackDomain(domain), cbid, &data);
}

// Calls (domain, cbid) pairs nested outermost first, as one API call.
uint64_t launch(const Callback* calls, size_t n, const char* kernel_name, uint64_t duration_ns, uint32_t device,
                uint32_t stream) {
  const uint64_t id = g_next_correlation.fetch_add(1);
  for (size_t i = 0; i < n; ++i)
    call_subscriber(calls[i].domain, calls[i].cbid, CUPTI_API_ENTER, uint32_t(id), kernel_name);
  if (kernel_name && !is_graph_launch(calls[0].domain, calls[0].cbid))
    queue_kernel(id, kernel_name, duration_ns, device, stream);
  for (size_t i = n; i-- > 0;)
    call_subscriber(calls[i].domain, calls[i].cbid, CUPTI_API_EXIT, uint32_t(id), kernel_name);
  return id;
}

// cuptiSubscribe's and cuptiSubscribe_v2's one subscription.
CUptiResult subscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback, void* userdata) {
  if (!subscriber) return CUPTI_ERROR_INVALID_PARAMETER;
  if (forced_failure("cuptiSubscribe")) return CUPTI_ERROR_UNKNOWN;
  const char* taken = std::getenv("FAKE_CUPTI_TAKEN");
  std::lock_guard lock(g_mu);
  if (g_subscribed || (taken && std::strcmp(taken, "1") == 0)) return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  g_subscribed = true;
  g_subscriber_name.clear();
  g_callback = callback;
  g_userdata = userdata;
  *subscriber = reinterpret_cast<CUpti_SubscriberHandle>(&g_subscriber_storage);
  return CUPTI_SUCCESS;
}

}  // namespace

// ---- CUPTI, as far as the shim uses it ----

extern "C" {

CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult result, const char** str) {
  if (!str) return CUPTI_ERROR_INVALID_PARAMETER;
  switch (result) {
    case CUPTI_SUCCESS: *str = "CUPTI_SUCCESS"; break;
    case CUPTI_ERROR_INVALID_PARAMETER: *str = "CUPTI_ERROR_INVALID_PARAMETER"; break;
    case CUPTI_ERROR_MAX_LIMIT_REACHED: *str = "CUPTI_ERROR_MAX_LIMIT_REACHED"; break;
    case CUPTI_ERROR_INVALID_KIND: *str = "CUPTI_ERROR_INVALID_KIND"; break;
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
      *str = "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED";
      break;
    case CUPTI_ERROR_UNKNOWN: *str = "CUPTI_ERROR_UNKNOWN"; break;
    default: *str = nullptr; return CUPTI_ERROR_INVALID_PARAMETER;
  }
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback,
                                    void* userdata) {
  log_call("cuptiSubscribe");
  return subscribe(subscriber, callback, userdata);
}

// As cuptiSubscribe; on a refusal it names the subscriber in the way, as
// CUPTI does ("CUPTI for NAME"; the shim subscribes without a name).
CUptiResult CUPTIAPI cuptiSubscribe_v2(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback, void* userdata,
                                       CUpti_SubscriberParams* params) {
  log_call("cuptiSubscribe_v2");
  if (params && params->structSize != CUpti_SubscriberParams_STRUCT_SIZE) return CUPTI_ERROR_INVALID_PARAMETER;
  const CUptiResult r = subscribe(subscriber, callback, userdata);
  if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED && params && params->oldSubscriberName &&
      params->oldSubscriberSize > 0)
    std::snprintf(params->oldSubscriberName, params->oldSubscriberSize, "CUPTI for %s", g_subscriber_name.c_str());
  if (r == CUPTI_SUCCESS) g_subscriber_name = params && params->subscriberName ? params->subscriberName : "";
  return r;
}

CUptiResult CUPTIAPI cuptiUnsubscribe(CUpti_SubscriberHandle subscriber) {
  log_call("cuptiUnsubscribe");
  std::lock_guard lock(g_mu);
  if (!g_subscribed || subscriber != reinterpret_cast<CUpti_SubscriberHandle>(&g_subscriber_storage))
    return CUPTI_ERROR_INVALID_PARAMETER;
  g_subscribed = false;
  g_callback = nullptr;
  g_enabled_callbacks.clear();
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                         CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  log_call("cuptiEnableCallback(" + std::to_string(enable) + "," + std::to_string(domain) + "," +
           std::to_string(cbid) + ")");
  if (forced_failure("cuptiEnableCallback")) return CUPTI_ERROR_UNKNOWN;
  std::lock_guard lock(g_mu);
  if (!g_subscribed || subscriber != reinterpret_cast<CUpti_SubscriberHandle>(&g_subscriber_storage))
    return CUPTI_ERROR_INVALID_PARAMETER;
  auto it = std::find_if(g_enabled_callbacks.begin(), g_enabled_callbacks.end(),
                         [&](const Callback& c) { return c.domain == uint32_t(domain) && c.cbid == cbid; });
  if (enable && it == g_enabled_callbacks.end()) g_enabled_callbacks.push_back({uint32_t(domain), cbid});
  if (!enable && it != g_enabled_callbacks.end()) g_enabled_callbacks.erase(it);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind) {
  log_call("cuptiActivityEnable(" + std::to_string(kind) + ")");
  if (forced_failure("cuptiActivityEnable")) return CUPTI_ERROR_UNKNOWN;
  if (record_size(kind) == 0) return CUPTI_ERROR_INVALID_KIND;
  std::lock_guard lock(g_mu);
  if (!kind_enabled_locked(kind)) g_enabled_kinds.push_back(kind);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind kind) {
  log_call("cuptiActivityDisable(" + std::to_string(kind) + ")");
  std::lock_guard lock(g_mu);
  g_enabled_kinds.erase(std::remove(g_enabled_kinds.begin(), g_enabled_kinds.end(), uint32_t(kind)),
                        g_enabled_kinds.end());
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc requested,
                                                    CUpti_BuffersCallbackCompleteFunc completed) {
  log_call("cuptiActivityRegisterCallbacks");
  if (forced_failure("cuptiActivityRegisterCallbacks")) return CUPTI_ERROR_UNKNOWN;
  if (!requested || !completed) return CUPTI_ERROR_INVALID_PARAMETER;
  std::lock_guard lock(g_mu);
  g_buffer_requested = requested;
  g_buffer_completed = completed;
  return CUPTI_SUCCESS;
}

#ifndef FAKE_CUPTI_MISSING_TIMESTAMP_CALLBACK
CUptiResult CUPTIAPI cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc timestamp) {
  log_call("cuptiActivityRegisterTimestampCallback");
  if (forced_failure("cuptiActivityRegisterTimestampCallback")) return CUPTI_ERROR_UNKNOWN;
  std::lock_guard lock(g_mu);
  g_timestamp = timestamp;
  return CUPTI_SUCCESS;
}
#endif

CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t* buffer, size_t valid_bytes, CUpti_Activity** record) {
  if (!buffer || !record) return CUPTI_ERROR_INVALID_PARAMETER;
  uint8_t* next = *record ? reinterpret_cast<uint8_t*>(*record) + record_size((*record)->kind) : buffer;
  if (next + sizeof(CUpti_Activity) > buffer + valid_bytes) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  const size_t size = record_size(reinterpret_cast<CUpti_Activity*>(next)->kind);
  if (size == 0 || next + size > buffer + valid_bytes) return CUPTI_ERROR_INVALID_KIND;
  *record = reinterpret_cast<CUpti_Activity*>(next);
  g_records_walked.fetch_add(1);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext, uint32_t, size_t* dropped) {
  if (!dropped) return CUPTI_ERROR_INVALID_PARAMETER;
  std::lock_guard lock(g_mu);
  *dropped = g_dropped;
  g_dropped = 0;  // as CUPTI: the count restarts with every call
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t flag) {
  log_call("cuptiActivityFlushAll(" + std::to_string(flag) + ")");
  fake_cupti_deliver();
  return CUPTI_SUCCESS;
}

#ifndef FAKE_CUPTI_MISSING_FLUSH_PERIOD
CUptiResult CUPTIAPI cuptiActivityFlushPeriod(uint32_t period_ms) {
  log_call("cuptiActivityFlushPeriod(" + std::to_string(period_ms) + ")");
  std::lock_guard lock(g_mu);
  g_flush_period_ms = period_ms;  // no worker thread here: only kept for tests
  return CUPTI_SUCCESS;
}
#endif

// ---- test hooks ----

uint64_t fake_cupti_launch(uint32_t domain, uint32_t cbid, const char* kernel_name, uint64_t duration_ns,
                           uint32_t device, uint32_t stream) {
  const Callback call{domain, cbid};
  return launch(&call, 1, kernel_name, duration_ns, device, stream);
}

uint64_t fake_cupti_launch_nested(uint32_t runtime_cbid, uint32_t driver_cbid, const char* kernel_name,
                                  uint64_t duration_ns, uint32_t device, uint32_t stream) {
  const Callback calls[] = {{CUPTI_CB_DOMAIN_RUNTIME_API, runtime_cbid}, {CUPTI_CB_DOMAIN_DRIVER_API, driver_cbid}};
  return launch(calls, 2, kernel_name, duration_ns, device, stream);
}

void fake_cupti_memcpy(uint64_t correlation_id, uint64_t bytes, uint8_t copy_kind, uint8_t src_kind,
                       uint8_t dst_kind, uint64_t duration_ns, uint32_t device, uint32_t stream) {
  {
    std::lock_guard lock(g_mu);
    if (!kind_enabled_locked(CUPTI_ACTIVITY_KIND_MEMCPY)) return;
  }
  CUpti_ActivityMemcpy6 m{};
  m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  m.copyKind = copy_kind;
  m.srcKind = src_kind;
  m.dstKind = dst_kind;
  m.bytes = bytes;
  m.start = stream_start_ns(device, stream, duration_ns);
  m.end = m.start + duration_ns;
  m.deviceId = device;
  m.contextId = 1;
  m.streamId = stream;
  m.correlationId = uint32_t(correlation_id);
  m.copyCount = 1;
  queue_record(m);
}

void fake_cupti_memset(uint64_t correlation_id, uint64_t bytes, uint8_t memory_kind, uint64_t duration_ns,
                       uint32_t device, uint32_t stream) {
  {
    std::lock_guard lock(g_mu);
    if (!kind_enabled_locked(CUPTI_ACTIVITY_KIND_MEMSET)) return;
  }
  CUpti_ActivityMemset4 m{};
  m.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  m.bytes = bytes;
  m.memoryKind = memory_kind;
  m.start = stream_start_ns(device, stream, duration_ns);
  m.end = m.start + duration_ns;
  m.deviceId = device;
  m.contextId = 1;
  m.streamId = stream;
  m.correlationId = uint32_t(correlation_id);
  queue_record(m);
}

uint64_t fake_cupti_now_ns(void) { return now_ns(); }

void fake_cupti_graph_kernel(uint64_t correlation_id, const char* name, uint64_t duration_ns, uint32_t device,
                             uint32_t stream) {
  queue_kernel(correlation_id, name, duration_ns, device, stream);
}

void fake_cupti_deliver(void) {
  std::vector<std::vector<uint8_t>> records;
  CUpti_BuffersCallbackRequestFunc requested;
  CUpti_BuffersCallbackCompleteFunc completed;
  {
    std::lock_guard lock(g_mu);
    records.swap(g_queue);
    requested = g_buffer_requested;
    completed = g_buffer_completed;
    if (!requested || !completed) {
      g_dropped += records.size();
      return;
    }
  }
  size_t next = 0;
  while (next < records.size()) {
    uint8_t* buffer = nullptr;
    size_t size = 0;
    size_t max_records = 0;
    requested(&buffer, &size, &max_records);
    if (!buffer || size == 0) {
      std::lock_guard lock(g_mu);
      g_dropped += records.size() - next;
      return;
    }
    size_t used = 0;
    size_t count = 0;
    while (next < records.size() && used + records[next].size() <= size &&
           (max_records == 0 || count < max_records)) {
      std::memcpy(buffer + used, records[next].data(), records[next].size());
      used += records[next].size();
      ++next;
      ++count;
    }
    if (count == 0) {  // does not fit even an empty buffer
      std::lock_guard lock(g_mu);
      ++g_dropped;
      ++next;
    }
    completed(nullptr, 0, buffer, size, used);
  }
}

void fake_cupti_drop(uint64_t n) {
  std::lock_guard lock(g_mu);
  g_dropped += n;
}

int fake_cupti_subscribed(void) {
  std::lock_guard lock(g_mu);
  return g_subscribed ? 1 : 0;
}

int fake_cupti_callback_enabled(uint32_t domain, uint32_t cbid) {
  std::lock_guard lock(g_mu);
  return callback_enabled_locked(domain, cbid) ? 1 : 0;
}

size_t fake_cupti_enabled_callbacks(uint32_t* domains, uint32_t* cbids, size_t capacity) {
  std::lock_guard lock(g_mu);
  for (size_t i = 0; i < g_enabled_callbacks.size() && i < capacity; ++i) {
    domains[i] = g_enabled_callbacks[i].domain;
    cbids[i] = g_enabled_callbacks[i].cbid;
  }
  return g_enabled_callbacks.size();
}

int fake_cupti_activity_enabled(uint32_t kind) {
  std::lock_guard lock(g_mu);
  return kind_enabled_locked(kind) ? 1 : 0;
}

uint32_t fake_cupti_flush_period_ms(void) {
  std::lock_guard lock(g_mu);
  return g_flush_period_ms;
}

uint64_t fake_cupti_records_walked(void) { return g_records_walked.load(); }

uint64_t fake_cupti_queued_records(void) {
  std::lock_guard lock(g_mu);
  return g_queue.size();
}

const char* fake_cupti_call_log(void) {
  static std::string snapshot;
  std::lock_guard lock(g_mu);
  snapshot = g_call_log;
  return snapshot.c_str();
}

void fake_cupti_clear_call_log(void) {
  std::lock_guard lock(g_mu);
  g_call_log.clear();
}

}  // extern "C"
