// The streamed module tree (analyze/streamed_module_tree.h) against
// build_module_tree() of the same recording read whole: the same nodes in
// the same order, with the same calls, times and op rows, on random event
// streams of three threads whose entries run under module frames (a
// thread that never has a stack, one whose first calls have none, one with
// stacks from the start), with autograd engine calls linked to their
// forward's stack or not, and both kinds of pairs handed over a chunk or
// more after their events; and on a written file read by the streaming
// reader, whose pairs all come after the events.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "analyze/aggregator.h"
#include "analyze/module_tree.h"
#include "analyze/streamed_module_tree.h"
#include "output/module_table.h"
#include "random_event_streams.h"
#include "random_join_records.h"
#include "record/record_file.h"
#include "record/record_stream.h"
#include "recordings.h"

namespace gpuprof {
namespace {

using namespace ::gpuprof::test;

constexpr uint32_t kEngineOp = 4;  // the streams' aten::div_ (Scalar), made an autograd engine call here

// A random recording of a model (add_random_module_stacks) whose entries
// of op 4 are the autograd engine's.
Recording recording_with_modules(uint32_t seed, size_t length, bool with_names) {
  Recording recording = random_recording(seed, length);
  recording.probe_costs = costs_of_the_streams();
  add_random_module_stacks(recording, seed, with_names, kEngineOp);
  return recording;
}

// Every figure of the tree, its nodes walked from the tops down.
std::string dump(const ModuleTree& tree) {
  std::string out = "without stack " + std::to_string(tree.ops_without_stack) + "\n";
  auto walk = [&](auto&& self, size_t i) -> void {
    const ModuleNode& n = tree.nodes[i];
    out += tree.path(i) + " calls " + std::to_string(n.calls) + " self " + std::to_string(n.self_ns) + " total " +
           std::to_string(n.total_ns) + "\n";
    for (const ModuleOpRow& row : n.ops)
      out += "  " + row.name + " " + std::to_string(row.calls) + " " + std::to_string(row.self_ns) + " " +
             std::to_string(row.total_ns) + "\n";
    for (size_t child : n.children) self(self, child);
  };
  for (size_t top : tree.tops) walk(walk, top);
  return out;
}

// The streamed tree of `recording`: its events fed `chunk` at a time, the
// pairs of each kind handed over after `pair_delay` more chunks.
ModuleTree streamed_tree(const Recording& recording, size_t chunk, size_t pair_delay, bool raw_times) {
  const Recording head = head_of(recording);
  StreamedModuleTree streamed(head, compensation_costs(recording, raw_times), last_index_of(recording.entry_stacks),
                              last_index_of(recording.backward_stacks));
  EXPECT_TRUE(streamed.wants(head));
  feed_in_chunks(streamed, recording, chunk, pair_delay);
  return std::move(streamed).finish();
}

const ModuleNode* find(const ModuleTree& tree, const std::string& path) {
  for (size_t i = 0; i < tree.nodes.size(); i++)
    if (tree.path(i) == path) return &tree.nodes[i];
  return nullptr;
}

TEST(StreamedModuleTree, IsTheWholeReadsTreeOnRandomStreams) {
  uint64_t not_read = 0, no_python = 0, in_fc = 0, backward = 0, net_calls = 0;
  for (uint32_t seed = 1; seed <= 30; seed++) {
    const Recording recording = recording_with_modules(seed, 3000, seed % 2 == 0);
    for (bool raw : {false, true}) {
      const ModuleTree whole = build_module_tree(recording, raw);
      const std::string expected = dump(whole);
      ModuleTableOptions table;
      table.show_events = true;
      const std::string expected_table = format_module_table(whole, table);
      for (size_t chunk : {size_t{1}, size_t{7}, size_t{500}, recording.events.size()})
        for (size_t delay : {size_t{0}, size_t{1}, size_t{3}}) {
          SCOPED_TRACE("seed " + std::to_string(seed) + " chunk " + std::to_string(chunk) + " pair delay " +
                       std::to_string(delay) + (raw ? " raw" : ""));
          const ModuleTree streamed = streamed_tree(recording, chunk, delay, raw);
          EXPECT_EQ(dump(streamed), expected);
          EXPECT_EQ(format_module_table(streamed, table), expected_table);
        }
      if (raw) continue;
      // What the comparison must have covered: held calls of both kinds of
      // thread, linked and unlinked engine calls, module calls.
      not_read += whole.ops_without_stack;
      if (const ModuleNode* n = find(whole, "[no Python frames]")) no_python += n->total_ns;
      if (const ModuleNode* n = find(whole, seed % 2 ? "Net.Linear_0" : "Net.fc")) in_fc += n->ops.size();
      if (const ModuleNode* n = find(whole, "[backward]")) backward += n->total_ns;
      if (const ModuleNode* n = find(whole, "Net")) net_calls += n->calls;
    }
  }
  EXPECT_GT(not_read, 1000u);
  EXPECT_GT(no_python, 0u);
  EXPECT_GT(in_fc, 30u);
  EXPECT_GT(backward, 0u);
  EXPECT_GT(net_calls, 500u);
}

// A recording with GPU activities (the CUPTI shim): each call's GPU time,
// joined as the launches and activities come (random_join_records.h),
// lands where the whole read puts it, in the nodes, the op rows, the calls
// held until their thread's first stack, and the table's CUDA columns.
TEST(StreamedModuleTree, PutsGpuTimeWhereTheWholeReadDoes) {
  // The GPU figures of every node and op row, the nodes walked from the
  // tops down (their index order is the order first seen).
  auto gpu_dump = [](const ModuleTree& tree) {
    std::string out;
    auto walk = [&](auto&& self, size_t i) -> void {
      const ModuleNode& n = tree.nodes[i];
      out += tree.path(i) + " " + std::to_string(n.figures.self_cuda_ns) + " " + std::to_string(n.figures.cuda_ns);
      for (const ModuleOpRow& row : n.ops)
        out += " " + row.name + " " + std::to_string(row.figures.self_cuda_ns) + " " +
               std::to_string(row.figures.cuda_ns);
      out += "\n";
      for (size_t child : n.children) self(self, child);
    };
    for (size_t top : tree.tops) walk(walk, top);
    return out;
  };
  uint64_t gpu_in_modules = 0, gpu_not_read = 0;
  for (uint32_t seed = 1; seed <= 20; seed++) {
    Recording recording = recording_with_modules(seed, 3000, seed % 2 == 0);
    std::mt19937 rng(seed);
    add_random_gpu(recording, rng, 600);
    ring_order(recording.gpu_correlations, rng);
    const ModuleTree whole = build_module_tree(recording);
    ASSERT_TRUE(whole.gpu_recorded);
    ModuleTableOptions table;
    table.show_events = true;
    const std::string expected = dump(whole) + gpu_dump(whole) + format_module_table(whole, table);
    const Recording head = head_of(recording);
    for (size_t chunk : {size_t{1}, size_t{9}, size_t{400}, recording.events.size()})
      for (size_t lag : {size_t{0}, size_t{3}}) {
        SCOPED_TRACE("seed " + std::to_string(seed) + " chunk " + std::to_string(chunk) + " lag " +
                     std::to_string(lag));
        const JoinBounds bounds = bounds_of(recording, chunk, lag);
        StreamedModuleTree streamed(head, compensation_costs(recording, false), last_index_of(recording.entry_stacks),
                                    last_index_of(recording.backward_stacks), &bounds);
        EXPECT_TRUE(streamed.wants(head));
        feed_with_records(streamed, recording, chunk, lag, /*pair_delay=*/lag + 2);
        const ModuleTree tree = std::move(streamed).finish();
        EXPECT_EQ(dump(tree) + gpu_dump(tree) + format_module_table(tree, table), expected);
      }
    if (const ModuleNode* n = find(whole, "Net")) gpu_in_modules += n->figures.cuda_ns;
    if (const ModuleNode* n = find(whole, "[stack not read]")) gpu_not_read += n->figures.self_cuda_ns;
  }
  EXPECT_GT(gpu_in_modules, 0u);
  EXPECT_GT(gpu_not_read, 0u);
}

// A thread's first calls have no stack; a nested call of its second forest
// has one: the first calls are [stack not read], as the whole read has
// them, though they were placed before the stack came. A thread with no
// stack at all is [no Python frames].
TEST(StreamedModuleTree, HeldCallsGoWhereTheWholeReadPutsThem) {
  Recording recording = recording_of(
      ops_of_the_streams(),
      {op_entry(0, 1000, 0, 1), op_exit(1'000, 1000, 0, 1),                                   // add, no stack
       op_entry(2'000, 1000, 3, 1), op_entry(2'500, 900, 0, 1), op_exit(3'000, 900, 0, 1),  // mm > add(stack)
       op_exit(4'000, 1000, 3, 1), op_entry(5'000, 1000, 3, 2), op_exit(7'000, 1000, 3, 2)});
  recording.process.pid = 4242;
  recording.options.with_stack = true;
  recording.sample_frames = {"x.py(1): <module>", "nn.Module: Net_0"};
  recording.sample_stacks = {{0, 1}};
  recording.entry_stacks = {{3, 0}};
  const ModuleTree whole = build_module_tree(recording, true);
  ASSERT_NE(find(whole, "[stack not read]"), nullptr);
  EXPECT_EQ(find(whole, "[stack not read]")->total_ns, 3'000u);  // the first add and the mm with its add
  EXPECT_EQ(whole.ops_without_stack, 2u);
  EXPECT_EQ(find(whole, "[no Python frames]")->total_ns, 2'000u);
  for (size_t chunk : {size_t{1}, size_t{2}, size_t{8}}) {
    SCOPED_TRACE(chunk);
    EXPECT_EQ(dump(streamed_tree(recording, chunk, 0, true)), dump(whole));
    EXPECT_EQ(dump(streamed_tree(recording, chunk, 2, true)), dump(whole));
  }
}

TEST(StreamedModuleTree, DeclinesRecordingsItCannotStream) {
  Recording recording = recording_of(ops_of_the_streams(), {});
  recording.process.pid = 4242;
  StreamedModuleTree tree(recording, nullptr, std::nullopt, std::nullopt);
  EXPECT_FALSE(tree.wants(recording));  // no entry stacks
  recording.options.with_stack = true;
  EXPECT_TRUE(tree.wants(recording));
  recording.options.memory = true;
  EXPECT_FALSE(tree.wants(recording));
  recording.options.memory = false;
  recording.process.pid = 0;  // record -a
  EXPECT_FALSE(tree.wants(recording));
}

// A file written by RecordWriter (both kinds of pairs after all of its
// events) and read streamed, as report reads it: the whole read's tree.
TEST(StreamedModuleTree, AStreamedFileReadIsTheWholeReadsTree) {
  char path[] = "/tmp/gpuprof-modules-test-XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ::close(fd);
  const Recording written = recording_with_modules(7, 20000, true);
  {
    auto writer = RecordWriter::create(path);
    ASSERT_TRUE(writer) << writer.error();
    auto step = writer->begin(written.process, ClockInfo{}, written.ops, written.options);
    ASSERT_TRUE(step) << step.error();
    ASSERT_TRUE(step = writer->set_probe_costs(*written.probe_costs)) << step.error();
    ASSERT_TRUE(step = writer->append_events(written.events.data(), written.events.size())) << step.error();
    for (const std::string& frame : written.sample_frames) ASSERT_TRUE(step = writer->add_sample_frame(frame));
    for (const auto& stack : written.sample_stacks) ASSERT_TRUE(step = writer->add_sample_stack(stack));
    ASSERT_TRUE(step = writer->add_module_names(written.module_names)) << step.error();
    for (const EntryStack& e : written.entry_stacks)
      ASSERT_TRUE(step = writer->append_entry_stack(e.event_index, e.stack_id)) << step.error();
    for (const EntryStack& e : written.backward_stacks)
      ASSERT_TRUE(step = writer->append_backward_stack(e.event_index, e.stack_id)) << step.error();
    ASSERT_TRUE(step = writer->finish(RecordStats{}, 0)) << step.error();
  }
  const auto whole = read_recording(path);
  ASSERT_TRUE(whole) << whole.error();
  ASSERT_GT(whole->entry_stacks.size(), 1000u);
  ASSERT_GT(whole->backward_stacks.size(), 100u);
  // The first read: all but the events, and where each kind of pair ends.
  struct Head : RecordStream {
    bool wants(const Recording&) override { return true; }
    void on_events(std::span<const gp_event>, uint64_t) override {}
    void on_entry_stack(uint64_t index, uint32_t) override { last_entry = index; }
    void on_backward_stack(uint64_t index, uint32_t) override { last_backward = index; }
    std::optional<uint64_t> last_entry, last_backward;
  } first;
  bool whole_needed = true;
  const auto head = read_recording_streamed(path, CorruptChunks::refuse, first, &whole_needed);
  ASSERT_TRUE(head) << head.error();
  EXPECT_EQ(first.last_entry, whole->entry_stacks.back().event_index);
  EXPECT_EQ(first.last_backward, whole->backward_stacks.back().event_index);
  StreamedModuleTree streamed(*head, compensation_costs(*head, false), first.last_entry, first.last_backward);
  const auto read = read_recording_streamed(path, CorruptChunks::refuse, streamed, &whole_needed);
  ::unlink(path);
  ASSERT_TRUE(read) << read.error();
  EXPECT_FALSE(whole_needed);
  EXPECT_TRUE(read->events.empty());
  const ModuleTree from_whole = build_module_tree(*whole);
  ASSERT_NE(find(from_whole, "Net.fc"), nullptr);
  EXPECT_EQ(dump(std::move(streamed).finish()), dump(from_whole));
}

}  // namespace
}  // namespace gpuprof
