// fake_cupti_hooks.h: the test side of the stand-in libcupti.so.13
// (fake_cupti.cpp).
//
// The stand-in implements the CUPTI functions the shim uses, with CUPTI's
// signatures and the behaviour the shim relies on: one subscriber at a time,
// callbacks only for enabled (domain, cbid) pairs, activity records only for
// enabled kinds, in the real record layouts, stamped with the registered
// timestamp callback (CLOCK_REALTIME without one, as CUPTI does). It has no
// thread: records wait until fake_cupti_deliver() or cuptiActivityFlushAll.
//
// Environment:
//   FAKE_CUPTI_TAKEN=1      every cuptiSubscribe fails with
//                           CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
//                           (torch.profiler holds CUPTI).
//   FAKE_CUPTI_FAIL=NAME    the CUPTI function NAME (e.g. cuptiActivityEnable)
//                           returns CUPTI_ERROR_UNKNOWN.
// Build variants: -DFAKE_CUPTI_MISSING_FLUSH_PERIOD and
// -DFAKE_CUPTI_MISSING_TIMESTAMP_CALLBACK leave that function out.
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// A launch API call on the calling thread, as CUPTI sees it: takes the next
// correlation id (the first is 1), calls the subscriber with CUPTI_API_ENTER
// and then CUPTI_API_EXIT if (domain, cbid) is enabled, and queues a kernel
// record (start = the timestamp callback now, end = start + duration_ns) if
// CONCURRENT_KERNEL is enabled. Graph launch cbids (runtime 311/312, driver
// 514/515) and kernel_name == NULL (an API call that launches no kernel, e.g.
// a cudaMemcpyAsync) queue nothing. Returns the correlation id.
uint64_t fake_cupti_launch(uint32_t domain, uint32_t cbid, const char* kernel_name, uint64_t duration_ns,
                           uint32_t device, uint32_t stream);

// A runtime launch that calls a driver launch inside, as libcudart does: one
// correlation id, callbacks runtime ENTER, driver ENTER, driver EXIT,
// runtime EXIT (each if enabled), one kernel record.
uint64_t fake_cupti_launch_nested(uint32_t runtime_cbid, uint32_t driver_cbid, const char* kernel_name,
                                  uint64_t duration_ns, uint32_t device, uint32_t stream);

// Records for an id from fake_cupti_launch, if their kind is enabled.
// copy_kind: CUpti_ActivityMemcpyKind; src_kind, dst_kind, memory_kind:
// CUpti_ActivityMemoryKind.
void fake_cupti_memcpy(uint64_t correlation_id, uint64_t bytes, uint8_t copy_kind, uint8_t src_kind,
                       uint8_t dst_kind, uint64_t duration_ns, uint32_t device, uint32_t stream);
void fake_cupti_memset(uint64_t correlation_id, uint64_t bytes, uint8_t memory_kind, uint64_t duration_ns,
                       uint32_t device, uint32_t stream);
// One of a graph launch's kernels (they all carry the graph launch's id).
void fake_cupti_graph_kernel(uint64_t correlation_id, const char* name, uint64_t duration_ns, uint32_t device,
                             uint32_t stream);

// Hands every queued record to the registered buffer callbacks now, on the
// calling thread (as many buffers as needed). Records that no buffer takes
// count as dropped.
void fake_cupti_deliver(void);
// As if CUPTI had found no buffer space for n records.
void fake_cupti_drop(uint64_t n);

// Inspection.
// The timestamp the stand-in would give a record now: the registered
// timestamp callback's, else CLOCK_REALTIME (CUPTI's default).
uint64_t fake_cupti_now_ns(void);
int fake_cupti_subscribed(void);
int fake_cupti_callback_enabled(uint32_t domain, uint32_t cbid);
// Fills up to capacity (domain, cbid) pairs in enabling order; returns how
// many are enabled.
size_t fake_cupti_enabled_callbacks(uint32_t* domains, uint32_t* cbids, size_t capacity);
int fake_cupti_activity_enabled(uint32_t kind);
uint32_t fake_cupti_flush_period_ms(void);
// Records handed out by cuptiActivityGetNextRecord so far (the shim walks a
// buffer only while a tracer listens).
uint64_t fake_cupti_records_walked(void);
// Records made and not yet handed to a buffer callback.
uint64_t fake_cupti_queued_records(void);
// Every CUPTI call so far that changes what CUPTI does (subscribe,
// unsubscribe, each enable and disable, registrations, flushes), by any
// caller, in order, space separated: "cuptiSubscribe
// cuptiEnableCallback(1,2,211) ... cuptiActivityEnable(10) ...
// cuptiActivityDisable(10) cuptiActivityFlushAll(1) cuptiUnsubscribe"
// (cuptiEnableCallback(ENABLE,DOMAIN,CBID), kinds and flags as numbers). A
// test asserts with it that a dormant shim calls nothing. The pointer stays
// valid until the next call of this function.
const char* fake_cupti_call_log(void);
// Empties the call log (a test's phase starts from nothing).
void fake_cupti_clear_call_log(void);

#ifdef __cplusplus
}
#endif
