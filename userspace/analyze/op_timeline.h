// op_timeline.h: per-thread operator nesting rebuilt from raw probe events.
//
// The BPF side sees only three things: an op's entry, a `ret` of an op's
// ::call body, and the start of a C++ catch handler (op_tracer_abi.h). There are no
// return probes (uretprobes rewrite the return address, and C++ unwinding
// through a rewritten address aborts the process), so an op left by an
// exception never produces its EXIT. build_timeline() recovers the call
// tree, and the ends of such calls, from the user stack pointer:
//
//  * At an op's first instruction and at its `ret`, sp points at the return
//    address, so ENTRY.sp == EXIT.sp for one call.
//  * The stack grows down: a call nested in another has a strictly smaller
//    sp. The open frames of a thread therefore have strictly decreasing sp
//    from the outermost to the innermost, and every rule below closes a run
//    of frames from the top of the stack.
//  * ENTRY at sp E: any open frame with sp <= E is gone, its slot freed or
//    reused by this call (a sibling called by the same caller has the same
//    sp). It was left without a `ret`: close it as unwound.
//  * EXIT at sp E of op X: frames with sp < E were nested in the returning
//    call and are gone: close them as unwound. Then the top frame, if it has
//    sp == E and op X, ends normally. Any other EXIT belongs to a call whose
//    ENTRY we never saw (it was running when recording began, or its entry
//    was lost): it is counted and changes nothing. In particular an EXIT
//    with sp below the top frame is a call nested in that frame that started
//    before we attached, and must not pop the frame.
//  * CATCH at sp C (entry of __cxa_begin_catch): the catching function's
//    frame holds C, and a call it made that the exception left had its
//    return address at C or below, so every open frame with sp <= C was
//    unwound; it ends at the catch's timestamp.
//  * A frame closed as unwound by a later ENTRY or EXIT (no catch seen) ends
//    at the timestamp of the thread's last event before the revealing one:
//    the exception left it somewhere between the two, so this is a lower
//    bound. It is never earlier than the frame's own entry.
//  * Frames still open when the events end were running at stop: they are
//    not calls (calls_open_at_end); calls completed inside them still are.
//
// "Unwound" strictly means "ended without a `ret` we saw": besides exception
// unwinding it also covers a ::call path that leaves through a tail jump
// (RecordStats::ops_without_exit counts bodies with no `ret` at all) and an
// EXIT lost in the ring buffer (RecordStats::events_lost). When an op's
// code tail-jumps straight into another op's ::call, both have the same
// entry sp: the first is then closed as unwound (ending at the thread's
// previous event) and the second shows up as its sibling, not its child.
//
// Steps (record --schedule --step-op, op_tracer_abi.h GP_EV_STEP): a STEP event
// whose op_id is an op (a recorded step) opens a frame of that op (the
// ProfilerStep op) under everything else on its thread: entry sp taken as
// UINT64_MAX, so no ENTRY, EXIT or CATCH rule ever closes it. The thread's
// next STEP event closes it (an ordinary call, not unwound) and opens the
// next step's frame when that step is recorded too; so the top-level calls
// of a step are its children, as under torch's ProfilerStep#N ranges. A STEP
// that finds frames open on its thread and no step frame under them (the
// first step op called inside another op) changes nothing and is counted
// (steps_inside_calls). A step frame still open when the events end closes
// at its thread's last event (torch ends its last range when profiling
// stops); op frames open above it are not calls, as always.
//
// Cuts (op_tracer_abi.h GP_EV_CUT, written by the recorder where a schedule's
// cycle of recorded steps ends): every frame open on any thread ends at the
// cut, an ordinary call (calls_cut counts the op frames), as torch.profiler
// ends the ranges still open when its active steps end. Without the cut,
// such a frame's exit, dropped in the unrecorded steps, would leave it open
// until the thread's next recorded event, one or many steps later. An event
// stamped before the last cut that comes after it (another CPU's event, a
// few microseconds late in the ring) belongs to a window already closed: it
// is not counted (events_after_cut).
//
// Ranges (op_tracer_abi.h, GP_EV_RANGE_BEGIN/END: record_function ranges, a
// kernel's own RECORD_FUNCTION guard) are frames too, keyed by their
// RecordFunction's address (in sp), which the sp rules never close from
// below: begun with no call open, one sits above the thread's step frame
// and earlier ranges; begun inside a call, right above that call (its sp
// less one), so that the call's EXIT finds it gone, as it must be. A
// RANGE_END closes its range, and any call still open above it as unwound;
// an END whose range is not open on its thread (begun before the
// recording, or an async range that a future's callback ended on another
// thread) changes nothing and is counted (ranges_ended_elsewhere). A STEP
// whose thread has a step frame at the bottom ends it even under open
// ranges or calls (the optimizer's foreach op, a usual --step-op, runs
// inside its Optimizer.step range): they go on in the next step.
//
// Compensation (build_timeline with ProbeCosts; docs/overhead.md): every
// event was stamped inside a probe hit that cost its thread `before` ns
// ahead of the timestamp and `after` ns behind it (ENTRY, RANGE_BEGIN,
// RANGE_END and CATCH: the entry cost; EXIT: the exit cost; a STEP comes
// from its step op's ENTRY hit and costs nothing more). Per thread, the
// probe time spent up to a moment is known: the sum over its earlier
// events, plus `before` at an event's own timestamp, plus everything up to
// a cut. A call's probe_ns is the probe time between its two ends (its own
// entry's `after`, its exit's `before`, all of its descendants' hits); its
// compensated duration is its duration less that, and its compensated self
// time that less its direct children's compensated durations: so an op
// loses its own probes' time inside its interval and its children's hits
// outside theirs, as the issue of record puts it. A call shorter than its
// probe time compensates to 0 and is counted (calls_shorter_than_probes).
//
// Each thread (tid) has its own stack. Events of one thread must be in the
// order they happened (the recorder keeps that); events of different threads
// may interleave in any way, and the pid field is not looked at.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "analyze/timeline_counters.h"
#include "op_tracer_abi.h"
#include "record/recording.h"

namespace gpuprof {

// One completed op call on one thread.
struct OpCall {
  uint32_t tid = 0;
  uint32_t op_id = 0;
  uint64_t start_ns = 0;  // ENTRY timestamp
  uint64_t end_ns = 0;    // EXIT timestamp, or the unwinding end (see above)
  uint64_t self_ns = 0;   // duration minus the durations of direct children
  uint32_t depth = 0;     // open frames below it at entry (0: outermost seen)
  bool unwound = false;   // ended without an EXIT
  uint64_t entry_index = 0;  // index of its ENTRY in the events given to build_timeline
  // Compensation (above): the probes' time inside [start, end], and inside
  // its self time; 0 when built without ProbeCosts.
  uint64_t probe_ns = 0;
  uint64_t self_probe_ns = 0;

  uint64_t duration_ns() const { return end_ns - start_ns; }
  uint64_t compensated_ns() const { return duration_ns() - probe_ns; }
  uint64_t compensated_self_ns() const { return self_ns - self_probe_ns; }
  bool operator==(const OpCall&) const = default;
};

struct Timeline {
  // In completion order: the order of the events that closed them, across
  // threads as the input interleaves them. A call always comes after all of
  // its children; frames closed by one event come innermost first. Sort by
  // (tid, start_ns, depth) for a per-thread, parent-first order.
  std::vector<OpCall> calls;
  // Parallel to calls: how many direct children each call had, and the
  // index in calls of the child when there was exactly one (-1 otherwise).
  // The aggregator needs them to fold calls as torch.profiler does.
  std::vector<uint32_t> child_count;
  std::vector<int64_t> only_child;

  // calls_unwound: calls in `calls` with unwound set; exits_without_entry:
  // EXITs matching no open frame; calls_open_at_end: frames still open
  // after the last event; calls_shorter_than_probes: compensation (above)
  // took a call's probe time out of a shorter duration.
  TimelineCounters counters;
  uint64_t events_unknown_kind = 0;  // events with a kind op_tracer_abi.h lacks; ignored
  uint64_t steps_inside_calls = 0;   // STEP events that found op frames open (above)
  uint64_t calls_cut = 0;            // calls ended by a CUT (above); in `calls`, not unwound
  uint64_t ranges_ended_elsewhere = 0;  // RANGE_ENDs of no range open on their thread (below)
  uint64_t events_after_cut = 0;     // events stamped before a cut that came after it; ignored
  // Calls whose children's durations exceeded their own, so self time was
  // clamped at 0. Only possible when a thread's events are out of time
  // order; tests expect 0.
  uint64_t self_time_clamped = 0;
  uint32_t threads = 0;  // threads with at least one ENTRY or EXIT
};

// The calls a TimelineBuilder completed since its last take, with what
// folding them as torch.profiler does needs (aggregator.h) when they are
// taken as they come: indices count every call the builder completed,
// taken before or not (calls[k] is call first + k).
struct CompletedCalls {
  uint64_t first = 0;
  std::vector<OpCall> calls;
  std::vector<uint32_t> child_count;  // as Timeline's
  std::vector<int64_t> only_child;    // as Timeline's, an index as above
  // The call's parent (the frame open below it when it ended): how many
  // children it had closed with this one (0: no parent), and the one closed
  // just before this one (-1: none). Empty unless the builder was made
  // with sibling links.
  std::vector<uint32_t> siblings;
  std::vector<int64_t> previous_sibling;
};

// One pass over the events, O(n) amortized: every frame is pushed and popped
// at most once. Never fails; odd input shows up in the counters.
// With `costs`, calls also carry their compensation (above).
Timeline build_timeline(std::span<const gp_event> events, const ProbeCosts* costs = nullptr);

// The same rules, fed one event at a time (build_timeline() is this over a
// span): what a live view (gpuprof top) uses, taking the completed calls as
// they come.
class TimelineBuilder {
 public:
  // sibling_links: fill CompletedCalls::siblings and previous_sibling (a
  // streamed aggregate's folding needs them; nothing else does).
  explicit TimelineBuilder(const ProbeCosts* costs = nullptr, bool sibling_links = false);
  ~TimelineBuilder();
  TimelineBuilder(TimelineBuilder&&) noexcept;
  TimelineBuilder& operator=(TimelineBuilder&&) noexcept;

  // `index`: the event's index in the whole stream (OpCall::entry_index).
  void add(const gp_event& event, uint64_t index);
  // Calls are at most the ENTRY events; reserving them up front saves the
  // vector's regrowth copies on recordings of millions of events.
  void reserve_calls(size_t entries);
  // The calls completed since the last take, in completion order. Their
  // Timeline::child_count/only_child bookkeeping is dropped: a live view
  // does not fold same-name children.
  std::vector<OpCall> take_calls();
  // The same with their folding bookkeeping (CompletedCalls): a report
  // that streams a recording (analyze/streamed_aggregate.h).
  CompletedCalls take_completed();
  // The same into `done`, whose vectors, emptied, the builder fills next: a
  // caller that takes each chunk's calls into one CompletedCalls regrows
  // no vector (a chunk completes thousands of calls).
  void take_completed(CompletedCalls& done);
  // Frames open now, on every thread.
  uint64_t open_frames() const;
  // Calls completed so far, taken or not (the index the next one gets).
  uint64_t calls_completed() const;
  // Whether no later event of thread tid can make a call that encloses, or
  // is enclosed by, a call it completed so far: nothing is open on it but,
  // at most, a step frame no call has completed inside yet (the one the
  // thread's STEP just opened). A streamed output places the thread's calls
  // up to such a moment (analyze/streamed_stack_sums.h).
  bool at_rest(uint32_t tid) const;
  // What the end of the events closes (a step still open ends with its
  // thread's last event); no event may follow. finish() does it too.
  void end();
  Timeline finish() &&;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace gpuprof
