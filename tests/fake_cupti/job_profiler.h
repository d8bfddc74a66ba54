// job_profiler.h: the job's own profiler, as a client of CUPTI, for
// cupti_driver's scenarios and libjob_profiler.so (launch_driver) with the
// CUPTI shim beside it. It counts the records CUPTI hands it, which is what
// the job's profile would show.
//
// Kind::kineto calls CUPTI as torch.profiler's libkineto does: the first
// start() initializes (CuptiCallbackApi::initCallbackApi): one cuptiSubscribe
// (cuptiSubscribe_v2 with Kind::kineto_v2), kept for the rest of the
// process; refused, Kineto does without CUDA activities from then on
// ("CUPTI initialization failed", seen with torch 2.11 on an H200:
// docs/gpu.md). Each profile (CuptiActivityApi::enableCuptiActivities /
// disableCuptiActivities) registers its buffer callbacks (every time: CUPTI
// keeps the last pair registered) and enables the kernel, memcpy and memset
// kinds; at its end it flushes and disables them. With Teardown::after_each_
// profile (TEARDOWN_CUPTI=1) it also unsubscribes at the end of a profile and
// subscribes again at the next start.
//
// Kind::activities_only never subscribes: a profiler that uses only the
// activity API (which needs no subscriber), and so cannot be heard asking
// for CUPTI; its records still go where its buffer callbacks say.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdlib>

#include <cupti.h>

class JobProfiler {
 public:
  enum class Kind { kineto, kineto_v2, activities_only };
  enum class Teardown { never, after_each_profile };

  explicit JobProfiler(Kind kind = Kind::kineto, Teardown teardown = Teardown::never)
      : kind_(kind), teardown_(teardown) {}

  void start() {
    if (kind_ != Kind::activities_only && !subscribed_ && !cpu_only_) {
      subscribed_ = subscribe() == CUPTI_SUCCESS;
      cpu_only_ = !subscribed_;
    }
    if (cpu_only_) return;
    cuptiActivityRegisterCallbacks(on_requested, on_completed);
    for (CUpti_ActivityKind kind : kKinds) cuptiActivityEnable(kind);
    profiling_ = true;
  }
  void stop() {
    if (!profiling_) return;
    profiling_ = false;
    cuptiActivityFlushAll(0);
    for (CUpti_ActivityKind kind : kKinds) cuptiActivityDisable(kind);
    if (subscribed_ && teardown_ == Teardown::after_each_profile) {
      cuptiUnsubscribe(subscriber_);
      subscribed_ = false;
    }
  }
  bool subscribed() const { return subscribed_; }
  // Refused at initialization: no CUDA activities for the process's life.
  bool cpu_only() const { return cpu_only_; }
  // Records it has been handed (all profiles of the process).
  static uint64_t records() { return records_.load(); }

 private:
  static constexpr CUpti_ActivityKind kKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                                  CUPTI_ACTIVITY_KIND_MEMSET};
  CUptiResult subscribe() {
    if (kind_ == Kind::kineto) return cuptiSubscribe(&subscriber_, on_api, nullptr);
    CUpti_SubscriberParams params = {};
    params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
    params.subscriberName = "job profiler";
    return cuptiSubscribe_v2(&subscriber_, on_api, nullptr, &params);
  }
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

  Kind kind_;
  Teardown teardown_;
  CUpti_SubscriberHandle subscriber_ = nullptr;
  bool subscribed_ = false;
  bool cpu_only_ = false;
  bool profiling_ = false;
  static inline std::atomic<uint64_t> records_{0};  // handed over on any thread (the shim's flush too)
};
