// record_writer.cpp: RecordWriter (record_file.h): buffering each chunk
// type until it is due, writing every chunk whole and after what it names,
// compressed (chunk_compression.h), and keeping room to close the file on a
// full disk.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <string>
#include <utility>

#include "base/file_mode.h"
#include "record/chunk_codecs.h"
#include "record/packed_events.h"
#include "record/record_file.h"

namespace gpuprof {

using namespace chunk_codec;

// ---- RecordWriter ----

namespace {
size_t payload_size(const std::vector<uint8_t>& chunk) {
  return chunk.size() - kRecordChunkHeaderSize;
}
// What an entry shape, entry stack or kernel stack names: an item of the
// events or samples that has a property (ENTRY, in_kernel), in the words
// of named_item_problem's answers.
struct NamedItems {
  const char* previous;  // "entry shape's event"
  const char* items;     // "events"
  const char* property;  // "an ENTRY event"
};
constexpr NamedItems kEntryShapeEvents{"entry shape's event", "events", "an ENTRY event"};
constexpr NamedItems kEntryStackEvents{"entry stack's event", "events", "an ENTRY event"};
constexpr NamedItems kBackwardStackEvents{"backward stack's event", "events", "an ENTRY event"};
constexpr NamedItems kKernelStackSamples{"kernel stack's sample", "samples", "an in-kernel sample"};
// Why an entry shape, entry stack or kernel stack cannot name item `index` of
// the `appended` items ("" when it can): each kind names, in rising order
// (from `next` on), items appended already that have its property.
std::string named_item_problem(uint64_t index, uint64_t next, uint64_t appended, bool has_property,
                               const NamedItems& named) {
  if (index < next)
    return std::string("not above the previous ") + named.previous + " " + std::to_string(next - 1);
  if (index >= appended) return "only " + std::to_string(appended) + " " + named.items + " were appended";
  if (!has_property) return std::string("it is not ") + named.property;
  return "";
}
std::string stack_id_problem(uint32_t stack_id, uint32_t stacks) {
  if (stack_id < stacks) return "";
  return "stack_id " + std::to_string(stack_id) + ", but " + std::to_string(stacks) +
         " stacks are defined";
}
// The refusals of one call: each is the Error "<path>: <not_doing>[ <id>]:
// <why>" ("...: not defining sample frame 3: too many frames"). The message
// is built only when a refusal is made.
class Refusal {
 public:
  Refusal(const std::string& path, const char* not_doing, std::optional<uint64_t> id)
      : path_(path), not_doing_(not_doing), id_(id) {}
  Error operator()(const std::string& why) const {
    return Error(path_ + ": " + not_doing_ + (id_ ? " " + std::to_string(*id_) : "") + ": " + why);
  }

 private:
  const std::string& path_;
  const char* not_doing_;
  std::optional<uint64_t> id_;
};
// An {index, stack_id} pair of ENTRY_STACKS or SAMPLE_KERNEL_STACKS: appended
// to `chunk`, with `next` moved past index, or refused: index must name one
// of the `appended` items (named_item_problem), stack_id one of the
// `stacks` defined.
Result<void> add_stack_pair(std::vector<uint8_t>& chunk, uint64_t index, uint32_t stack_id, uint32_t stacks,
                            uint64_t appended, bool has_property, const NamedItems& named, uint64_t& next,
                            const Refusal& refuse) {
  std::string why = named_item_problem(index, next, appended, has_property, named);
  if (why.empty()) why = stack_id_problem(stack_id, stacks);
  if (!why.empty()) return refuse(why);
  append_pair(chunk, index, stack_id);
  next = index + 1;
  return {};
}
}  // namespace

RecordWriter::PendingChunk::PendingChunk(ChunkType type, Prefix prefix, size_t due_bytes,
                                         std::vector<size_t> after)
    : type(type),
      prefix(prefix),
      items_start(kRecordChunkHeaderSize + (prefix == Prefix::kNone    ? 0
                                            : prefix == Prefix::kCount ? 4
                                                                       : 8)),
      due_bytes(due_bytes),
      after(std::move(after)),
      bytes(items_start, 0) {}

// In the order of enum Pending; each names only chunks before it.
std::vector<RecordWriter::PendingChunk> RecordWriter::pending_chunks() {
  using P = PendingChunk::Prefix;
  constexpr size_t k64K = kRecordEventsChunkBytes;
  return {
      {ChunkType::SHAPES, P::kCount, k64K, {}},
      {ChunkType::OP_EVENTS, P::kNone, k64K, {}},  // due at kRecordChunkEvents events
      {ChunkType::ENTRY_SHAPES, P::kNone, k64K, {kShapes, kEvents}},
      {ChunkType::MEM_EVENTS, P::kNone, kRecordMemEventsChunkBytes, {}},
      {ChunkType::SAMPLE_FRAMES, P::kFirstIdAndCount, k64K, {}},
      {ChunkType::SAMPLE_STACKS, P::kFirstIdAndCount, k64K, {kFrames}},
      {ChunkType::ENTRY_STACKS, P::kNone, k64K, {kEvents, kStacks}},
      {ChunkType::BACKWARD_STACKS, P::kNone, k64K, {kEvents, kStacks}},
      {ChunkType::SAMPLES, P::kNone, kRecordSamplesChunkBytes, {kStacks}},
      {ChunkType::SAMPLE_KERNEL_STACKS, P::kNone, k64K, {kSamples}},
      {ChunkType::LAUNCH_NAMES, P::kFirstIdAndCount, k64K, {}},
      {ChunkType::LAUNCHES, P::kNone, k64K, {kLaunchNames}},
      {ChunkType::GPU_CORRELATIONS, P::kNone, k64K, {}},
      {ChunkType::GPU_ACTIVITIES, P::kNone, k64K, {kLaunchNames}},
  };
}

RecordWriter::RecordWriter(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}

// The one way a buffered chunk goes out, early (due, or full) or at flush():
// what it names first, so a file cut after any chunk never has an item naming
// a definition, event or sample it does not hold.
Result<void> RecordWriter::write_pending(size_t which) {
  for (size_t first : pending_[which].after)
    RETURN_IF_ERROR(write_pending(first));
  PendingChunk& c = pending_[which];
  if (c.items == 0) return {};
  uint8_t* prefix = c.bytes.data() + kRecordChunkHeaderSize;
  if (which == kEvents) {  // packed now, from the events as appended
    c.bytes.resize(kRecordChunkHeaderSize);
    pack_events(events_, c.written, c.bytes);
  } else if (c.prefix == PendingChunk::Prefix::kCount) {
    std::memcpy(prefix, &c.items, 4);
  } else if (c.prefix == PendingChunk::Prefix::kFirstIdAndCount) {
    const uint32_t first_id = static_cast<uint32_t>(c.written);
    std::memcpy(prefix, &first_id, 4);
    std::memcpy(prefix + 4, &c.items, 4);
  }
  RETURN_IF_ERROR(write_chunk(c.type, c.bytes));
  if (which == kEvents) {
    raw_event_bytes_ += kRecordChunkHeaderSize + events_.size() * sizeof(gp_event);
    events_.clear();
  }
  c.written += c.items;
  c.items = 0;
  c.bytes.resize(c.items_start);
  return {};
}

Result<void> RecordWriter::buffered_one(size_t which) {
  ++pending_[which].items;
  if (!pending_[which].due()) return {};
  return write_pending(which);
}

template <typename T, typename Encode>
Result<void> RecordWriter::buffer_records(size_t which, const T* records, size_t count,
                                          size_t record_bytes, Encode encode) {
  for (size_t i = 0; i < count; ++i) {
    encode(records[i], pending_[which].grow(record_bytes));
    RETURN_IF_ERROR(buffered_one(which));
  }
  return {};
}

Result<void> RecordWriter::with_ops(const char* what, size_t count) const {
  if (count == 0 || options_.ops) return {};
  return Error(path_ + ": not recording " + what +
               ": the recording was begun without ops (no-ops option)");
}

template <typename T, typename Problem>
Result<void> RecordWriter::batch_ok(const char* what, const T* records, size_t count, Problem problem) const {
  for (size_t i = 0; i < count; ++i)
    if (std::string why = problem(records[i]); !why.empty())
      return Error(path_ + ": not recording " + what + " " + std::to_string(i) + " of the batch: " + why);
  return {};
}

template <typename T, typename Problem, typename Encode>
Result<void> RecordWriter::append_ops_records(const OpsRecordKind& kind, const T* records, size_t count,
                                              Problem problem, Encode encode) {
  RETURN_IF_ERROR(check_state(State::kBegun, kind.call));
  RETURN_IF_ERROR(with_ops(kind.plural, count));
  RETURN_IF_ERROR(batch_ok(kind.singular, records, count, problem));
  return buffer_records(kind.chunk, records, count, kind.record_bytes, encode);
}

Result<void> RecordWriter::define_name(size_t which, const std::string& name) {
  PendingChunk& c = pending_[which];
  const uint32_t len = static_cast<uint32_t>(name.size());
  // Keep the chunk under the cap.
  if (c.full_with(4 + name.size())) RETURN_IF_ERROR(write_pending(which));
  std::memcpy(c.grow(4), &len, 4);
  c.bytes.insert(c.bytes.end(), name.begin(), name.end());
  return buffered_one(which);
}

Result<RecordWriter> RecordWriter::create(const std::string& path, mode_t mode) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return Error("cannot create " + path + ": " + std::strerror(errno));
  if (!set_file_mode(fd, mode)) {
    Error error("cannot set the mode of " + path + ": " + std::strerror(errno));
    ::close(fd);
    return error;
  }
  return RecordWriter(fd, path);
}

Result<void> RecordWriter::check_state(State want, const char* what) const {
  if (state_ == want && fd_.get() >= 0) return {};  // fd < 0: moved from
  return Error(path_ + ": " + what +
               (state_ == State::kFailed || state_ == State::kDiskFull ? " after an earlier write error"
                                                                       : " called out of order (internal error)"));
}

// Keeps kRecordClosingReserve bytes allocated past the next `bytes`, in
// steps of that much (one fallocate per step, not per chunk). A file system
// out of room refuses: nothing of the chunk is written, and the room taken
// before is there for finish().
Result<void> RecordWriter::keep_room_for(size_t bytes) {
  if (closing_ || !can_reserve_ || offset_ + bytes + kRecordClosingReserve <= reserved_to_) return {};
  const uint64_t to = offset_ + bytes + 2 * kRecordClosingReserve;
  if (fallocate(fd_.get(), FALLOC_FL_KEEP_SIZE, static_cast<off_t>(offset_), static_cast<off_t>(to - offset_)) == 0) {
    reserved_to_ = to;
    return {};
  }
  const int why = errno;
  if (why != ENOSPC && why != EDQUOT) {
    can_reserve_ = false;  // no fallocate here (a pipe, /dev/null, a file system without it)
    return {};
  }
  // A failed call may undo its whole range not yet written, the room kept
  // before included (tmpfs does): take that much again.
  if (fallocate(fd_.get(), FALLOC_FL_KEEP_SIZE, static_cast<off_t>(offset_), static_cast<off_t>(kRecordClosingReserve)) != 0)
    can_reserve_ = false;
  return stop_writing(why);
}

Error RecordWriter::stop_writing(int error_number) {
  state_ = (error_number == ENOSPC || error_number == EDQUOT) && !closing_ ? State::kDiskFull : State::kFailed;
  return Error("cannot write " + path_ + ": " + std::strerror(error_number));
}

// One write loop for the whole buffer: a killed writer tears at most this one.
Result<void> RecordWriter::write_bytes(const std::vector<uint8_t>& bytes) {
  RETURN_IF_ERROR(keep_room_for(bytes.size()));
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t r = ::write(fd_.get(), bytes.data() + done, bytes.size() - done);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      const int why = r < 0 ? errno : EIO;
      // A torn chunk is cut off: the file ends at its last whole chunk.
      if (done > 0 && ftruncate(fd_.get(), static_cast<off_t>(offset_)) == 0)
        lseek(fd_.get(), static_cast<off_t>(offset_), SEEK_SET);
      return stop_writing(why);
    }
    done += static_cast<size_t>(r);
  }
  offset_ += bytes.size();
  return {};
}

// Writes one chunk, its payload compressed where that makes it smaller
// (chunk_compression.h): the header's reserved field then says its size
// before.
Result<void> RecordWriter::write_chunk(ChunkType type, std::vector<uint8_t>& chunk) {
  const size_t raw = payload_size(chunk);
  if (raw > kRecordMaxChunkPayload) {
    state_ = State::kFailed;
    return Error(path_ + ": " + chunk_type_name(static_cast<uint32_t>(type)) + " chunk of " +
                 std::to_string(raw) + " bytes exceeds the limit");
  }
  const std::span<const uint8_t> payload(chunk.data() + kRecordChunkHeaderSize, raw);
  if (compresses(type) && compressor_.compress(payload, compressed_)) {
    seal_chunk(compressed_, static_cast<uint32_t>(type), static_cast<uint32_t>(raw));
    return write_bytes(compressed_);
  }
  seal_chunk(chunk, static_cast<uint32_t>(type));
  return write_bytes(chunk);
}

Result<void> RecordWriter::begin(const ProcessInfo& process, const ClockInfo& clock,
                                 const std::vector<OpInfo>& ops, const RecordOptions& options) {
  RETURN_IF_ERROR(check_state(State::kCreated, "begin"));
  for (size_t i = 0; i < ops.size(); ++i)
    if (std::string problem = op_problem(ops[i], i); !problem.empty())
      return Error(path_ + ": not recording op table: " + problem);
  Encoder p, c, o, f;
  process_fields(p, process);
  clock_fields(c, clock);
  o.u32(static_cast<uint32_t>(ops.size()));
  for (const OpInfo& op : ops) op_fields(o, op, GP_RECORD_FORMAT_VERSION);
  f.u32(option_flags(options));
  if (options.sample_hz > 0) f.u32(options.sample_hz);
  auto write_mandatory = [&]() -> Result<void> {
    RETURN_IF_ERROR(write_bytes(encode_record_header()));
    RETURN_IF_ERROR(write_chunk(ChunkType::PROCESS, p.b));
    RETURN_IF_ERROR(write_chunk(ChunkType::CLOCK, c.b));
    RETURN_IF_ERROR(write_chunk(ChunkType::OP_TABLE, o.b));
    return write_chunk(ChunkType::OPTIONS, f.b);
  };
  if (Result<void> written = write_mandatory(); !written) {
    // Without its mandatory chunks the file is no recording: no stub is
    // left (a full disk at the start). Only a file this writer made.
    struct stat st;
    if (fstat(fd_.get(), &st) == 0 && S_ISREG(st.st_mode)) unlink(path_.c_str());
    state_ = State::kFailed;
    return written;
  }
  ops_count_ = ops.size();
  options_ = options;
  state_ = State::kBegun;
  return {};
}

Result<void> RecordWriter::append_events(const gp_event* events, size_t count) {
  RETURN_IF_ERROR(check_state(State::kBegun, "append_events"));
  RETURN_IF_ERROR(with_ops("events", count));
  // Reject the whole batch before buffering any of it: a bad event written
  // would make the file unreadable (the reader rejects it as corrupt).
  for (size_t i = 0; i < count; ++i)
    if (!event_ok(events[i], ops_count_, GP_RECORD_FORMAT_VERSION))
      return Error(path_ + ": not recording event" + event_problem(events[i], ops_count_, GP_RECORD_FORMAT_VERSION));
  if (options_.shapes || options_.with_stack) {  // for append_shapes, append_entry_stack
    const uint64_t first = events_appended();
    for (size_t i = 0; i < count; ++i)
      if (events[i].kind == GP_EV_OP_ENTRY || events[i].kind == GP_EV_RANGE_BEGIN) entries_.set(first + i);
  }
  while (count > 0) {
    const size_t take = std::min(count, kRecordChunkEvents - events_.size());
    events_.insert(events_.end(), events, events + take);
    pending_[kEvents].items += static_cast<uint32_t>(take);
    events += take;
    count -= take;
    if (events_.size() == kRecordChunkEvents) RETURN_IF_ERROR(write_pending(kEvents));
  }
  return {};
}

void RecordWriter::IndexBits::set(uint64_t index) {
  if (index < base_) return;  // forgotten already: never asked about again
  const uint64_t word = (index - base_) / 64;
  if (word >= words_.size()) words_.resize(static_cast<size_t>(word + 1), 0);
  words_[word] |= uint64_t{1} << ((index - base_) % 64);
}

bool RecordWriter::IndexBits::test(uint64_t index) const {
  if (index < base_) return false;
  const uint64_t word = (index - base_) / 64;
  return word < words_.size() && ((words_[word] >> ((index - base_) % 64)) & 1) != 0;
}

// In big steps: erasing the front moves every word after it.
void RecordWriter::IndexBits::forget_below(uint64_t mark) {
  const uint64_t drop = mark > base_ ? (mark - base_) / 64 : 0;
  if (drop < 1024) return;
  words_.erase(words_.begin(),
               words_.begin() + static_cast<ptrdiff_t>(std::min<uint64_t>(drop, words_.size())));
  base_ += drop * 64;
}

// Both cursors that ask about entries must be past an event before it is
// forgotten.
void RecordWriter::forget_old_entries() {
  uint64_t mark = UINT64_MAX;
  if (options_.shapes) mark = std::min(mark, next_entry_index_);
  if (options_.with_stack) mark = std::min({mark, next_stack_entry_index_, next_backward_entry_index_});
  entries_.forget_below(mark);
}

Result<void> RecordWriter::append_shapes(uint64_t event_index, const InputShapes& shapes) {
  RETURN_IF_ERROR(check_state(State::kBegun, "append_shapes"));
  const Refusal refuse(path_, "not recording the shapes of event", event_index);
  if (!options_.shapes) return refuse("the recording was begun without the shapes option");
  if (std::string why = named_item_problem(event_index, next_entry_index_, events_appended(),
                                           entries_.test(event_index), kEntryShapeEvents);
      !why.empty())
    return refuse(why);
  if (shapes.size() > UINT32_MAX) return refuse("too many arguments");
  for (size_t a = 0; a < shapes.size(); ++a)
    if (shapes[a] && shapes[a]->size() > static_cast<size_t>(kRecordMaxShapeDims))
      return refuse("argument " + std::to_string(a) + " has " + std::to_string(shapes[a]->size()) +
                    " dims (at most " + std::to_string(kRecordMaxShapeDims) + ")");
  std::string def = encode_shape(shapes);
  if (def.size() > kRecordMaxChunkPayload - 4) return refuse("the shape list is too large");

  auto it = shape_ids_.find(def);
  if (it == shape_ids_.end()) {
    if (shape_ids_.size() >= UINT32_MAX) return refuse("too many distinct shape lists");
    // Keep the SHAPES chunk under the cap (flush writes the pending ones).
    PendingChunk& defs = pending_[kShapes];
    if (defs.full_with(def.size())) RETURN_IF_ERROR(flush());
    defs.bytes.insert(defs.bytes.end(), def.begin(), def.end());
    ++defs.items;
    const uint32_t id = static_cast<uint32_t>(shape_ids_.size());
    it = shape_ids_.emplace(std::move(def), id).first;
  }
  append_pair(pending_[kEntryShapes].bytes, event_index, it->second);
  ++pending_[kEntryShapes].items;
  next_entry_index_ = event_index + 1;
  forget_old_entries();
  if (pending_[kShapes].due() || pending_[kEntryShapes].due()) return flush();
  return {};
}

Result<void> RecordWriter::append_mem_events(const gp_mem_event* events, size_t count) {
  RETURN_IF_ERROR(check_state(State::kBegun, "append_mem_events"));
  if (count > 0 && !options_.memory)
    return Error(path_ +
                 ": not recording memory events: the recording was begun without the "
                 "memory option");
  auto kind_problem = [](const gp_mem_event& e) {
    return mem_event_ok(e) ? std::string() : "unknown kind " + std::to_string(e.kind);
  };
  auto copy = [](const gp_mem_event& e, uint8_t* out) { std::memcpy(out, &e, sizeof e); };
  RETURN_IF_ERROR(batch_ok("memory event", events, count, kind_problem));
  return buffer_records(kMemEvents, events, count, sizeof(gp_mem_event), copy);
}

Result<void> RecordWriter::add_sample_frame(const std::string& name) {
  RETURN_IF_ERROR(check_state(State::kBegun, "add_sample_frame"));
  const Refusal refuse(path_, "not defining sample frame", sample_frames_defined());
  if (!has_frames(options_))
    return refuse("the recording was begun without CPU sampling or the with_stack option");
  if (sample_frames_defined() == UINT32_MAX) return refuse("too many frames");
  if (4 + name.size() > kRecordMaxChunkPayload - 8) return refuse("the name is too long");
  return define_name(kFrames, name);
}

Result<void> RecordWriter::add_sample_stack(const std::vector<uint32_t>& frame_ids) {
  RETURN_IF_ERROR(check_state(State::kBegun, "add_sample_stack"));
  const Refusal refuse(path_, "not defining sample stack", sample_stacks_defined());
  if (!has_frames(options_))
    return refuse("the recording was begun without CPU sampling or the with_stack option");
  if (sample_stacks_defined() == UINT32_MAX - 1)  // UINT32_MAX is kNoPythonStack
    return refuse("too many stacks");
  if (frame_ids.size() > kRecordMaxSampleStackDepth)
    return refuse(std::to_string(frame_ids.size()) + " frames (at most " +
                  std::to_string(kRecordMaxSampleStackDepth) + ")");
  const uint32_t frames = sample_frames_defined();
  for (size_t i = 0; i < frame_ids.size(); ++i)
    if (frame_ids[i] >= frames)
      return refuse("frame " + std::to_string(i) + " is frame_id " +
                    std::to_string(frame_ids[i]) + ", but " + std::to_string(frames) +
                    " frames are defined");
  const uint32_t n = static_cast<uint32_t>(frame_ids.size());
  PendingChunk& stacks = pending_[kStacks];
  std::memcpy(stacks.grow(4), &n, 4);
  if (n > 0) std::memcpy(stacks.grow(4 * size_t{n}), frame_ids.data(), 4 * size_t{n});
  // At most kRecordEventsChunkBytes + 4 + 4 * 4096 bytes: far under the cap.
  return buffered_one(kStacks);
}

Result<void> RecordWriter::append_samples(const CpuSample* samples, size_t count) {
  RETURN_IF_ERROR(check_state(State::kBegun, "append_samples"));
  if (count > 0 && options_.sample_hz == 0)
    return Error(path_ + ": not recording samples: the recording was begun without CPU sampling");
  const uint32_t frames = sample_frames_defined(), stacks = sample_stacks_defined();
  auto frame_problem = [&](const CpuSample& s) {
    if (s.frame_id < frames) return std::string();
    return "frame_id " + std::to_string(s.frame_id) + ", but " + std::to_string(frames) +
           " frames are defined";
  };
  auto stack_problem = [&](const CpuSample& s) {
    if (s.python_stack == kNoPythonStack || s.python_stack < stacks) return std::string();
    return "python_stack " + std::to_string(s.python_stack) + ", but " + std::to_string(stacks) +
           " stacks are defined";
  };
  RETURN_IF_ERROR(batch_ok("sample", samples, count, frame_problem));
  RETURN_IF_ERROR(batch_ok("sample", samples, count, stack_problem));
  const uint64_t first = samples_appended();
  for (size_t i = 0; i < count; ++i)
    if (samples[i].in_kernel) in_kernel_.set(first + i);  // for append_sample_kernel_stack
  return buffer_records(kSamples, samples, count, kRecordSampleBytes, encode_sample);
}

Result<void> RecordWriter::append_entry_stack(uint64_t event_index, uint32_t stack_id) {
  return append_event_stack(kEntryStacks, event_index, stack_id);
}

Result<void> RecordWriter::append_backward_stack(uint64_t event_index, uint32_t stack_id) {
  return append_event_stack(kBackwardStacks, event_index, stack_id);
}

// An ENTRY event's stack pair, in ENTRY_STACKS or BACKWARD_STACKS: each
// chunk has its own cursor and its own words in refusals.
Result<void> RecordWriter::append_event_stack(Pending which, uint64_t event_index, uint32_t stack_id) {
  const bool entry = which == kEntryStacks;
  RETURN_IF_ERROR(check_state(State::kBegun, entry ? "append_entry_stack" : "append_backward_stack"));
  const Refusal refuse(path_, entry ? "not recording the stack of event" : "not recording the forward stack of event",
                       event_index);
  if (!options_.with_stack) return refuse("the recording was begun without the with_stack option");
  RETURN_IF_ERROR(add_stack_pair(pending_[which].bytes, event_index, stack_id, sample_stacks_defined(),
                                 events_appended(), entries_.test(event_index),
                                 entry ? kEntryStackEvents : kBackwardStackEvents,
                                 entry ? next_stack_entry_index_ : next_backward_entry_index_, refuse));
  forget_old_entries();
  return buffered_one(which);
}

Result<void> RecordWriter::append_sample_kernel_stack(uint64_t sample_index, uint32_t stack_id) {
  RETURN_IF_ERROR(check_state(State::kBegun, "append_sample_kernel_stack"));
  const Refusal refuse(path_, "not recording the kernel stack of sample", sample_index);
  if (options_.sample_hz == 0) return refuse("the recording was begun without CPU sampling");
  RETURN_IF_ERROR(add_stack_pair(pending_[kKernelStacks].bytes, sample_index, stack_id, sample_stacks_defined(),
                                 samples_appended(), in_kernel_.test(sample_index), kKernelStackSamples,
                                 next_kernel_sample_index_, refuse));
  in_kernel_.forget_below(next_kernel_sample_index_);
  return buffered_one(kKernelStacks);
}

Result<void> RecordWriter::add_launch_name(const std::string& name) {
  RETURN_IF_ERROR(check_state(State::kBegun, "add_launch_name"));
  const Refusal refuse(path_, "not defining launch name", launch_names_defined());
  if (!options_.ops) return refuse("the recording was begun without ops (no-ops option)");
  if (launch_names_defined() == UINT32_MAX) return refuse("too many names");
  if (4 + name.size() > kRecordMaxChunkPayload - 8) return refuse("the name is too long");
  return define_name(kLaunchNames, name);
}

Result<void> RecordWriter::append_launches(const CudaLaunch* launches, size_t count) {
  const uint32_t names = launch_names_defined();
  auto problem = [&](const CudaLaunch& l) { return launch_problem(l, names); };
  const OpsRecordKind kind{"append_launches", "launches", "launch", kLaunches, kLaunchBytes};
  return append_ops_records(kind, launches, count, problem, encode_launch);
}

Result<void> RecordWriter::set_cuda_runtime(const CudaRuntimeInfo& info) {
  if (!disk_full()) RETURN_IF_ERROR(check_state(State::kBegun, "set_cuda_runtime"));  // finish() writes it
  const Refusal refuse(path_, "not recording the CUDA runtime", std::nullopt);
  if (!options_.ops) return refuse("the recording was begun without ops (no-ops option)");
  if (info.libcudart_path.size() > kRecordMaxChunkPayload - 16)  // str length, u32, u64
    return refuse("the libcudart path is too long");
  cuda_runtime_ = info;
  return {};
}

Result<void> RecordWriter::append_gpu_correlations(const GpuCorrelation* correlations, size_t count) {
  const OpsRecordKind kind{"append_gpu_correlations", "GPU correlations", "GPU correlation",
                           kGpuCorrelations, kGpuCorrelationBytes};
  return append_ops_records(kind, correlations, count, gpu_correlation_problem, encode_gpu_correlation);
}

Result<void> RecordWriter::append_gpu_activities(const GpuActivity* activities, size_t count) {
  const uint32_t names = launch_names_defined();
  auto problem = [&](const GpuActivity& a) { return gpu_activity_problem(a, names); };
  const OpsRecordKind kind{"append_gpu_activities", "GPU activities", "GPU activity", kGpuActivities,
                           kGpuActivityBytes};
  return append_ops_records(kind, activities, count, problem, encode_gpu_activity);
}

Result<void> RecordWriter::set_cupti_shim(const CuptiShimInfo& info) {
  if (!disk_full()) RETURN_IF_ERROR(check_state(State::kBegun, "set_cupti_shim"));  // finish() writes it
  const Refusal refuse(path_, "not recording the CUPTI shim", std::nullopt);
  if (!options_.ops) return refuse("the recording was begun without ops (no-ops option)");
  if (info.shim_path.size() > kRecordMaxChunkPayload - 24)  // str length, u32, u64, u64
    return refuse("the shim path is too long");
  cupti_shim_ = info;
  return {};
}

Result<void> RecordWriter::add_processes(const std::vector<ProcessInfo>& processes) {
  RETURN_IF_ERROR(check_state(State::kBegun, "add_processes"));
  Encoder e;
  e.u32(static_cast<uint32_t>(processes.size()));
  for (const ProcessInfo& p : processes) {
    if (std::string problem = listed_process_problem(p); !problem.empty())
      return Error(path_ + ": not recording a process: it " + problem);
    listed_process_fields(e, p);
  }
  return write_chunk(ChunkType::PROCESSES, e.b);
}

Result<void> RecordWriter::set_probe_costs(const ProbeCosts& costs) {
  RETURN_IF_ERROR(check_state(State::kBegun, "set_probe_costs"));
  if (!options_.ops)
    return Error(path_ + ": not recording probe costs: the recording was begun without ops (no-ops option)");
  if (probe_costs_written_ == 2)
    return Error(path_ + ": not recording probe costs: attach's and the recording's already recorded");
  Encoder e;
  probe_costs_fields(e, std::as_const(costs));
  RETURN_IF_ERROR(write_chunk(ChunkType::PROBE_COSTS, e.b));
  probe_costs_written_++;
  return {};
}

Result<void> RecordWriter::add_thread_processes(const std::vector<ThreadProcess>& threads) {
  RETURN_IF_ERROR(check_state(State::kBegun, "add_thread_processes"));
  std::unordered_set<uint32_t> defined = tids_defined_;
  Encoder e;
  for (const ThreadProcess& t : threads) {
    if (std::string problem = thread_process_problem(t, defined); !problem.empty())
      return Error(path_ + ": not recording a thread's process: thread " + problem);
    defined.insert(t.tid);
    e.u32(t.tid);
    e.u32(t.pid);
  }
  RETURN_IF_ERROR(write_chunk(ChunkType::THREAD_PROCESSES, e.b));
  tids_defined_ = std::move(defined);
  return {};
}

Result<void> RecordWriter::add_module_names(const std::vector<ModuleName>& names) {
  RETURN_IF_ERROR(check_state(State::kBegun, "add_module_names"));
  if (names.empty()) return {};
  if (!options_.with_stack)
    return Error(path_ + ": not recording module names: the recording was begun without the with_stack option");
  for (size_t i = 0; i < names.size(); ++i)
    if (std::string problem = module_name_problem(names[i], sample_frames_defined());
        !problem.empty()) {
      return Error(path_ + ": not recording module names: name " + std::to_string(i) + " " + problem);
    }
  Encoder e;
  module_names_fields(e, names);
  // Their frames first: a file cut after either never names an undefined frame.
  RETURN_IF_ERROR(write_pending(kFrames));
  return write_chunk(ChunkType::MODULE_NAMES, e.b);
}

// A chunk of entries held to the reader's rules (`problem`), written at
// once; nothing when there are none; refused whole, writing nothing, when
// one breaks them ("not recording WHAT: ONE i PROBLEM"). method: the
// caller, as check_state names it.
template <typename T, typename Problem, typename Fields>
Result<void> RecordWriter::write_checked(const char* method, ChunkType type, const std::vector<T>& items,
                                         const char* what, const char* one, Problem problem, Fields fields) {
  RETURN_IF_ERROR(check_state(State::kBegun, method));
  if (items.empty()) return {};
  if (std::string why = first_problem(items, problem, one); !why.empty())
    return Error(path_ + ": not recording " + what + ": " + why);
  Encoder e;
  fields(e, items);
  return write_chunk(type, e.b);
}

Result<void> RecordWriter::add_job_ranks(const std::vector<JobRank>& ranks) {
  return write_checked("add_job_ranks", ChunkType::JOB_RANKS, ranks, "job ranks", "rank", job_rank_problem,
                       [](Encoder& e, const std::vector<JobRank>& r) { job_ranks_fields(e, r); });
}

Result<void> RecordWriter::add_native_files(const std::vector<NativeFile>& files) {
  return write_checked("add_native_files", ChunkType::NATIVE_FILES, files, "native files", "file", native_file_problem,
                       [](Encoder& e, const std::vector<NativeFile>& f) { native_files_fields(e, f); });
}

Result<void> RecordWriter::add_ops(const std::vector<OpInfo>& ops) {
  RETURN_IF_ERROR(check_state(State::kBegun, "add_ops"));
  Encoder e;
  e.u32(static_cast<uint32_t>(ops_count_));
  e.u32(static_cast<uint32_t>(ops.size()));
  for (size_t i = 0; i < ops.size(); ++i) {
    if (std::string problem = op_problem(ops[i], ops_count_ + i); !problem.empty())
      return Error(path_ + ": not recording ops: " + problem);
    op_fields(e, ops[i], GP_RECORD_FORMAT_VERSION);
  }
  RETURN_IF_ERROR(write_chunk(ChunkType::MORE_OPS, e.b));
  ops_count_ += ops.size();
  return {};
}

Result<void> RecordWriter::set_thread_names(const std::vector<ThreadName>& names) {
  if (!disk_full()) RETURN_IF_ERROR(check_state(State::kBegun, "set_thread_names"));  // finish() writes it
  if (std::string problem = thread_names_problem(names); !problem.empty())
    return Error(path_ + ": not recording the thread names: " + problem);
  if (names.size() > (kRecordMaxChunkPayload - 4) / (8 + kRecordMaxThreadName))
    return Error(path_ + ": not recording the thread names: too many threads");
  thread_names_ = names;
  return {};
}

// Each chunk after what it names, so the file gets them in the order of
// enum Pending (each when non-empty).
Result<void> RecordWriter::flush() {
  RETURN_IF_ERROR(check_state(State::kBegun, "flush"));
  for (size_t which = 0; which < kPendingChunks; ++which)
    RETURN_IF_ERROR(write_pending(which));
  return {};
}

Result<void> RecordWriter::finish(const RecordStats& stats, uint64_t end_monotonic_ns) {
  if (state_ == State::kDiskFull && fd_.get() >= 0) {
    closing_ = true;  // what is buffered is dropped: the room kept is the closing chunks'
    state_ = State::kBegun;
  } else {
    RETURN_IF_ERROR(check_state(State::kBegun, "finish"));
    RETURN_IF_ERROR(flush());
  }
  if (cuda_runtime_) {
    Encoder c;
    cuda_runtime_fields(c, *cuda_runtime_);
    RETURN_IF_ERROR(write_chunk(ChunkType::CUDA_RUNTIME, c.b));
  }
  if (cupti_shim_) {
    Encoder c;
    cupti_shim_fields(c, *cupti_shim_);
    RETURN_IF_ERROR(write_chunk(ChunkType::CUPTI_SHIM, c.b));
  }
  if (!thread_names_.empty()) {
    Encoder c;
    thread_names_fields(c, std::as_const(thread_names_));
    RETURN_IF_ERROR(write_chunk(ChunkType::THREAD_NAMES, c.b));
  }
  Encoder s, e;
  stats_fields(s, stats, GP_RECORD_FORMAT_VERSION);
  e.u64(end_monotonic_ns);
  RETURN_IF_ERROR(write_chunk(ChunkType::STATS, s.b));
  RETURN_IF_ERROR(write_chunk(ChunkType::END, e.b));
  if (reserved_to_ > offset_) (void)!ftruncate(fd_.get(), static_cast<off_t>(offset_));  // the room kept, given back
  if (fd_.reset() != 0) {
    state_ = State::kFailed;
    return Error("cannot write " + path_ + ": " + std::strerror(errno));
  }
  state_ = State::kFinished;
  return {};
}

}  // namespace gpuprof
