// op_timeline.cpp: the stack-pointer rules of op_timeline.h, one thread
// stack at a time.
#include "analyze/op_timeline.h"

#include <algorithm>
#include <unordered_map>
#include <utility>

namespace gpuprof {
namespace {

// A moment of a thread: a timestamp, and the probe time (compensation,
// op_timeline.h) the thread had spent up to it.
struct Moment {
  uint64_t ns = 0;
  uint64_t probe_ns = 0;
};

struct OpenFrame {
  uint32_t op_id;
  Moment entry;
  uint64_t entry_sp;
  uint64_t child_ns;  // summed durations of direct children closed so far
  uint64_t child_compensated_ns = 0;  // and their compensated durations
  uint32_t depth;
  uint64_t entry_index;       // index of the ENTRY event in the input
  uint32_t children = 0;      // direct children closed so far
  int64_t last_child = -1;    // index in Timeline::calls of the latest one
  uint64_t range = 0;         // a range frame: its RecordFunction's address (0: a call or a step)
};

struct ThreadState {
  uint32_t tid = 0;
  std::vector<OpenFrame> stack;  // entry_sp strictly decreasing towards back()
  Moment last_event;             // this thread's previous event
  Moment event;                  // the event being added
  uint64_t probe_ns = 0;         // probe time spent by the events added so far
  bool ran_ops = false;          // saw an ENTRY or EXIT
};

class Builder {
 public:
  Builder(const ProbeCosts* costs, bool sibling_links) : costs_(costs), sibling_links_(sibling_links) {}

  void add(const gp_event& event, uint64_t index) {
    if (event.kind == GP_EV_CUT) return on_cut(event);
    if (event.ts_ns < last_cut_ns_) {
      // Stamped before the window that a cut closed, arriving after it (from
      // another CPU's ring position): it belongs to no window any more.
      ++timeline_.events_after_cut;
      return;
    }
    ThreadState& thread = thread_of(event.tid);
    const ProbeCost cost = cost_of(event);
    thread.event = Moment{event.ts_ns, thread.probe_ns + cost.before_ns};
    switch (event.kind) {
      case GP_EV_OP_ENTRY: on_entry(thread, event, index); break;
      case GP_EV_OP_EXIT: on_exit(thread, event); break;
      case GP_EV_CATCH: on_catch(thread, event); break;
      case GP_EV_STEP: on_step(thread, event, index); break;
      case GP_EV_RANGE_BEGIN: on_range_begin(thread, event, index); break;
      case GP_EV_RANGE_END: on_range_end(thread, event); break;
      default:
        ++timeline_.events_unknown_kind;
        return;  // not an event of this thread's history: last_event stays
    }
    thread.probe_ns += cost.before_ns + cost.after_ns;
    thread.last_event = thread.event;
  }

  // Calls are at most the ENTRY events; reserving them up front saves the
  // vector's regrowth copies on recordings of millions of events.
  void reserve_calls(size_t entries) { timeline_.calls.reserve(entries); }

  Timeline finish() && {
    end();
    return std::move(timeline_);
  }
  void end() {
    if (std::exchange(ended_, true)) return;
    for (auto& [tid, thread] : threads_) {
      // A step in progress when the events end ends with its thread's last
      // event (torch ends its last ProfilerStep range when profiling stops);
      // the op frames above it were running: not calls.
      const bool step_open = !thread.stack.empty() && thread.stack.front().entry_sp == kStepFrameSp;
      timeline_.counters.calls_open_at_end += thread.stack.size() - (step_open ? 1 : 0);
      if (step_open) {
        thread.stack.resize(1);
        close_top(thread, thread.last_event, /*unwound=*/false);
      }
      if (thread.ran_ops) ++timeline_.threads;
    }
  }

  std::vector<OpCall> take_calls() {
    CompletedCalls done;
    take_completed(done);
    return std::move(done.calls);
  }
  void take_completed(CompletedCalls& done) {
    done.first = calls_taken_;
    const auto take = [](auto& from, auto& into) {
      into.clear();
      std::swap(from, into);
    };
    take(timeline_.calls, done.calls);
    take(timeline_.child_count, done.child_count);
    take(timeline_.only_child, done.only_child);
    take(siblings_, done.siblings);
    take(previous_sibling_, done.previous_sibling);
    calls_taken_ += done.calls.size();
  }

  uint64_t calls_completed() const { return calls_taken_ + timeline_.calls.size(); }
  bool at_rest(uint32_t tid) const {
    const ThreadState* thread = cached_thread_ && cached_tid_ == tid ? cached_thread_ : nullptr;
    if (!thread) {
      auto it = threads_.find(tid);
      if (it == threads_.end()) return true;
      thread = &it->second;
    }
    const auto& stack = thread->stack;
    return stack.empty() || (stack.size() == 1 && stack.front().entry_sp == kStepFrameSp && stack.front().children == 0);
  }

  uint64_t open_frames() const {
    uint64_t n = 0;
    for (const auto& [tid, thread] : threads_) n += thread.stack.size();
    return n;
  }

 private:
  ThreadState& thread_of(uint32_t tid) {
    // Events come in runs of one thread; skip the hash lookup for a run.
    // (unordered_map never moves its elements, so the pointer stays valid.)
    if (cached_thread_ == nullptr || cached_tid_ != tid) {
      cached_thread_ = &threads_[tid];
      cached_thread_->tid = tid;
      cached_tid_ = tid;
    }
    return *cached_thread_;
  }

  // The probe hit each kind of event was stamped in (op_timeline.h,
  // "Compensation").
  ProbeCost cost_of(const gp_event& event) const {
    if (!costs_) return {};
    switch (event.kind) {
      case GP_EV_OP_ENTRY:
        return costs_->entry_of(event.op_id);
      case GP_EV_OP_EXIT:
        return costs_->exit_of(event.op_id);
      case GP_EV_RANGE_BEGIN:
      case GP_EV_RANGE_END:
      case GP_EV_CATCH:
        return costs_->entry;
      default:
        return {};  // a STEP rides on its op's ENTRY hit
    }
  }

  void on_entry(ThreadState& thread, const gp_event& event, uint64_t index) {
    thread.ran_ops = true;
    // Frames at or below this sp are gone: the new call took their slot.
    close_unwound_while(thread, thread.last_event, [&](const OpenFrame& top) {
      return top.entry_sp <= event.sp;
    });
    thread.stack.push_back(OpenFrame{
        .op_id = event.op_id,
        .entry = thread.event,
        .entry_sp = event.sp,
        .child_ns = 0,
        .depth = static_cast<uint32_t>(thread.stack.size()),
        .entry_index = index,
    });
  }

  void on_exit(ThreadState& thread, const gp_event& event) {
    thread.ran_ops = true;
    // Frames strictly below this sp were nested in the returning call.
    close_unwound_while(thread, thread.last_event, [&](const OpenFrame& top) {
      return top.entry_sp < event.sp;
    });
    if (!thread.stack.empty() && thread.stack.back().entry_sp == event.sp &&
        thread.stack.back().op_id == event.op_id) {
      close_top(thread, thread.event, /*unwound=*/false);
    } else {
      // Its ENTRY came before we attached (or was lost). Whatever is open
      // stays open: an EXIT below the top frame is a call nested in it.
      ++timeline_.counters.exits_without_entry;
    }
  }

  void on_catch(ThreadState& thread, const gp_event& event) {
    // The catcher's frame holds event.sp; calls it made that the exception
    // left had their return address at that slot or below.
    close_unwound_while(thread, thread.event, [&](const OpenFrame& top) {
      return top.entry_sp <= event.sp;
    });
  }

  // A step frame sits below every op frame of its thread (op_timeline.h).
  static constexpr uint64_t kStepFrameSp = UINT64_MAX;

  // The end of a recording window: every open frame of every thread ends
  // here, an ordinary call (torch ends the ranges open when its active steps
  // end), the step frame included.
  void on_cut(const gp_event& event) {
    // Thread by thread in tid order, so that the calls come out the same
    // way every time (a cut is rare: the sort costs nothing).
    std::vector<ThreadState*> threads;
    for (auto& [tid, thread] : threads_) threads.push_back(&thread);
    std::sort(threads.begin(), threads.end(), [](const ThreadState* a, const ThreadState* b) { return a->tid < b->tid; });
    for (ThreadState* state : threads) {
      ThreadState& thread = *state;
      for (const OpenFrame& frame : thread.stack) timeline_.calls_cut += frame.entry_sp != kStepFrameSp;
      // Every hit of the thread so far came before the cut.
      const Moment cut{event.ts_ns, thread.probe_ns};
      while (!thread.stack.empty()) close_top(thread, cut, /*unwound=*/false);
      if (thread.last_event.ns < event.ts_ns) thread.last_event = cut;
    }
    last_cut_ns_ = std::max<uint64_t>(last_cut_ns_, event.ts_ns);
  }

  void on_step(ThreadState& thread, const gp_event& event, uint64_t index) {
    const bool step_below = !thread.stack.empty() && thread.stack.front().entry_sp == kStepFrameSp;
    if (!thread.stack.empty() && !step_below) {
      ++timeline_.steps_inside_calls;  // no step frame to end, none can go under open calls
      return;
    }
    OpenFrame next{
        .op_id = event.op_id,
        .entry = thread.event,
        .entry_sp = kStepFrameSp,
        .child_ns = 0,
        .depth = 0,
        .entry_index = index,
    };
    if (step_below && thread.stack.size() > 1) {
      // The step op was called inside a range or a call (the optimizer's
      // foreach op inside Optimizer.step#X.step): the step ends under them,
      // and they go on in the next one.
      end_bottom_step(thread, thread.event);
      if (event.op_id != GP_NO_OP) thread.stack.insert(thread.stack.begin(), next);
      return;
    }
    if (step_below) close_top(thread, thread.event, /*unwound=*/false);
    if (event.op_id == GP_NO_OP) return;  // a step that is not recorded
    thread.ran_ops = true;
    thread.stack.push_back(next);
  }

  // Ends the step frame at the bottom of the thread's stack, under frames
  // that stay open: a call of its own, with the children closed so far.
  void end_bottom_step(ThreadState& thread, Moment end) {
    const OpenFrame frame = thread.stack.front();
    thread.stack.erase(thread.stack.begin());
    push_call(thread.tid, frame, end, 0, /*unwound=*/false);
  }

  // Ranges (op_tracer_abi.h, GP_EV_RANGE_BEGIN): frames of their own, which no sp
  // rule closes from below: at the bottom of the stack, above any step, or,
  // begun inside a call, right above it (sp one less than the call's, so
  // that the calls made inside the range nest above it and the call's exit
  // finds it gone, as it must be by then).
  void on_range_begin(ThreadState& thread, const gp_event& event, uint64_t index) {
    thread.ran_ops = true;
    const uint64_t below = thread.stack.empty() ? kStepFrameSp : thread.stack.back().entry_sp;
    thread.stack.push_back(OpenFrame{
        .op_id = event.op_id,
        .entry = thread.event,
        .entry_sp = below - 1,
        .child_ns = 0,
        .depth = static_cast<uint32_t>(thread.stack.size()),
        .entry_index = index,
        .range = event.sp,
    });
  }

  void on_range_end(ThreadState& thread, const gp_event& event) {
    auto it = std::find_if(thread.stack.rbegin(), thread.stack.rend(),
                           [&](const OpenFrame& f) { return f.range == event.sp; });
    if (it == thread.stack.rend()) {
      // Begun before the recording, or on another thread (an async range,
      // ended by a future's callback): not a frame of this thread.
      ++timeline_.ranges_ended_elsewhere;
      return;
    }
    // Calls begun inside the range and still open left without a `ret`.
    const size_t keep = thread.stack.size() - static_cast<size_t>(it - thread.stack.rbegin());
    while (thread.stack.size() > keep) close_top(thread, thread.last_event, /*unwound=*/true);
    close_top(thread, thread.event, /*unwound=*/false);
  }

  template <typename IsGone>
  void close_unwound_while(ThreadState& thread, Moment end, IsGone is_gone) {
    while (!thread.stack.empty() && is_gone(thread.stack.back())) {
      close_top(thread, end, /*unwound=*/true);
    }
  }

  void close_top(ThreadState& thread, Moment end, bool unwound) {
    const OpenFrame frame = thread.stack.back();
    thread.stack.pop_back();
    if (frame.child_ns > std::max(end.ns, frame.entry.ns) - frame.entry.ns) ++timeline_.self_time_clamped;
    const OpCall& call = push_call(thread.tid, frame, end, frame.depth, unwound);
    if (unwound) ++timeline_.counters.calls_unwound;
    if (!thread.stack.empty()) {
      OpenFrame& parent = thread.stack.back();
      parent.child_ns += call.duration_ns();
      parent.child_compensated_ns += call.compensated_ns();
      parent.children++;
      if (sibling_links_) {
        siblings_.back() = parent.children;
        previous_sibling_.back() = parent.last_child;
      }
      parent.last_child = static_cast<int64_t>(calls_taken_ + timeline_.calls.size() - 1);
    }
  }

  // The call a closed frame makes, with its compensation (op_timeline.h).
  const OpCall& push_call(uint32_t tid, const OpenFrame& frame, Moment end, uint32_t depth, bool unwound) {
    const uint64_t end_ns = std::max(end.ns, frame.entry.ns);
    const uint64_t duration = end_ns - frame.entry.ns;
    const uint64_t self = duration - std::min(frame.child_ns, duration);
    uint64_t probe = end.probe_ns > frame.entry.probe_ns ? end.probe_ns - frame.entry.probe_ns : 0;
    if (probe > duration) {
      ++timeline_.counters.calls_shorter_than_probes;
      probe = duration;
    }
    const uint64_t compensated = duration - probe;
    const uint64_t compensated_self = compensated - std::min(frame.child_compensated_ns, compensated);
    timeline_.calls.push_back(OpCall{
        .tid = tid,
        .op_id = frame.op_id,
        .start_ns = frame.entry.ns,
        .end_ns = end_ns,
        .self_ns = self,
        .depth = depth,
        .unwound = unwound,
        .entry_index = frame.entry_index,
        .probe_ns = probe,
        .self_probe_ns = self - std::min(compensated_self, self),
    });
    timeline_.child_count.push_back(frame.children);
    timeline_.only_child.push_back(frame.children == 1 ? frame.last_child : -1);
    if (sibling_links_) {
      siblings_.push_back(0);  // close_top sets them when the call has a parent
      previous_sibling_.push_back(-1);
    }
    return timeline_.calls.back();
  }

  std::unordered_map<uint32_t, ThreadState> threads_;
  uint64_t last_cut_ns_ = 0;
  ThreadState* cached_thread_ = nullptr;
  uint32_t cached_tid_ = 0;
  const ProbeCosts* costs_;  // nullptr: no compensation
  Timeline timeline_;
  // Parallel to timeline_.calls (CompletedCalls); take_completed() swaps
  // them out with the calls, and calls_taken_ counts the calls moved.
  // Only for a builder made with sibling links: a whole timeline has no
  // use for them, and they would cost 12 bytes a call.
  const bool sibling_links_;
  std::vector<uint32_t> siblings_;
  std::vector<int64_t> previous_sibling_;
  uint64_t calls_taken_ = 0;
  bool ended_ = false;  // end() ran
};

}  // namespace

struct TimelineBuilder::State {
  State(const ProbeCosts* costs, bool sibling_links) : builder(costs, sibling_links) {}
  Builder builder;
};

TimelineBuilder::TimelineBuilder(const ProbeCosts* costs, bool sibling_links)
    : state_(std::make_unique<State>(costs, sibling_links)) {}
TimelineBuilder::~TimelineBuilder() = default;
TimelineBuilder::TimelineBuilder(TimelineBuilder&&) noexcept = default;
TimelineBuilder& TimelineBuilder::operator=(TimelineBuilder&&) noexcept = default;
void TimelineBuilder::add(const gp_event& event, uint64_t index) { state_->builder.add(event, index); }
void TimelineBuilder::reserve_calls(size_t entries) { state_->builder.reserve_calls(entries); }
std::vector<OpCall> TimelineBuilder::take_calls() { return state_->builder.take_calls(); }
CompletedCalls TimelineBuilder::take_completed() {
  CompletedCalls done;
  state_->builder.take_completed(done);
  return done;
}
void TimelineBuilder::take_completed(CompletedCalls& done) { state_->builder.take_completed(done); }
uint64_t TimelineBuilder::open_frames() const { return state_->builder.open_frames(); }
uint64_t TimelineBuilder::calls_completed() const { return state_->builder.calls_completed(); }
bool TimelineBuilder::at_rest(uint32_t tid) const { return state_->builder.at_rest(tid); }
void TimelineBuilder::end() { state_->builder.end(); }
Timeline TimelineBuilder::finish() && { return std::move(state_->builder).finish(); }

Timeline build_timeline(std::span<const gp_event> events, const ProbeCosts* costs) {
  TimelineBuilder builder(costs);
  builder.reserve_calls(static_cast<size_t>(
      std::count_if(events.begin(), events.end(),
                    [](const gp_event& e) { return e.kind == GP_EV_OP_ENTRY; })));
  for (size_t i = 0; i < events.size(); i++) builder.add(events[i], i);
  return std::move(builder).finish();
}

}  // namespace gpuprof
