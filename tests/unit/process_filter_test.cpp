// process_filter: one process out of a system-wide recording, and the
// folded stacks rooted at each process.
#include "analyze/process_filter.h"

#include <gtest/gtest.h>

#include "output/folded_stacks.h"

namespace gpuprof {
namespace {

gp_event event(uint32_t pid, uint32_t tid, uint16_t kind, uint32_t op, uint64_t ts, uint64_t sp) {
  gp_event e{};
  e.ts_ns = ts;
  e.sp = sp;
  e.tid = tid;
  e.pid = pid;
  e.op_id = op;
  e.kind = kind;
  return e;
}

// Two torch processes (10: threads 10 and 12; 20: thread 20) and a third
// (30) with samples only; ops of two libtorch files (0-1 and 2-3).
Recording system_wide() {
  Recording r;
  r.process.pid = 0;
  r.process.comm = "[system-wide]";
  r.process.hostname = "node-1";
  r.options.sample_hz = 99;
  r.options.with_stack = true;
  r.ops = {{"aten::add", "", "", 2, 2}, {"aten::mm", "", "", 2, 2}, {"aten::add", "", "", 2, 2}, {"aten::relu", "", "", 1, 1}};
  r.processes = {{10, "python3", "python3 a.py", "/a/libtorch_cpu.so", "", ""},
                 {20, "python3", "python3 b.py", "/b/libtorch_cpu.so", "", ""},
                 {30, "spin", "spin", "", "", ""}};
  r.thread_processes = {{10, 10}, {12, 10}, {20, 20}, {30, 30}};
  r.events = {event(10, 10, GP_EV_OP_ENTRY, 0, 100, 900), event(20, 20, GP_EV_OP_ENTRY, 2, 110, 800),
              event(10, 12, GP_EV_OP_ENTRY, 1, 120, 700), event(10, 10, GP_EV_OP_EXIT, 0, 200, 900),
              event(20, 20, GP_EV_OP_EXIT, 2, 260, 800), event(10, 12, GP_EV_OP_EXIT, 1, 300, 700),
              event(20, 20, GP_EV_OP_ENTRY, 3, 400, 800), event(20, 20, GP_EV_OP_EXIT, 3, 450, 800)};
  r.sample_frames = {"a.py(1): main", "libc.so.6!f", "spin!loop", "do_syscall_64_[k]"};
  r.sample_stacks = {{0}, {3}};
  r.entry_stacks = {{0, 0}, {6, 0}};  // event 0 (pid 10) and event 6 (pid 20)
  r.backward_stacks = {{1, 0}, {2, 0}};  // event 1 (pid 20) and event 2 (pid 10)
  r.samples = {{150, 10, 1, false, 0}, {160, 30, 2, true, kNoPythonStack}, {170, 20, 1, false, kNoPythonStack},
               {180, 30, 2, true, kNoPythonStack}};
  r.sample_kernel_stacks = {{1, 1}, {3, 1}};
  r.thread_names = {{10, "python3"}, {12, "worker"}, {20, "python3"}, {30, "spin"}};
  r.launches = {{.ts_ns = 130, .tid = 12, .api = GP_LAUNCH_KERNEL}, {.ts_ns = 140, .tid = 20, .api = GP_LAUNCH_KERNEL}};
  r.gpu_correlations = {{130, 7, 12, 1, 2}, {140, 8, 20, 1, 2}};
  r.gpu_activities = {{.start_ns = 131, .end_ns = 135, .correlation_id = 7},
                      {.start_ns = 141, .end_ns = 150, .correlation_id = 8}};
  ProbeCosts costs;
  costs.rounds = 37;
  costs.op_sites = {0, 1, 0, 2};  // by op id, across both files
  r.probe_costs = costs;
  r.lost_chunks = {{42, 367777, 900, "f: corrupt chunk 42 (EVENTS) at offset 367777: checksum mismatch"}};
  r.complete = true;
  return r;
}

TEST(ProcessFilter, SelectsOneProcessAndRenumbersIndices) {
  const Recording all = system_wide();
  ASSERT_TRUE(is_system_wide(all));
  const Recording one = select_processes(all, {20});
  EXPECT_EQ(one.process.pid, 20);
  EXPECT_EQ(one.process.cmdline, "python3 b.py");
  EXPECT_EQ(one.process.hostname, "node-1");
  ASSERT_EQ(one.events.size(), 4u);
  for (const gp_event& e : one.events) EXPECT_EQ(e.pid, 20u);
  // Event 6 of the whole recording is event 2 of process 20's.
  EXPECT_EQ(one.entry_stacks, (std::vector<EntryStack>{{2, 0}}));
  // Event 1 is its event 0; event 2 is process 10's.
  EXPECT_EQ(one.backward_stacks, (std::vector<EntryStack>{{0, 0}}));
  ASSERT_EQ(one.samples.size(), 1u);
  EXPECT_EQ(one.samples[0].tid, 20u);
  EXPECT_TRUE(one.sample_kernel_stacks.empty());
  EXPECT_EQ(one.launches.size(), 1u);
  EXPECT_EQ(one.gpu_activities.size(), 1u);
  EXPECT_EQ(one.gpu_activities[0].correlation_id, 8u);
  EXPECT_EQ(one.thread_names, (std::vector<ThreadName>{{20, "python3"}}));
  EXPECT_EQ(one.ops, all.ops);  // dictionaries whole
  // The calibration (op sites by the recording's op ids) and what was lost
  // are the whole file's: each process's table is compensated and says so.
  ASSERT_TRUE(one.probe_costs.has_value());
  EXPECT_EQ(one.probe_costs->rounds, 37u);
  EXPECT_EQ(one.probe_costs->op_sites, all.probe_costs->op_sites);
  ASSERT_EQ(one.lost_chunks.size(), 1u);
  EXPECT_EQ(one.lost_chunks[0].message, all.lost_chunks[0].message);

  const Recording spin = select_processes(all, {30});
  EXPECT_TRUE(spin.events.empty());
  ASSERT_EQ(spin.samples.size(), 2u);
  // Samples 1 and 3 of the whole recording are samples 0 and 1 of the spinner's.
  EXPECT_EQ(spin.sample_kernel_stacks, (std::vector<SampleKernelStack>{{0, 1}, {1, 1}}));

  const Recording both = select_processes(all, {10, 20});
  EXPECT_EQ(both.process.pid, 0);  // not one process: the recording's own
  EXPECT_EQ(both.events.size(), 8u);
  EXPECT_EQ(both.launches.size(), 2u);
}

TEST(ProcessFilter, MatchesByPidAndComm) {
  const Recording all = system_wide();
  EXPECT_EQ(matching_processes(all, {}, {}), (std::set<uint32_t>{10, 20, 30}));
  EXPECT_EQ(matching_processes(all, {20, 99}, {}), (std::set<uint32_t>{20}));
  EXPECT_EQ(matching_processes(all, {}, {"python3"}), (std::set<uint32_t>{10, 20}));
  EXPECT_EQ(matching_processes(all, {30}, {"python3"}), (std::set<uint32_t>{}));  // both must match
  EXPECT_TRUE(matching_processes(all, {}, {"python"}).empty());  // whole names only
  const auto activity = process_activity(all);
  ASSERT_EQ(activity.size(), 3u);
  EXPECT_EQ(activity[0].first, 10u);
  EXPECT_EQ(activity[0].second.events, 4u);
  EXPECT_EQ(activity[0].second.samples, 1u);
  EXPECT_EQ(activity[0].second.launches, 1u);
  EXPECT_EQ(activity[2].second.samples, 2u);
  EXPECT_EQ(activity[2].second.events, 0u);
}

TEST(ProcessFilter, FoldedStacksAreRootedAtTheirProcess) {
  const Recording all = system_wide();
  const FoldedStacks samples = folded_stacks_by_process(all, FoldedMetric::kSamples);
  std::vector<std::pair<std::string, uint64_t>> got;
  for (const FoldedStack& s : samples.stacks) got.push_back({s.stack, s.value});
  EXPECT_EQ(got, (std::vector<std::pair<std::string, uint64_t>>{
                     {"python3-10;a.py(1):_main;aten::add;libc.so.6!f", 1},
                     {"python3-20;aten::add;libc.so.6!f", 1},
                     {"spin-30;spin!loop;do_syscall_64_[k]", 2}}));
  EXPECT_EQ(samples.samples_total, 4u);
  // Self CPU time: the same ops, each under its process (two files'
  // aten::add are one name).
  const FoldedStacks cpu = folded_stacks_by_process(all, FoldedMetric::kSelfCpuTime);
  std::vector<std::string> stacks;
  for (const FoldedStack& s : cpu.stacks) stacks.push_back(s.stack);
  EXPECT_EQ(stacks, (std::vector<std::string>{}));  // every call is under 1 us here
  EXPECT_EQ(cpu.stacks_below_1us, 6u);  // 4 calls and the Python frame above an outermost call in each process
  EXPECT_EQ(cpu.self_ns_total, 100u + 180u + 150u + 50u);
  // A recording of one process: no root frame.
  Recording single = all;
  single.processes.clear();
  single.thread_processes.clear();
  EXPECT_EQ(folded_stacks_by_process(single, FoldedMetric::kSamples).stacks.front().stack.rfind("python3-", 0),
            std::string::npos);
}

}  // namespace
}  // namespace gpuprof
