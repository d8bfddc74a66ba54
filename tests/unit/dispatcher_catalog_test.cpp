// dispatcher_catalog_test.cpp: the catalog of the real libtorch_cpu that
// Debian's python3-torch installs (the test environment's setup installs
// it; the test fails, never skips, without it).
#include "torch/dispatcher_catalog.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>

#include "op_tracer_abi.h"
#include "torch/exitless_calls.h"

namespace gpuprof {
namespace {

constexpr const char* kDebianLibtorch = "/usr/lib/x86_64-linux-gnu/libtorch_cpu.so.1.13";

TEST(DispatcherCatalog, DebianLibtorch113) {
  auto catalog = load_dispatcher_catalog(kDebianLibtorch, ExitMode::ret);
  ASSERT_TRUE(catalog) << catalog.error();
  // Debian's 1.13: 2952 at::_ops::*::call, then the 596
  // generated backward nodes and 8 others, the engine's evaluate_function,
  // 51 collectives and waits of c10d's backends (Gloo, RoundRobin, Wrapper:
  // collective_names.h), and the two ranges kernels open ("detach", "detach_").
  std::map<OpKind, size_t> kinds;
  for (const OpInfo& op : catalog->ops) kinds[op.kind]++;
  EXPECT_EQ(kinds, (std::map<OpKind, size_t>{{OpKind::aten, 2952}, {OpKind::autograd_node, 604},
                                             {OpKind::autograd_engine, 1}, {OpKind::guard_range, 2},
                                             {OpKind::collective, 51}}));
  EXPECT_EQ(catalog->collective_ops, 51u);
  auto collective = [&](const std::string& name) {
    return std::count_if(catalog->ops.begin(), catalog->ops.end(),
                         [&](const OpInfo& op) { return op.name == name && op.kind == OpKind::collective; });
  };
  EXPECT_EQ(collective("c10d::ProcessGroupGloo::allreduce"), 1);
  EXPECT_EQ(collective("c10d::ProcessGroupGloo::broadcast"), 1);
  EXPECT_EQ(collective("c10d::Work::wait"), 1);
  for (size_t i = 0; i < 2952; i++) ASSERT_EQ(catalog->ops[i].kind, OpKind::aten);  // aten ops first
  EXPECT_EQ(catalog->node_ops, 604u);
  EXPECT_EQ(catalog->ops[catalog->evaluate_function_op].kind, OpKind::autograd_engine);
  EXPECT_EQ(catalog->ops[3608].name, "detach");
  EXPECT_EQ(catalog->ops[3609].name, "detach_");
  // record_function_enter_new, the static enter of 1.13's record_function
  // (range_enters.h), RecordFunction(RecordScope), end(), ~RecordFunction().
  EXPECT_EQ(catalog->range_sites, 5u);
  EXPECT_EQ(catalog->unexported_range_enters, 1u);
  EXPECT_EQ(catalog->entry_sites, 2952u + 604 + 1 + 51);
  EXPECT_GE(catalog->exit_sites, 3500u);
  // Every body starts with a push but torch::autograd::Error::apply's and
  // those of the 8 collectives a backend only refuses (they throw).
  EXPECT_EQ(catalog->entries_single_stepped, 1u + 8);
  EXPECT_EQ(catalog->entries_after_endbr, 0u);     // not a CET build
  // One op's body ends in a tail jump, and Error::apply and 8 collectives
  // only throw.
  EXPECT_EQ(catalog->ops_without_exit, 2u + 8);
  EXPECT_EQ(describe_exitless_ops(*catalog),
            "10 of 3610 ops have no exit probe (no `ret` found in the body): aten::_cudnn_rnn_backward.out, "
            "torch::autograd::Error, c10d::ProcessGroupGloo::_allgather_base, ...");
  ExitlessCalls calls;
  calls.add_ops(10, *catalog);
  EXPECT_EQ(calls.warning(), "");  // none called: nothing to say
  const uint32_t exitless = 10 + catalog->exitless_ops[0];
  calls.on_entry(exitless - 1);
  calls.on_entry(exitless);
  calls.on_entry(exitless);
  calls.on_entry(100000);
  EXPECT_EQ(calls.warning(), "2 calls of ops without an exit probe: aten::_cudnn_rnn_backward.out (2); each ends "
                             "at its thread's next event, so their times are not measured");
  EXPECT_EQ(catalog->sites.offsets.size(), catalog->entry_sites + catalog->exit_sites + catalog->range_sites);
  EXPECT_EQ(catalog->build_id.size(), 40u);

  std::map<std::string, std::set<std::string>> overloads;
  for (const OpInfo& op : catalog->ops) overloads[op.name].insert(op.overload);
  EXPECT_EQ(overloads["aten::add"], (std::set<std::string>{"Tensor", "Scalar", "out", "Scalar_out"}));
  EXPECT_TRUE(overloads["aten::add_"].count("Tensor"));
  EXPECT_TRUE(overloads.count("aten::conv2d"));
  EXPECT_TRUE(overloads.count("aten::mkldnn_convolution"));
  EXPECT_TRUE(overloads["aten::relu"].count(""));
  EXPECT_TRUE(overloads["aten::relu_"].count(""));
  for (const auto& [name, _] : overloads) {
    const OpInfo& op = *std::find_if(catalog->ops.begin(), catalog->ops.end(),
                                     [&](const OpInfo& o) { return o.name == name; });
    EXPECT_EQ(name.starts_with("aten::"), op.kind == OpKind::aten) << name;
  }
  // torch.profiler's names of backward nodes: generated ones short, others qualified.
  EXPECT_TRUE(overloads.count("AddmmBackward0"));
  EXPECT_TRUE(overloads.count("torch::autograd::AccumulateGrad"));
  EXPECT_TRUE(overloads.count("torch::autograd::CopySlices"));

  // Every op but the ranges has exactly one entry site; cookies name their
  // op and kind; the entry-only range sites name none.
  std::vector<int> entries(catalog->ops.size());
  size_t range_sites = 0, guarded_entries = 0, guarded_exits = 0;
  for (size_t i = 0; i < catalog->sites.size(); i++) {
    uint64_t cookie = catalog->sites.cookies[i];
    uint16_t kind = GP_COOKIE_KIND(cookie);
    if (kind >= GP_SITE_RANGE_ENTER) {
      ASSERT_LE(kind, GP_SITE_RECORD_END);
      ASSERT_EQ(GP_COOKIE_OP(cookie), GP_NO_OP);
      range_sites++;
      continue;
    }
    ASSERT_LT(GP_COOKIE_OP(cookie), catalog->ops.size());
    ASSERT_TRUE(kind == GP_EV_OP_ENTRY || kind == GP_EV_OP_EXIT);
    if (kind == GP_EV_OP_ENTRY) entries[GP_COOKIE_OP(cookie)]++;
    if (cookie & GP_COOKIE_GUARD) {
      const std::string& op = catalog->ops[GP_COOKIE_OP(cookie)].name;
      ASSERT_EQ(op, "aten::" + std::string(op.ends_with("_") ? "detach_" : "detach"));
      if (kind == GP_EV_OP_ENTRY) {
        guarded_entries++;
        EXPECT_EQ(catalog->ops[GP_COOKIE_GUARD_OP(cookie)].name, op.substr(6));  // "aten::detach" -> "detach"
      } else {
        guarded_exits++;
      }
    }
    EXPECT_EQ((cookie & GP_COOKIE_NODE_ARG) != 0,
              kind == GP_EV_OP_ENTRY && GP_COOKIE_OP(cookie) == catalog->evaluate_function_op);
  }
  EXPECT_EQ(range_sites, 5u);
  EXPECT_EQ(guarded_entries, 2u);
  EXPECT_GE(guarded_exits, 2u);
  for (size_t op = 0; op < entries.size(); op++)
    EXPECT_EQ(entries[op], catalog->ops[op].kind == OpKind::guard_range ? 0 : 1) << catalog->ops[op].name;
  // A node's vtable names it: evaluate_function's rows come from it.
  auto named = [&](const std::string& node) {
    return std::count_if(catalog->node_vtables.begin(), catalog->node_vtables.end(),
                         [&](const auto& v) { return v.second == node; });
  };
  EXPECT_EQ(named("AddmmBackward0"), 1);
  EXPECT_EQ(named("torch::autograd::AccumulateGrad"), 1);

  // One argument plan per op (tests/unit/op_args_test.cpp checks them): all
  // aten ops but the 20 without a schema and one with 19 tensor arguments;
  // none for the others.
  ASSERT_EQ(catalog->arg_plans.size(), catalog->ops.size());
  EXPECT_EQ(catalog->ops_without_arg_plan, 21u + 604 + 1 + 2 + 51);
  size_t not_ok = 0;
  for (const OpArgPlan& plan : catalog->arg_plans) not_ok += !plan.ok;
  EXPECT_EQ(not_ok, catalog->ops_without_arg_plan);
}

// Every libtorch 1.13 op body has a stack-protector check before its ret,
// so the emulated mode needs no single-stepped exit for ops; one backward
// node's apply (torch::autograd::Identity, rarely run) has none.
TEST(DispatcherCatalog, EmulatedExitsOnDebianLibtorch113) {
  auto emulated = load_dispatcher_catalog(kDebianLibtorch, ExitMode::emulated);
  ASSERT_TRUE(emulated) << emulated.error();
  auto ret = load_dispatcher_catalog(kDebianLibtorch, ExitMode::ret);
  ASSERT_TRUE(ret) << ret.error();
  EXPECT_EQ(emulated->exit_sites, ret->exit_sites);
  EXPECT_EQ(ret->exit_sites_single_stepped, ret->exit_sites);
  EXPECT_EQ(emulated->exit_sites_single_stepped, 1u);
  EXPECT_EQ(emulated->ops, ret->ops);
  size_t computed = 0;
  for (uint64_t cookie : emulated->sites.cookies) {
    if (GP_COOKIE_KIND(cookie) != GP_EV_OP_EXIT) continue;
    if (!(cookie & GP_COOKIE_SP_COMPUTED)) {
      EXPECT_EQ(emulated->ops[GP_COOKIE_OP(cookie)].name, "torch::autograd::Identity");
      continue;
    }
    int64_t offset = GP_COOKIE_SP_OFFSET(cookie);
    // rbp frames: rbp + 8; rsp frames: above the locals, a few KiB at most.
    if (cookie & GP_COOKIE_SP_FROM_RBP) EXPECT_EQ(offset, 8);
    else EXPECT_TRUE(offset > 0 && offset < 8192) << offset;
    computed++;
  }
  EXPECT_EQ(computed, emulated->exit_sites - 1);
}

// The torch 2.x test tier's libtorch (scripts/torch2-chroot.sh; the test
// fails, never skips, without it): CET-built, so every op body starts with
// endbr64 and every entry site is the push after it.
std::string trixie_libtorch() {
  const char* root = std::getenv("GPUPROF_TORCH2_ROOT");
  return std::string(root ? root : "/srv/gpuprof-trixie") + "/usr/lib/x86_64-linux-gnu/libtorch_cpu.so.2.6.0";
}

TEST(DispatcherCatalog, CetBuiltLibtorch26) {
  auto catalog = load_dispatcher_catalog(trixie_libtorch(), ExitMode::emulated);
  ASSERT_TRUE(catalog) << catalog.error() << " (run scripts/torch2-chroot.sh)";
  // research: 3144 at::_ops::*::call in 2.6; 704 backward nodes.
  std::map<OpKind, size_t> kinds;
  for (const OpInfo& op : catalog->ops) kinds[op.kind]++;
  // 58 collectives and waits: Gloo, MPI and Wrapper (collective_names.h).
  EXPECT_EQ(kinds, (std::map<OpKind, size_t>{{OpKind::aten, 3144}, {OpKind::autograd_node, 704},
                                             {OpKind::autograd_engine, 1}, {OpKind::guard_range, 2},
                                             {OpKind::collective, 58}}));
  EXPECT_EQ(catalog->entries_after_endbr, 3144u + 704 + 1 + 58);
  // Error::apply's first instruction after endbr64, and those of the 6
  // collectives a backend only refuses (they throw).
  EXPECT_EQ(catalog->entries_single_stepped, 1u + 6);
  EXPECT_EQ(catalog->ops_without_exit, 1u + 6);  // Error::apply and those 6 only throw
  EXPECT_EQ(catalog->exit_sites_single_stepped, 2u);  // Identity and UndefinedGradBackward: rarely run
  EXPECT_EQ(catalog->range_sites, 5u);  // 2.6 keeps the static legacy enter too
}

TEST(DispatcherCatalog, RefusesLibrariesWithoutDispatcher) {
  const auto libc = load_dispatcher_catalog("/usr/lib/x86_64-linux-gnu/libc.so.6", ExitMode::emulated);
  ASSERT_FALSE(libc);
  EXPECT_EQ(libc.error(), "/usr/lib/x86_64-linux-gnu/libc.so.6 exports no at::_ops::*::call entry points "
                          "(is it libtorch_cpu?)");
  const auto text = load_dispatcher_catalog("/etc/passwd", ExitMode::emulated);
  ASSERT_FALSE(text);
  EXPECT_EQ(text.error(), "/etc/passwd is not a 64-bit ELF file");
  const auto missing = load_dispatcher_catalog("/nonexistent/libtorch_cpu.so", ExitMode::emulated);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error(), "cannot open /nonexistent/libtorch_cpu.so: No such file or directory");
}

}  // namespace
}  // namespace gpuprof
