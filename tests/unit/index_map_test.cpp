// IndexMap against std::unordered_map: the same random adds, finds, erases
// and takes (both kinds) give the same answers, with keys crowded into a
// few probe runs (so erase's shifting is exercised) and the one key a slot
// cannot hold.
#include "base/index_map.h"

#include <gtest/gtest.h>

#include <random>
#include <unordered_map>

namespace gpuprof {
namespace {

void check_against_node_map(uint64_t key_base, uint64_t key_span, uint32_t seed) {
  std::mt19937_64 random(seed);
  IndexMap flat;
  std::unordered_map<uint64_t, uint32_t> nodes;
  for (int step = 0; step < 200000; step++) {
    const uint64_t key = key_base + random() % key_span;
    switch (random() % 4) {
      case 0: {
        const auto value = static_cast<uint32_t>(random());
        flat.emplace(key, value);
        nodes.emplace(key, value);
        break;
      }
      case 1:
        flat.erase(key);
        nodes.erase(key);
        break;
      case 2: {  // take: find and erase in one
        const auto it = nodes.find(key);
        const std::optional<uint32_t> held = it == nodes.end() ? std::nullopt : std::optional(it->second);
        ASSERT_EQ(flat.take(key), held) << "step " << step << " key " << key;
        nodes.erase(key);
        break;
      }
      default: {  // take into a value: the same answer, the value left alone when not held
        const auto it = nodes.find(key);
        uint32_t value = 12345;
        const bool held = flat.take(key, value);
        ASSERT_EQ(held, it != nodes.end()) << "step " << step << " key " << key;
        ASSERT_EQ(value, held ? it->second : 12345u) << "step " << step << " key " << key;
        nodes.erase(key);
        break;
      }
    }
    const auto it = nodes.find(key);
    const std::optional<uint32_t> want = it == nodes.end() ? std::nullopt : std::optional(it->second);
    ASSERT_EQ(flat.find(key), want) << "step " << step << " key " << key;
    ASSERT_EQ(flat.size(), nodes.size()) << "step " << step;
  }
  for (uint64_t key = key_base; key != key_base + key_span; key++) {
    const auto it = nodes.find(key);
    ASSERT_EQ(flat.find(key), it == nodes.end() ? std::nullopt : std::optional(it->second)) << key;
  }
}

TEST(IndexMap, AnswersAsTheNodeMapDoes) {
  check_against_node_map(0, 300, 1);
  check_against_node_map(1000000, 5000, 2);
  // Up to the largest key, which marks empty slots and is kept aside.
  check_against_node_map(~uint64_t{0} - 99, 100, 3);
}

TEST(IndexMap, EmplaceKeepsTheFirstValue) {
  IndexMap map;
  map.emplace(7, 1);
  map.emplace(7, 2);
  map.emplace(~uint64_t{0}, 3);
  map.emplace(~uint64_t{0}, 4);
  EXPECT_EQ(map.find(7), 1u);
  EXPECT_EQ(map.find(~uint64_t{0}), 3u);
  EXPECT_EQ(map.size(), 2u);
  map.erase(~uint64_t{0});
  EXPECT_EQ(map.find(~uint64_t{0}), std::nullopt);
  EXPECT_EQ(map.size(), 1u);
}

// Event indices pass through in order, each erased a while after it came:
// the table stays as large as the keys held at once, not the keys seen.
TEST(IndexMap, ASlidingWindowOfKeysKeepsItsSize) {
  IndexMap map;
  constexpr uint64_t kWindow = 1000;
  for (uint64_t key = 0; key < 1000000; key++) {
    map.emplace(key, static_cast<uint32_t>(key));
    if (key >= kWindow) map.erase(key - kWindow);
    ASSERT_LE(map.size(), kWindow + 1);
  }
  EXPECT_EQ(map.capacity(), 2048u);  // the least power of two holding twice the window
  for (uint64_t key = 1000000 - kWindow; key < 1000000; key++) ASSERT_EQ(map.find(key), key);
  EXPECT_EQ(map.find(1000000 - kWindow - 1), std::nullopt);
}

}  // namespace
}  // namespace gpuprof
