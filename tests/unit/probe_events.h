// probe_events.h: readable gp_event construction for the unit tests.
#pragma once

#include <cstdint>

#include "events.h"

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

}  // namespace gpuprof::test
