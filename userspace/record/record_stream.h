// record_stream.h: reading a record file without holding its op events, for
// the outputs that need each event once, in file order (report's op table):
// memory then grows with what the output keeps (ops, threads, open calls),
// not with the events recorded (docs/record-file.md, "Streaming reads").
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "op_tracer_abi.h"
#include "record/record_file.h"
#include "record/recording.h"

namespace gpuprof {

// Where each kind of pair of a file ends: the event index of its last
// ENTRY_STACKS, ENTRY_SHAPES and BACKWARD_STACKS pair (nullopt: none; for
// a stream fed each pair before its event, as analyze/
// chosen_processes_stream.h feeds its inner stream, none to wait for).
struct LastPairs {
  std::optional<uint64_t> entry_stack, entry_shape, backward_stack;
};

// What a streaming read hands its events to.
class RecordStream {
 public:
  virtual ~RecordStream() = default;
  // Asked once the mandatory chunks (process, clock, op table, options) are
  // read: whether this recording can be streamed. Declining reads it whole.
  virtual bool wants(const Recording& head) = 0;
  // One chunk's op events, in file order, checked; `first` is the index of
  // events[0] among the events read (OpCall::entry_index counts the same).
  virtual void on_events(std::span<const gp_event> events, uint64_t first) = 0;
  // True: the stream wants no op events (a first read, for what comes
  // around them: cli/report_reads.cpp). The read then counts each chunk's
  // events (for the pairs' indices, and Recording::streamed_events) without
  // decoding or checking them, and does not call on_events; the read that
  // takes them checks them. Asked per chunk. Until a chunk is lost: after
  // one, the events are decoded, checked and handed to on_events again, as
  // a lost MORE_OPS chunk's ops get their placeholders from the events that
  // name them (chunk_salvage.h).
  virtual bool skips_events() const { return false; }
  // False: the stream wants none of this type's records (asked of data
  // chunks alone: record_file.h), and the read passes over such chunks
  // once it has the stream: their checksums checked, their payloads
  // neither decompressed nor applied (a read for the events' threads
  // alone: cli/report_reads.cpp). Asked once per data chunk type, before
  // the read (record_reader.cpp): it must depend on the type alone.
  virtual bool takes(ChunkType type) const {
    (void)type;
    return true;
  }
  // One ENTRY_STACKS pair (record --with-stack), in file order: the event
  // at event_index (counted as on_events' `first`) was called under
  // sample_stacks[stack_id]. Pairs come in increasing event_index, after the
  // events they name; a stream that places calls under their Python stacks
  // (analyze/streamed_stack_sums.h) keeps the ones it still needs.
  virtual void on_entry_stack(uint64_t event_index, uint32_t stack_id) {
    (void)event_index;
    (void)stack_id;
  }
  // One ENTRY_SHAPES pair (record --record-shapes), in file order, as
  // on_entry_stack's: the call whose ENTRY is event_index had the input
  // shapes shapes[shape_id] (output/streamed_chrome_trace.h keeps the ones
  // it still needs).
  virtual void on_entry_shape(uint64_t event_index, uint32_t shape_id) {
    (void)event_index;
    (void)shape_id;
  }
  // One BACKWARD_STACKS pair (record --with-modules), in file order, as
  // on_entry_stack's: the autograd engine call whose ENTRY is event_index
  // evaluates a node that a forward op called under sample_stacks[stack_id]
  // made (analyze/streamed_module_tree.h keeps the ones it still needs).
  virtual void on_backward_stack(uint64_t event_index, uint32_t stack_id) {
    (void)event_index;
    (void)stack_id;
  }
  // One chunk's CUDA launches, checked, in file order, before the read
  // drops them (it keeps only their count): a stream that counts them per
  // thread (analyze/streamed_process_tables.h) or writes them
  // (output/streamed_chrome_trace.h) takes them here. False: the stream
  // cannot take them, and the read stops as at GPU activities.
  virtual bool on_launches(std::span<const CudaLaunch> launches) {
    (void)launches;
    return true;
  }
  // One chunk's allocator events (record --profile-memory), checked, in
  // file order. True: the stream took them and the read drops them; false
  // (the default): the read keeps them in Recording::mem_events.
  virtual bool on_mem_events(std::span<const gp_mem_event> events) {
    (void)events;
    return false;
  }
  // One chunk's GPU correlations (the CUPTI shim's launches), checked, in
  // file order, before the read drops them.
  virtual void on_gpu_correlations(std::span<const GpuCorrelation> correlations) { (void)correlations; }
  // One chunk's GPU activities, checked, in file order. True: the stream
  // took them and the read drops them (counting them); false (the
  // default): the read stops, as their ops need every call, and the
  // caller reads the recording whole.
  virtual bool on_gpu_activities(std::span<const GpuActivity> activities) {
    (void)activities;
    return false;
  }
};

// read_recording, handing the op events to `stream` (when it wants them)
// instead of keeping them. A streamed Recording has no events
// (Recording::streamed_events counts them) and keeps no other per-event
// record the op table leaves unused: entry shapes (handed to
// on_entry_shape), entry stacks (counted
// per stack, and handed to on_entry_stack), backward stacks (handed to
// on_backward_stack), launches (counted, and handed
// to on_launches) and GPU correlations (handed to on_gpu_correlations) are
// checked but dropped, and so are the allocator events and GPU activities
// a stream takes (on_mem_events, on_gpu_activities), and an
// entry shape's or stack's event is not checked to be an ENTRY (the events
// are gone by then). A recording whose GPU activities the stream refuses
// cannot be streamed (their ops need every call), nor one whose launches
// it refuses: the read stops with an error and *whole_needed set, and the
// caller reads the file again with read_recording.
Result<Recording> read_recording_streamed(const std::string& path, CorruptChunks corrupt, RecordStream& stream,
                                          bool* whole_needed);

// The op events and CUDA launches of a recording, held or streamed.
inline uint64_t op_events_read(const Recording& recording) {
  return recording.events.size() + recording.streamed_events;
}
inline uint64_t launches_read(const Recording& recording) {
  return recording.launches.size() + recording.streamed_launches;
}
inline uint64_t gpu_activities_read(const Recording& recording) {
  return recording.gpu_activities.size() + recording.streamed_gpu_activities;
}

}  // namespace gpuprof
