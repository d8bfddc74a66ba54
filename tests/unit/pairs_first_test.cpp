// PairsFirst (analyze/pairs_first.h): each chunk of events is handed on
// only once the pairs that name its events have come, with those pairs in
// event order; and ChunkPairs hands them to the stream of the event they name.
#include "analyze/pairs_first.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gpuprof {
namespace {

std::vector<gp_event> entries(size_t n) {
  std::vector<gp_event> events(n);
  for (gp_event& e : events) e.kind = GP_EV_OP_ENTRY;
  return events;
}

// What was handed, in order: "chunk FIRST+N: KIND@INDEX=ID ...".
struct Handed {
  std::vector<std::string> lines;
  PairsFirst::Hand hand() {
    return [this](std::span<const gp_event> events, uint64_t first, std::span<const EventPair> pairs) {
      std::string line = "chunk " + std::to_string(first) + "+" + std::to_string(events.size()) + ":";
      for (const EventPair& p : pairs)
        line += " " + std::to_string(static_cast<int>(p.kind)) + "@" + std::to_string(p.event_index) + "=" +
                std::to_string(p.id);
      lines.push_back(line);
    };
  }
};

TEST(PairsFirst, ARecordingWithoutPairsHoldsNothing) {
  Handed handed;
  PairsFirst pairs_first(LastPairs{}, handed.hand());
  const auto events = entries(4);
  pairs_first.add_events(events, 0);
  pairs_first.add_events(events, 4);
  EXPECT_EQ(handed.lines, (std::vector<std::string>{"chunk 0+4:", "chunk 4+4:"}));
}

TEST(PairsFirst, HoldsEachChunkUntilEveryKindPassedItAndHandsItsPairsInEventOrder) {
  Handed handed;
  // Stacks end at event 9, shapes at event 6.
  PairsFirst pairs_first(LastPairs{.entry_stack = 9, .entry_shape = 6}, handed.hand());
  const auto events = entries(5);
  pairs_first.add_events(events, 0);  // events 0-4
  pairs_first.add_events(events, 5);  // events 5-9
  EXPECT_TRUE(handed.lines.empty());
  pairs_first.add_pair(PairKind::entry_stack, 1, 11);
  pairs_first.add_pair(PairKind::entry_stack, 3, 13);
  pairs_first.add_pair(PairKind::entry_stack, 7, 17);  // stacks passed the first chunk
  EXPECT_TRUE(handed.lines.empty()) << "the shapes have not passed event 4 yet";
  pairs_first.add_pair(PairKind::entry_shape, 0, 20);
  pairs_first.add_pair(PairKind::entry_shape, 4, 24);
  ASSERT_EQ(handed.lines.size(), 1u);
  EXPECT_EQ(handed.lines[0], "chunk 0+5: 1@0=20 0@1=11 0@3=13 1@4=24");
  pairs_first.add_pair(PairKind::entry_shape, 6, 26);  // the shapes' last
  EXPECT_EQ(handed.lines.size(), 1u) << "the stacks have not passed event 9 yet";
  pairs_first.add_pair(PairKind::entry_stack, 9, 19);
  ASSERT_EQ(handed.lines.size(), 2u);
  EXPECT_EQ(handed.lines[1], "chunk 5+5: 1@6=26 0@7=17 0@9=19");
  // A chunk after every kind's last pair goes on at once.
  pairs_first.add_events(events, 10);
  EXPECT_EQ(handed.lines.back(), "chunk 10+5:");
}

TEST(PairsFirst, ADamagedFilesHeldChunksGoOnAtTheEndAndStalePairsAreDropped) {
  Handed handed;
  PairsFirst pairs_first(LastPairs{.backward_stack = 20}, handed.hand());
  const auto events = entries(3);
  pairs_first.add_events(events, 0);
  pairs_first.add_pair(PairKind::backward_stack, 2, 5);
  ASSERT_EQ(handed.lines, (std::vector<std::string>{"chunk 0+3: 2@2=5"}));
  pairs_first.add_events(events, 6);                      // events 6-8, 3-5 never read
  pairs_first.add_pair(PairKind::backward_stack, 4, 6);  // names an event not handed: dropped
  pairs_first.add_pair(PairKind::backward_stack, 7, 7);
  EXPECT_EQ(handed.lines.size(), 1u) << "the last pair (event 20) never comes";
  pairs_first.finish();
  EXPECT_EQ(handed.lines.back(), "chunk 6+3: 2@7=7");
}

// A stream that notes the pairs it is handed.
struct PairNotes : RecordStream {
  std::vector<std::string> notes;
  void on_entry_stack(uint64_t index, uint32_t id) override { notes.push_back("stack " + std::to_string(index) + "=" + std::to_string(id)); }
  void on_entry_shape(uint64_t index, uint32_t id) override { notes.push_back("shape " + std::to_string(index) + "=" + std::to_string(id)); }
  bool wants(const Recording&) override { return true; }
  void on_events(std::span<const gp_event>, uint64_t) override {}
};

TEST(ChunkPairs, HandsTheFrameOpeningEventsPairsRenumberedAndSkipsTheRest) {
  std::vector<gp_event> events = entries(4);
  events[1].kind = GP_EV_OP_EXIT;
  const std::vector<EventPair> pairs = {
      {100, PairKind::entry_stack, 1}, {100, PairKind::entry_shape, 2},  // event 100: kept
      {101, PairKind::entry_stack, 3},                                    // an exit: not renumbered
      {102, PairKind::entry_stack, 4},                                    // not kept (no stream)
      {103, PairKind::entry_shape, 5}};
  PairNotes stream;
  ChunkPairs chunk_pairs(pairs);
  chunk_pairs.hand_those_of(events[0], 100, &stream, 0);
  chunk_pairs.hand_those_of(events[1], 101, &stream, 1);
  chunk_pairs.hand_those_of(events[2], 102, nullptr, 0);
  chunk_pairs.hand_those_of(events[3], 103, &stream, 2);
  EXPECT_EQ(stream.notes, (std::vector<std::string>{"stack 0=1", "shape 0=2", "shape 2=5"}));
}

}  // namespace
}  // namespace gpuprof
