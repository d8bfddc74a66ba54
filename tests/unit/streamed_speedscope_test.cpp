// The speedscope profile of a recording read as a stream (speedscope.h,
// from streamed_chrome_trace.h's replay of each thread's calls) against
// the whole read's: the same bytes on random event streams of three
// threads that nest, fold, unwind, step and leave calls open at the end,
// with CPU samples (on a thread without ops too) and, half of them, Python
// stacks on half their entries (handed over a chunk late), fed in chunks of
// every size; a system-wide recording's. Both reads share the writer, so
// the profiles are also checked against what the timeline and its call
// tree say: every op call opened and closed nested on its thread, and each
// sample under the op calls open at its moment (innermost_calls_at).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "analyze/call_tree.h"
#include "analyze/op_timeline.h"
#include "output/speedscope.h"
#include "output/streamed_chrome_trace.h"
#include "probe_events.h"
#include "random_event_streams.h"

namespace gpuprof {
namespace {

using json = nlohmann::json;
using namespace ::gpuprof::test;

std::string whole_profile(const Recording& recording) {
  std::string out;
  write_speedscope(recording, [&](std::string_view piece) { out += piece; });
  return out;
}

// The streamed profile: the events fed `chunk` at a time, each chunk's
// pairs handed over a chunk late.
std::string streamed_profile(const Recording& recording, size_t chunk) {
  const Recording head = head_of(recording);
  StreamedChromeTrace streamed(head, last_pair_of(recording), last_index_of(recording.entry_shapes), std::nullopt);
  EXPECT_TRUE(streamed.wants(head));
  feed_in_chunks(streamed, recording, chunk, /*pair_delay=*/1);
  const StreamedTraceCalls calls = streamed.finish();
  std::string out;
  write_speedscope(head, calls, [&](std::string_view piece) { out += piece; });
  return out;
}

// Where two documents first differ, with some of each around it (the
// documents are too long to print whole).
std::string difference(const std::string& got, const std::string& expected) {
  if (got == expected) return "";
  size_t at = 0;
  while (at < got.size() && at < expected.size() && got[at] == expected[at]) at++;
  const size_t from = at > 120 ? at - 120 : 0;
  return "at byte " + std::to_string(at) + " of " + std::to_string(expected.size()) + ": got ..." +
         got.substr(from, 240) + "... expected ..." + expected.substr(from, 240) + "...";
}

Recording random_case(uint32_t seed) {
  Recording recording = random_recording_with_samples(seed, 3000);
  std::mt19937 rng(seed);
  if (seed % 2) {  // record --with-stack: half the entries have a Python stack
    recording.options.with_stack = true;
    add_random_entry_stacks(recording, rng, 2);
  }
  if (seed % 3 == 0) add_random_entry_shapes(recording, rng);  // shapes: not in the profile, but in the read
  return recording;
}

uint32_t tid_of(const json& profile) {
  static const std::regex tid(R"(\((\d+)\): (ops|CPU samples)$)");
  std::smatch m;
  const std::string name = profile["name"];
  EXPECT_TRUE(std::regex_search(name, m, tid)) << name;
  return static_cast<uint32_t>(std::stoul(m[1]));
}

TEST(StreamedSpeedscope, WritesTheWholeReadsBytesOnRandomStreams) {
  size_t evented = 0, sampled = 0, python_opens = 0;
  for (uint32_t seed = 1; seed <= 20; seed++) {
    const Recording recording = random_case(seed);
    const std::string expected = whole_profile(recording);
    for (size_t chunk : {size_t{1}, size_t{7}, size_t{500}, recording.events.size()}) {
      SCOPED_TRACE("seed " + std::to_string(seed) + " chunk " + std::to_string(chunk));
      EXPECT_EQ(difference(streamed_profile(recording, chunk), expected), "");
    }
    const json doc = json::parse(expected);
    for (const json& p : doc["profiles"]) {
      (p["type"] == "evented" ? evented : sampled)++;
      if (p["type"] != "evented") continue;
      for (const json& e : p["events"])
        if (e["type"] == "O" && doc["shared"]["frames"][e["frame"].get<size_t>()]["name"] == "train.py(3): main")
          python_opens++;
    }
  }
  // Three threads with ops and four sampled in each, and Python frames
  // opened over outermost calls, or the comparison proves little.
  EXPECT_EQ(evented, 20u * 3);
  EXPECT_EQ(sampled, 20u * 4);
  EXPECT_GT(python_opens, 400u);
}

TEST(StreamedSpeedscope, WritesTheWholeReadsBytesOfASystemWideRecording) {
  for (uint32_t seed = 1; seed <= 5; seed++) {
    const Recording recording = system_wide_recording(seed, 3000);
    const std::string expected = whole_profile(recording);
    EXPECT_NE(expected.find("python3 (20) / thread (12): ops"), std::string::npos);
    EXPECT_NE(expected.find("spin (30) / thread (13): CPU samples"), std::string::npos);
    for (size_t chunk : {size_t{7}, size_t{500}}) {
      SCOPED_TRACE("seed " + std::to_string(seed) + " chunk " + std::to_string(chunk));
      EXPECT_EQ(difference(streamed_profile(recording, chunk), expected), "");
    }
  }
}

// Each thread's evented profile opens and closes every op call of its
// thread but the step frames, nested, in time order; each sample's stack
// is its Python frames, the op calls open at its moment (outermost first,
// step frames left out), its leaf and its kernel frames.
TEST(StreamedSpeedscope, ProfilesAreTheTimelinesCallsAndEachSamplesOpenCalls) {
  size_t samples_in_ops = 0, deep_samples = 0;
  for (uint32_t seed = 1; seed <= 10; seed++) {
    const Recording recording = random_case(seed);
    const Timeline timeline = build_timeline(recording.events);
    const CallTree tree = build_call_tree(timeline);
    auto is_step = [&](size_t call) {
      return recording.events[timeline.calls[call].entry_index].kind == GP_EV_STEP;
    };
    std::map<uint32_t, size_t> op_calls_of_tid;
    for (size_t i = 0; i < timeline.calls.size(); i++)
      if (!is_step(i)) op_calls_of_tid[timeline.calls[i].tid]++;
    // Each sample's expected frame names, by thread in time order.
    const std::vector<int64_t> running = innermost_calls_at(timeline, tree, thread_moments(recording.samples));
    std::vector<size_t> by_time(recording.samples.size());
    for (size_t i = 0; i < by_time.size(); i++) by_time[i] = i;
    std::stable_sort(by_time.begin(), by_time.end(),
                     [&](size_t a, size_t b) { return recording.samples[a].ts_ns < recording.samples[b].ts_ns; });
    std::map<uint32_t, std::vector<std::vector<std::string>>> stacks_of_tid;
    for (size_t i : by_time) {
      const CpuSample& s = recording.samples[i];
      std::vector<std::string> stack;
      if (s.python_stack != kNoPythonStack)
        for (uint32_t f : recording.sample_stacks[s.python_stack]) stack.push_back(recording.sample_frames[f]);
      std::vector<std::string> ops;
      for (int64_t c = running[i]; c >= 0; c = tree.parent[c])
        if (!is_step(c)) ops.push_back(op_display_name(recording.ops, timeline.calls[c].op_id));
      samples_in_ops += !ops.empty();
      deep_samples += ops.size() > 1;
      stack.insert(stack.end(), ops.rbegin(), ops.rend());
      stack.push_back(recording.sample_frames[s.frame_id]);
      for (const SampleKernelStack& k : recording.sample_kernel_stacks)
        if (k.sample_index == i)
          for (uint32_t f : recording.sample_stacks[k.stack_id]) stack.push_back(recording.sample_frames[f]);
      stacks_of_tid[s.tid].push_back(std::move(stack));
    }

    const json doc = json::parse(whole_profile(recording));
    const json& frames = doc["shared"]["frames"];
    auto name = [&](const json& index) { return frames[index.get<size_t>()]["name"].get<std::string>(); };
    std::map<uint32_t, size_t> evented_tids;
    for (const json& p : doc["profiles"]) {
      const uint32_t tid = tid_of(p);
      SCOPED_TRACE("seed " + std::to_string(seed) + " tid " + std::to_string(tid));
      if (p["type"] == "sampled") {
        std::vector<std::vector<std::string>> got;
        for (const json& sample : p["samples"]) {
          std::vector<std::string> stack;
          for (const json& f : sample) stack.push_back(name(f));
          got.push_back(std::move(stack));
        }
        EXPECT_EQ(got, stacks_of_tid[tid]);
        continue;
      }
      std::vector<size_t> open;
      size_t op_opens = 0;  // frames that are not Python frames: op calls
      auto is_python = [&](const std::string& frame) {
        return std::find(recording.sample_frames.begin(), recording.sample_frames.end(), frame) !=
               recording.sample_frames.end();
      };
      uint64_t last = 0;
      for (const json& e : p["events"]) {
        const uint64_t at = e["at"];
        EXPECT_GE(at, last);
        last = at;
        if (e["type"] == "O") {
          open.push_back(e["frame"]);
          op_opens += !is_python(name(e["frame"]));
        } else {
          ASSERT_FALSE(open.empty());
          EXPECT_EQ(open.back(), e["frame"].get<size_t>());
          open.pop_back();
        }
      }
      EXPECT_TRUE(open.empty());
      evented_tids[tid] = op_opens;
    }
    EXPECT_EQ(evented_tids, op_calls_of_tid);
  }
  // Most samples fall in op calls, many in nested ones.
  EXPECT_GT(samples_in_ops, 10u * 300 / 2);
  EXPECT_GT(deep_samples, 10u * 300 / 10);
}

// Enough op calls to fill several 64 KiB pieces of each thread's calls'
// temporary file, and several flushes of the document: replayed whole, in
// order.
TEST(StreamedSpeedscope, CallsSpilledInPiecesReplayInOrder) {
  Recording big = random_recording_with_samples(7, 200'000);
  const std::string expected = whole_profile(big);
  EXPECT_GT(expected.size(), 3u * (64 << 10) * 3);
  EXPECT_GT(expected.size(), 2u << 20);  // two flushes at least (1 MiB each)
  EXPECT_EQ(difference(streamed_profile(big, 4096), expected), "");
}

}  // namespace
}  // namespace gpuprof
