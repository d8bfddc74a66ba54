// job_profiler.h: the job's own profiler, as a client of CUPTI, for
// cupti_driver's scenarios with the CUPTI shim beside it.
//
// It calls CUPTI as libkineto does around one profile once initialized
// (CuptiActivityApi::enableCuptiActivities / disableCuptiActivities):
// start() subscribes for its callbacks (a failure is tolerated: its records
// come from the activity API, which needs no subscriber), registers its own
// buffer callbacks (every time: CUPTI keeps the last pair registered) and
// enables the kernel, memcpy and memset kinds; stop() flushes, disables
// those kinds and unsubscribes if it had subscribed. It counts the records
// CUPTI hands it, which is what the job's profile would show. (torch
// 2.11's Kineto does one thing it does not: when its first initialization
// finds CUPTI subscribed, it gives up CUDA activities for the process's
// life; seen on an H200, docs/cuda.md.)
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdlib>

#include <cupti.h>

class JobProfiler {
 public:
  void start() {
    subscribed_ = cuptiSubscribe(&subscriber_, on_api, nullptr) == CUPTI_SUCCESS;
    cuptiActivityRegisterCallbacks(on_requested, on_completed);
    for (CUpti_ActivityKind kind : kKinds) cuptiActivityEnable(kind);
  }
  void stop() {
    cuptiActivityFlushAll(0);
    for (CUpti_ActivityKind kind : kKinds) cuptiActivityDisable(kind);
    if (subscribed_) cuptiUnsubscribe(subscriber_);
    subscribed_ = false;
  }
  bool subscribed() const { return subscribed_; }
  // Records it has been handed (all profiles of the process).
  static uint64_t records() { return records_.load(); }

 private:
  static constexpr CUpti_ActivityKind kKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                                  CUPTI_ACTIVITY_KIND_MEMSET};
  static void CUPTIAPI on_api(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}
  static void CUPTIAPI on_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
    *buffer = static_cast<uint8_t*>(std::malloc(1 << 20));
    *size = *buffer ? 1 << 20 : 0;
    *max_records = 0;
  }
  static void CUPTIAPI on_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid_bytes) {
    CUpti_Activity* record = nullptr;
    while (buffer && cuptiActivityGetNextRecord(buffer, valid_bytes, &record) == CUPTI_SUCCESS) ++records_;
    std::free(buffer);
  }

  CUpti_SubscriberHandle subscriber_ = nullptr;
  bool subscribed_ = false;
  static inline std::atomic<uint64_t> records_{0};  // handed over on any thread (the shim's flush too)
};
