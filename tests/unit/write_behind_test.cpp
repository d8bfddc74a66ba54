// write_behind_test.cpp: bytes written behind on a thread of their own
// (base/write_behind.h) reach the sink whole and in order; the sink's
// first error is kept and said; and a file (base/output_file.h) says a
// write that failed when it is closed.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <random>
#include <string>
#include <thread>

#include "base/output_file.h"
#include "base/write_behind.h"
#include "no_threads.h"

namespace gpuprof {
namespace {

TEST(WriteBehindTest, EveryByteReachesTheSinkInOrder) {
  std::string received;
  size_t calls = 0;
  std::string sent;
  {
    WriteBehind behind([&](std::string_view buffer) {
      received.append(buffer);
      calls++;
      return std::string();
    });
    std::mt19937 random(7);
    // Pieces from nothing to three buffers' worth, about 24 MiB in all.
    for (int i = 0; i < 40; ++i) {
      std::string piece(random() % (3 * WriteBehind::kBufferBytes), '\0');
      for (size_t at = 0; at + 4 <= piece.size(); at += 4) {
        const uint32_t word = static_cast<uint32_t>(random());
        std::memcpy(piece.data() + at, &word, 4);
      }
      sent += piece;
      ASSERT_TRUE(behind.write(piece));
      if (i % 7 == 0) {
        ASSERT_TRUE(behind.write(""));
      }
    }
    EXPECT_EQ(behind.finish(), "");
    EXPECT_EQ(behind.finish(), "");  // again: the same
  }
  EXPECT_EQ(received.size(), sent.size());
  EXPECT_TRUE(received == sent);
  // A buffer at a time, not a call per piece.
  EXPECT_EQ(calls, (sent.size() + WriteBehind::kBufferBytes - 1) / WriteBehind::kBufferBytes);
}

TEST(WriteBehindTest, TheSinksFirstErrorIsKeptAndNothingMoreIsWritten) {
  std::atomic<int> calls = 0;
  WriteBehind behind([&](std::string_view) {
    // The third buffer fails, slowly: the producer fills the queue meanwhile.
    if (++calls < 3) return std::string();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    return std::string("cannot write t.json: No space left on device");
  });
  const std::string buffer(WriteBehind::kBufferBytes, 'x');
  bool refused = false;
  for (int i = 0; i < 50 && !refused; ++i) refused = !behind.write(buffer);
  EXPECT_TRUE(refused);  // it said so to a later write
  EXPECT_EQ(behind.finish(), "cannot write t.json: No space left on device");
  EXPECT_EQ(calls.load(), 3);  // nothing handed to the sink after its error
  EXPECT_FALSE(behind.write("more"));
}

TEST(WriteBehindTest, DestroyedUnfinishedItStillWritesEverything) {
  std::string received;
  {
    WriteBehind behind([&](std::string_view buffer) {
      received.append(buffer);
      return std::string();
    });
    behind.write("a trace that was never closed");
  }
  EXPECT_EQ(received, "a trace that was never closed");
}

// /dev/full takes the open and fails every write: the error comes at close
// (the write itself was taken), with the path and the system's words.
TEST(WriteBehindTest, AFileThatCannotBeWrittenSaysSoWhenClosed) {
  auto opened = OutputFile::open("/dev/full");
  ASSERT_TRUE(opened.has_value()) << opened.error();
  std::unique_ptr<OutputFile> file = std::move(opened).value();
  const std::string buffer(WriteBehind::kBufferBytes, 'x');
  for (int i = 0; i < 3; ++i) file->write(buffer);
  const auto closed = file->close();
  ASSERT_FALSE(closed.has_value());
  EXPECT_EQ(closed.error(), "cannot write /dev/full: No space left on device");
}

// Where no thread can be made, every byte is still written, in turn.
TEST(WriteBehindTest, WithoutAThreadEveryBufferIsWrittenInTurn) {
  const int status = no_threads::run_without_threads([] {
    std::string received, sent;
    WriteBehind behind([&](std::string_view buffer) {
      received.append(buffer);
      return std::string();
    });
    for (int i = 0; i < 5; ++i) {
      const std::string piece(WriteBehind::kBufferBytes / 2 + 17 * i, static_cast<char>('a' + i));
      sent += piece;
      if (!behind.write(piece)) return false;
    }
    return behind.finish().empty() && received == sent;
  });
  EXPECT_EQ(status, 0);
}

}  // namespace
}  // namespace gpuprof
