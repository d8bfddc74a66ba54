// runtime_ops_test.cpp: rows named while the target runs: record_function
// ranges by their name, evaluate_function by its node's vtable.
#include "torch/runtime_ops.h"

#include <gtest/gtest.h>

#include <cstring>

#include "probe_events.h"

namespace gpuprof {
namespace {

using namespace ::gpuprof::test;

// RANGE_BEGIN's payload words: [length][bytes...].
std::vector<uint64_t> name_words(const std::string& name, size_t length = 0) {
  std::vector<uint64_t> words(1 + (name.size() + 7) / 8, 0);
  words[0] = length ? length : name.size();
  std::memcpy(words.data() + 1, name.data(), name.size());
  return words;
}

struct RuntimeOpsTest : ::testing::Test {
  std::vector<OpInfo> added;
  uint32_t next = 100;  // the catalog's ops come first
  RuntimeOps ops{[this](const OpInfo& op) -> Result<uint32_t> {
    added.push_back(op);
    return next++;
  }};

  gp_event range_begin(uint64_t object, uint32_t op = GP_NO_OP, uint32_t pid = 7) {
    gp_event e = probe_event(GP_EV_RANGE_BEGIN, 10, object, op, 70);
    e.pid = pid;
    return e;
  }
  gp_event range_end(uint64_t object, uint32_t op = GP_NO_OP, uint32_t pid = 7) {
    gp_event e = probe_event(GP_EV_RANGE_END, 20, object, op, 71);  // ended on another thread: paired anyway
    e.pid = pid;
    return e;
  }
};

TEST_F(RuntimeOpsTest, RangesAreNamedOnceAndTheirEndsPaired) {
  gp_event a = range_begin(0x1000);
  ASSERT_TRUE(ops.name(a, name_words("model_inference")));
  gp_event b = range_begin(0x2000);
  ASSERT_TRUE(ops.name(b, name_words("model_inference")));
  gp_event c = range_begin(0x3000);
  ASSERT_TRUE(ops.name(c, name_words("Optimizer.step#SGD.step")));
  EXPECT_EQ((std::vector{a.op_id, b.op_id, c.op_id}), (std::vector<uint32_t>{100, 100, 101}));
  ASSERT_EQ(added.size(), 2u);
  EXPECT_EQ(added[0].name, "model_inference");
  EXPECT_EQ(added[0].kind, OpKind::user_range);
  EXPECT_EQ(added[0].arg_count, 0);
  gp_event end_b = range_end(0x2000);
  ASSERT_TRUE(ops.name(end_b, {}));
  EXPECT_EQ(end_b.op_id, 100u);
  gp_event again = range_end(0x2000);  // the destructor after end(): nothing open any more
  ASSERT_TRUE(ops.name(again, {}));
  EXPECT_EQ(again.op_id, GP_NO_OP);
  // Another process's object at the same address is another range.
  gp_event other = range_end(0x1000, GP_NO_OP, 8);
  ASSERT_TRUE(ops.name(other, {}));
  EXPECT_EQ(other.op_id, GP_NO_OP);
}

TEST_F(RuntimeOpsTest, GuardRangesKeepTheirOpAndLongNamesAreCut) {
  gp_event guard = range_begin(0x1000, 42);
  ASSERT_TRUE(ops.name(guard, {}));
  EXPECT_EQ(guard.op_id, 42u);
  EXPECT_TRUE(added.empty());
  gp_event end = range_end(0x1000, 42);
  ASSERT_TRUE(ops.name(end, {}));
  EXPECT_EQ(end.op_id, 42u);
  const std::string long_name(GP_RANGE_NAME_BYTES, 'x');
  gp_event cut = range_begin(0x5000);
  ASSERT_TRUE(ops.name(cut, name_words(long_name, 1000)));
  EXPECT_EQ(added.back().name, long_name + "...");
}

TEST_F(RuntimeOpsTest, EvaluateFunctionIsNamedByItsNodesVtable) {
  DispatcherCatalog catalog;
  catalog.evaluate_function_op = 5;
  catalog.node_vtables = {{0x7000, "AddmmBackward0"}, {0x8000, "torch::autograd::AccumulateGrad"}};
  ops.add_process(7, 20, catalog, 0x10000);  // the catalog's ops from 20: evaluate_function is 25
  EXPECT_TRUE(ops.names_by_node(25));
  EXPECT_FALSE(ops.names_by_node(5));
  gp_event entry = op_entry(10, 4000, 25, 70);
  entry.pid = 7;
  const std::vector<uint64_t> vptr = {0x17000};
  ASSERT_TRUE(ops.name(entry, vptr));
  EXPECT_EQ(added.back().name, "autograd::engine::evaluate_function: AddmmBackward0");
  EXPECT_EQ(added.back().kind, OpKind::autograd_engine);
  EXPECT_EQ(entry.op_id, 100u);
  gp_event exit = op_exit(20, 4000, 25, 70);
  exit.pid = 7;
  ASSERT_TRUE(ops.name(exit, {}));
  EXPECT_EQ(exit.op_id, 100u);
  // A node of another library, and an exit whose entry was not seen.
  gp_event python_node = op_entry(30, 4000, 25, 70);
  python_node.pid = 7;
  const std::vector<uint64_t> elsewhere = {0x99999};
  ASSERT_TRUE(ops.name(python_node, elsewhere));
  EXPECT_EQ(added.back().name, "autograd::engine::evaluate_function: [node of another library]");
  gp_event orphan = op_exit(40, 3000, 25, 70);
  ASSERT_TRUE(ops.name(orphan, {}));
  EXPECT_EQ(orphan.op_id, 25u);  // left as it came: the timeline counts an exit without entry
  // Plain ops pass untouched.
  gp_event mm = op_entry(50, 3000, 3, 70);
  ASSERT_TRUE(ops.name(mm, {}));
  EXPECT_EQ(mm.op_id, 3u);
}

}  // namespace
}  // namespace gpuprof
