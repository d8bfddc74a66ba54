// Random op event streams for the streamed outputs' tests (streamed
// aggregate, streamed stack sums): they must equal the whole read's on
// streams that fold same-name children, unwind, catch, step, cut and leave
// calls and ranges open at the end, on several threads.
#pragma once

#include <cstdint>
#include <random>
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

}  // namespace gpuprof::test
