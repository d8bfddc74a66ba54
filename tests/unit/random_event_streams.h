// Random op event streams for the streamed outputs' tests (streamed
// aggregate, stack sums, Chrome trace): they must equal the whole read's on
// streams that fold same-name children, unwind, catch, step, cut and leave
// calls and ranges open at the end, on several threads; the recordings
// made of them, with Python stacks and CPU samples, or of several processes
// (record -a); and their events fed to a streamed output as a streaming
// read hands them over.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <vector>

#include "probe_events.h"
#include "recordings.h"

namespace gpuprof::test {

// Names repeat across ids (overloads fold into one row, and into each
// other: torch compares names); ids 5 and 6 are ranges and a step marker.
inline std::vector<OpInfo> ops_of_the_streams() {
  std::vector<OpInfo> ops = {op("aten::add", "Tensor"), op("aten::add", "Scalar"), op("aten::div_"),
                             op("aten::mm"),            op("aten::div_", "Scalar"), op("my_range"),
                             op("ProfilerStep#1")};
  ops[5].kind = OpKind::user_range;
  ops[6].kind = OpKind::user_range;
  return ops;
}

inline ProbeCosts costs_of_the_streams() {
  ProbeCosts costs;
  costs.entry = {3, 4};
  costs.exit = {2, 5};
  costs.entry_stepped = {9, 11};
  costs.exit_stepped = {7, 13};
  costs.op_sites = {0, kEntrySingleStepped, kExitSingleStepped, 0, kEntrySingleStepped | kExitSingleStepped};
  return costs;
}

// Mostly well nested calls, a child often of its parent's name; exceptions
// (entries left open, then a catch or a deeper entry), stray exits, ranges,
// steps and, rarely, a cut.
inline std::vector<gp_event> random_events(uint32_t seed, size_t length) {
  struct Frame {
    uint64_t sp;
    uint32_t op;
  };
  constexpr uint32_t kThreads = 3;
  std::mt19937 rng(seed);
  auto chance = [&](double p) { return std::uniform_real_distribution<>(0, 1)(rng) < p; };
  auto pick = [&](uint64_t lo, uint64_t hi) { return std::uniform_int_distribution<uint64_t>(lo, hi)(rng); };
  std::vector<std::vector<Frame>> stacks(kThreads);
  std::vector<std::vector<uint64_t>> ranges(kThreads);
  std::vector<uint64_t> step(kThreads, 1);
  std::vector<gp_event> events;
  uint64_t ts = 1000;
  uint64_t range_object = 0x1000;
  for (size_t i = 0; i < length; ++i) {
    const uint32_t thread = static_cast<uint32_t>(pick(0, kThreads - 1));
    const uint32_t tid = 10 + thread;
    std::vector<Frame>& stack = stacks[thread];
    ts += pick(1, 40);
    const double action = std::uniform_real_distribution<>(0, 1)(rng);
    if (action < 0.45) {
      const uint64_t sp = stack.empty() ? 100000 - 64 * pick(0, 3) : stack.back().sp - 64 * pick(1, 2);
      const uint32_t op = !stack.empty() && chance(0.4) ? stack.back().op : static_cast<uint32_t>(pick(0, 4));
      while (!stack.empty() && stack.back().sp <= sp) stack.pop_back();
      stack.push_back({sp, op});
      events.push_back(op_entry(ts, sp, op, tid));
    } else if (action < 0.88) {
      if (!stack.empty() && chance(0.93)) {
        events.push_back(op_exit(ts, stack.back().sp, stack.back().op, tid));
        stack.pop_back();
      } else if (!stack.empty() && chance(0.5)) {  // an exception caught two frames down
        const size_t keep = stack.size() > 2 ? stack.size() - 2 : 0;
        const uint64_t sp = keep ? stack[keep - 1].sp - 1 : 100000 + 64;
        events.push_back(catch_at(ts, sp, tid));
        stack.resize(keep);
      } else {  // an exit of a call begun before the recording
        events.push_back(op_exit(ts, 100000 + 64 * pick(1, 3), static_cast<uint32_t>(pick(0, 4)), tid));
        stack.clear();
      }
    } else if (action < 0.93) {
      events.push_back(probe_event(GP_EV_RANGE_BEGIN, ts, ++range_object, 5, tid));
      ranges[thread].push_back(range_object);
    } else if (action < 0.97) {
      if (!ranges[thread].empty()) {
        events.push_back(probe_event(GP_EV_RANGE_END, ts, ranges[thread].back(), 5, tid));
        ranges[thread].pop_back();
        stack.clear();  // calls begun inside it ended with it
      } else {
        events.push_back(probe_event(GP_EV_RANGE_END, ts, 0x99, 5, tid));  // ended elsewhere
      }
    } else if (action < 0.995) {
      events.push_back(step_at(ts, ++step[thread], chance(0.8) ? 6 : GP_NO_OP, tid));
    } else {
      events.push_back(cut_at(ts));
      for (auto& s : stacks) s.clear();
      for (auto& r : ranges) r.clear();
    }
  }
  return events;
}

// A recording of one process (pid 4242, python3): the streams' ops and
// random_events(seed, length).
inline Recording random_recording(uint32_t seed, size_t length) {
  Recording recording = recording_of(ops_of_the_streams(), random_events(seed, length));
  recording.process.pid = 4242;
  recording.process.comm = "python3";
  return recording;
}

// Python stacks (record --with-stack) on about half of the recording's
// ENTRY and RANGE_BEGIN events, each one of stack ids 0 to stacks - 1.
inline void add_random_entry_stacks(Recording& recording, std::mt19937& rng, uint32_t stacks) {
  for (uint64_t i = 0; i < recording.events.size(); i++) {
    const uint16_t kind = recording.events[i].kind;
    if ((kind == GP_EV_OP_ENTRY || kind == GP_EV_RANGE_BEGIN) && rng() % 2)
      recording.entry_stacks.push_back({i, static_cast<uint32_t>(rng() % stacks)});
  }
}

// Input shapes (record --record-shapes) on about half the op entries, one
// of three shapes: two tensors, a tensor and a scalar, nothing readable.
inline void add_random_entry_shapes(Recording& recording, std::mt19937& rng) {
  recording.options.shapes = true;
  const auto first = static_cast<uint32_t>(recording.shapes.size());
  recording.shapes.push_back({std::vector<int64_t>{8, 3}, std::vector<int64_t>{3}});
  recording.shapes.push_back({std::vector<int64_t>{2, 2, 2}, std::nullopt});
  recording.shapes.push_back({});
  for (uint64_t i = 0; i < recording.events.size(); i++)
    if (recording.events[i].kind == GP_EV_OP_ENTRY && rng() % 2)
      recording.entry_shapes.push_back({i, first + static_cast<uint32_t>(rng() % 3)});
}

// Python stacks under the module frames of a model Net(conv, act, fc)
// (record --with-modules; with_names: and the attribute names), appended
// to the recording's frames and stacks: thread 10's entries have one from
// its first on, about two in three; thread 11's never; thread 12's only
// from the middle of the stream on. Entries of `engine_op` (an autograd
// engine call: kind set here) are linked to a forward op's stack, two in
// three (BACKWARD_STACKS).
inline void add_random_module_stacks(Recording& recording, uint32_t seed, bool with_names, uint32_t engine_op) {
  recording.ops[engine_op].kind = OpKind::autograd_engine;
  recording.options.with_stack = true;
  const auto f = static_cast<uint32_t>(recording.sample_frames.size());
  const auto first_stack = static_cast<uint32_t>(recording.sample_stacks.size());
  for (const char* frame : {"x.py(1): <module>", "nn.Module: Net_0", "nn.Module: Conv2d_0", "nn.Module: ReLU_0",
                            "nn.Module: Linear_0"})
    recording.sample_frames.push_back(frame);
  for (const std::vector<uint32_t>& stack : std::vector<std::vector<uint32_t>>{
           {f, f + 1, f + 2}, {f, f + 1, f + 3}, {f, f + 1}, {f, f + 1, f + 4}, {f}})
    recording.sample_stacks.push_back(stack);
  if (with_names)
    recording.module_names = {{f + 1, f + 2, "conv", 0}, {f + 1, f + 3, "act", 1}, {f + 1, f + 4, "fc", 2}};
  std::mt19937 rng(seed);
  for (uint64_t i = 0; i < recording.events.size(); i++) {
    const gp_event& e = recording.events[i];
    if (e.kind != GP_EV_OP_ENTRY && e.kind != GP_EV_RANGE_BEGIN) continue;
    const bool stacked = e.tid == 10 || (e.tid == 12 && i > recording.events.size() / 2);
    if (stacked && rng() % 3) recording.entry_stacks.push_back({i, first_stack + static_cast<uint32_t>(rng() % 5)});
    if (e.kind == GP_EV_OP_ENTRY && e.op_id == engine_op && rng() % 3)
      recording.backward_stacks.push_back({i, first_stack + static_cast<uint32_t>(rng() % 5)});
  }
}

struct RandomSamples {
  size_t count = 0;
  std::vector<uint32_t> leaf_frames;  // a sample's native leaf: one of these frame ids
  uint32_t python_stacks = 0;         // Python stack ids 0 to python_stacks - 1
  uint32_t kernel_stack = 0;          // the stack id of an in-kernel sample's kernel frames
};

// CPU samples (record -F) over the events' time on the event threads (tids
// 10 to 12) and one that ran no op (13), in the order a ring mixes them:
// some on an event's own timestamp, some a little past the last event, a
// third without a Python stack, a quarter in the kernel (half of those with
// their kernel stack).
inline void add_random_samples(Recording& recording, std::mt19937& rng, const RandomSamples& shape) {
  const uint64_t first_ns = recording.events.front().ts_ns, last_ns = recording.events.back().ts_ns;
  for (size_t i = 0; i < shape.count; i++) {
    CpuSample sample;
    sample.tid = 10 + static_cast<uint32_t>(rng() % 4);
    sample.ts_ns = rng() % 4 == 0 ? recording.events[rng() % recording.events.size()].ts_ns
                                  : first_ns + rng() % (last_ns - first_ns + 100);
    sample.frame_id = shape.leaf_frames[rng() % shape.leaf_frames.size()];
    sample.python_stack = rng() % 3 == 0 ? kNoPythonStack : static_cast<uint32_t>(rng() % shape.python_stacks);
    sample.in_kernel = rng() % 4 == 0;
    if (sample.in_kernel && rng() % 2)
      recording.sample_kernel_stacks.push_back({recording.samples.size(), shape.kernel_stack});
    recording.samples.push_back(sample);
  }
}

// random_recording(seed, length) with CPU samples at 997 Hz (a tenth as
// many as events; Python stack 0 on some, kernel stack 1 on some), its
// clock starting at 900 and thread 11 named pt_autograd_0.
inline Recording random_recording_with_samples(uint32_t seed, size_t length) {
  Recording recording = random_recording(seed, length);
  recording.clock.start_monotonic_ns = 900;
  recording.options.sample_hz = 997;
  recording.sample_frames = {"train.py(3): main", "libtorch_cpu.so+0x1234", "do_syscall_64_[k]"};
  recording.sample_stacks = {{0}, {2}};
  recording.thread_names = {{11, "pt_autograd_0"}};
  std::mt19937 rng(seed);
  add_random_samples(recording, rng, {.count = length / 10, .leaf_frames = {1}, .python_stacks = 1, .kernel_stack = 1});
  return recording;
}

// What a streaming read's first pass gives: all but the events, the pairs
// that name them and the launches.
inline Recording head_of(const Recording& recording) {
  Recording head = recording;
  head.events.clear();
  head.entry_stacks.clear();
  head.backward_stacks.clear();
  head.entry_shapes.clear();
  head.streamed_launches = head.launches.size();  // counted, not kept
  head.launches.clear();
  return head;
}

// The event index of the last of `pairs` (ENTRY_STACKS, BACKWARD_STACKS or
// ENTRY_SHAPES; nullopt: none).
template <class Pair>
std::optional<uint64_t> last_index_of(const std::vector<Pair>& pairs) {
  if (pairs.empty()) return std::nullopt;
  return pairs.back().event_index;
}
inline std::optional<uint64_t> last_pair_of(const Recording& recording) {
  return last_index_of(recording.entry_stacks);
}

// Feeds the recording's events to `streamed` (a RecordStream) `chunk` at
// a time, each chunk's ENTRY_STACKS, BACKWARD_STACKS and ENTRY_SHAPES pairs
// handed over after `pair_delay` more chunks (as a file has them, later),
// the rest at the end; after each chunk, the launches (in their order)
// up to the first stamped after its last event, and the rest at the end.
template <class Stream>
void feed_in_chunks(Stream& streamed, const Recording& recording, size_t chunk, size_t pair_delay) {
  size_t entries_given = 0, backwards_given = 0, shapes_given = 0;
  // Hands pairs[given...] before event index `before` to `hand`.
  auto give = [](const auto& pairs, size_t& given, uint64_t before, auto hand) {
    for (; given < pairs.size() && pairs[given].event_index < before; given++) hand(pairs[given]);
  };
  auto give_pairs = [&](uint64_t before) {
    give(recording.entry_stacks, entries_given, before,
         [&](const EntryStack& p) { streamed.on_entry_stack(p.event_index, p.stack_id); });
    give(recording.backward_stacks, backwards_given, before,
         [&](const EntryStack& p) { streamed.on_backward_stack(p.event_index, p.stack_id); });
    give(recording.entry_shapes, shapes_given, before,
         [&](const EntryShapes& p) { streamed.on_entry_shape(p.event_index, p.shape_id); });
  };
  size_t launches_given = 0;
  auto give_launches = [&](uint64_t until_ns) {
    size_t n = 0;
    while (launches_given + n < recording.launches.size() && recording.launches[launches_given + n].ts_ns <= until_ns)
      n++;
    if (n) {
      EXPECT_TRUE(streamed.on_launches(std::span<const CudaLaunch>(recording.launches).subspan(launches_given, n)));
    }
    launches_given += n;
  };
  std::vector<uint64_t> chunk_ends;
  for (size_t at = 0; at < recording.events.size(); at += chunk) {
    const size_t n = std::min(chunk, recording.events.size() - at);
    streamed.on_events(std::span<const gp_event>(recording.events).subspan(at, n), at);
    chunk_ends.push_back(at + n);
    if (chunk_ends.size() > pair_delay) give_pairs(chunk_ends[chunk_ends.size() - 1 - pair_delay]);
    give_launches(recording.events[at + n - 1].ts_ns);
  }
  give_pairs(UINT64_MAX);
  give_launches(UINT64_MAX);
}

// A system-wide recording (record -a) of random streams: random_events'
// threads 10 and 11 are process 10's, thread 12 process 20's, which is met
// only from the middle on (after the stream's rare cuts and a cut its first
// event was stamped before), thread 13 (samples only) process 30's; thread
// 14 launches in process 40, which ran no op and has no description.
// Launches on every thread, and on one no THREAD_PROCESSES names.
inline Recording system_wide_recording(uint32_t seed, size_t length) {
  std::vector<gp_event> random = random_events(seed, length);
  std::vector<gp_event> events = {cut_at(random.front().ts_ns - 1)};
  for (size_t i = 0; i < random.size(); i++) {
    gp_event e = random[i];
    if (i == random.size() / 2) {
      // Process 20's first event, stamped before the cut just read (from
      // another CPU's ring): its selection drops it as after the cut.
      events.push_back(cut_at(e.ts_ns));
      gp_event late = op_entry(e.ts_ns - 1, 50000, 3, 12);
      late.pid = 20;
      events.push_back(late);
    }
    if (e.kind != GP_EV_CUT) {
      if (e.tid == 12 && i < random.size() / 2) continue;
      e.pid = e.tid == 12 ? 20 : 10;
    }
    events.push_back(e);
  }
  Recording r = recording_of(ops_of_the_streams(), std::move(events));
  r.process.pid = 0;
  r.process.comm = "[system-wide]";
  r.options.sample_hz = 99;
  r.probe_costs = costs_of_the_streams();
  r.processes = {{10, "python3", "python3 a.py", "/a/libtorch_cpu.so", "", ""},
                 {20, "python3", "python3 b.py", "/a/libtorch_cpu.so", "", ""},
                 {30, "spin", "spin", "", "", ""}};
  r.thread_processes = {{10, 10}, {11, 10}, {12, 20}, {13, 30}, {14, 40}};
  std::mt19937 rng(seed);
  r.sample_frames = {"a.py(1): main", "libc.so.6!f", "do_syscall_64_[k]"};
  r.sample_stacks = {{0}, {2}};
  add_random_samples(r, rng, RandomSamples{.count = 300, .leaf_frames = {1}, .python_stacks = 1, .kernel_stack = 1});
  for (uint32_t i = 0; i < 200; i++)
    r.launches.push_back({.ts_ns = 1000 + i, .tid = 10 + static_cast<uint32_t>(rng() % 6), .api = GP_LAUNCH_KERNEL});
  r.stats.events_lost = 7;
  return r;
}

// What a streaming read returns: no events, no launches.
inline Recording streamed_read_of(const Recording& recording) {
  Recording read = head_of(recording);
  read.launches.clear();
  read.streamed_events = recording.events.size();
  read.streamed_launches = recording.launches.size();
  return read;
}

}  // namespace gpuprof::test
