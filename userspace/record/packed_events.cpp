// packed_events.cpp: packing op events into an OP_EVENTS payload and back
// (packed_events.h). One field list, packed_event_fields, runs for both.
#include "record/packed_events.h"

#include <cstring>
#include <unordered_map>

#include "base/varint.h"

namespace gpuprof {

namespace {

constexpr uint8_t kKindMask = 0x0f;
constexpr uint8_t kSameTid = 1u << 4;
constexpr uint8_t kSamePid = 1u << 5;
constexpr uint8_t kSameSp = 1u << 6;
constexpr uint8_t kReservedBit = 1u << 7;

// What a thread's next event is packed against.
struct ThreadState {
  uint32_t pid = 0;
  uint64_t ts_ns = 0, sp = 0;
};

// The state of a chunk being packed or unpacked: the event before, and
// each thread's last event.
struct ChunkState {
  gp_event last{};  // the event before (zeros before the first)
  std::unordered_map<uint32_t, ThreadState> threads;
  ThreadState* thread = nullptr;  // last.tid's

  // The state of the thread of an event after `last`, with tid `tid`: a new
  // thread starts from the event before.
  ThreadState& of(uint32_t tid) {
    if (thread != nullptr && tid == last.tid) return *thread;
    auto [it, added] = threads.try_emplace(tid);
    if (added) it->second = ThreadState{last.pid, last.ts_ns, last.sp};
    return *(thread = &it->second);
  }
};

struct Packer {
  std::vector<uint8_t>& out;
  static constexpr bool kPacking = true;
  void byte(uint8_t& b) { out.push_back(b); }
  void varint(uint64_t v) { append_varint(out, v); }
  // The field's value relative to base.
  void delta(__u64& value, uint64_t base) { varint(zigzag(static_cast<int64_t>(value - base))); }
  void u32(uint32_t& value) { varint(value); }
  void fail(const char*) {}  // packing cannot fail: the writer checked the events
};

struct Unpacker {
  std::span<const uint8_t> p;
  size_t pos = 0;
  std::string problem;
  static constexpr bool kPacking = false;
  bool ok() const { return problem.empty(); }
  void byte(uint8_t& b) {
    if (pos >= p.size()) return fail("it ends inside an event");
    b = p[pos++];
  }
  uint64_t varint() {
    uint64_t v = 0;
    if (!ok()) return 0;
    switch (read_varint(p, pos, v)) {
      case VarintRead::ok:
        return v;
      case VarintRead::truncated:
        fail("it ends inside an event");
        return 0;
      case VarintRead::overflow:
        fail("a varint overflows 64 bits");
        return 0;
    }
    return 0;
  }
  void delta(__u64& value, uint64_t base) { value = base + static_cast<uint64_t>(unzigzag(varint())); }
  void u32(uint32_t& value) {
    const uint64_t v = varint();
    if (v > UINT32_MAX) fail("a 32-bit field holds " + std::to_string(v));
    value = static_cast<uint32_t>(v);
  }
  void fail(std::string why) {
    if (ok()) problem = std::move(why);
  }
};

// The fields of one packed event, for both directions: packing reads e and
// writes the bytes, unpacking reads the bytes and fills e. `s` moves on to
// e either way.
template <typename IO>
void packed_event_fields(IO& io, gp_event& e, ChunkState& s) {
  uint8_t head = 0;
  if constexpr (IO::kPacking) {
    const bool same_tid = s.thread != nullptr && e.tid == s.last.tid;
    const ThreadState& t = s.of(e.tid);
    head = static_cast<uint8_t>((e.kind & kKindMask) | (same_tid ? kSameTid : 0) | (e.pid == t.pid ? kSamePid : 0) |
                                (e.sp == t.sp ? kSameSp : 0));
  }
  io.byte(head);
  if (head & kReservedBit) return io.fail("an event's head byte has its reserved bit 7 set");
  e.kind = head & kKindMask;
  if (!(head & kSameTid)) io.u32(e.tid);
  else if constexpr (!IO::kPacking) {
    if (s.thread == nullptr) return io.fail("the first event says its tid is the event before's");
    e.tid = s.last.tid;
  }
  ThreadState& t = s.of(e.tid);
  if (!(head & kSamePid)) io.u32(e.pid);
  else e.pid = t.pid;
  io.delta(e.ts_ns, t.ts_ns);
  if (!(head & kSameSp)) io.delta(e.sp, t.sp);
  else e.sp = t.sp;
  uint32_t op = e.op_id + 1;  // GP_NO_OP wraps to 0: one byte
  io.u32(op);
  e.op_id = op - 1;
  e.payload_bytes = 0;
  t = ThreadState{e.pid, e.ts_ns, e.sp};
  s.last = e;
}

}  // namespace

void pack_events(std::span<const gp_event> events, uint64_t first_event, std::vector<uint8_t>& out) {
  const uint32_t count = static_cast<uint32_t>(events.size());
  uint8_t prefix[kPackedEventsPrefix];
  std::memcpy(prefix, &first_event, 8);
  std::memcpy(prefix + 8, &count, 4);
  out.insert(out.end(), prefix, prefix + sizeof prefix);
  Packer io{out};
  ChunkState state;
  for (gp_event e : events) {
    e.payload_bytes = 0;
    packed_event_fields(io, e, state);
  }
}

std::string packed_events_prefix(std::span<const uint8_t> payload, uint64_t* first_event, uint32_t* count) {
  if (payload.size() < kPackedEventsPrefix)
    return "payload of " + std::to_string(payload.size()) + " bytes is shorter than its " +
           std::to_string(kPackedEventsPrefix) + "-byte first_event and count";
  std::memcpy(first_event, payload.data(), 8);
  std::memcpy(count, payload.data() + 8, 4);
  if (*count > (payload.size() - kPackedEventsPrefix) / kPackedEventMinBytes)
    return "event count " + std::to_string(*count) + " does not fit the payload";
  return "";
}

std::string unpack_events(std::span<const uint8_t> payload, uint64_t* first_event, std::vector<gp_event>& out) {
  uint32_t count;
  if (std::string problem = packed_events_prefix(payload, first_event, &count); !problem.empty()) return problem;
  Unpacker io{payload.subspan(kPackedEventsPrefix), 0, ""};
  const size_t base = out.size();
  out.resize(base + count);
  ChunkState state;
  for (size_t i = 0; i < count; ++i) {
    packed_event_fields(io, out[base + i], state);
    if (!io.ok()) {
      out.resize(base);
      return "event " + std::to_string(i) + ": " + io.problem;
    }
  }
  if (io.pos != io.p.size()) {
    out.resize(base);
    return std::to_string(io.p.size() - io.pos) + " bytes after its " + std::to_string(count) + " events";
  }
  return "";
}

}  // namespace gpuprof
