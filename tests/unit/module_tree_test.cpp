// module_tree / module_table: ops by the module call they ran in, on a
// planted recording whose every figure is known (docs/modules.md).
#include "analyze/module_tree.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "analyze/stack_sums.h"
#include "live/live_module_tree.h"
#include "output/module_table.h"
#include "probe_events.h"

namespace gpuprof {
namespace {

using test::op_entry;
using test::op_exit;

enum Op : uint32_t { kConv2d, kConvolution, kRelu, kAdd, kLinear };
enum Frame : uint32_t { kScript, kNet, kConv, kAct, kFc };
enum Stack : uint32_t { kInConv, kInAct, kInNet, kInFc, kOutside };

// A model Net(conv, act, fc) whose forward runs conv, act, an add of its
// own, act again and fc; called twice back to back (no op between the
// calls), then an add outside it; a thread without Python frames; an op of
// the main thread whose stack was not read.
Recording planted(bool with_names) {
  Recording r;
  r.options.with_stack = true;
  r.ops = {{"aten::conv2d", "", ""}, {"aten::convolution", "", ""}, {"aten::relu", "", ""},
           {"aten::add", "Tensor", ""}, {"aten::linear", "", ""}};
  r.sample_frames = {"x.py(1): <module>", "nn.Module: Net_0", "nn.Module: Conv2d_0", "nn.Module: ReLU_0",
                     "nn.Module: Linear_0"};
  r.sample_stacks = {{kScript, kNet, kConv}, {kScript, kNet, kAct}, {kScript, kNet},
                     {kScript, kNet, kFc}, {kScript}};
  if (with_names) r.module_names = {{kNet, kConv, "conv", 0}, {kNet, kAct, "act", 1}, {kNet, kFc, "fc", 2}};
  auto call = [&](uint64_t start, uint64_t end, uint32_t op, std::optional<uint32_t> stack, uint32_t tid = test::kTid,
                  uint64_t sp = 900) {
    if (stack) r.entry_stacks.push_back({r.events.size(), *stack});
    r.events.push_back(op_entry(start, sp, op, tid));
    r.events.push_back(op_exit(end, sp, op, tid));
  };
  for (uint64_t at : {0, 100'000}) {
    // conv2d (9 us) calling convolution (7 us)
    r.entry_stacks.push_back({r.events.size(), kInConv});
    r.events.push_back(op_entry(at + 1'000, 900, kConv2d));
    r.entry_stacks.push_back({r.events.size(), kInConv});
    r.events.push_back(op_entry(at + 2'000, 800, kConvolution));
    r.events.push_back(op_exit(at + 9'000, 800, kConvolution));
    r.events.push_back(op_exit(at + 10'000, 900, kConv2d));
    call(at + 11'000, at + 14'000, kRelu, kInAct);
    call(at + 15'000, at + 16'000, kAdd, kInNet);
    call(at + 17'000, at + 19'000, kRelu, kInAct);
    call(at + 20'000, at + 25'000, kLinear, kInFc);
  }
  call(300'000, 301'000, kAdd, kOutside);
  call(400'000, 402'000, kRelu, std::nullopt, 200);
  call(500'000, 500'500, kLinear, std::nullopt);
  r.complete = true;
  return r;
}

const ModuleNode& node(const ModuleTree& tree, const std::string& path) {
  for (size_t i = 0; i < tree.nodes.size(); i++)
    if (tree.path(i) == path) return tree.nodes[i];
  ADD_FAILURE() << "no module " << path;
  static ModuleNode none;
  return none;
}

TEST(ModuleTree, EachOpUnderTheModuleCallItRanIn) {
  const ModuleTree tree = build_module_tree(planted(true));
  ASSERT_EQ(tree.nodes.size(), 7u);
  const ModuleNode& net = node(tree, "Net");
  EXPECT_EQ(net.label, "Net_0");
  // Called twice back to back: its first child opening again starts a call.
  EXPECT_EQ(net.calls, 2u);
  EXPECT_EQ(net.self_ns, 2'000u);  // its own add, twice
  EXPECT_EQ(net.total_ns, 40'000u);
  EXPECT_EQ(node(tree, "Net.conv").calls, 2u);
  EXPECT_EQ(node(tree, "Net.conv").self_ns, 18'000u);
  EXPECT_EQ(node(tree, "Net.act").calls, 4u);  // called twice per forward
  EXPECT_EQ(node(tree, "Net.act").total_ns, 10'000u);
  EXPECT_EQ(node(tree, "Net.fc").calls, 2u);
  EXPECT_EQ(node(tree, "[no module]").self_ns, 1'000u);
  EXPECT_EQ(node(tree, "[no Python frames]").self_ns, 2'000u);
  EXPECT_EQ(node(tree, "[stack not read]").self_ns, 500u);
  EXPECT_EQ(node(tree, "[no module]").calls, 0u);
  EXPECT_EQ(tree.ops_without_stack, 1u);
  // Children in first-seen order; the synthetic nodes after the model.
  std::vector<std::string> children;
  for (size_t c : net.children) children.push_back(tree.nodes[c].name);
  EXPECT_EQ(children, (std::vector<std::string>{"conv", "act", "fc"}));
  std::vector<std::string> tops;
  for (size_t t : tree.tops) tops.push_back(tree.nodes[t].name);
  EXPECT_EQ(tops, (std::vector<std::string>{"Net", "[no module]", "[stack not read]", "[no Python frames]"}));
  // A nested op belongs to its outermost call's module: convolution under conv.
  const ModuleNode& conv = node(tree, "Net.conv");
  ASSERT_EQ(conv.ops.size(), 2u);
  EXPECT_EQ(conv.ops[0].name, "aten::convolution");  // by self time
  EXPECT_EQ(conv.ops[0].self_ns, 14'000u);
  EXPECT_EQ(conv.ops[1].name, "aten::conv2d");
  EXPECT_EQ(conv.ops[1].calls, 2u);
  EXPECT_EQ(conv.ops[1].self_ns, 4'000u);
  EXPECT_EQ(conv.ops[1].total_ns, 18'000u);
}

// Children as named_modules() lists them (their places in the parent's
// _modules), not as the forward first calls them.
// The Chrome trace's module slices: each call from its first op's start
// to its last op's end, per thread, by start, parents first.
TEST(ModuleTree, EachModuleCallSpansItsOps) {
  const ModuleTree tree = build_module_tree(planted(true));
  auto id = [&](const std::string& path) { return static_cast<size_t>(&node(tree, path) - tree.nodes.data()); };
  std::vector<ModuleCall> want;
  for (uint64_t at : {0, 100'000}) {
    want.push_back({id("Net"), test::kTid, at + 1'000, at + 25'000});
    want.push_back({id("Net.conv"), test::kTid, at + 1'000, at + 10'000});
    want.push_back({id("Net.act"), test::kTid, at + 11'000, at + 14'000});
    want.push_back({id("Net.act"), test::kTid, at + 17'000, at + 19'000});
    want.push_back({id("Net.fc"), test::kTid, at + 20'000, at + 25'000});
  }
  EXPECT_EQ(tree.calls, want);
  // As many as the calls counted.
  for (const char* path : {"Net", "Net.conv", "Net.act", "Net.fc"})
    EXPECT_EQ(std::count_if(tree.calls.begin(), tree.calls.end(),
                            [&](const ModuleCall& c) { return c.node == id(path); }),
              static_cast<ptrdiff_t>(node(tree, path).calls))
        << path;
}

// The planted recording with --profile-memory's allocator events and the
// CUPTI shim's records: per forward, conv2d allocates 1000 bytes and the
// convolution in it 4096 bytes and launches a 3 us kernel; fc's linear
// releases conv2d's block, allocates 512 bytes of CUDA memory and launches
// a 2 us kernel; between conv and act (in Net, in no op) 64 bytes are
// allocated; the add outside every module launches 0.5 us, and 4096 bytes
// are allocated in no module.
Recording planted_with_memory_and_gpu() {
  Recording r = planted(true);
  r.options.memory = true;
  r.cupti_shim = CuptiShimInfo{};
  r.launch_names = {"conv_kernel", "linear_kernel", "add_kernel"};
  uint64_t correlation = 0;
  auto kernel = [&](uint64_t launch_ns, uint64_t ns, uint32_t name) {
    r.gpu_correlations.push_back({launch_ns, ++correlation, test::kTid, 211, 2});
    GpuActivity a;
    a.correlation_id = correlation;
    a.start_ns = launch_ns + 10;
    a.end_ns = launch_ns + 10 + ns;
    a.name_id = name;
    a.kind = GpuActivityKind::kernel;
    r.gpu_activities.push_back(a);
  };
  for (uint64_t at : {0, 100'000}) {
    r.mem_events.push_back(test::cpu_alloc(at + 1'500, 0x1000 + at, 1000));
    r.mem_events.push_back(test::cpu_alloc(at + 3'000, 0x9000 + at, 4096));
    kernel(at + 5'000, 3'000, 0);
    r.mem_events.push_back(test::cpu_alloc(at + 10'500, 0x5000 + at, 64));  // Net's, between its children's ops
    r.mem_events.push_back(test::cpu_free(at + 21'000, 0x1000 + at));
    r.mem_events.push_back(test::cuda_mem(at + 22'000, 0x7000 + at, 512, 512 * (at ? 2 : 1)));
    kernel(at + 23'000, 2'000, 1);
  }
  kernel(300'500, 500, 2);
  r.mem_events.push_back(test::cpu_alloc(350'000, 0x6000, 4096));  // in no module call
  return r;
}

TEST(ModuleTree, ModulesCarryTheOpTablesMemoryAndGpuFigures) {
  const ModuleTree tree = build_module_tree(planted_with_memory_and_gpu());
  EXPECT_TRUE(tree.memory_recorded);
  EXPECT_TRUE(tree.gpu_recorded);
  const ModuleFigures& conv = node(tree, "Net.conv").figures;
  EXPECT_EQ(conv.self_cpu_mem, 2 * 5096);
  EXPECT_EQ(conv.cpu_mem, 2 * 5096);
  EXPECT_EQ(conv.self_cuda_ns, 2 * 3'000u);
  const ModuleFigures& fc = node(tree, "Net.fc").figures;
  EXPECT_EQ(fc.self_cpu_mem, 2 * -1000);
  EXPECT_EQ(fc.self_cuda_mem, 2 * 512);
  EXPECT_EQ(fc.self_cuda_ns, 2 * 2'000u);
  const ModuleFigures& net = node(tree, "Net").figures;
  EXPECT_EQ(net.self_cpu_mem, 2 * 64);  // during its calls, in no child's
  EXPECT_EQ(net.cpu_mem, 2 * (5096 - 1000 + 64));
  EXPECT_EQ(net.cuda_mem, 2 * 512);
  EXPECT_EQ(net.self_cuda_ns, 0u);
  EXPECT_EQ(net.cuda_ns, 2 * 5'000u);
  EXPECT_EQ(node(tree, "[no module]").figures.self_cuda_ns, 500u);
  // Its op rows, as the op table's rows of those calls.
  const std::vector<ModuleOpRow>& ops = node(tree, "Net.conv").ops;
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops[0].name, "aten::convolution");
  EXPECT_EQ(ops[0].figures.self_cpu_mem, 2 * 4096);
  EXPECT_EQ(ops[0].figures.self_cuda_ns, 2 * 3'000u);
  EXPECT_EQ(ops[1].name, "aten::conv2d");
  EXPECT_EQ(ops[1].figures.self_cpu_mem, 2 * 1000);
  EXPECT_EQ(ops[1].figures.cpu_mem, 2 * 5096);
  EXPECT_EQ(ops[1].figures.self_cuda_ns, 0u);
  EXPECT_EQ(ops[1].figures.cuda_ns, 2 * 3'000u);

  ModuleTableOptions options;
  options.depth = 1;
  EXPECT_EQ(format_module_table(tree, options),
            "Module             | Self CPU total | CPU total | Self CUDA total | CUDA total | Self CPU Mem | CPU Mem  "
            "| Self CUDA Mem | CUDA Mem | Number of Calls\n"
            "-------------------|----------------|-----------|-----------------|------------|--------------|----------"
            "|---------------|----------|----------------\n"
            "Net                | 2.000us        | 40.000us  | 0.000us         | 10.000us   | 128 b        | 8.12 Kb  "
            "| 0 b           | 1.00 Kb  | 2\n"
            "├── conv           | 18.000us       | 18.000us  | 6.000us         | 6.000us    | 9.95 Kb      | 9.95 Kb  "
            "| 0 b           | 0 b      | 2\n"
            "├── act            | 10.000us       | 10.000us  | 0.000us         | 0.000us    | 0 b          | 0 b      "
            "| 0 b           | 0 b      | 4\n"
            "└── fc             | 10.000us       | 10.000us  | 4.000us         | 4.000us    | -1.95 Kb     | -1.95 Kb "
            "| 1.00 Kb       | 1.00 Kb  | 2\n"
            "[no module]        | 1.000us        | 1.000us   | 0.500us         | 0.500us    | 0 b          | 0 b      "
            "| 0 b           | 0 b      |\n"
            "[stack not read]   | 0.500us        | 0.500us   | 0.000us         | 0.000us    | 0 b          | 0 b      "
            "| 0 b           | 0 b      |\n"
            "[no Python frames] | 2.000us        | 2.000us   | 0.000us         | 0.000us    | 0 b          | 0 b      "
            "| 0 b           | 0 b      |\n");
}

// The autograd engine's calls, on a thread without Python and on the main
// thread (under the script's frames), with an op nested in each: all under
// [backward], after [no module].
TEST(ModuleTree, TheBackwardPassIsUnderItsOwnNode) {
  Recording r = planted(true);
  const uint32_t engine = static_cast<uint32_t>(r.ops.size()), mm = engine + 1;
  r.ops.push_back({"autograd::engine::evaluate_function: AddmmBackward0", "", ""});
  r.ops.back().kind = OpKind::autograd_engine;
  r.ops.push_back({"aten::mm", "", ""});
  for (auto [at, tid] : {std::pair<uint64_t, uint32_t>{600'000, 300}, {700'000, test::kTid}}) {
    if (tid == test::kTid) r.entry_stacks.push_back({r.events.size(), kOutside});
    r.events.push_back(op_entry(at, 900, engine, tid));
    if (tid == test::kTid) r.entry_stacks.push_back({r.events.size(), kOutside});
    r.events.push_back(op_entry(at + 1'000, 800, mm, tid));
    r.events.push_back(op_exit(at + 4'000, 800, mm, tid));
    r.events.push_back(op_exit(at + 5'000, 900, engine, tid));
  }
  const ModuleTree tree = build_module_tree(r);
  const ModuleNode& backward = node(tree, "[backward]");
  EXPECT_EQ(backward.calls, 0u);
  EXPECT_EQ(backward.self_ns, 10'000u);
  ASSERT_EQ(backward.ops.size(), 2u);
  EXPECT_EQ(backward.ops[0].name, "aten::mm");
  EXPECT_EQ(backward.ops[0].calls, 2u);
  EXPECT_EQ(backward.ops[1].name, "autograd::engine::evaluate_function: AddmmBackward0");
  EXPECT_EQ(backward.ops[1].calls, 2u);
  EXPECT_EQ(node(tree, "[no module]").total_ns, 1'000u);        // the script's add alone
  EXPECT_EQ(node(tree, "[no Python frames]").total_ns, 2'000u);  // its relu alone
  std::vector<std::string> tops;
  for (size_t top : tree.tops) tops.push_back(tree.nodes[top].name);
  EXPECT_EQ(tops, (std::vector<std::string>{"Net", "[no module]", "[backward]", "[stack not read]",
                                             "[no Python frames]"}));
}

// A backward call linked to the forward op that made its node
// (Recording::backward_stacks) is in that op's module, with the ops nested
// in it, on any thread; it counts no module call and stretches no module
// call's span. One linked to an op outside every module is in [no module];
// one without a link stays under [backward].
// Four engine calls, each with an aten::mm in it (5 us, of which 3 us
// mm's), after planted()'s: two linked to fc's forward (on a thread
// without Python and on the main thread), one to the script's add, one
// without a link.
void add_backward_calls(Recording& r) {
  const uint32_t engine = static_cast<uint32_t>(r.ops.size()), mm = engine + 1;
  r.ops.push_back({"autograd::engine::evaluate_function: AddmmBackward0", "", ""});
  r.ops.back().kind = OpKind::autograd_engine;
  r.ops.push_back({"aten::mm", "", ""});
  struct Backward {
    uint64_t at;
    uint32_t tid;
    std::optional<uint32_t> forward;
  };
  for (const Backward& b : {Backward{600'000, 300, kInFc}, Backward{700'000, test::kTid, kInFc},
                            Backward{800'000, test::kTid, kOutside}, Backward{900'000, 300, std::nullopt}}) {
    if (b.tid == test::kTid) r.entry_stacks.push_back({r.events.size(), kOutside});
    if (b.forward) r.backward_stacks.push_back({r.events.size(), *b.forward});
    r.events.push_back(op_entry(b.at, 900, engine, b.tid));
    r.events.push_back(op_entry(b.at + 1'000, 800, mm, b.tid));
    r.events.push_back(op_exit(b.at + 4'000, 800, mm, b.tid));
    r.events.push_back(op_exit(b.at + 5'000, 900, engine, b.tid));
  }
}

TEST(ModuleTree, BackwardCallsAreInTheModuleOfTheirForwardOp) {
  Recording r = planted(true);
  const ModuleTree before = build_module_tree(r);
  add_backward_calls(r);
  const ModuleTree tree = build_module_tree(r);
  const ModuleNode& fc = node(tree, "Net.fc");
  EXPECT_EQ(fc.calls, 2u);  // the forwards' alone
  EXPECT_EQ(fc.self_ns, node(before, "Net.fc").self_ns + 10'000);
  ASSERT_EQ(fc.ops.size(), 3u);
  EXPECT_EQ(fc.ops[0].name, "aten::linear");
  EXPECT_EQ(fc.ops[1].name, "aten::mm");
  EXPECT_EQ(fc.ops[1].calls, 2u);
  EXPECT_EQ(fc.ops[1].self_ns, 6'000u);
  EXPECT_EQ(fc.ops[2].name, "autograd::engine::evaluate_function: AddmmBackward0");
  EXPECT_EQ(fc.ops[2].calls, 2u);
  EXPECT_EQ(node(tree, "Net").total_ns, node(before, "Net").total_ns + 10'000);
  EXPECT_EQ(node(tree, "Net").calls, 2u);
  EXPECT_EQ(node(tree, "[no module]").total_ns, 1'000u + 5'000u);  // the script's add, one backward call
  EXPECT_EQ(node(tree, "[backward]").total_ns, 5'000u);           // the call without a link
  // Module call spans: the forwards' alone.
  size_t fc_index = 0;
  while (tree.path(fc_index) != "Net.fc") fc_index++;
  for (const ModuleCall& call : tree.calls) {
    if (call.node == fc_index) {
      EXPECT_LT(call.end_ns, 600'000u);
    }
  }
}

// Folded and pprof stacks name module frames as the layer table does when
// the recording holds attribute names, and keep torch's labels otherwise.
TEST(ModuleNames, StacksNameModuleFramesAsTheLayerTable) {
  auto paths = [](const Recording& r) {
    const StackSums sums = stack_sums(r, StackMetric::kCalls);
    std::map<std::string, uint64_t> out;
    for (const StackSum& s : sums.stacks) {
      if (!s.value) continue;
      std::string path;
      for (uint32_t f : s.frames) path += (path.empty() ? "" : ";") + sums.frames[f].name;
      out[path] = s.value;
    }
    return out;
  };
  const auto named = paths(planted(true));
  EXPECT_EQ(named.at("x.py(1): <module>;nn.Module: Net;nn.Module: conv;aten::conv2d"), 2u);
  EXPECT_EQ(named.at("x.py(1): <module>;nn.Module: Net;nn.Module: act;aten::relu"), 4u);
  EXPECT_EQ(named.at("x.py(1): <module>;nn.Module: Net;aten::add"), 2u);
  const auto labelled = paths(planted(false));
  EXPECT_EQ(labelled.at("x.py(1): <module>;nn.Module: Net_0;nn.Module: Conv2d_0;aten::conv2d"), 2u);
}

TEST(ModuleTree, ChildrenInTheirPlacesInTheParentsModules) {
  Recording r = planted(true);
  r.module_names = {{kNet, kConv, "conv", 2}, {kNet, kAct, "act", 0}};  // fc: no recorded place
  const ModuleTree tree = build_module_tree(r);
  std::vector<std::string> children;
  for (size_t c : node(tree, "Net").children) children.push_back(tree.nodes[c].name);
  EXPECT_EQ(children, (std::vector<std::string>{"act", "conv", "Linear_0"}));
  // Calls are still counted in the order the forward ran them.
  EXPECT_EQ(node(tree, "Net").calls, 2u);
}

TEST(ModuleTree, WithoutAttributeNamesModulesKeepTorchsLabels) {
  const ModuleTree tree = build_module_tree(planted(false));
  EXPECT_EQ(node(tree, "Net.Conv2d_0").calls, 2u);
  EXPECT_EQ(node(tree, "Net.ReLU_0").calls, 4u);
}

TEST(ModuleTree, ARecordingWithoutOpsHasNoNodes) {
  Recording r;
  r.options.with_stack = true;
  const ModuleTree tree = build_module_tree(r);
  EXPECT_TRUE(tree.nodes.empty());
  EXPECT_TRUE(tree.tops.empty());
}

// torchprof's drawing, checked by hand: cells padded to their column and
// joined by " | ", the rule's dashes joined by "|", `├── `/`└── ` per level
// with a `│` for each ancestor that has siblings after it.
TEST(ModuleTable, DrawsTheTreeAsTorchprof) {
  const ModuleTree tree = build_module_tree(planted(true));
  ModuleTableOptions options;
  EXPECT_EQ(format_module_table(tree, options),
            "Module             | Self CPU total | CPU total | Number of Calls\n"
            "-------------------|----------------|-----------|----------------\n"
            "Net                | 2.000us        | 40.000us  | 2\n"
            "├── conv           | 18.000us       | 18.000us  | 2\n"
            "├── act            | 10.000us       | 10.000us  | 4\n"
            "└── fc             | 10.000us       | 10.000us  | 2\n"
            "[no module]        | 1.000us        | 1.000us   |\n"
            "[stack not read]   | 0.500us        | 0.500us   |\n"
            "[no Python frames] | 2.000us        | 2.000us   |\n");
  options.show_events = true;
  options.paths = {"Net.conv"};
  EXPECT_EQ(format_module_table(tree, options),
            "Module                 | Self CPU total | CPU total | Number of Calls\n"
            "-----------------------|----------------|-----------|----------------\n"
            "Net                    |                |           |\n"
            "└── conv               | 18.000us       | 18.000us  | 2\n"
            " ├── aten::convolution | 14.000us       | 14.000us  | 2\n"
            " └── aten::conv2d      | 4.000us        | 18.000us  | 2\n");
  options = {};
  options.depth = 0;
  options.show_events = true;
  EXPECT_EQ(format_module_table(tree, options),
            "Module             | Self CPU total | CPU total | Number of Calls\n"
            "-------------------|----------------|-----------|----------------\n"
            "Net                | 2.000us        | 40.000us  | 2\n"
            "└── aten::add      | 2.000us        | 2.000us   | 2\n"
            "[no module]        | 1.000us        | 1.000us   |\n"
            "└── aten::add      | 1.000us        | 1.000us   | 1\n"
            "[stack not read]   | 0.500us        | 0.500us   |\n"
            "└── aten::linear   | 0.500us        | 0.500us   | 1\n"
            "[no Python frames] | 2.000us        | 2.000us   |\n"
            "└── aten::relu     | 2.000us        | 2.000us   | 1\n");
  EXPECT_EQ(unknown_module_paths(tree, {"Net.fc", "Net.nope"}), (std::vector<std::string>{"Net.nope"}));
}

}  // namespace
}  // namespace gpuprof

namespace gpuprof {
namespace {

// top's module view: the same recording handed over event by event, with
// refreshes in the middle of a forward, gives report --modules' tree, and
// each refresh's interval is what came since the one before.
struct PathFigures {
  uint64_t calls, self_ns, total_ns;
  std::map<std::string, std::tuple<uint64_t, uint64_t, uint64_t>> ops;
  bool operator==(const PathFigures&) const = default;
};

std::map<std::string, PathFigures> by_path(const ModuleTree& tree) {
  std::map<std::string, PathFigures> out;
  for (size_t i = 0; i < tree.nodes.size(); i++) {
    const ModuleNode& n = tree.nodes[i];
    PathFigures f{n.calls, n.self_ns, n.total_ns, {}};
    for (const ModuleOpRow& row : n.ops) f.ops[row.name] = {row.calls, row.self_ns, row.total_ns};
    out[tree.path(i)] = f;
  }
  return out;
}

TEST(LiveModuleTree, RefreshesAddUpToTheWholeRecordingsTree) {
  Recording r = planted(true);
  add_backward_calls(r);  // top places backward calls as report does
  std::map<uint64_t, uint32_t> stack_of, forward_stack_of;
  for (const EntryStack& s : r.entry_stacks) stack_of[s.event_index] = s.stack_id;
  for (const EntryStack& s : r.backward_stacks) forward_stack_of[s.event_index] = s.stack_id;
  LiveModuleTree live;
  live.begin(r.ops);
  for (uint32_t i = 0; i < r.sample_frames.size(); i++) live.frame(i, r.sample_frames[i]);
  for (uint32_t i = 0; i < r.sample_stacks.size(); i++) live.stack(i, r.sample_stacks[i]);
  live.module_names(r.module_names);
  std::vector<ModuleTree> intervals;
  for (uint64_t i = 0; i < r.events.size(); i++) {
    if (auto s = stack_of.find(i); s != stack_of.end()) live.entry_stack(i, s->second);
    if (auto s = forward_stack_of.find(i); s != forward_stack_of.end()) live.backward_stack(i, s->second);
    live.op_event(r.events[i], i);
    // Refreshes: inside the first forward's conv2d (nothing settled), after
    // the first forward's act, inside the second forward.
    if (i == 2 || i == 6 || i == 17) {
      live.roll();
      intervals.push_back(live.interval());
    }
  }
  live.finish();
  intervals.push_back(live.interval());
  const ModuleTree whole = build_module_tree(r);
  EXPECT_EQ(by_path(live.since_start()), by_path(whole));
  // Nothing had settled inside the first conv2d; then conv and the first act.
  EXPECT_TRUE(intervals[0].nodes.empty());
  EXPECT_EQ(by_path(intervals[1]).at("Net.conv").calls, 1u);
  EXPECT_EQ(by_path(intervals[1]).at("Net.act").calls, 1u);
  // The intervals add up to the whole, call by call and nanosecond by nanosecond.
  std::map<std::string, uint64_t> calls, self;
  for (const ModuleTree& t : intervals)
    for (const auto& [path, f] : by_path(t)) calls[path] += f.calls, self[path] += f.self_ns;
  for (const auto& [path, f] : by_path(whole)) {
    EXPECT_EQ(calls[path], f.calls) << path;
    EXPECT_EQ(self[path], f.self_ns) << path;
  }
}

}  // namespace
}  // namespace gpuprof
