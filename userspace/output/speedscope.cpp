// speedscope.cpp: the recording's calls and samples as speedscope profiles.
#include "output/speedscope.h"

#include <algorithm>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "analyze/call_tree.h"
#include "analyze/op_timeline.h"
#include "output/chrome_trace.h"
#include "output/trace_json.h"

namespace gpuprof {
namespace {

constexpr size_t kFlushBytes = 64 * 1024;

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

// One profile's events or samples, before they are written: a profile's
// header needs its end, known only once its events are made.
struct EventedProfile {
  std::string name;
  struct Event {
    bool open;
    uint32_t frame;
    uint64_t at;  // ns since the recording started
  };
  std::vector<Event> events;
};

struct SampledProfile {
  std::string name;
  std::vector<std::vector<uint32_t>> stacks;  // frames, outermost first
  uint64_t start = 0, end = 0;                // ns since the recording started
};

class SpeedscopeWriter {
 public:
  SpeedscopeWriter(const Recording& recording, const std::function<void(std::string_view)>& write)
      : r_(recording), write_(write), base_ns_(recording.clock.start_monotonic_ns) {
    for (const ThreadProcess& t : recording.thread_processes) pid_of_tid_.emplace(t.tid, t.pid);
    for (const ThreadName& t : recording.thread_names) thread_name_.emplace(t.tid, t.name);
    if (recording.processes.empty()) comm_of_pid_[recording.process.pid] = recording.process.comm;
    for (const ProcessInfo& p : recording.processes) comm_of_pid_[p.pid] = p.comm;
  }

  SpeedscopeStats run() {
    const Timeline timeline = build_timeline(r_.events);
    const CallTree tree = build_call_tree(timeline);
    // Profiles by (pid, main thread first, tid), evented before sampled.
    std::map<std::tuple<int64_t, uint32_t, uint32_t, int>, size_t> order;
    for (const std::vector<size_t>& thread : tree.threads) {
      EventedProfile p = evented_profile(timeline, tree, thread);
      if (p.events.empty()) continue;
      const uint32_t tid = timeline.calls[thread.front()].tid;
      order.emplace(profile_key(tid, 0), evented_.size());
      evented_.push_back(std::move(p));
    }
    for (auto& [tid, p] : sampled_profiles(timeline, tree)) {
      order.emplace(profile_key(tid, 1), evented_.size() + sampled_.size());
      sampled_.push_back(std::move(p));
    }

    out_ = "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\"exporter\":\"gpuprof\",\"name\":";
    out_ += '"';
    append_json_string(out_, r_.process.comm.empty() ? "gpuprof recording" : r_.process.comm);
    out_ += "\",\"activeProfileIndex\":0,\"profiles\":[";
    bool first = true;
    for (const auto& [key, index] : order) {
      if (!first) out_ += ',';
      first = false;
      if (index < evented_.size())
        write_evented(evented_[index]);
      else
        write_sampled(sampled_[index - evented_.size()]);
      maybe_flush();
    }
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
    stats_.profiles = order.size();
    return stats_;
  }

 private:
  std::tuple<int64_t, uint32_t, uint32_t, int> profile_key(uint32_t tid, int kind) const {
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

  bool is_step(const OpCall& call) const {
    return call.entry_index < r_.events.size() && r_.events[call.entry_index].kind == GP_EV_STEP;
  }

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

  // The nearest enclosing call that is not a step frame; -1 for none.
  int64_t op_parent(const Timeline& timeline, const CallTree& tree, size_t i) const {
    int64_t p = tree.parent[i];
    while (p >= 0 && is_step(timeline.calls[p])) p = tree.parent[p];
    return p;
  }

  // A thread's calls (parents first) as open/close events. Ends are never
  // earlier than what came before them (a call closed as unwound may end
  // where its child did), so the events stay in time order and nested.
  EventedProfile evented_profile(const Timeline& timeline, const CallTree& tree, const std::vector<size_t>& thread) {
    if (entry_stack_.empty())
      for (const EntryStack& e : r_.entry_stacks) entry_stack_.emplace(e.event_index, e.stack_id);
    EventedProfile p;
    uint64_t last = 0;
    auto emit = [&](bool open, uint32_t frame, uint64_t at) {
      last = std::max(last, at);
      p.events.push_back({open, frame, last});
    };
    struct Open {
      size_t call;
      uint32_t frame;
    };
    std::vector<Open> ops;           // open op calls, outermost first
    std::vector<uint32_t> python;    // open Python frames, outermost first
    auto close_ops_above = [&](int64_t parent) {
      while (!ops.empty() && static_cast<int64_t>(ops.back().call) != parent) {
        emit(false, ops.back().frame, rel(timeline.calls[ops.back().call].end_ns));
        ops.pop_back();
      }
    };
    for (size_t i : thread) {
      const OpCall& call = timeline.calls[i];
      if (is_step(call)) continue;
      close_ops_above(op_parent(timeline, tree, i));
      if (ops.empty()) {
        // An outermost call: its Python frames, those already open kept.
        std::vector<uint32_t> wanted;
        if (auto it = entry_stack_.find(call.entry_index); it != entry_stack_.end()) append_stack(wanted, it->second);
        size_t same = 0;
        while (same < python.size() && same < wanted.size() && python[same] == wanted[same]) ++same;
        while (python.size() > same) {
          emit(false, python.back(), last);
          python.pop_back();
        }
        for (size_t k = same; k < wanted.size(); ++k) {
          emit(true, wanted[k], rel(call.start_ns));
          python.push_back(wanted[k]);
        }
      }
      const uint32_t frame = op_frame(call.op_id);
      emit(true, frame, rel(call.start_ns));
      ops.push_back({i, frame});
      ++stats_.op_calls;
    }
    close_ops_above(-1);
    while (!python.empty()) {
      emit(false, python.back(), last);
      python.pop_back();
    }
    if (!thread.empty()) p.name = thread_label(timeline.calls[thread.front()].tid) + ": ops";
    return p;
  }

  // Per sampled thread: each sample's stack, in time order.
  std::map<uint32_t, SampledProfile> sampled_profiles(const Timeline& timeline, const CallTree& tree) {
    std::map<uint32_t, SampledProfile> by_tid;
    if (r_.samples.empty()) return by_tid;
    const std::vector<int64_t> running = innermost_calls_at(timeline, tree, thread_moments(r_.samples));
    std::unordered_map<uint64_t, uint32_t> kernel_stack_of;
    for (const SampleKernelStack& k : r_.sample_kernel_stacks) kernel_stack_of.emplace(k.sample_index, k.stack_id);
    std::vector<size_t> order(r_.samples.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return r_.samples[a].ts_ns < r_.samples[b].ts_ns; });
    std::vector<uint32_t> op_path;
    for (size_t i : order) {
      const CpuSample& s = r_.samples[i];
      SampledProfile& p = by_tid[s.tid];
      if (p.stacks.empty()) {
        p.name = thread_label(s.tid) + ": CPU samples";
        p.start = rel(s.ts_ns);
      }
      p.end = rel(s.ts_ns);
      std::vector<uint32_t> stack;
      if (s.python_stack != kNoPythonStack) append_stack(stack, s.python_stack);
      op_path.clear();
      for (int64_t c = running[i]; c >= 0; c = tree.parent[c])
        if (!is_step(timeline.calls[c])) op_path.push_back(op_frame(timeline.calls[c].op_id));
      stack.insert(stack.end(), op_path.rbegin(), op_path.rend());
      stack.push_back(sample_frame(s.frame_id));
      if (auto k = kernel_stack_of.find(i); k != kernel_stack_of.end()) append_stack(stack, k->second);
      p.stacks.push_back(std::move(stack));
      ++stats_.samples;
    }
    return by_tid;
  }

  void write_evented(const EventedProfile& p) {
    out_ += "{\"type\":\"evented\",\"name\":\"";
    append_json_string(out_, p.name);
    out_ += "\",\"unit\":\"nanoseconds\",\"startValue\":" + std::to_string(p.events.front().at) +
            ",\"endValue\":" + std::to_string(p.events.back().at) + ",\"events\":[";
    for (size_t i = 0; i < p.events.size(); ++i) {
      const EventedProfile::Event& e = p.events[i];
      if (i) out_ += ',';
      out_ += e.open ? "{\"type\":\"O\",\"frame\":" : "{\"type\":\"C\",\"frame\":";
      out_ += std::to_string(e.frame) + ",\"at\":" + std::to_string(e.at) + '}';
      maybe_flush();
    }
    out_ += "]}";
  }

  void write_sampled(const SampledProfile& p) {
    // Each sample stands for one sampling period of CPU time.
    const uint64_t period = r_.options.sample_hz ? 1'000'000'000ull / r_.options.sample_hz : 1;
    out_ += "{\"type\":\"sampled\",\"name\":\"";
    append_json_string(out_, p.name);
    out_ += "\",\"unit\":\"nanoseconds\",\"startValue\":" + std::to_string(p.start) +
            ",\"endValue\":" + std::to_string(p.end + period) + ",\"samples\":[";
    for (size_t i = 0; i < p.stacks.size(); ++i) {
      if (i) out_ += ',';
      out_ += '[';
      for (size_t k = 0; k < p.stacks[i].size(); ++k) {
        if (k) out_ += ',';
        out_ += std::to_string(p.stacks[i][k]);
      }
      out_ += ']';
      maybe_flush();
    }
    out_ += "],\"weights\":[";
    const std::string weight = std::to_string(period);
    for (size_t i = 0; i < p.stacks.size(); ++i) {
      if (i) out_ += ',';
      out_ += weight;
      maybe_flush();
    }
    out_ += "]}";
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
  std::unordered_map<uint64_t, uint32_t> entry_stack_;
  std::vector<uint32_t> op_frames_;
  SharedFrames frames_;
  std::vector<EventedProfile> evented_;
  std::vector<SampledProfile> sampled_;
  SpeedscopeStats stats_;
  std::string out_;
};

}  // namespace

SpeedscopeStats write_speedscope(const Recording& recording, const std::function<void(std::string_view)>& write) {
  return SpeedscopeWriter(recording, write).run();
}

}  // namespace gpuprof
