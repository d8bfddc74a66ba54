// speedscope.cpp: the recording's calls and samples as speedscope profiles.
#include "output/speedscope.h"

#include <algorithm>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "analyze/call_tree.h"
#include "analyze/op_timeline.h"
#include "output/chrome_trace.h"
#include "output/trace_json.h"

namespace gpuprof {
namespace {

constexpr size_t kFlushBytes = 1 << 20;

// shared.frames: each distinct name once, by first use.
class SharedFrames {
 public:
  uint32_t of(std::string_view name) {
    auto [it, inserted] = index_.try_emplace(std::string(name), static_cast<uint32_t>(names_.size()));
    if (inserted) names_.push_back(it->first);
    return it->second;
  }
  const std::vector<std::string>& names() const { return names_; }

 private:
  std::unordered_map<std::string, uint32_t> index_;
  std::vector<std::string> names_;
};

using ThreadsReplay = std::function<void(std::span<const uint32_t> tids, const TraceCallVisitor&)>;

class SpeedscopeWriter {
 public:
  SpeedscopeWriter(const Recording& recording, const std::function<void(std::string_view)>& write)
      : r_(recording), write_(write), base_ns_(recording.clock.start_monotonic_ns) {
    for (const ThreadProcess& t : recording.thread_processes) pid_of_tid_.emplace(t.tid, t.pid);
    for (const ThreadName& t : recording.thread_names) thread_name_.emplace(t.tid, t.name);
    if (recording.processes.empty()) comm_of_pid_[recording.process.pid] = recording.process.comm;
    for (const ProcessInfo& p : recording.processes) comm_of_pid_[p.pid] = p.comm;
  }

  // threads: those with calls; replay(tids, visit): their calls in trace
  // order (chrome_trace.h), the threads in the order given.
  SpeedscopeStats run(const std::vector<uint32_t>& threads, const ThreadsReplay& replay) {
    for (size_t i = 0; i < r_.samples.size(); ++i) samples_of_tid_[r_.samples[i].tid].push_back(i);
    for (auto& [tid, indices] : samples_of_tid_)
      std::stable_sort(indices.begin(), indices.end(),
                       [&](size_t a, size_t b) { return r_.samples[a].ts_ns < r_.samples[b].ts_ns; });
    op_paths_.resize(r_.samples.size());
    for (const SampleKernelStack& k : r_.sample_kernel_stacks) kernel_stack_of_.emplace(k.sample_index, k.stack_id);
    // Profiles by (pid, main thread first, tid), evented before sampled.
    // Each thread's calls are replayed in that order, its evented profile
    // written as they come and its sampled one after it (its samples' op
    // calls are known then).
    for (uint32_t tid : threads) profiles_.push_back({profile_key(tid, 0), tid});
    for (const auto& [tid, indices] : samples_of_tid_) profiles_.push_back({profile_key(tid, 1), tid});
    std::sort(profiles_.begin(), profiles_.end());
    std::vector<uint32_t> replay_order;
    for (size_t i = 0; i < profiles_.size(); ++i)
      if (std::get<3>(profiles_[i].first) == 0) {
        replay_order.push_back(profiles_[i].second);
        evented_at_.emplace(profiles_[i].second, i);
      }

    out_ = "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\"exporter\":\"gpuprof\",\"name\":";
    out_ += '"';
    append_json_string(out_, r_.process.comm.empty() ? "gpuprof recording" : r_.process.comm);
    out_ += "\",\"activeProfileIndex\":0,\"profiles\":[";
    replay(replay_order, [this](const OpCall& call, const TraceCallEntry& entry) { on_call(call, entry); });
    end_thread();
    write_sampled_before(profiles_.size());
    out_ += "],\"shared\":{\"frames\":[";
    for (size_t i = 0; i < frames_.names().size(); ++i) {
      if (i) out_ += ',';
      out_ += "{\"name\":\"";
      append_json_string(out_, frames_.names()[i]);
      out_ += "\"}";
      maybe_flush();
    }
    out_ += "]}}\n";
    write_(out_);
    stats_.frames = frames_.names().size();
    return stats_;
  }

 private:
  // (pid, 0 for the main thread, tid, 0 evented or 1 sampled).
  using ProfileKey = std::tuple<int64_t, uint32_t, uint32_t, int>;
  ProfileKey profile_key(uint32_t tid, int kind) const {
    const int64_t pid = pid_of(tid);
    return {pid, static_cast<int64_t>(tid) == pid ? 0 : 1, tid, kind};
  }

  int64_t pid_of(uint32_t tid) const {
    auto it = pid_of_tid_.find(tid);
    return it == pid_of_tid_.end() ? r_.process.pid : it->second;
  }

  // "python3 (1234) / pt_autograd_0 (1240)".
  std::string thread_label(uint32_t tid) const {
    const int64_t pid = pid_of(tid);
    auto comm = comm_of_pid_.find(pid);
    auto name = thread_name_.find(tid);
    return (comm == comm_of_pid_.end() || comm->second.empty() ? std::string("process") : comm->second) + " (" +
           std::to_string(pid) + ") / " + (name == thread_name_.end() ? std::string("thread") : name->second) +
           " (" + std::to_string(tid) + ")";
  }

  uint64_t rel(uint64_t ts_ns) const { return ts_ns > base_ns_ ? ts_ns - base_ns_ : 0; }

  uint32_t op_frame(uint32_t op_id) {
    if (op_id >= op_frames_.size()) op_frames_.resize(op_id + 1, kUnset);
    if (op_frames_[op_id] == kUnset) op_frames_[op_id] = frames_.of(op_display_name(r_.ops, op_id));
    return op_frames_[op_id];
  }

  uint32_t sample_frame(uint32_t frame_id) {
    return frames_.of(frame_id < r_.sample_frames.size() ? std::string_view(r_.sample_frames[frame_id])
                                                         : std::string_view("[unknown]"));
  }

  void append_stack(std::vector<uint32_t>& out, uint32_t stack_id) {
    if (stack_id >= r_.sample_stacks.size()) return;
    for (uint32_t f : r_.sample_stacks[stack_id]) out.push_back(sample_frame(f));
  }

  void begin_thread(uint32_t tid) {
    // The profiles before this thread's evented one (sampled profiles of
    // threads before it) go first.
    const size_t at = evented_at_.at(tid);
    write_sampled_before(at);
    next_profile_ = at + 1;
    tid_ = tid;
    events_ = 0;
    auto samples = samples_of_tid_.find(tid);
    thread_samples_ = samples == samples_of_tid_.end() ? nullptr : &samples->second;
    next_sample_ = 0;
  }

  // A thread's calls come parents first, by start: as build_call_tree
  // sweeps them, the last call and the calls that enclose it are open_,
  // outermost first. Each call opens its op's frame after closing the op
  // calls that do not enclose it (step frames are left out: a call may run
  // across a step's end, op_timeline.h, which an evented profile cannot
  // show nested); an outermost call first opens its entry's Python frames,
  // those already open kept. Ends are never earlier than what came before
  // them (a call closed as unwound may end where its child did), so the
  // events stay in time order and nested.
  void on_call(const OpCall& call, const TraceCallEntry& entry) {
    if (!tid_ || *tid_ != call.tid) {
      end_thread();
      begin_thread(call.tid);
    }
    place_samples_before(call.start_ns, /*inclusive=*/false);
    while (!open_.empty() && open_.back().end_ns < call.start_ns) open_.pop_back();
    // A call as deep or deeper does not enclose this one, even when it
    // ends at the very timestamp this one starts (a sibling).
    while (!open_.empty() && open_.back().depth >= call.depth) open_.pop_back();
    int64_t op_parent = -1;  // the nearest enclosing call that is not a step frame
    for (auto it = open_.rbegin(); it != open_.rend(); ++it)
      if (!it->step) {
        op_parent = static_cast<int64_t>(it->seq);
        break;
      }
    const uint64_t seq = next_seq_++;
    open_.push_back({call.end_ns, call.depth, entry.step.has_value(), call.op_id, seq});
    if (entry.step) return;
    close_ops_above(op_parent);
    if (ops_.empty()) {
      std::vector<uint32_t> wanted;
      if (entry.stack) append_stack(wanted, *entry.stack);
      size_t same = 0;
      while (same < python_.size() && same < wanted.size() && python_[same] == wanted[same]) ++same;
      while (python_.size() > same) {
        emit(false, python_.back(), last_);
        python_.pop_back();
      }
      for (size_t k = same; k < wanted.size(); ++k) {
        emit(true, wanted[k], rel(call.start_ns));
        python_.push_back(wanted[k]);
      }
    }
    const uint32_t frame = op_frame(call.op_id);
    emit(true, frame, rel(call.start_ns));
    ops_.push_back({seq, frame, call.end_ns});
    ++stats_.op_calls;
  }

  // The thread's samples before `ts` (at it too: inclusive) get the op
  // calls open at their moment, outermost first: a call that ended before
  // a moment gives way to its parent (innermost_calls_at's rule).
  void place_samples_before(uint64_t ts, bool inclusive) {
    if (!thread_samples_) return;
    while (next_sample_ < thread_samples_->size()) {
      const size_t i = (*thread_samples_)[next_sample_];
      const uint64_t at = r_.samples[i].ts_ns;
      if (!(at < ts || (inclusive && at == ts))) break;
      ++next_sample_;
      while (!open_.empty() && open_.back().end_ns < at) open_.pop_back();
      for (const OpenCall& c : open_)
        if (!c.step) op_paths_[i].push_back(c.op_id);
    }
  }

  void close_ops_above(int64_t parent) {
    while (!ops_.empty() && static_cast<int64_t>(ops_.back().seq) != parent) {
      emit(false, ops_.back().frame, rel(ops_.back().end_ns));
      ops_.pop_back();
    }
  }

  void end_thread() {
    if (!tid_) return;
    place_samples_before(UINT64_MAX, /*inclusive=*/true);
    close_ops_above(-1);
    while (!python_.empty()) {
      emit(false, python_.back(), last_);
      python_.pop_back();
    }
    if (events_) {
      out_ += "],\"endValue\":";
      append_number(out_, last_);
      out_ += '}';
    }
    open_.clear();
    last_ = 0;
    tid_.reset();
  }

  // An event of the thread's evented profile, written as it comes; the
  // profile's head goes before its first (a thread whose calls are all step
  // frames has none), its end value after its last.
  void emit(bool open, uint32_t frame, uint64_t at) {
    last_ = std::max(last_, at);
    char line[80];  // 61 bytes at most
    char* p = line;
    if (events_++ == 0) {
      begin_profile();
      out_ += "{\"type\":\"evented\",\"name\":\"";
      append_json_string(out_, thread_label(*tid_) + ": ops");
      out_ += "\",\"unit\":\"nanoseconds\",\"startValue\":";
      append_number(out_, last_);
      out_ += ",\"events\":[";
    } else {
      *p++ = ',';
    }
    p = open ? put_text(p, "{\"type\":\"O\",\"frame\":") : put_text(p, "{\"type\":\"C\",\"frame\":");
    p = std::to_chars(p, p + 20, frame).ptr;
    p = put_text(p, ",\"at\":");
    p = std::to_chars(p, p + 20, last_).ptr;
    *p++ = '}';
    out_.append(line, static_cast<size_t>(p - line));
    maybe_flush();
  }

  void begin_profile() {
    if (stats_.profiles++) out_ += ',';
  }

  // The sampled profiles listed before profiles_[until] not yet written.
  void write_sampled_before(size_t until) {
    for (; next_profile_ < until; ++next_profile_)
      if (std::get<3>(profiles_[next_profile_].first) == 1) write_sampled(profiles_[next_profile_].second);
  }

  // A thread's samples, in time order, each stack outermost first: its
  // Python frames, the op calls open on its thread then, its native leaf and
  // its kernel frames. Each stands for one sampling period of CPU time.
  void write_sampled(uint32_t tid) {
    const std::vector<size_t>& samples = samples_of_tid_.at(tid);
    const uint64_t period = r_.options.sample_hz ? 1'000'000'000ull / r_.options.sample_hz : 1;
    begin_profile();
    out_ += "{\"type\":\"sampled\",\"name\":\"";
    append_json_string(out_, thread_label(tid) + ": CPU samples");
    out_ += "\",\"unit\":\"nanoseconds\",\"startValue\":";
    append_number(out_, rel(r_.samples[samples.front()].ts_ns));
    out_ += ",\"endValue\":";
    append_number(out_, rel(r_.samples[samples.back()].ts_ns) + period);
    out_ += ",\"samples\":[";
    std::vector<uint32_t> stack, op_path;
    for (size_t n = 0; n < samples.size(); ++n) {
      const size_t i = samples[n];
      const CpuSample& s = r_.samples[i];
      stack.clear();
      if (s.python_stack != kNoPythonStack) append_stack(stack, s.python_stack);
      // Frames are numbered by first use: the innermost op first, as ever.
      op_path.clear();
      for (auto op = op_paths_[i].rbegin(); op != op_paths_[i].rend(); ++op) op_path.push_back(op_frame(*op));
      stack.insert(stack.end(), op_path.rbegin(), op_path.rend());
      stack.push_back(sample_frame(s.frame_id));
      if (auto k = kernel_stack_of_.find(i); k != kernel_stack_of_.end()) append_stack(stack, k->second);
      if (n) out_ += ',';
      out_ += '[';
      for (size_t k = 0; k < stack.size(); ++k) {
        if (k) out_ += ',';
        append_number(out_, stack[k]);
      }
      out_ += ']';
      maybe_flush();
      ++stats_.samples;
    }
    out_ += "],\"weights\":[";
    const std::string weight = std::to_string(period);
    for (size_t n = 0; n < samples.size(); ++n) {
      if (n) out_ += ',';
      out_ += weight;
      maybe_flush();
    }
    out_ += "]}";
    maybe_flush();
  }

  void maybe_flush() {
    if (out_.size() < kFlushBytes) return;
    write_(out_);
    out_.clear();
  }

  static constexpr uint32_t kUnset = UINT32_MAX;
  const Recording& r_;
  const std::function<void(std::string_view)>& write_;
  const uint64_t base_ns_;
  std::unordered_map<uint32_t, int64_t> pid_of_tid_;
  std::unordered_map<uint32_t, std::string> thread_name_;
  std::unordered_map<int64_t, std::string> comm_of_pid_;
  std::vector<uint32_t> op_frames_;
  SharedFrames frames_;
  // The profiles in the document's order (key: profile_key), where each
  // thread's evented one is, and the next to be written.
  std::vector<std::pair<ProfileKey, uint32_t>> profiles_;
  std::unordered_map<uint32_t, size_t> evented_at_;
  size_t next_profile_ = 0;
  // Each thread's samples by time (stable), each sample's op path (op ids,
  // outermost first), found as its thread's calls come by, and each
  // sample's kernel stack.
  std::map<uint32_t, std::vector<size_t>> samples_of_tid_;
  std::vector<std::vector<uint32_t>> op_paths_;
  std::unordered_map<uint64_t, uint32_t> kernel_stack_of_;
  // The thread whose calls are coming (on_call).
  struct OpenCall {
    uint64_t end_ns;
    uint32_t depth;
    bool step;
    uint32_t op_id;
    uint64_t seq;
  };
  struct OpenOp {
    uint64_t seq;
    uint32_t frame;
    uint64_t end_ns;
  };
  std::optional<uint32_t> tid_;
  uint64_t events_ = 0;  // its evented profile's so far
  const std::vector<size_t>* thread_samples_ = nullptr;
  size_t next_sample_ = 0;
  uint64_t next_seq_ = 0;
  std::vector<OpenCall> open_;    // the last call and the calls enclosing it, outermost first
  std::vector<OpenOp> ops_;       // open op calls (not step frames), outermost first
  std::vector<uint32_t> python_;  // open Python frames, outermost first
  uint64_t last_ = 0;             // the latest event's moment
  SpeedscopeStats stats_;
  std::string out_;
};

}  // namespace

SpeedscopeStats write_speedscope(const Recording& recording, const std::function<void(std::string_view)>& write) {
  const Timeline timeline = build_timeline(recording.events);
  const CallTree tree = build_call_tree(timeline);
  std::vector<uint32_t> threads;
  std::unordered_map<uint32_t, size_t> list_of_tid;  // in tree.threads
  for (const std::vector<size_t>& list : tree.threads) {
    const uint32_t tid = timeline.calls[list.front()].tid;
    list_of_tid.emplace(tid, threads.size());
    threads.push_back(tid);
  }
  return SpeedscopeWriter(recording, write).run(threads, [&](std::span<const uint32_t> tids, const TraceCallVisitor& visit) {
    std::vector<size_t> lists;
    for (uint32_t tid : tids) lists.push_back(list_of_tid.at(tid));
    visit_trace_calls(recording, timeline, tree, nullptr, visit, &lists);
  });
}

SpeedscopeStats write_speedscope(const Recording& head, const StreamedTraceCalls& calls,
                                 const std::function<void(std::string_view)>& write) {
  return SpeedscopeWriter(head, write).run(calls.threads, calls.calls_of);
}

}  // namespace gpuprof
