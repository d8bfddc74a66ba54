// packed_events.h: the OP_EVENTS chunk (record format version 6), op events
// packed as per-thread deltas and varints (record_file.h, "OP_EVENTS";
// docs/record-file.md). A 32-byte gp_event of a small-op loop packs into
// about 6 bytes before the chunk's zstd (chunk_compression.h) takes it to
// about 1 to 3.
//
// Payload: u64 first_event (the index of its first event among all the
// events of the file), u32 count, then count packed events. Each is a head
// byte and varints (LEB128; signed values zigzagged), relative to state that
// starts afresh in every chunk, so a chunk decodes alone (a prefix of a
// file, a lost chunk before it):
//   head    bits 0..3 kind; bit 4 same tid as the event before; bit 5 same
//           pid as the thread's last event (a thread's first event: as the
//           event before); bit 6 same sp as the thread's last event; bit 7
//           is 0
//   tid     varint, unless bit 4
//   pid     varint, unless bit 5
//   ts      zigzag varint: ts_ns minus the thread's last ts_ns (a thread's
//           first event: minus the event before's; the chunk's first: 0)
//   sp      zigzag varint, unless bit 6: sp minus the thread's last sp
//           (first: as for ts)
//   op      varint: op_id + 1 modulo 2^32 (GP_NO_OP is 0)
// payload_bytes is always 0 in a record file and not stored.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "op_tracer_abi.h"

namespace gpuprof {

// The fewest bytes a packed event takes (head, ts, op): bounds a chunk's
// count before anything is allocated.
inline constexpr size_t kPackedEventMinBytes = 3;
// The u64 first_event and u32 count before the packed events.
inline constexpr size_t kPackedEventsPrefix = 12;

// Appends the OP_EVENTS payload of `events`, the first of which is the
// file's event first_event, to out.
void pack_events(std::span<const gp_event> events, uint64_t first_event, std::vector<uint8_t>& out);

// Reads an OP_EVENTS payload's first_event and count, without decoding its
// events (a read that only counts them: RecordStream::skips_events). Returns
// "" or what is wrong with the prefix, or with a count the payload cannot
// hold (a sentence's end).
std::string packed_events_prefix(std::span<const uint8_t> payload, uint64_t* first_event, uint32_t* count);

// An OP_EVENTS payload decoded: its first event's index in the file and
// its events.
struct UnpackedEvents {
  uint64_t first_event = 0;
  std::span<const gp_event> events;
};

// Decodes an OP_EVENTS payload: sets *first_event and appends its events to
// out. Returns "" or what is wrong with the payload (a sentence's end). The
// events' kinds and op ids are the caller's to check.
std::string unpack_events(std::span<const uint8_t> payload, uint64_t* first_event, std::vector<gp_event>& out);

}  // namespace gpuprof
