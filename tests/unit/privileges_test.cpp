// What can be checked of privileges.h from a root test run; the capability
// and ptrace paths as another user are tests/integration/test_privileges.py.
#include "target/privileges.h"

#include <gtest/gtest.h>
#include <unistd.h>

namespace gpuprof {
namespace {

TEST(Privileges, RootHasWhatGpuprofNeeds) {
  ASSERT_EQ(geteuid(), 0u) << "the unit tests run as root (CI does)";
  const uint64_t caps = effective_capabilities();
  EXPECT_TRUE(caps >> 39 & 1) << std::hex << caps;  // CAP_BPF
  EXPECT_TRUE(caps >> 38 & 1) << std::hex << caps;  // CAP_PERFMON
  EXPECT_EQ(missing_privileges(), "");
}

TEST(Privileges, RealRootMayWatchAnyProcess) {
  EXPECT_EQ(ptrace_refusal(getpid()), "");
  EXPECT_EQ(ptrace_refusal(1), "");
  EXPECT_EQ(ptrace_refusal(0x3fffffff), "");  // no such process: the caller says so, not this
}

}  // namespace
}  // namespace gpuprof
