// chrome_trace.cpp: Recording -> Trace Event Format JSON (see the header).
//
// The document is written as it is built, in pieces, never held whole: a
// long recording makes a trace of hundreds of MB. Only the stack-frame
// dictionary is kept until the end (it is written after the events, which
// JSON allows: object members have no order).
//
// About 800 lines, on purpose: one TraceWriter writes every kind of trace
// event (calls, module slices, samples, launches, GPU activities, memory
// levels, metadata) into one document whose tracks, clocks and stack-frame
// dictionary they share; a recording read whole, streamed
// (streamed_chrome_trace.h) or one of several goes through the same
// writer, so that the three write the same bytes.
#include "output/chrome_trace.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "analyze/call_tree.h"
#include "record/gpu_activity_names.h"
#include "analyze/gpu_attribution.h"
#include "analyze/input_shapes.h"
#include "output/ops_filter.h"
#include "output/launch_table.h"
#include "analyze/memory_attribution.h"
#include "analyze/module_tree.h"
#include "analyze/op_timeline.h"
#include "output/trace_json.h"

namespace gpuprof {
namespace {

using namespace std::string_view_literals;

// GPU devices get processes of their own, numbered above every Linux pid
// (PID_MAX_LIMIT is 2^22) so that they never clash with the target's.
constexpr int64_t kGpuPidBase = int64_t{1} << 22;
constexpr size_t kFlushBytes = 1 << 20;
// write_call's line: the longest call prefix it copies there, and room for
// that and the rest (two times, a call index and a stack frame id of 20
// digits at most, the field names and punctuation under 64 bytes).
constexpr size_t kCallPrefixRoom = 256;
constexpr size_t kCallLineRoom = kCallPrefixRoom + 2 * kMaxUsChars + 2 * 20 + 64;


std::string hex(uint64_t value) {
  char buffer[24];
  std::snprintf(buffer, sizeof buffer, "0x%llx", static_cast<unsigned long long>(value));
  return buffer;
}

// The stackFrames dictionary: one node per (parent, name), ids from 1 in
// the order of first use.
class StackFrames {
 public:
  // The id of the frame `name` called from the frame `parent` (0: none).
  uint64_t child(uint64_t parent, std::string_view name) {
    if (auto it = ids_.find(KeyView{parent, name}); it != ids_.end()) return it->second;
    auto [it, inserted] = ids_.emplace(Key{parent, std::string(name)}, nodes_.size() + 1);
    nodes_.push_back(&it->first);  // the map's nodes stay where they are
    return it->second;
  }

  void write(std::string& out, const std::function<void()>& maybe_flush) const {
    out += "\"stackFrames\":{";
    for (size_t i = 0; i < nodes_.size(); ++i) {
      if (i) out += ',';
      out += '"';
      append_number(out, i + 1);
      out += "\":{\"name\":\"";
      append_json_string(out, nodes_[i]->name);
      out += '"';
      if (nodes_[i]->parent) {
        out += ",\"parent\":\"";
        append_number(out, nodes_[i]->parent);
        out += '"';
      }
      out += '}';
      maybe_flush();
    }
    out += '}';
  }

 private:
  struct Key {
    uint64_t parent;
    std::string name;
  };
  struct KeyView {
    uint64_t parent;
    std::string_view name;
  };
  // Looked up by KeyView, so that finding a frame copies no name.
  struct KeyHash {
    using is_transparent = void;
    size_t operator()(const KeyView& k) const {
      return std::hash<std::string_view>{}(k.name) ^ (std::hash<uint64_t>{}(k.parent) * 0x9e3779b97f4a7c15ULL);
    }
    size_t operator()(const Key& k) const { return (*this)(KeyView{k.parent, k.name}); }
  };
  struct KeyEqual {
    using is_transparent = void;
    static KeyView view(const Key& k) { return {k.parent, k.name}; }
    static KeyView view(const KeyView& k) { return k; }
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      return view(a).parent == view(b).parent && view(a).name == view(b).name;
    }
  };
  std::unordered_map<Key, uint64_t, KeyHash, KeyEqual> ids_;
  std::vector<const Key*> nodes_;  // by id - 1
};

// What the recordings of a document share: the text not yet written, the
// counts and the stack frames.
struct TraceDocument {
  explicit TraceDocument(const std::function<void(std::string_view)>& write) : write(write) {
    out = "{\"traceEvents\":[";
  }
  // Closes the event list and writes the rest: the stack frames, then
  // otherData with `other_data` inside.
  ChromeTraceStats finish(std::string_view other_data) {
    out += "],";
    stack_frames.write(out, [this] { maybe_flush(); });
    out += ",\"displayTimeUnit\":\"ms\",\"otherData\":{";
    out += other_data;
    out += "}}\n";
    write(out);
    out.clear();
    return stats;
  }
  void maybe_flush() {
    if (out.size() < kFlushBytes) return;
    write(out);
    out.clear();
  }

  const std::function<void(std::string_view)>& write;
  std::string out;
  ChromeTraceStats stats;
  StackFrames stack_frames;
};

// "raw: as the probes stamped them, ..." (otherData's "times"): tables take
// the probes' time out of op times (docs/overhead.md); a trace cannot
// without moving every later event of the thread.
std::string raw_times_note(const std::optional<ProbeCosts>& costs) {
  std::string out = "raw: as the probes stamped them, the probes' own time included";
  if (costs) {
    out += " (about ";
    append_number(out, costs->total_ns());
    out += " ns per op call, calibrated when recording)";
  }
  return out;
}

class TraceWriter {
 public:
  // part: the recording's place in a trace of several (nullptr: the trace
  // of this recording alone).
  TraceWriter(TraceDocument& document, const Recording& recording, const ChromeTraceOptions& options,
              const StreamedTraceCalls* streamed = nullptr, const TracePart* part = nullptr)
      : r_(recording),
        options_(options),
        document_(document),
        out_(document.out),
        stats_(document.stats),
        stack_frames_(document.stack_frames),
        base_ns_(part ? part->zero_monotonic_ns : recording.clock.start_monotonic_ns),
        streamed_(streamed),
        part_(part) {
    const double inf = std::numeric_limits<double>::infinity();
    from_ns_ = relative_bound(options.range.from_s.value_or(-inf));
    until_ns_ = relative_bound(options.range.until_s.value_or(inf));
    for (const ThreadProcess& t : recording.thread_processes) pid_of_tid_.emplace(t.tid, t.pid);
  }

  // The trace of this recording alone: the whole document.
  ChromeTraceStats run() {
    write_events();
    std::string other = "\"producer\":\"gpuprof\",\"command\":\"";
    append_json_string(other, r_.process.cmdline);
    other += "\",\"time zero\":\"the recording's start, CLOCK_MONOTONIC ";
    append_number(other, base_ns_);
    other += " ns\",\"times\":\"" + raw_times_note(r_.probe_costs) + '"';
    if (!options_.ops_pattern.empty()) {
      other += ",\"ops\":\"";
      append_json_string(other, options_.ops_pattern);
      other += '"';
    }
    return document_.finish(other);
  }

  // Every event of the recording and its tracks' metadata.
  void write_events() {
    // A streamed trace has no events here: its calls come from streamed_,
    // and what needs the timeline (--ops, GPU attribution) is read whole.
    Timeline timeline;
    CallTree tree;
    std::vector<bool> kept;
    if (!streamed_) {
      timeline = build_timeline(r_.events);
      tree = build_call_tree(timeline);
      kept = kept_calls(timeline, tree);
    }
    write_modules();  // before the ops: a module call as long as its one op encloses it
    if (streamed_) {
      streamed_->calls([this](const OpCall& call, const TraceCallEntry& entry) {
        if (overlaps(call.start_ns, call.end_ns)) write_call(call, entry.step, entry.stack, entry.shape);
      });
    } else {
      write_calls(timeline, tree, kept);
    }
    write_samples(timeline, tree, kept);
    write_launches(timeline, tree, kept);
    write_gpu(timeline, tree, kept);
    write_memory();
    write_metadata();
  }

 private:
  // A bound in seconds since the start -> ns relative to base_ns_.
  static int64_t relative_bound(double seconds) {
    if (seconds <= -9e9) return std::numeric_limits<int64_t>::min();
    if (seconds >= 9e9) return std::numeric_limits<int64_t>::max();
    return static_cast<int64_t>(std::llround(seconds * 1e9));
  }
  int64_t rel(uint64_t ts_ns) const { return static_cast<int64_t>(ts_ns - base_ns_); }
  bool overlaps(uint64_t start_ns, uint64_t end_ns) const {
    return rel(end_ns) >= from_ns_ && rel(start_ns) <= until_ns_;
  }
  bool in_range(uint64_t ts_ns) const { return overlaps(ts_ns, ts_ns); }

  void maybe_flush() { document_.maybe_flush(); }

  // Starts an event object ("{"), after a comma when not the first.
  void begin_event() {
    out_ += stats_.events++ ? ",\n{"sv : "\n{"sv;
  }

  // ,"pid":P,"tid":T: the track an event is drawn on.
  void append_track(int64_t pid, int64_t tid) {
    out_ += ",\"pid\":";
    append_number(out_, pid);
    out_ += ",\"tid\":";
    append_number(out_, tid);
  }

  void common(std::string_view ph, std::string_view cat, std::string_view name, int64_t pid, int64_t tid,
              uint64_t ts_ns) {
    common_up_to_ts(ph, cat, name, pid, tid);
    append_us(out_, rel(ts_ns));
  }
  // common()'s text but the time's digits: it ends with "ts":.
  void common_up_to_ts(std::string_view ph, std::string_view cat, std::string_view name, int64_t pid, int64_t tid) {
    out_ += "\"ph\":\"";
    out_ += ph;
    out_ += "\",\"cat\":\"";
    out_ += cat;
    out_ += "\",\"name\":\"";
    append_json_string(out_, name);
    out_ += '"';
    append_track(pid, tid);
    out_ += ",\"ts\":";
  }

  // What common() writes for a call of op_id on tid, up to its start
  // time's digits: the same for every call of that op on that thread, so
  // made once per (thread, op) and copied (calls come thread by thread: the
  // cache holds the current thread's). As Kineto files them,
  // record_function ranges are user annotations, everything else CPU ops.
  std::string_view call_prefix(uint32_t tid, uint32_t op_id) {
    if (tid != prefix_tid_) {
      for (std::string& prefix : call_prefixes_) prefix.clear();
      prefix_tid_ = tid;
    }
    // An id outside the op table (a damaged recording) is not kept.
    if (call_prefixes_.empty()) call_prefixes_.resize(r_.ops.size() + 1);
    std::string& prefix = call_prefixes_[std::min<size_t>(op_id, r_.ops.size())];
    if (op_id >= r_.ops.size()) prefix.clear();
    if (prefix.empty()) {
      const bool user = op_id < r_.ops.size() && r_.ops[op_id].kind == OpKind::user_range;
      std::swap(prefix, out_);
      common_up_to_ts("X", user ? "user_annotation" : "cpu_op", op_name(op_id), pid_of(tid), tid);
      std::swap(prefix, out_);
    }
    return prefix;
  }

  // Every call names its op: the names are made once.
  const std::string& op_name(uint32_t op_id) const {
    if (op_names_.empty()) {
      op_names_.reserve(r_.ops.size() + 1);
      for (uint32_t id = 0; id < r_.ops.size(); ++id) op_names_.push_back(op_display_name(r_.ops, id));
      op_names_.push_back("");  // the slot of an id outside the table
    }
    if (op_id < r_.ops.size()) return op_names_[op_id];
    return op_names_.back() = op_display_name(r_.ops, op_id);
  }
  std::string_view frame_name(uint32_t frame_id) const {
    return frame_id < r_.sample_frames.size() ? std::string_view(r_.sample_frames[frame_id]) : "[unknown]";
  }
  // The stackFrames id of a recorded stack's innermost frame (0: no such
  // stack, or no frames), interned on first use only: a recording's
  // millions of calls and samples share a few thousand stacks.
  uint64_t stack_sf(uint64_t stack_id) {
    if (stack_id >= r_.sample_stacks.size()) return 0;
    if (stack_id >= sf_of_stack_.size()) sf_of_stack_.resize(r_.sample_stacks.size(), kNotInterned);
    uint64_t& sf = sf_of_stack_[stack_id];
    if (sf == kNotInterned) sf = stack_sf_under(0, static_cast<uint32_t>(stack_id), nullptr);
    return sf;
  }
  // The id of a recorded stack's innermost frame called from `parent`, and
  // that frame's name in *innermost when given (left as it is for no frames).
  uint64_t stack_sf_under(uint64_t parent, uint32_t stack_id, std::string_view* innermost) {
    if (stack_id >= r_.sample_stacks.size()) return parent;
    for (uint32_t f : r_.sample_stacks[stack_id]) {
      const std::string_view name = frame_name(f);
      parent = stack_frames_.child(parent, name);
      if (innermost) *innermost = name;
    }
    return parent;
  }

  // --ops: matching calls and everything nested in them; --time-range:
  // calls overlapping it.
  std::vector<bool> kept_calls(const Timeline& timeline, const CallTree& tree) const {
    const size_t n = timeline.calls.size();
    const std::vector<bool> by_ops =
        options_.ops ? OpsFilter(r_.ops, *options_.ops).kept(timeline, tree) : std::vector<bool>(n, true);
    std::vector<bool> kept(n);
    for (size_t i = 0; i < n; ++i)
      kept[i] = by_ops[i] && overlaps(timeline.calls[i].start_ns, timeline.calls[i].end_ns);
    return kept;
  }

  // Is a moment on a thread inside a kept call? Without --ops every moment
  // in the range counts, inside a call or not.
  std::vector<bool> kept_moments(const Timeline& timeline, const CallTree& tree, const std::vector<bool>& kept,
                                 const std::vector<ThreadMoment>& moments) const {
    std::vector<bool> out(moments.size());
    if (!options_.ops) {
      for (size_t i = 0; i < moments.size(); ++i) out[i] = in_range(moments[i].ts_ns);
      return out;
    }

    const std::vector<int64_t> calls = innermost_calls_at(timeline, tree, moments);
    for (size_t i = 0; i < moments.size(); ++i)
      out[i] = calls[i] >= 0 && kept[calls[i]] && in_range(moments[i].ts_ns);
    return out;
  }

  void note_thread(uint32_t tid) {
    // Calls come thread by thread: most are the last thread's.
    if (tid == last_noted_thread_ && !threads_.empty()) return;
    threads_.insert(tid);
    last_noted_thread_ = tid;
  }
  // The track of a thread's step frames: above every Linux tid (at most
  // 2^22), so it names no real thread.
  static int64_t step_track(uint32_t tid) { return (int64_t{1} << 32) + tid; }

  // Module calls (module_tree.h) of a recording with Python stacks, as
  // torch's with_modules traces show them: slices enclosing their ops.
  // A streamed trace's come replayed (streamed_chrome_trace.h).
  void write_modules() {
    if (!r_.options.with_stack || options_.ops) return;
    if (streamed_) {
      if (!streamed_->module_calls) return;
      std::vector<std::string> names(streamed_->modules.nodes.size());
      streamed_->module_calls([&](const ModuleCall& call) { write_module_call(streamed_->modules, names, call); });
      return;
    }
    const ModuleTree modules = build_module_tree(r_, /*raw_times=*/true);
    std::vector<std::string> names(modules.nodes.size());
    for (const ModuleCall& call : modules.calls) write_module_call(modules, names, call);
  }

  // names: each node's slice name, made on first use.
  void write_module_call(const ModuleTree& modules, std::vector<std::string>& names, const ModuleCall& call) {
    if (!overlaps(call.start_ns, call.end_ns)) return;
    std::string& name = names[call.node];
    if (name.empty()) name = "nn.Module: " + modules.path(call.node);
    note_thread(call.tid);
    begin_event();
    common("X", "python_function", name, pid_of(call.tid), call.tid, call.start_ns);
    out_ += ",\"dur\":";
    append_us(out_, static_cast<int64_t>(call.end_ns - call.start_ns));
    out_ += ",\"args\":{\"module\":\"";
    append_json_string(out_, modules.nodes[call.node].label);
    out_ += "\"}}";
    stats_.module_calls++;
    maybe_flush();
  }

  void write_calls(const Timeline& timeline, const CallTree& tree, const std::vector<bool>& kept) {
    visit_trace_calls(r_, timeline, tree, &kept, [this](const OpCall& call, const TraceCallEntry& entry) {
      write_call(call, entry.step, entry.stack, entry.shape);
    });
  }

  // One op call (a step frame when step is its step number), with the
  // Python stack and input shapes of its entry when known.
  void write_call(const OpCall& call, std::optional<uint64_t> step, std::optional<uint64_t> stack_id,
                  std::optional<uint64_t> shape_id) {
    // gpuprof's own step frames go on a track of their own beside their
    // thread's: a range or call open when a step ends goes on into the
    // next step (op_timeline.h), so on the thread's track it would cross
    // the step frame's end, and viewers want a thread's slices nested.
    if (step)
      step_threads_.insert(call.tid);
    else
      note_thread(call.tid);
    // The text goes to `line` and is appended at once (a trace writes a few
    // million calls: a dozen small appends each, every one a copy call,
    // cost more than the formatting); the rare parts go to out_ directly,
    // after what line holds.
    char line[kCallLineRoom];
    char* p = stats_.events++ ? put_text(line, ",\n{") : put_text(line, "\n{");
    const auto hand_over = [&] {
      out_.append(line, p);
      p = line;
    };
    if (step) {
      hand_over();
      const std::string step_name = "ProfilerStep#" + std::to_string(*step);
      common("X", "user_annotation", step_name, pid_of(call.tid), step_track(call.tid), call.start_ns);
    } else {
      const std::string_view prefix = call_prefix(call.tid, call.op_id);
      if (prefix.size() > kCallPrefixRoom) {  // an op name of hundreds of bytes
        hand_over();
        out_ += prefix;
      } else {
        std::memcpy(p, prefix.data(), prefix.size());
        p += prefix.size();
      }
      p = put_us(p, rel(call.start_ns));
    }
    p = put_text(p, ",\"dur\":");
    p = put_us(p, static_cast<int64_t>(call.duration_ns()));
    if (stack_id) {
      if (uint64_t sf = stack_sf(*stack_id)) {  // most calls of a --with-stack recording: in the line
        p = put_text(p, ",\"sf\":\"");
        p = std::to_chars(p, p + 20, sf).ptr;
        *p++ = '"';
      }
    }
    p = put_text(p, ",\"args\":{\"call\":");
    p = std::to_chars(p, p + 20, call.entry_index).ptr;
    if (step) {  // gpuprof's own step (record --schedule), apart from the target's ProfilerStep ranges
      hand_over();
      out_ += ",\"step\":";
      append_number(out_, *step);
    }
    if (r_.options.shapes && !step) {
      hand_over();
      out_ += ",\"Input Dims\":";
      const OpInfo* op = call.op_id < r_.ops.size() ? &r_.ops[call.op_id] : nullptr;
      if (shape_id && *shape_id < r_.shapes.size())
        append_dims(r_.shapes[*shape_id]);
      else if (op && op->arg_count >= 0 && op->tensor_args == 0)  // nothing to read: all []
        append_dims(InputShapes(static_cast<size_t>(op->arg_count), ArgShape(std::vector<int64_t>{})));
      else
        out_ += "null";  // not readable
    }
    if (call.unwound) p = put_text(p, ",\"unwound\":true");
    p = put_text(p, "}}");
    out_.append(line, p);
    stats_.op_calls++;
    maybe_flush();
  }

  void append_dims(const InputShapes& shapes) {
    out_ += '[';
    for (size_t a = 0; a < shapes.size(); ++a) {
      if (a) out_ += ',';
      if (!shapes[a]) {
        out_ += "null";
        continue;
      }
      out_ += '[';
      for (size_t d = 0; d < shapes[a]->size(); ++d) {
        if (d) out_ += ',';
        append_number(out_, (*shapes[a])[d]);
      }
      out_ += ']';
    }
    out_ += ']';
  }

  void write_samples(const Timeline& timeline, const CallTree& tree, const std::vector<bool>& kept) {
    if (r_.samples.empty()) return;
    std::vector<bool> keep;
    if (streamed_ && options_.ops) {
      // Marked as the calls streamed by: whether the innermost call was
      // kept (a kept call that holds a moment in the range overlaps it).
      const std::vector<bool>& marked = *streamed_->samples_in_kept_calls;
      keep.resize(r_.samples.size());
      for (size_t i = 0; i < keep.size(); ++i) keep[i] = i < marked.size() && marked[i] && in_range(r_.samples[i].ts_ns);
    } else {
      keep = kept_moments(timeline, tree, kept, thread_moments(r_.samples));
    }
    std::unordered_map<uint64_t, uint32_t> kernel_stack_of;
    for (const SampleKernelStack& k : r_.sample_kernel_stacks) kernel_stack_of.emplace(k.sample_index, k.stack_id);
    for (size_t i = 0; i < r_.samples.size(); ++i) {
      if (!keep[i]) continue;
      const CpuSample& s = r_.samples[i];
      // Outermost first: Python frames, the native leaf, kernel frames (as
      // in the folded stacks); the event is named after the innermost.
      std::string_view innermost = frame_name(s.frame_id);
      uint64_t sf = stack_frames_.child(s.python_stack != kNoPythonStack ? stack_sf(s.python_stack) : 0, innermost);
      if (auto k = kernel_stack_of.find(i); k != kernel_stack_of.end()) sf = stack_sf_under(sf, k->second, &innermost);
      note_thread(s.tid);
      begin_event();
      common("i", "cpu_sample", innermost, pid_of(s.tid), s.tid, s.ts_ns);
      out_ += ",\"s\":\"t\",\"sf\":\"";
      append_number(out_, sf);
      out_ += "\"}";
      stats_.samples++;
      maybe_flush();
    }
  }

  std::string_view launch_name(uint32_t name_id) const {
    return name_id < r_.launch_names.size() ? std::string_view(r_.launch_names[name_id]) : "[unknown kernel]";
  }

  void append_dim3(std::string_view key, const uint32_t (&d)[3]) {
    out_ += ",\"";
    out_ += key;
    out_ += "\":[";
    for (int i = 0; i < 3; ++i) {
      if (i) out_ += ',';
      append_number(out_, d[i]);
    }
    out_ += ']';
  }

  void write_launches(const Timeline& timeline, const CallTree& tree, const std::vector<bool>& kept) {
    if (streamed_) {  // put aside as they streamed by, in file order (with --ops, those in kept calls)
      if (streamed_->launches)
        streamed_->launches([this](const CudaLaunch& l) {
          if (in_range(l.ts_ns)) write_launch(l);
        });
      return;
    }
    if (r_.launches.empty()) return;
    const std::vector<bool> keep = kept_moments(timeline, tree, kept, thread_moments(r_.launches));
    for (size_t i = 0; i < r_.launches.size(); ++i)
      if (keep[i]) write_launch(r_.launches[i]);
  }

  void write_launch(const CudaLaunch& l) {
    note_thread(l.tid);
    begin_event();
    // Entry probes see the call, not its return: no duration.
    common("X", "cuda_runtime", launch_api_name(l.api), pid_of(l.tid), l.tid, l.ts_ns);
    out_ += ",\"dur\":0,\"args\":{\"kernel\":\"";
    append_json_string(out_, launch_name(l.name_id));
    out_ += '"';
    if (l.api != GP_LAUNCH_GRAPH) {
      append_dim3("grid", l.grid);
      append_dim3("block", l.block);
    }
    out_ += ",\"stream\":\"";
    out_ += hex(l.stream);
    out_ += "\"}}";
    maybe_flush();
  }

  // A stream runs its work one item at a time, but records can overlap
  // (clock jitter, or a device that overlaps them): a slice that starts
  // before the previous one on its track ended would break the track's
  // nesting, so it goes to the stream's next free lane, a track of its own
  // ("stream 7 (lane 1)"), tid = stream + lane * 2^32. Activities come in
  // the trace's order (gpu_trace_order).
  int64_t gpu_track(const GpuActivity& a) {
    std::vector<uint64_t>& ends = lane_ends_[{a.device, a.stream}];
    size_t lane = 0;
    while (lane < ends.size() && a.start_ns < ends[lane]) ++lane;
    if (lane == ends.size()) ends.push_back(0);
    ends[lane] = std::max(a.end_ns, a.start_ns);
    const int64_t tid = static_cast<int64_t>(a.stream) + static_cast<int64_t>(lane << 32);
    gpu_tracks_.insert({a.device, tid});
    return tid;
  }

  void write_gpu(const Timeline& timeline, const CallTree& tree, const std::vector<bool>& kept) {
    if (streamed_) {  // joined and ordered as they streamed by (with --ops, those of kept calls)
      if (streamed_->gpu_activities)
        streamed_->gpu_activities([this](const TraceGpuActivity& t) {
          if (overlaps(t.activity.start_ns, t.activity.end_ns) &&
              (!options_.ops || overlaps(t.call_start_ns, t.call_end_ns)))
            write_gpu_activity(t);
        });
      return;
    }
    if (r_.gpu_activities.empty()) return;
    const std::vector<int64_t> launched_by = calls_of_gpu_activities(r_, timeline, tree);
    std::unordered_map<uint64_t, size_t> correlation_index;
    for (size_t i = 0; i < r_.gpu_correlations.size(); ++i)
      correlation_index.try_emplace(r_.gpu_correlations[i].correlation_id, i);
    std::vector<size_t> wanted;
    for (size_t i = 0; i < r_.gpu_activities.size(); ++i) {
      const GpuActivity& a = r_.gpu_activities[i];
      if (!overlaps(a.start_ns, a.end_ns)) continue;
      if (options_.ops && (launched_by[i] < 0 || !kept[launched_by[i]])) continue;
      wanted.push_back(i);
    }
    std::stable_sort(wanted.begin(), wanted.end(), [&](size_t x, size_t y) {
      return gpu_trace_order(r_.gpu_activities[x], r_.gpu_activities[y]);
    });
    for (size_t i : wanted) {
      TraceGpuActivity t{.activity = r_.gpu_activities[i]};
      if (auto c = correlation_index.find(t.activity.correlation_id); c != correlation_index.end()) {
        const GpuCorrelation& launch = r_.gpu_correlations[c->second];
        t.launch_ts_ns = launch.ts_ns;
        t.launch_tid = launch.tid;
        t.launch_seen = 1;
      }
      write_gpu_activity(t);
    }
  }

  void write_gpu_activity(const TraceGpuActivity& t) {
    const GpuActivity& a = t.activity;
    const int64_t tid = gpu_track(a);
    const int64_t gpu_pid = gpu_pid_of(a.device);
    const char* cat = a.kind == GpuActivityKind::kernel   ? "kernel"
                      : a.kind == GpuActivityKind::memcpy ? "gpu_memcpy"
                                                          : "gpu_memset";
    begin_event();
    common("X", cat, launch_name(a.name_id), gpu_pid, tid, a.start_ns);
    out_ += ",\"dur\":";
    append_us(out_, static_cast<int64_t>(gpu_activity_ns(a)));
    out_ += ",\"args\":{\"correlation\":";
    append_number(out_, a.correlation_id);
    out_ += ",\"device\":";
    append_number(out_, a.device);
    out_ += ",\"stream\":";
    append_number(out_, a.stream);
    if (a.kind != GpuActivityKind::kernel) {
      out_ += ",\"bytes\":";
      append_number(out_, activity_byte_count(a.bytes));
    }
    out_ += "}}";
    stats_.gpu_activities++;
    // The arrow from the launch, when its launch was seen in the range:
    // "s" binds to the slice enclosing the launch on the CPU thread, "f"
    // (binding point "e": enclosing) to the activity itself.
    if (t.launch_seen && in_range(t.launch_ts_ns)) {
      const uint64_t id = ++stats_.flows;
      note_thread(t.launch_tid);
      begin_event();
      common("s", "ac2g", "ac2g", pid_of(t.launch_tid), t.launch_tid, t.launch_ts_ns);
      out_ += ",\"id\":";
      append_number(out_, id);
      out_ += '}';
      begin_event();
      common("f", "ac2g", "ac2g", gpu_pid, tid, a.start_ns);
      out_ += ",\"id\":";
      append_number(out_, id);
      out_ += ",\"bp\":\"e\"}";
    }
    maybe_flush();
  }

  void write_memory() {
    if (streamed_ && streamed_->memory_levels) {
      streamed_->memory_levels([this](const MemoryLevel& level) { write_memory_level(level); });
      return;
    }
    if (r_.mem_events.empty()) return;
    for (const MemoryLevel& level : memory_levels(r_.mem_events)) write_memory_level(level);
  }

  void write_memory_level(const MemoryLevel& level) {
    if (!in_range(level.ts_ns)) return;
    begin_event();
    const std::string name =
        level.device_index < 0 ? "CPU memory" : "CUDA memory (device " + std::to_string(level.device_index) + ")";
    common("C", "memory", name, part_ ? part_->pid : r_.process.pid, 0, level.ts_ns);
    out_ += ",\"args\":{\"bytes\":";
    append_number(out_, level.bytes);
    out_ += "}}";
    stats_.counters++;
    maybe_flush();
  }

  // An "M" event; args_json is its args object's inside.
  void metadata_event(std::string_view what, int64_t pid, int64_t tid, const std::string& args_json) {
    begin_event();
    out_ += "\"ph\":\"M\",\"name\":\"";
    out_ += what;
    out_ += '"';
    append_track(pid, tid);
    out_ += ",\"args\":{";
    out_ += args_json;
    out_ += "}}";
  }

  // "key":"value", the value escaped.
  static std::string json_member(std::string_view key, std::string_view value) {
    std::string out = "\"";
    out += key;
    out += "\":\"";
    append_json_string(out, value);
    return out + '"';
  }

  void metadata(std::string_view what, int64_t pid, int64_t tid, const std::string& name) {
    metadata_event(what, pid, tid, json_member("name", name));
  }

  void sort_index(std::string_view what, int64_t pid, int64_t tid, int64_t index) {
    metadata_event(what, pid, tid, "\"sort_index\":" + std::to_string(index));
  }

  // Names for the tracks that have events (the target's pid even without).
  void write_metadata() {
    // One track group per process: the target, or (record -a) each process
    // that has events in the trace, in pid order.
    std::map<int64_t, std::string> processes;
    if (part_) {  // one of several: its one track, named and placed by the caller
      metadata("process_name", part_->pid, 0, part_->name);
      if (!part_->labels.empty()) metadata_event("process_labels", part_->pid, 0, json_member("labels", part_->labels));
      sort_index("process_sort_index", part_->pid, 0, part_->sort_index);
    } else if (r_.processes.empty()) {
      processes[r_.process.pid] = r_.process.comm.empty() ? "target" : r_.process.comm;
    } else {
      std::set<int64_t> used;
      for (uint32_t tid : threads_) used.insert(pid_of(tid));
      for (uint32_t tid : step_threads_) used.insert(pid_of(tid));
      for (const ProcessInfo& p : r_.processes)
        if (used.count(p.pid)) processes[p.pid] = p.comm;
      for (int64_t pid : used) processes.try_emplace(pid, "process");
    }
    // A distributed job's ranks (record -a of torchrun's workers) first, by
    // rank and named by it, as the tracks of several files are
    // (chrome_trace_several.h); then the other processes, by pid.
    std::map<int64_t, uint32_t> rank_of_pid;
    for (const JobRank& rank : r_.job_ranks) rank_of_pid[rank.pid] = rank.rank;
    std::vector<std::pair<std::pair<uint64_t, int64_t>, std::string>> tracks;  // ((order key, pid), name)
    for (const auto& [pid, comm] : processes) {
      const auto rank = rank_of_pid.find(pid);
      const std::string name = comm + " (" + std::to_string(pid) + ")";
      if (rank == rank_of_pid.end()) tracks.push_back({{uint64_t(1) << 32, pid}, name});
      else tracks.push_back({{rank->second, pid}, "rank " + std::to_string(rank->second) + ": " + name});
    }
    std::sort(tracks.begin(), tracks.end());
    int64_t order = 0;
    for (const auto& [key, name] : tracks) {
      metadata("process_name", key.second, 0, name);
      sort_index("process_sort_index", key.second, 0, order++);
    }
    std::unordered_map<uint32_t, std::string> names;
    for (const ThreadName& t : r_.thread_names) names.emplace(t.tid, t.name);
    for (uint32_t tid : threads_) {
      // Its comm ("pt_autograd_0"); viewers show the tid beside it.
      auto known = names.find(tid);
      const int64_t pid = pid_of(tid);
      metadata("thread_name", pid, tid,
               known != names.end() ? known->second
                                    : "thread " + std::to_string(tid) +
                                          (static_cast<int64_t>(tid) == pid ? " (main)" : ""));
      // The main thread first, then by thread id.
      sort_index("thread_sort_index", pid, tid, static_cast<int64_t>(tid) == pid ? 0 : tid);
    }
    for (uint32_t tid : step_threads_) {
      auto known = names.find(tid);
      const int64_t pid = pid_of(tid);
      metadata("thread_name", pid, step_track(tid),
               "steps of " + (known != names.end() ? known->second : "thread " + std::to_string(tid)) + " (" +
                   std::to_string(tid) + ")");
      // Right after its thread.
      sort_index("thread_sort_index", pid, step_track(tid), static_cast<int64_t>(tid) == pid ? 0 : tid);
    }
    std::set<uint32_t> devices;
    for (const auto& [device, tid] : gpu_tracks_) devices.insert(device);
    for (uint32_t device : devices) {
      metadata("process_name", gpu_pid_of(device), 0,
               (part_ ? part_->gpu_prefix : std::string()) + "GPU " + std::to_string(device));
      sort_index("process_sort_index", gpu_pid_of(device), 0,
                 part_ ? part_->sort_index + 1 + device : order + device);
    }
    for (const auto& [device, tid] : gpu_tracks_) {
      const int64_t lane = tid >> 32;
      metadata("thread_name", gpu_pid_of(device), tid,
               "stream " + std::to_string(tid & 0xffffffff) +
                   (lane ? " (lane " + std::to_string(lane) + ")" : std::string()));
    }
  }

  const Recording& r_;
  const ChromeTraceOptions& options_;
  TraceDocument& document_;
  std::string& out_;
  ChromeTraceStats& stats_;
  StackFrames& stack_frames_;
  static constexpr uint64_t kNotInterned = ~uint64_t{0};
  std::vector<uint64_t> sf_of_stack_;  // by recorded stack id (stack_sf), kNotInterned until used
  const uint64_t base_ns_;
  const StreamedTraceCalls* streamed_;  // a streamed trace's calls (nullptr: the recording's events)
  const TracePart* part_;               // its place in a trace of several (nullptr: alone)
  int64_t from_ns_ = 0;
  int64_t until_ns_ = 0;
  std::set<uint32_t> threads_;
  uint32_t last_noted_thread_ = 0;
  mutable std::vector<std::string> op_names_;  // by op id, made on first use (op_name)
  std::vector<std::string> call_prefixes_;     // by op id, prefix_tid_'s calls' (call_prefix)
  uint32_t prefix_tid_ = 0;
  std::set<uint32_t> step_threads_;  // threads with step frames (on step_track(tid))
  // record -a: each thread's process (a thread not listed is the target's).
  std::unordered_map<uint32_t, uint32_t> pid_of_tid_;
  int64_t pid_of(uint32_t tid) const {
    if (part_) return part_->pid;
    auto it = pid_of_tid_.find(tid);
    return it == pid_of_tid_.end() ? r_.process.pid : it->second;
  }
  int64_t gpu_pid_of(uint32_t device) const { return (part_ ? part_->first_gpu_pid : kGpuPidBase) + device; }
  std::set<std::pair<uint32_t, int64_t>> gpu_tracks_;  // (device, tid: stream and lane)
  std::map<std::pair<uint32_t, uint32_t>, std::vector<uint64_t>> lane_ends_;  // (device, stream) -> each lane's end
};

}  // namespace

void visit_trace_calls(const Recording& recording, const Timeline& timeline, const CallTree& tree,
                       const std::vector<bool>* kept, const TraceCallVisitor& visit,
                       const std::vector<size_t>* threads) {
  std::unordered_map<uint64_t, uint32_t> shape_of_entry, stack_of_entry;
  if (recording.options.shapes)
    for (const EntryShapes& e : recording.entry_shapes) shape_of_entry.emplace(e.event_index, e.shape_id);
  for (const EntryStack& e : recording.entry_stacks) stack_of_entry.emplace(e.event_index, e.stack_id);
  const size_t thread_count = threads ? threads->size() : tree.threads.size();
  for (size_t t = 0; t < thread_count; ++t) {
    for (size_t i : tree.threads[threads ? (*threads)[t] : t]) {  // start order, parents before children
      if (kept && !(*kept)[i]) continue;
      const OpCall& call = timeline.calls[i];
      TraceCallEntry entry;
      if (call.entry_index < recording.events.size() && recording.events[call.entry_index].kind == GP_EV_STEP)
        entry.step = recording.events[call.entry_index].sp;
      if (auto it = stack_of_entry.find(call.entry_index); it != stack_of_entry.end()) entry.stack = it->second;
      if (auto it = shape_of_entry.find(call.entry_index); it != shape_of_entry.end()) entry.shape = it->second;
      visit(call, entry);
    }
  }
}

Result<TraceTimeRange> parse_trace_time_range(std::string_view text) {
  const size_t colon = text.find(':');
  auto bad = [&](const std::string& why) {
    return Error("--time-range " + std::string(text) + ": " + why +
                 " (want START:END in seconds since the recording started, e.g. 1.5:3 or 2:)");
  };
  if (colon == std::string_view::npos) return bad("no ':'");
  TraceTimeRange range;
  auto parse = [&](std::string_view part, std::optional<double>* into) {
    if (part.empty()) return true;
    double value = 0;
    auto result = std::from_chars(part.data(), part.data() + part.size(), value);
    if (result.ec != std::errc() || result.ptr != part.data() + part.size() || !std::isfinite(value) || value < 0)
      return false;
    *into = value;
    return true;
  };
  if (!parse(text.substr(0, colon), &range.from_s)) return bad("START is not a number of seconds >= 0");
  if (!parse(text.substr(colon + 1), &range.until_s)) return bad("END is not a number of seconds >= 0");
  if (range.from_s && range.until_s && *range.until_s < *range.from_s) return bad("END is before START");
  return range;
}

ChromeTraceStats write_chrome_trace(const Recording& recording, const ChromeTraceOptions& options,
                                    const std::function<void(std::string_view)>& write) {
  TraceDocument document(write);
  return TraceWriter(document, recording, options).run();
}

ChromeTraceStats write_chrome_trace(const Recording& head, const ChromeTraceOptions& options,
                                    const StreamedTraceCalls& calls,
                                    const std::function<void(std::string_view)>& write) {
  TraceDocument document(write);
  return TraceWriter(document, head, options, &calls).run();
}

ChromeTraceStats write_chrome_trace(const std::vector<TracePart>& parts, const ChromeTraceOptions& options,
                                    std::string_view other_data,
                                    const std::function<void(std::string_view)>& write) {
  TraceDocument document(write);
  for (const TracePart& part : parts) TraceWriter(document, *part.recording, options, part.calls, &part).write_events();
  return document.finish(other_data);
}

}  // namespace gpuprof
