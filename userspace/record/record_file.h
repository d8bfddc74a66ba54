// record_file.h: the record file, the contract between `gpuprof record` and
// every output.
//
// A record file is self-describing (process info, clock data and the op name
// table travel with the events, so it can be reported on another machine) and
// is written as a sequence of checksummed chunks, each with a single write
// loop, so a recorder killed by SIGKILL leaves a file that is readable up to
// its last complete chunk. The reader validates everything: a truncated,
// corrupt or foreign file gives one clear error message, never a crash, a
// silently skipped bad chunk or an allocation larger than the file (asked
// to, it skips a corrupt chunk and says so: "Corrupt chunks" below).
//
// Layout (all integers little-endian, fixed width; offsets in bytes):
//
//   file header, 16 bytes
//     0  char[8] magic     "GPUPROF\0"
//     8  u32     version   GP_RECORD_FORMAT_VERSION (6; versions 1 to 5 are
//                          still read)
//    12  u32     hdr_size  16 (size of this header; anything else is corrupt)
//   then chunks, back to back until the end of the file:
//     0  u32     type      ChunkType
//     4  u32     length    payload bytes, at most kRecordMaxChunkPayload
//     8  u32     raw_length 0: the payload is stored as it is; version 6:
//                          otherwise the payload is one zstd frame of this
//                          many bytes (at most kRecordMaxChunkPayload), and
//                          every rule below is about those bytes
//                          (chunk_compression.h). Before version 6: 0,
//                          ignored by readers, but checksummed.
//    12  u32     crc       zlib crc32 of chunk bytes 0..11, then the payload
//                          as stored
//    16  u8[length] payload
//
//   The crc covers the chunk header too, so a flipped type or length byte is
//   caught rather than misread as an unknown (skipped) chunk. Every chunk
//   type, with the version that brought it and the option it needs, is in
//   one table: chunk_specs.h.
//
// Payloads of version 2 (str = u32 byte length + bytes, no NUL):
//   PROCESS      i32 pid, str comm, str cmdline, str libtorch_path,
//                str libtorch_build_id, str hostname
//   CLOCK        u64 start_monotonic_ns, u64 start_realtime_ns
//   OP_TABLE     u32 count, then count x {str name, str overload, str symbol,
//                i32 arg_count, u32 tensor_args}; arg_count >= -1 and
//                tensor_args <= max(arg_count, 0)
//   OPTIONS      u32 flags: bit 0 shapes (record --record-shapes), bit 1
//                memory (--profile-memory), bit 2 sampled (-F HZ), bit 3 no
//                ops (--no-ops: no op events), bit 4 with_stack
//                (--with-stack: Python stacks of op entries); other bits must
//                be 0; then, only when bit 2 is set, u32 sample_hz (> 0).
//                Without bit 2 the payload is the u32 flags alone
//                (sample_hz 0).
//   EVENTS       n x struct gp_event (bpf/op_tracer_abi.h, 32 bytes, raw), n >= 0;
//                the writer writes OP_EVENTS instead since version 6
//   OP_EVENTS    u64 first_event, u32 count, count x packed event
//                (packed_events.h): the same events, packed; first_event
//                is the number of events before it in the file (version 6)
//   SHAPES       u32 count, then count x {u32 nargs, nargs x {i32 ndim,
//                ndim x i64 size}}: input shape lists, numbered from 0 in the
//                order of definition across the file; ndim -1 is an argument
//                whose shape is unknown (ArgShape nullopt, no sizes follow),
//                otherwise 0 <= ndim <= kRecordMaxShapeDims
//   ENTRY_SHAPES n x {u64 event_index, u32 shape_id} (12 bytes each, packed):
//                the ENTRY event at event_index (its index among all the
//                events of the file, i.e. in Recording::events) had the input
//                shapes shape_id
//   MEM_EVENTS   n x struct gp_mem_event (bpf/op_tracer_abi.h, 40 bytes, raw)
//   SAMPLE_FRAMES u32 first_id, u32 count, then count x str name: frames
//                of CPU samples and op-entry stacks
//                (Recording::sample_frames), numbered from 0 in
//                the order of definition across the file; first_id must equal
//                the number of frames defined by the SAMPLE_FRAMES chunks
//                before it
//   SAMPLE_STACKS u32 first_id, u32 count, then count x {u32 n, n x u32
//                frame_id}: stacks of CPU samples (Python and kernel) and of
//                op entries (Python; Recording::sample_stacks, outermost
//                frame first), numbered
//                from 0 in the order of definition across the file; first_id
//                must equal the number of stacks defined by the SAMPLE_STACKS
//                chunks before it; n <= kRecordMaxSampleStackDepth; every
//                frame_id < the number of frames defined by the SAMPLE_FRAMES
//                chunks before it
//   SAMPLES      n x {u64 ts_ns, u32 tid, u32 frame_id, u32 python_stack,
//                u32 flags} (24 bytes each, packed): CPU samples; frame_id <
//                the number of frames defined by the SAMPLE_FRAMES chunks
//                before it; python_stack is 0xffffffff (kNoPythonStack: no
//                Python frames) or < the number of stacks defined by the
//                SAMPLE_STACKS chunks before it; flags bit 0 in_kernel, other
//                bits must be 0
//   ENTRY_STACKS n x {u64 event_index, u32 stack_id} (12 bytes each,
//                packed): the ENTRY event at event_index (as in ENTRY_SHAPES)
//                was called under the Python stack stack_id
//                (Recording::entry_stacks)
//   BACKWARD_STACKS n x {u64 event_index, u32 stack_id}, as ENTRY_STACKS:
//                the evaluate_function ENTRY at event_index runs the
//                autograd node that the forward op called under stack_id
//                made (Recording::backward_stacks; record --with-modules)
//   SAMPLE_KERNEL_STACKS n x {u64 sample_index, u32 stack_id} (12 bytes
//                each, packed): the in-kernel sample at sample_index (its
//                index among all the samples of the file, i.e. in
//                Recording::samples) interrupted the kernel stack stack_id
//                (Recording::sample_kernel_stacks)
//   LAUNCH_NAMES u32 first_id, u32 count, then count x str name: names of
//                CUDA kernels (Recording::launch_names), numbered from 0 in
//                the order of definition across the file; first_id must equal
//                the number of names defined by the LAUNCH_NAMES chunks
//                before it
//   LAUNCHES     n x {u64 ts_ns, u64 function, u64 stream, u32 grid[3],
//                u32 block[3], u32 tid, u16 api, u16 reserved, u32 name_id,
//                u32 reserved} (64 bytes each, packed): CUDA kernel launches
//                (Recording::launches); api in GP_LAUNCH_KERNEL..
//                GP_LAUNCH_GRAPH (enum gp_launch_api, bpf/launch_tracer_abi.h); name_id
//                < the number of names defined by the LAUNCH_NAMES chunks
//                before it; both reserved fields 0
//   CUDA_RUNTIME str libcudart_path, u32 entry_points, u64 launches_lost:
//                what the launch tracing probed (Recording::cuda_runtime);
//                at most once
//   GPU_CORRELATIONS n x {u64 ts_ns, u64 correlation_id, u32 tid, u32 cbid,
//                u32 domain, u32 reserved} (32 bytes each, packed): launch
//                API calls as the CUPTI shim saw them
//                (Recording::gpu_correlations); domain 1 (driver API) or 2
//                (runtime API); reserved 0
//   GPU_ACTIVITIES n x {u64 start_ns, u64 end_ns, u64 correlation_id, u64
//                bytes, u32 device, u32 stream, u16 kind, u16 reserved, u32
//                name_id} (48 bytes each, packed): GPU activity records of
//                CUPTI (Recording::gpu_activities); kind in GpuActivityKind
//                (1 kernel, 2 memcpy, 3 memset); end_ns >= start_ns; name_id
//                < the number of names defined by the LAUNCH_NAMES chunks
//                before it (the names of LAUNCHES); reserved 0
//   CUPTI_SHIM   str shim_path, u32 state, u64 records_dropped, u64
//                events_lost: the CUPTI shim as gpuprof found it
//                (Recording::cupti_shim); at most once
//   PROBE_COSTS  {u32 before_ns, u32 after_ns} of an emulated entry, an
//                emulated exit, a single-stepped entry and a single-stepped
//                exit; str op_sites (a byte per op id, bits 1 and 2 only);
//                u32 calls, u32 rounds, u32 spread_permille, u64 took_ns:
//                the op probes' calibrated costs
//                (Recording::probe_costs); at most twice: at attach, and
//                at detach from rounds spread through the recording, which
//                supersedes it (recording.h, ProbeCosts); not with the
//                no-ops option
//                (version 5; a build without it skips the chunk and
//                reports raw times)
//   MODULE_NAMES u32 count, count x {u32 parent_frame, u32 frame, str name,
//                u32 position}:
//                record --with-modules: the attribute name of the module
//                whose frame is `frame` in the module whose frame is
//                parent_frame ("nn.Module: X_n" frames of SAMPLE_FRAMES,
//                position: the name's place in the parent's _modules,
//                both defined before; Recording::module_names); names of 1
//                to kRecordMaxModuleName bytes; any number of times; needs
//                the with_stack option (version 6, added after its release:
//                an older build skips it and names modules by their frames)
//   JOB_RANKS    u32 count, count x {i32 pid, u32 rank, u32 local_rank, u32
//                world_size, u32 local_world_size, u32 group_rank, u32
//                master_port, str run_id, str master_addr}: the job ranks
//                of processes whose environment had a RANK (torchrun's
//                RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE,
//                GROUP_RANK, MASTER_PORT, TORCHELASTIC_RUN_ID, MASTER_ADDR;
//                Recording::job_ranks); pid > 0; a number absent from the
//                environment is kRecordNoJobNumber, the others at most
//                kRecordMaxJobNumber; texts at most kRecordMaxJobText bytes;
//                any number of times, a pid defined again replacing its
//                entry (version 6, added after its release: an older build
//                skips it and reports no ranks)
//   NATIVE_FILES u32 count, count x {i32 pid, str path, str build_id}: the
//                native files the CPU samples' frames name (NativeFile,
//                Recording::native_files): pid > 0, path of 1 to
//                kRecordMaxNativePath bytes starting with '/', build id
//                "" or 2 to kRecordMaxBuildId lowercase hex digits (an even
//                count); any number of times; needs the sample_hz option
//                (version 6, added after its release: an older build skips
//                it and gives pprof mappings no build id)
//   THREAD_NAMES u32 count, count x {u32 tid, str name}: the target's
//                thread names (Recording::thread_names); tids non-zero and
//                distinct, names at most kRecordMaxThreadName bytes; at most
//                once
//   PROCESSES    u32 count, count x {i32 pid, str comm, str cmdline, str
//                libtorch_path, str libtorch_build_id}: processes of a
//                system-wide recording (record -a, Recording::processes), in
//                the order gpuprof found them; pid > 0; a pid defined
//                again replaces its earlier description in place (a process
//                that loaded libtorch after it was first seen) (version 4)
//   THREAD_PROCESSES n x {u32 tid, u32 pid} (8 bytes each): the process of
//                each thread of a system-wide recording
//                (Recording::thread_processes); tid and pid > 0, each tid
//                defined once across the file (version 4)
//   MORE_OPS     u32 first_id, u32 count, then count x op (as in OP_TABLE):
//                ops of a libtorch_cpu that a system-wide recording found
//                after it began, appended to the op table; first_id must
//                equal the number of ops defined before it (version 4;
//                events after it may name them)
//   STATS        u64 events_recorded, u64 events_lost, u32 entry_probes,
//                u32 exit_probes, u32 ops_without_exit, str stop_reason,
//                u64 mem_events_lost, u64 shapes_unknown, str tensor_layout,
//                u64 samples_lost; version 3 adds u64 symbols_unresolved, u32
//                n, n x str problem (RecordStats::problems)
//   END          u64 end_monotonic_ns; the last chunk of a finished recording
//
// Version 1 has no OPTIONS, SHAPES, ENTRY_SHAPES, MEM_EVENTS, SAMPLE_FRAMES,
// SAMPLE_STACKS, SAMPLES, ENTRY_STACKS, SAMPLE_KERNEL_STACKS, LAUNCH_NAMES,
// LAUNCHES, CUDA_RUNTIME, GPU_CORRELATIONS, GPU_ACTIVITIES or CUPTI_SHIM
// chunks (their type numbers are unknown chunks there, skipped), OP_TABLE
// entries end after symbol (read as arg_count -1, tensor_args 0) and STATS
// after stop_reason. LAUNCH_NAMES, LAUNCHES and CUDA_RUNTIME came late in
// version 2, and GPU_CORRELATIONS, GPU_ACTIVITIES and CUPTI_SHIM later
// still: a build that does not know them skips them as unknown chunks (the
// recording reads without launches, or without GPU activities).
//
// A known chunk's payload must be consumed exactly: any layout change bumps
// the format version. Order: PROCESS, CLOCK, OP_TABLE and (version 2)
// OPTIONS once each, in any order, before any other known chunk; then EVENTS, OP_EVENTS,
// SHAPES, ENTRY_SHAPES, MEM_EVENTS, SAMPLE_FRAMES, SAMPLE_STACKS, SAMPLES,
// ENTRY_STACKS, SAMPLE_KERNEL_STACKS, LAUNCH_NAMES, LAUNCHES,
// GPU_CORRELATIONS and GPU_ACTIVITIES chunks and at most one CUDA_RUNTIME
// and one CUPTI_SHIM chunk, interleaved; then STATS; then END. SHAPES
// and ENTRY_SHAPES need the shapes option, MEM_EVENTS the memory option,
// SAMPLES and SAMPLE_KERNEL_STACKS the sampled option (sample_hz > 0),
// ENTRY_STACKS the with_stack option, SAMPLE_FRAMES and SAMPLE_STACKS the
// sampled or the with_stack option (frames and stacks are shared by samples
// and op entries); EVENTS, LAUNCH_NAMES, LAUNCHES, CUDA_RUNTIME,
// GPU_CORRELATIONS, GPU_ACTIVITIES and CUPTI_SHIM are refused with the
// no-ops option (launches and GPU activities are traced with the ops).
// Chunks of unknown type are skipped anywhere (forward compatibility within
// a version); an unknown (newer) version is an error.
//
// Reading rules:
//   - bad magic                      -> error "F is not a gpuprof record file"
//   - newer version                  -> error naming both versions
//   - the file ends in the header or before the mandatory chunks (PROCESS,
//     CLOCK, OP_TABLE, and OPTIONS in version 2) are complete
//                                    -> error "F is truncated: ..."
//   - checksum mismatch, length above the cap, bad payload, bad order, data
//     after END, an event with an unknown kind, an op_id outside the op table
//     or a non-zero payload_bytes, a bad shape definition, a bad entry shape
//     (below), a memory event of unknown kind, a bad sample frame or sample
//     stack definition, sample, entry stack or sample kernel stack (below),
//     a bad launch name definition or launch (below), a second
//     CUDA_RUNTIME, a bad GPU correlation or GPU activity (below), a second
//     CUPTI_SHIM
//                                    -> error "F: corrupt chunk N (TYPE) at
//                                       offset X: ..." (chunks count from 1)
//   - no END chunk, or the file ends inside a chunk after the mandatory ones
//     (the SIGKILLed recorder)       -> success, complete = false, the data of
//     the complete chunks, incomplete_reason says how many bytes were ignored
//     (a corrupted length that points past the end of the file looks the same:
//     it is reported as a torn chunk, never ignored silently).
//
// Corrupt chunks (CorruptChunks::skip; report without --strict): a chunk
// whose checksum does not match, whose length is above the cap, or whose
// length points past the end of the file while a valid chunk follows, is
// skipped once the mandatory chunks are read (before them nothing can be
// read: the error stands). Where the next chunk begins: where the chunk's
// length says when a chunk passing its checksum starts there (or the file
// ends there); otherwise the length itself is damaged, and the reader scans
// byte by byte for the next place where a chunk of a known type with a zero
// reserved field passes its checksum (the crc covers the header, so a
// damaged header cannot pass); with none, the rest of the file is lost. The
// type is the header's, unless the checksum matches with another known type
// (only the type field was damaged). Then (chunk_salvage.h):
//   - events and samples of the lost chunk are missing, and pairs naming
//     them by index (entry shapes and stacks, kernel stacks) are dropped;
//     later indices are mapped past them. An ENTRY whose EXIT was lost is
//     closed by the sp rules (op_timeline.h), as an EXIT lost in the ring
//     buffer; an EXIT whose ENTRY was lost counts as an exit without entry;
//   - a lost frame, stack, kernel name or op (MORE_OPS) definition reads as
//     a placeholder ("[lost frame]", a stack of the one frame "[lost
//     stack]", "[lost kernel name]", "[lost op]"), the ids it may have
//     defined bounded by its bytes; SHAPES chunks carry no first id, so from
//     a lost one on no shape id can be placed: those entry shapes are
//     dropped (the calls show unknown shapes) and later SHAPES are ignored;
//   - a lost once-only chunk (CUDA_RUNTIME, CUPTI_SHIM, THREAD_NAMES, STATS,
//     PROBE_COSTS) reads as absent; a lost END leaves the recording
//     incomplete; a chunk whose type cannot be told drops the later entry
//     shapes, entry stacks and kernel stacks (their indices cannot be
//     placed) and lets every dictionary have placeholders.
// Each lost chunk is one Recording::lost_chunks entry whose message is
// today's error followed by "; skipped: lost WHAT". A chunk that passes its
// checksum but breaks another rule is still an error: the writer made it.
//
// Events: GP_EV_OP_ENTRY / GP_EV_OP_EXIT need op_id < ops.size(); GP_EV_CATCH
// carries GP_NO_OP (an op id in range is tolerated); GP_EV_STEP (version 3
// only: version 3 is version 2 plus step events) carries GP_NO_OP or an op
// id in range (the ProfilerStep op, see schedule.h); GP_EV_CUT (version 5:
// version 4 plus cuts) carries GP_NO_OP; payload_bytes is 0.
// Entry shapes: event_index strictly increasing across the file and naming
// a GP_EV_OP_ENTRY (entry stacks: or, version 5, GP_EV_RANGE_BEGIN) event
// of an EVENTS chunk before it (not necessarily the
// one just before: shapes may be decoded long after their event); shape_id
// < the number of shapes defined by the SHAPES chunks before it. Memory
// events: kind in GP_MEM_CPU_ALLOC..GP_MEM_DEVICE. Samples: frame_id names a
// frame and python_stack a stack defined before, and a stack's frame ids
// name frames defined before it. Entry stacks: event_index as for entry
// shapes (strictly increasing across the ENTRY_STACKS chunks, an ENTRY event
// of an EVENTS chunk before it); stack_id < the number of stacks defined by
// the SAMPLE_STACKS chunks before it. Sample kernel stacks: sample_index
// strictly increasing across the file and naming a sample of a SAMPLES chunk
// before it whose flags have in_kernel set; stack_id as for entry stacks.
// Launch names: first_id as for sample frames. Launches: api in 1..3, both
// reserved fields 0, name_id names a launch name defined before it; a
// LAUNCHES payload that is not a whole number of 64-byte launches is
// corrupt. GPU correlations: domain 1 or 2, reserved field 0. GPU
// activities: kind in 1..3, end_ns >= start_ns, reserved field 0, name_id
// names a launch name defined before it (the names are shared with
// LAUNCHES). A GPU_CORRELATIONS (GPU_ACTIVITIES) payload that is not a
// whole number of 32-byte correlations (48-byte activities) is corrupt.
// A flush writes SHAPES, OP_EVENTS, ENTRY_SHAPES, MEM_EVENTS, SAMPLE_FRAMES,
// SAMPLE_STACKS, ENTRY_STACKS, SAMPLES, SAMPLE_KERNEL_STACKS, LAUNCH_NAMES,
// LAUNCHES, GPU_CORRELATIONS, GPU_ACTIVITIES in this order (and a chunk
// written early takes the pending chunks it depends on with it, before it:
// LAUNCH_NAMES before LAUNCHES and before GPU_ACTIVITIES), and finish()
// writes CUDA_RUNTIME, then CUPTI_SHIM, right before STATS, so every prefix
// of a file that ends on a chunk boundary follows these rules. Nothing else
// gets through, so the aggregator can index the op table, the events, the
// shapes, the sample frames, the sample stacks, the samples and the launch
// names without checks.
//
// Integers are stored as the host has them, so this format is defined for
// little-endian hosts only (chunk_codecs.h static_asserts it).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "base/result.h"
#include "launch_tracer_abi.h"
#include "op_tracer_abi.h"
#include "record/chunk_specs.h"
#include "record/chunk_compression.h"
#include "record/recording.h"
#include "base/unique_fd.h"

namespace gpuprof {

inline constexpr uint32_t GP_RECORD_FORMAT_VERSION = 6;
inline constexpr char kRecordMagic[8] = {'G', 'P', 'U', 'P', 'R', 'O', 'F', '\0'};
inline constexpr size_t kRecordHeaderSize = 16;
inline constexpr size_t kRecordChunkHeaderSize = 16;
// Largest payload a reader accepts (checked before allocating anything).
inline constexpr uint32_t kRecordMaxChunkPayload = 64u << 20;
// A thread name's longest (Linux's comm is 15 bytes; room for others).
inline constexpr size_t kRecordMaxThreadName = 255;
inline constexpr size_t kRecordMaxModuleName = 255;
// JOB_RANKS: an absent number, the largest number, the longest text.
inline constexpr uint32_t kRecordNoJobNumber = 0xffffffffu;
inline constexpr uint32_t kRecordMaxJobNumber = 0x7fffffffu;
inline constexpr size_t kRecordMaxJobText = 255;
// NATIVE_FILES: the longest path, the longest hex build id.
inline constexpr size_t kRecordMaxNativePath = 4096;
inline constexpr size_t kRecordMaxBuildId = 128;
// The room a record writer keeps allocated past its file's end, for the
// chunks that close the file after the disk filled (RecordWriter::disk_full).
inline constexpr uint64_t kRecordClosingReserve = 128 << 10;

// The writer emits an EVENTS chunk once this many payload bytes are buffered
// (2048 events), and a LAUNCHES chunk (1024 launches; after the pending
// launch names), a LAUNCH_NAMES chunk, a GPU_CORRELATIONS chunk (2048
// correlations) or a GPU_ACTIVITIES chunk (1366 activities, 65,568 bytes;
// after the pending launch names) once that many bytes of launches, name
// definitions, correlations or activities are; flush() emits a smaller one
// earlier.
inline constexpr size_t kRecordEventsChunkBytes = 64u << 10;
// The events of one OP_EVENTS chunk at most: as many as filled an EVENTS
// chunk of version 5.
inline constexpr size_t kRecordChunkEvents = kRecordEventsChunkBytes / sizeof(gp_event);
// The writer emits a MEM_EVENTS chunk once this many payload bytes (1600
// memory events) are buffered, flushes everything once the pending shape
// definitions or entry shapes reach kRecordEventsChunkBytes, and writes an
// ENTRY_STACKS chunk (after the events and stack definitions it names) once
// the pending entry stacks do.
inline constexpr size_t kRecordMemEventsChunkBytes = 1600 * sizeof(gp_mem_event);
// Size of one sample in a SAMPLES chunk. The writer emits a SAMPLES chunk
// once kRecordSamplesChunkBytes (2730 samples, just under 64 KiB) are
// buffered, a SAMPLE_FRAMES (SAMPLE_STACKS) chunk once the pending frame
// (stack) definitions reach kRecordEventsChunkBytes, and a
// SAMPLE_KERNEL_STACKS chunk once the pending kernel stacks do.
inline constexpr size_t kRecordSampleBytes = 24;
inline constexpr size_t kRecordSamplesChunkBytes = 2730 * kRecordSampleBytes;
// Sizes of one launch, GPU correlation and GPU activity in their chunks.
inline constexpr size_t kRecordLaunchBytes = 64;
inline constexpr size_t kRecordGpuCorrelationBytes = 32;
inline constexpr size_t kRecordGpuActivityBytes = 48;
// Most frames in one SAMPLE_STACKS stack.
inline constexpr uint32_t kRecordMaxSampleStackDepth = 4096;
// SAMPLES flags.
inline constexpr uint32_t kRecordSampleInKernel = 1u << 0;
// Largest ndim of a shape in a SHAPES chunk.
inline constexpr int32_t kRecordMaxShapeDims = 64;
// OPTIONS flags.
inline constexpr uint32_t kRecordOptionShapes = 1u << 0;
inline constexpr uint32_t kRecordOptionMemory = 1u << 1;
inline constexpr uint32_t kRecordOptionSampled = 1u << 2;  // u32 sample_hz follows the flags
inline constexpr uint32_t kRecordOptionNoOps = 1u << 3;
inline constexpr uint32_t kRecordOptionWithStack = 1u << 4;


// The 16-byte file header for `version` (kRecordMagic, version, 16).
std::vector<uint8_t> encode_record_header(uint32_t version = GP_RECORD_FORMAT_VERSION);
// One complete chunk (header with crc, then payload). Exposed for tests and
// tools that build files by hand.
std::vector<uint8_t> encode_chunk(uint32_t type, std::span<const uint8_t> payload);
// The chunk RecordWriter writes for this payload: compressed where that
// makes it smaller (chunk_compression.h), else as encode_chunk.
std::vector<uint8_t> encode_written_chunk(ChunkType type, std::span<const uint8_t> payload);
// The payload of one complete chunk of this version (header, then the bytes
// stored) as it was before compression: decompressed when its header says
// so. For tests and tools that walk a file's chunks; or the reason it
// cannot be.
Result<std::vector<uint8_t>> chunk_payload(std::span<const uint8_t> chunk);

// Streams one recording to a file. Usage: create, begin once, append_events,
// append_shapes, append_mem_events, add_sample_frame, add_sample_stack,
// append_samples, append_entry_stack, append_sample_kernel_stack,
// add_launch_name, append_launches, set_cuda_runtime,
// append_gpu_correlations, append_gpu_activities, set_cupti_shim and flush
// any number of times, finish once. Every chunk is written whole by one write loop, so
// a writer killed at any point leaves at most one torn chunk at the end of
// the file. After any write failure the writer refuses further writes
// (appending after a torn chunk would make the file corrupt, not just
// incomplete); a refused batch (data the reader would reject) leaves the
// writer usable. Not thread-safe.
class RecordWriter {
 public:
  // Opens (O_CREAT | O_TRUNC, mode 0644) path for writing.
  // Creates (or truncates) the file. A regular file gets `mode` exactly,
  // whatever the umask and whatever mode it had: record files hold command
  // lines, paths and code locations, so the default is owner-only.
  static Result<RecordWriter> create(const std::string& path, mode_t mode = 0600);

  // Move-only; destruction closes the file. An unfinished recording stays
  // readable (complete = false).
  RecordWriter(RecordWriter&&) noexcept = default;
  RecordWriter& operator=(RecordWriter&&) noexcept = default;

  // Writes the file header and the PROCESS, CLOCK, OP_TABLE and OPTIONS
  // chunks. clock.end_monotonic_ns is not stored here (finish() writes it).
  // Refuses an op table the reader would reject (arg_count < -1, tensor_args
  // above max(arg_count, 0)). options decide what append_events,
  // add_launch_name, append_launches, set_cuda_runtime,
  // append_gpu_correlations, append_gpu_activities and set_cupti_shim
  // (nothing with ops false), append_shapes, append_mem_events, add_sample_frame and
  // add_sample_stack (sample_hz > 0 or with_stack), append_samples and
  // append_sample_kernel_stack (sample_hz > 0) and append_entry_stack
  // (with_stack) accept.
  Result<void> begin(const ProcessInfo& process, const ClockInfo& clock, const std::vector<OpInfo>& ops,
                     const RecordOptions& options);
  // The same with no options (no shapes, no memory events).
  Result<void> begin(const ProcessInfo& process, const ClockInfo& clock, const std::vector<OpInfo>& ops) {
    return begin(process, clock, ops, RecordOptions{});
  }
  // Buffers events; writes an EVENTS chunk each time kRecordEventsChunkBytes
  // are buffered. payload_bytes is stored as 0 (the ring buffer's shape
  // payload is the caller's business). A batch holding an event the reader
  // would reject (unknown kind, op_id outside the op table) is refused whole,
  // with nothing written or buffered and the writer still usable.
  Result<void> append_events(const gp_event* events, size_t count);
  // Records the input shapes of the ENTRY event at event_index (its index in
  // the recording's event sequence: the events_appended() value before it
  // was appended). Needs the shapes option; the event must have been
  // appended already and be a GP_EV_OP_ENTRY; event_index must be above
  // that of the previous call; every argument has at most
  // kRecordMaxShapeDims dims (nullopt = unknown). The shape list is interned:
  // each distinct list is defined once in a SHAPES chunk. Refused calls
  // change nothing. Flushes everything once the pending definitions or entry
  // shapes reach kRecordEventsChunkBytes.
  Result<void> append_shapes(uint64_t event_index, const InputShapes& shapes);
  // Buffers allocator events (needs the memory option); writes a MEM_EVENTS
  // chunk each time kRecordMemEventsChunkBytes are buffered. A batch holding
  // an event of unknown kind is refused whole.
  Result<void> append_mem_events(const gp_mem_event* events, size_t count);
  // Defines the next frame of CPU samples and op-entry stacks: its id is
  // sample_frames_defined() before the call (the caller interns names).
  // Needs sample_hz > 0 or with_stack; the name must fit a chunk. Buffered;
  // a SAMPLE_FRAMES chunk goes out once kRecordEventsChunkBytes of
  // definitions are pending (or at flush()).
  Result<void> add_sample_frame(const std::string& name);
  // Defines the next stack of CPU samples (Python or kernel) and op entries:
  // its id is sample_stacks_defined() before the call (the caller interns
  // stacks). frame_ids are outermost first, each a frame defined already (by
  // add_sample_frame), at most kRecordMaxSampleStackDepth of them. Needs
  // sample_hz > 0 or with_stack. A refused call changes nothing. Buffered;
  // a SAMPLE_STACKS chunk goes out once kRecordEventsChunkBytes of
  // definitions are pending (after the pending frame definitions), or at
  // flush().
  Result<void> add_sample_stack(const std::vector<uint32_t>& frame_ids);
  // Buffers CPU samples (needs sample_hz > 0); writes the pending frame and
  // stack definitions and a SAMPLES chunk each time kRecordSamplesChunkBytes
  // are buffered. A batch holding a frame_id not yet defined, or a
  // python_stack that is neither kNoPythonStack nor a stack defined already,
  // is refused whole, with nothing buffered and the writer still usable.
  Result<void> append_samples(const CpuSample* samples, size_t count);
  // Records the Python stack of the ENTRY event at event_index (as for
  // append_shapes). Needs the with_stack option; the event must have been
  // appended already and be a GP_EV_OP_ENTRY; event_index must be above
  // that of the previous call; stack_id must be a stack defined already (by
  // add_sample_stack). Refused calls change nothing. Writes the pending
  // events, frame and stack definitions and an ENTRY_STACKS chunk once
  // kRecordEventsChunkBytes of entry stacks are pending.
  Result<void> append_entry_stack(uint64_t event_index, uint32_t stack_id);
  // Records the Python stack of the forward op that made the autograd node
  // whose evaluate_function ENTRY is at event_index (record --with-modules:
  // the backward call's module). The same rules as append_entry_stack, with
  // its own ascending event_index; a BACKWARD_STACKS chunk.
  Result<void> append_backward_stack(uint64_t event_index, uint32_t stack_id);
  // Records the kernel stack of the sample at sample_index (the
  // samples_appended() value before it was appended). Needs sample_hz > 0;
  // the sample must have been appended already with in_kernel set;
  // sample_index must be above that of the previous call; stack_id must be a
  // stack defined already. Refused calls change nothing. Writes the pending
  // samples (with the frame and stack definitions before them) and a
  // SAMPLE_KERNEL_STACKS chunk once kRecordEventsChunkBytes of kernel stacks
  // are pending.
  Result<void> append_sample_kernel_stack(uint64_t sample_index, uint32_t stack_id);
  // Defines the next CUDA kernel name: its id is launch_names_defined()
  // before the call (the caller interns names). Needs the ops option; the
  // name must fit a chunk. Buffered; a LAUNCH_NAMES chunk goes out before
  // the LAUNCHES that name it, once kRecordEventsChunkBytes of definitions
  // are pending, or at flush().
  Result<void> add_launch_name(const std::string& name);
  // Launch names defined so far (written or buffered): the id the next
  // add_launch_name gets.
  uint32_t launch_names_defined() const {
    return static_cast<uint32_t>(pending_[kLaunchNames].appended());
  }
  // Buffers CUDA launches (needs the ops option); writes the pending names
  // and a LAUNCHES chunk each time kRecordEventsChunkBytes are buffered. A
  // batch holding an api outside enum gp_launch_api or a name_id not yet
  // defined is refused whole, with nothing buffered and the writer still
  // usable.
  Result<void> append_launches(const CudaLaunch* launches, size_t count);
  // What the launch tracing probed (CudaRuntimeInfo); finish() writes it in
  // one CUDA_RUNTIME chunk before STATS. Needs the ops option; the last
  // call wins. Without a call the file has no CUDA_RUNTIME chunk (nullopt).
  Result<void> set_cuda_runtime(const CudaRuntimeInfo& info);
  // Buffers launch correlations from the CUPTI shim (needs the ops option);
  // a GPU_CORRELATIONS chunk goes out each time kRecordEventsChunkBytes are
  // buffered. A batch holding a domain other than 1 (driver) or 2 (runtime)
  // is refused whole.
  Result<void> append_gpu_correlations(const GpuCorrelation* correlations, size_t count);
  // Buffers GPU activities (needs the ops option); writes the pending launch
  // names and a GPU_ACTIVITIES chunk each time kRecordEventsChunkBytes are
  // buffered. A batch holding a kind outside GpuActivityKind, an end before
  // its start or a name_id not yet defined (add_launch_name) is refused
  // whole.
  Result<void> append_gpu_activities(const GpuActivity* activities, size_t count);
  // The shim's state (CuptiShimInfo); finish() writes it in one CUPTI_SHIM
  // chunk before STATS (after CUDA_RUNTIME). Needs the ops option; the last
  // call wins.
  Result<void> set_cupti_shim(const CuptiShimInfo& info);
  // The target's thread names; finish() writes them in one THREAD_NAMES
  // chunk before STATS (after CUPTI_SHIM) when there are any. A zero or
  // repeated tid or a name longer than kRecordMaxThreadName is refused; the
  // last call wins.
  Result<void> set_thread_names(const std::vector<ThreadName>& names);
  // System-wide recordings (record -a). Each writes its chunk at once, so a
  // killed recorder keeps what it knew; the reader's rules apply (pid > 0;
  // tid > 0 and not defined before; valid ops) and
  // a refused call changes nothing.
  //   add_processes: a PROCESSES chunk (hostname is not stored);
  //   add_thread_processes: a THREAD_PROCESSES chunk;
  //   add_ops: a MORE_OPS chunk: the ops get ids ops_defined() onwards and
  //            events may name them from now on.
  Result<void> add_processes(const std::vector<ProcessInfo>& processes);
  // The op probes' calibrated costs: a PROBE_COSTS chunk, written at once
  // (a killed recorder's file keeps them); at attach, then through the recording.
  Result<void> set_probe_costs(const ProbeCosts& costs);
  Result<void> add_thread_processes(const std::vector<ThreadProcess>& threads);
  // record --with-modules: module attribute names (a MODULE_NAMES chunk,
  // written at once after the frames buffered so far, which they name).
  Result<void> add_module_names(const std::vector<ModuleName>& names);
  // The job ranks of processes (a JOB_RANKS chunk, written at once): the
  // target's as soon as its environment is read, each process's of a
  // system-wide recording as it is first seen. A refused call (the
  // reader's rules) changes nothing.
  Result<void> add_job_ranks(const std::vector<JobRank>& ranks);
  // The native files of the frames defined so far (a NATIVE_FILES chunk,
  // written at once). A refused call (the reader's rules) changes nothing.
  Result<void> add_native_files(const std::vector<NativeFile>& files);
  Result<void> add_ops(const std::vector<OpInfo>& ops);
  size_t ops_defined() const { return ops_count_; }
  // Writes what is buffered now: SHAPES (new definitions), EVENTS,
  // ENTRY_SHAPES, MEM_EVENTS, SAMPLE_FRAMES, SAMPLE_STACKS, ENTRY_STACKS,
  // SAMPLES, SAMPLE_KERNEL_STACKS, LAUNCH_NAMES, LAUNCHES, GPU_CORRELATIONS,
  // GPU_ACTIVITIES, each only when non-empty: every chunk after the
  // definitions and data it names. The collector calls this periodically so
  // a SIGKILL loses little.
  Result<void> flush();
  // flush(), then the CUDA_RUNTIME chunk (when set_cuda_runtime was
  // called), the CUPTI_SHIM chunk (when set_cupti_shim was called), the
  // THREAD_NAMES chunk (when set_thread_names gave any), the STATS and END
  // chunks, then closes the file (a close error is reported).
  // stats are stored as given.
  // After disk_full(): what was buffered is dropped and the closing chunks
  // go into the room kept for them, so the file still ends properly.
  Result<void> finish(const RecordStats& stats, uint64_t end_monotonic_ns);

  // The file system had no room for the next chunk (ENOSPC, EDQUOT). The
  // writer keeps kRecordClosingReserve bytes allocated past the file's end
  // (fallocate, where the file system has it) and stops before a chunk that
  // would eat into them: the file holds every chunk before, whole, and
  // finish() can still close it. Where nothing could be kept, a chunk torn
  // by the full disk is cut off again: the file ends at its last whole chunk.
  bool disk_full() const { return state_ == State::kDiskFull; }

  // Bytes written to the file so far (the offset of the next chunk).
  uint64_t bytes_written() const { return offset_; }
  // Events written in EVENTS chunks so far (not counting buffered ones).
  uint64_t events_written() const { return pending_[kEvents].written; }
  // Events accepted so far, written or buffered: the event_index the next
  // appended event gets.
  uint64_t events_appended() const { return pending_[kEvents].appended(); }
  // What the events written so far would have taken as version 5 EVENTS
  // chunks (32 bytes each, and chunk headers): bench/record_size.py's
  // figure of the format before.
  uint64_t raw_event_bytes() const { return raw_event_bytes_; }
  // Distinct shape lists interned so far (written or buffered).
  uint32_t shapes_defined() const { return static_cast<uint32_t>(shape_ids_.size()); }
  // Memory events written in MEM_EVENTS chunks so far.
  uint64_t mem_events_written() const { return pending_[kMemEvents].written; }
  // Sample frames defined so far (written or buffered): the id the next
  // add_sample_frame gets.
  uint32_t sample_frames_defined() const {
    return static_cast<uint32_t>(pending_[kFrames].appended());
  }
  // Sample stacks defined so far (written or buffered): the id the next
  // add_sample_stack gets.
  uint32_t sample_stacks_defined() const {
    return static_cast<uint32_t>(pending_[kStacks].appended());
  }
  // Samples written in SAMPLES chunks so far.
  uint64_t samples_written() const { return pending_[kSamples].written; }
  // Samples accepted so far, written or buffered: the sample_index the next
  // appended sample gets.
  uint64_t samples_appended() const { return pending_[kSamples].appended(); }

 private:
  enum class State { kCreated, kBegun, kFinished, kFailed, kDiskFull };
  // Which items of an appended sequence (events, samples) have a property
  // (ENTRY, in_kernel), for every item not below a mark that only rises:
  // older words are dropped now and then, so memory follows the distance
  // between the newest item and the mark, not the length of the recording.
  class IndexBits {
   public:
    void set(uint64_t index);  // index >= every mark given to forget_below
    bool test(uint64_t index) const;
    void forget_below(uint64_t mark);

   private:
    std::vector<uint64_t> words_;
    uint64_t base_ = 0;  // the index of bit 0 of words_[0], a multiple of 64
  };
  RecordWriter(int fd, std::string path);
  Result<void> check_state(State want, const char* what) const;
  Result<void> write_bytes(const std::vector<uint8_t>& bytes);
  Result<void> keep_room_for(size_t bytes);
  // Marks the writer failed (kDiskFull on ENOSPC, EDQUOT); the error that says why.
  Error stop_writing(int error_number);
  Result<void> write_chunk(ChunkType type, std::vector<uint8_t>& chunk);
  template <typename T, typename Problem, typename Fields>
  Result<void> write_checked(const char* method, ChunkType type, const std::vector<T>& items, const char* what,
                             const char* one, Problem problem, Fields fields);
  // One chunk type's buffered items (record_writer.cpp's one flush path).
  // bytes holds kRecordChunkHeaderSize bytes of room for the chunk header,
  // the prefix, then the items: a chunk is sealed in place, never copied.
  struct PendingChunk {
    // What the payload starts with: nothing, u32 count (SHAPES), or u32
    // first_id and u32 count (the other definition chunks).
    enum class Prefix { kNone, kCount, kFirstIdAndCount };
    PendingChunk(ChunkType type, Prefix prefix, size_t due_bytes, std::vector<size_t> after);
    ChunkType type;
    Prefix prefix;
    size_t items_start;  // the header and the prefix
    size_t due_bytes;    // written once this many bytes of items are buffered
    // The pending chunks (indices into pending_) written before it: what
    // its items name, so a file cut after it never names what it lacks.
    std::vector<size_t> after;
    std::vector<uint8_t> bytes;
    uint32_t items = 0;    // buffered
    uint64_t written = 0;  // items written in chunks before
    uint64_t appended() const { return written + items; }
    bool due() const { return bytes.size() - items_start >= due_bytes; }
    // Whether `more` bytes of items would take the payload past the cap.
    bool full_with(size_t more) const {
      return bytes.size() - kRecordChunkHeaderSize + more > kRecordMaxChunkPayload;
    }
    uint8_t* grow(size_t n) {  // room for n more bytes of items
      bytes.resize(bytes.size() + n);
      return bytes.data() + bytes.size() - n;
    }
  };
  // pending_'s chunks, in the order flush() writes them (record_file.h):
  // each after the ones it names.
  enum Pending : size_t {
    kShapes, kEvents, kEntryShapes, kMemEvents, kFrames, kStacks, kEntryStacks, kBackwardStacks, kSamples,
    kKernelStacks, kLaunchNames, kLaunches, kGpuCorrelations, kGpuActivities, kPendingChunks
  };
  static std::vector<PendingChunk> pending_chunks();
  // Writes pending_[which] when it holds items, after the chunks it names
  // (each after its own), and starts it afresh.
  Result<void> write_pending(size_t which);
  // Counts the item just put in pending_[which]; writes the chunk once due.
  Result<void> buffered_one(size_t which);
  // Buffers records of record_bytes each, encode(record, out) putting one.
  template <typename T, typename Encode>
  Result<void> buffer_records(size_t which, const T* records, size_t count, size_t record_bytes,
                              Encode encode);
  // Refuses a batch of records that need the ops option when it lacks it.
  Result<void> with_ops(const char* what, size_t count) const;
  // Refuses a batch holding a record with a problem (the reader's rules,
  // problem(record) is "" or what is wrong): nothing of it is buffered.
  template <typename T, typename Problem>
  Result<void> batch_ok(const char* what, const T* records, size_t count, Problem problem) const;
  // A kind of record that only a recording with ops takes (launches, GPU
  // correlations and activities): the call's name and the record's, for
  // refusals, and where it is buffered.
  struct OpsRecordKind {
    const char* call;
    const char* plural;
    const char* singular;
    size_t chunk;
    size_t record_bytes;
  };
  // Checks a batch of such records (state, ops option, problem(record))
  // and buffers it whole, or refuses it whole.
  template <typename T, typename Problem, typename Encode>
  Result<void> append_ops_records(const OpsRecordKind& kind, const T* records, size_t count, Problem problem,
                                  Encode encode);
  // A definition of SAMPLE_FRAMES or LAUNCH_NAMES: u32 length, then the name.
  Result<void> define_name(size_t which, const std::string& name);
  // Lets entries_ forget the events below every entry cursor in use.
  void forget_old_entries();
  // append_entry_stack and append_backward_stack: which is kEntryStacks or kBackwardStacks.
  Result<void> append_event_stack(Pending which, uint64_t event_index, uint32_t stack_id);

  UniqueFd fd_;
  std::string path_;
  State state_ = State::kCreated;
  RecordOptions options_;
  std::vector<PendingChunk> pending_ = pending_chunks();
  std::vector<gp_event> events_;  // OP_EVENTS' items, packed (packed_events.h) when written
  uint64_t raw_event_bytes_ = 0;  // raw_event_bytes()
  ChunkCompressor compressor_;
  std::vector<uint8_t> compressed_;  // write_chunk's compressed chunk, reused
  std::optional<CudaRuntimeInfo> cuda_runtime_;  // CUDA_RUNTIME, written by finish()
  std::optional<CuptiShimInfo> cupti_shim_;        // CUPTI_SHIM, written by finish()
  int probe_costs_written_ = 0;                    // PROBE_COSTS chunks (set_probe_costs)
  std::vector<ThreadName> thread_names_;           // THREAD_NAMES, written by finish()
  std::unordered_set<uint32_t> tids_defined_;      // THREAD_PROCESSES written
  uint64_t offset_ = 0;
  uint64_t reserved_to_ = 0;  // bytes [0, reserved_to_) are allocated (keep_room_for)
  bool can_reserve_ = true;   // false where the file system has no fallocate
  bool closing_ = false;      // finish() after a full disk: writing into the room kept
  size_t ops_count_ = 0;  // for validating events (the reader's rules)
  // Interning: a shape list's encoding in a SHAPES chunk -> its id.
  std::unordered_map<std::string, uint32_t> shape_ids_;
  // With the shapes or with_stack option: which appended events are
  // entries, from the lower of next_entry_index_ (shapes) and
  // next_stack_entry_index_ (with_stack) on.
  IndexBits entries_;
  uint64_t next_entry_index_ = 0;        // append_shapes needs event_index >= this
  uint64_t next_stack_entry_index_ = 0;  // append_entry_stack needs event_index >= this
  uint64_t next_backward_entry_index_ = 0;  // append_backward_stack needs event_index >= this
  // Which appended samples are in the kernel, from next_kernel_sample_index_ on.
  IndexBits in_kernel_;
  uint64_t next_kernel_sample_index_ = 0;  // append_sample_kernel_stack needs >= this
};

// What the reader does with a chunk whose checksum or length is wrong
// (above, "Corrupt chunks").
enum class CorruptChunks {
  refuse,  // an error naming the chunk (report --strict)
  skip,    // skipped, said in Recording::lost_chunks; the rest is read (report)
};

// Reads and validates a whole record file (see the rules above). On failure
// the error is one line starting with the path.
Result<Recording> read_recording(const std::string& path, CorruptChunks corrupt = CorruptChunks::refuse);
// The same for a file already in memory; `name` stands for the path in errors.
Result<Recording> read_recording_bytes(std::span<const uint8_t> bytes, const std::string& name = "<memory>",
                                       CorruptChunks corrupt = CorruptChunks::refuse);

}  // namespace gpuprof
