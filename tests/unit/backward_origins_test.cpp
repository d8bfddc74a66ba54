// BackwardOrigins: a node's number takes the stack of its thread's last op
// entry; numbers two threads made alike, and those made with no stack, link
// nothing (collect/backward_origins.h).
#include "collect/backward_origins.h"

#include <gtest/gtest.h>

namespace gpuprof {
namespace {

TEST(BackwardOrigins, ANodeTakesTheStackOfItsThreadsLastEntry) {
  BackwardOrigins origins;
  origins.entry(10, 4);
  origins.entry(11, 5);
  origins.node_made(1, 10, 0);
  origins.entry(10, 6);  // a later entry: the next node's
  origins.node_made(1, 10, 1);
  origins.node_made(1, 11, 7);
  EXPECT_EQ(origins.origin(1, 0), 4u);
  EXPECT_EQ(origins.origin(1, 1), 6u);
  EXPECT_EQ(origins.origin(1, 7), 5u);
  EXPECT_EQ(origins.origin(1, 2), std::nullopt);  // never made
  EXPECT_EQ(origins.origin(2, 0), std::nullopt);  // another process's
}

TEST(BackwardOrigins, AmbiguousOrStacklessNumbersLinkNothing) {
  BackwardOrigins origins;
  origins.entry(10, 4);
  origins.entry(11, 5);
  origins.node_made(1, 10, 3);
  origins.node_made(1, 11, 3);  // torch numbers per thread: two nodes 3
  EXPECT_EQ(origins.origin(1, 3), std::nullopt);
  origins.node_made(1, 10, 3);  // and stays ambiguous
  EXPECT_EQ(origins.origin(1, 3), std::nullopt);
  origins.entry(12, std::nullopt);  // an entry without a stack
  origins.node_made(1, 12, 9);
  origins.node_made(1, 13, 10);  // a thread with no entry yet
  EXPECT_EQ(origins.origin(1, 9), std::nullopt);
  EXPECT_EQ(origins.origin(1, 10), std::nullopt);
  origins.node_made(2, 11, 3);  // the same number in another process: its own
  EXPECT_EQ(origins.origin(2, 3), 5u);
}

TEST(BackwardOrigins, KeepsTheNewestNumbersWhenFull) {
  BackwardOrigins origins;
  origins.entry(10, 1);
  for (uint64_t n = 0; n <= BackwardOrigins::kMaxNodes; n++) origins.node_made(1, 10, n);
  EXPECT_EQ(origins.origin(1, 0), std::nullopt);
  EXPECT_EQ(origins.origin(1, BackwardOrigins::kMaxNodes / 2 - 1), std::nullopt);
  EXPECT_EQ(origins.origin(1, BackwardOrigins::kMaxNodes / 2), 1u);
  EXPECT_EQ(origins.origin(1, BackwardOrigins::kMaxNodes), 1u);
}

}  // namespace
}  // namespace gpuprof
