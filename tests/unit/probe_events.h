// probe_events.h: readable gp_event construction for the unit tests.
#pragma once

#include <cstdint>

#include "op_tracer_abi.h"

namespace gpuprof::test {

constexpr uint32_t kTid = 100;

inline gp_event probe_event(uint16_t kind, uint64_t ts, uint64_t sp, uint32_t op, uint32_t tid) {
  return gp_event{.ts_ns = ts, .sp = sp, .tid = tid, .pid = tid, .op_id = op, .kind = kind, .payload_bytes = 0};
}
// Entry of op's ::call at time ts, sp pointing at its return address.
inline gp_event op_entry(uint64_t ts, uint64_t sp, uint32_t op, uint32_t tid = kTid) {
  return probe_event(GP_EV_OP_ENTRY, ts, sp, op, tid);
}
// A `ret` of op's ::call: same sp as its entry.
inline gp_event op_exit(uint64_t ts, uint64_t sp, uint32_t op, uint32_t tid = kTid) {
  return probe_event(GP_EV_OP_EXIT, ts, sp, op, tid);
}
// __cxa_begin_catch called from a frame whose calls put their return address at sp.
inline gp_event catch_at(uint64_t ts, uint64_t sp, uint32_t tid = kTid) {
  return probe_event(GP_EV_CATCH, ts, sp, GP_NO_OP, tid);
}

// A step starts (record --schedule --step-op): recorded when marker_op is
// an op, not recorded when GP_NO_OP; the step number rides in sp.
inline gp_event step_at(uint64_t ts, uint64_t step, uint32_t marker_op, uint32_t tid = kTid) {
  return probe_event(GP_EV_STEP, ts, step, marker_op, tid);
}

// The end of a recording window (a schedule's cycle): every open frame ends.
inline gp_event cut_at(uint64_t ts) { return probe_event(GP_EV_CUT, ts, 0, GP_NO_OP, 0); }

// Allocator events (record --profile-memory), bpf/op_tracer_abi.h struct gp_mem_event.
inline gp_mem_event mem_event(uint16_t kind, uint64_t ts, uint64_t addr, int64_t bytes, uint32_t tid) {
  return gp_mem_event{.ts_ns = ts, .addr = addr, .bytes = bytes, .total_allocated = 0, .tid = tid,
                      .kind = kind, .device_type = 0, .device_index = 0};
}
// The CPU allocator handed out `bytes` at addr.
inline gp_mem_event cpu_alloc(uint64_t ts, uint64_t addr, int64_t bytes, uint32_t tid = kTid) {
  return mem_event(GP_MEM_CPU_ALLOC, ts, addr, bytes, tid);
}
// The CPU block at addr is released (its size comes from its allocation).
inline gp_mem_event cpu_free(uint64_t ts, uint64_t addr, uint32_t tid = kTid) {
  return mem_event(GP_MEM_CPU_FREE, ts, addr, 0, tid);
}
// The CUDA caching allocator changed by delta bytes (signed), to `total`.
inline gp_mem_event cuda_mem(uint64_t ts, uint64_t addr, int64_t delta, uint64_t total,
                             int8_t device_index = 0, uint32_t tid = kTid) {
  gp_mem_event e = mem_event(GP_MEM_DEVICE, ts, addr, delta, tid);
  e.total_allocated = total;
  e.device_type = 1;  // c10::DeviceType::CUDA
  e.device_index = device_index;
  return e;
}

}  // namespace gpuprof::test
