// dispatcher_catalog_test.cpp: the catalog of the real libtorch_cpu that
// Debian's python3-torch installs (the test environment's setup installs
// it; the test fails, never skips, without it).
#include "dispatcher_catalog.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <set>

#include "events.h"
#include "exitless_calls.h"

namespace gpuprof {
namespace {

constexpr const char* kDebianLibtorch = "/usr/lib/x86_64-linux-gnu/libtorch_cpu.so.1.13";

TEST(DispatcherCatalog, DebianLibtorch113) {
  std::string error;
  auto catalog = load_dispatcher_catalog(kDebianLibtorch, ExitMode::ret, &error);
  ASSERT_TRUE(catalog) << error;
  // research.md section 4: 2952 at::_ops::*::call in 1.13.
  EXPECT_EQ(catalog->ops.size(), 2952u);
  EXPECT_EQ(catalog->entry_sites, 2952u);
  EXPECT_GE(catalog->exit_sites, 2900u);
  EXPECT_LE(catalog->ops_without_exit, 10u);
  EXPECT_EQ(catalog->entries_single_stepped, 0u);  // every body starts with a push
  EXPECT_EQ(catalog->entries_after_endbr, 0u);     // not a CET build
  // One op's body ends in a tail jump: named in the warning.
  EXPECT_EQ(catalog->ops_without_exit, 1u);
  EXPECT_EQ(describe_exitless_ops(*catalog),
            "1 of 2952 ops has no exit probe (no `ret` found in the body): aten::_cudnn_rnn_backward.out");
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
  EXPECT_EQ(catalog->sites.offsets.size(), catalog->entry_sites + catalog->exit_sites);
  EXPECT_EQ(catalog->build_id.size(), 40u);

  std::map<std::string, std::set<std::string>> overloads;
  for (const OpInfo& op : catalog->ops) overloads[op.name].insert(op.overload);
  EXPECT_EQ(overloads["aten::add"], (std::set<std::string>{"Tensor", "Scalar", "out", "Scalar_out"}));
  EXPECT_TRUE(overloads["aten::add_"].count("Tensor"));
  EXPECT_TRUE(overloads.count("aten::conv2d"));
  EXPECT_TRUE(overloads.count("aten::mkldnn_convolution"));
  EXPECT_TRUE(overloads["aten::relu"].count(""));
  EXPECT_TRUE(overloads["aten::relu_"].count(""));
  for (const auto& [name, _] : overloads) EXPECT_TRUE(name.starts_with("aten::")) << name;

  // Every op has exactly one entry site, cookies name their op and kind.
  std::vector<int> entries(catalog->ops.size());
  for (size_t i = 0; i < catalog->sites.size(); i++) {
    uint64_t cookie = catalog->sites.cookies[i];
    ASSERT_LT(GP_COOKIE_OP(cookie), catalog->ops.size());
    uint16_t kind = GP_COOKIE_KIND(cookie);
    ASSERT_TRUE(kind == GP_EV_OP_ENTRY || kind == GP_EV_OP_EXIT);
    if (kind == GP_EV_OP_ENTRY) entries[GP_COOKIE_OP(cookie)]++;
  }
  for (int n : entries) EXPECT_EQ(n, 1);

  // One argument plan per op (tests/unit/op_args_test.cpp checks them): all
  // but the 20 ops without a schema and one with 19 tensor arguments.
  ASSERT_EQ(catalog->arg_plans.size(), catalog->ops.size());
  EXPECT_EQ(catalog->ops_without_arg_plan, 21u);
  size_t not_ok = 0;
  for (const OpArgPlan& plan : catalog->arg_plans) not_ok += !plan.ok;
  EXPECT_EQ(not_ok, catalog->ops_without_arg_plan);
}

// Every libtorch 1.13 body has a stack-protector check before its ret, so
// the emulated mode needs no single-stepped exit at all.
TEST(DispatcherCatalog, EmulatedExitsOnDebianLibtorch113) {
  std::string error;
  auto emulated = load_dispatcher_catalog(kDebianLibtorch, ExitMode::emulated, &error);
  auto ret = load_dispatcher_catalog(kDebianLibtorch, ExitMode::ret, &error);
  ASSERT_TRUE(emulated && ret) << error;
  EXPECT_EQ(emulated->exit_sites, ret->exit_sites);
  EXPECT_EQ(ret->exit_sites_single_stepped, ret->exit_sites);
  EXPECT_EQ(emulated->exit_sites_single_stepped, 0u);
  EXPECT_EQ(emulated->ops, ret->ops);
  size_t computed = 0;
  for (uint64_t cookie : emulated->sites.cookies) {
    if (GP_COOKIE_KIND(cookie) != GP_EV_OP_EXIT) continue;
    ASSERT_TRUE(cookie & GP_COOKIE_SP_COMPUTED);
    int64_t offset = GP_COOKIE_SP_OFFSET(cookie);
    // rbp frames: rbp + 8; rsp frames: above the locals, a few KiB at most.
    if (cookie & GP_COOKIE_SP_FROM_RBP) EXPECT_EQ(offset, 8);
    else EXPECT_TRUE(offset > 0 && offset < 8192) << offset;
    computed++;
  }
  EXPECT_EQ(computed, emulated->exit_sites);
}

// The torch 2.x test tier's libtorch (scripts/torch2-chroot.sh; the test
// fails, never skips, without it): CET-built, so every op body starts with
// endbr64 and every entry site is the push after it.
std::string trixie_libtorch() {
  const char* root = std::getenv("GPUPROF_TORCH2_ROOT");
  return std::string(root ? root : "/srv/gpuprof-trixie") + "/usr/lib/x86_64-linux-gnu/libtorch_cpu.so.2.6.0";
}

TEST(DispatcherCatalog, CetBuiltLibtorch26) {
  std::string error;
  auto catalog = load_dispatcher_catalog(trixie_libtorch(), ExitMode::emulated, &error);
  ASSERT_TRUE(catalog) << error << " (run scripts/torch2-chroot.sh)";
  EXPECT_EQ(catalog->ops.size(), 3144u);  // research: 3144 at::_ops::*::call in 2.6
  EXPECT_EQ(catalog->entries_after_endbr, 3144u);
  EXPECT_EQ(catalog->entries_single_stepped, 0u);
  EXPECT_EQ(catalog->ops_without_exit, 0u);
  EXPECT_EQ(describe_exitless_ops(*catalog), "");
  EXPECT_EQ(catalog->exit_sites_single_stepped, 0u);
  EXPECT_EQ(catalog->exit_sites, 3144u);
}

TEST(DispatcherCatalog, RefusesLibrariesWithoutDispatcher) {
  std::string error;
  EXPECT_FALSE(load_dispatcher_catalog("/usr/lib/x86_64-linux-gnu/libc.so.6", ExitMode::emulated, &error));
  EXPECT_NE(error.find("no at::_ops::*::call"), std::string::npos) << error;
  EXPECT_FALSE(load_dispatcher_catalog("/etc/passwd", ExitMode::emulated, &error));
  EXPECT_NE(error.find("not a 64-bit ELF"), std::string::npos) << error;
  EXPECT_FALSE(load_dispatcher_catalog("/nonexistent/libtorch_cpu.so", ExitMode::emulated, &error));
  EXPECT_NE(error.find("No such file"), std::string::npos) << error;
}

}  // namespace
}  // namespace gpuprof
